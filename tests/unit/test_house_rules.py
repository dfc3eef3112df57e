"""Rules of the house that no linter holds (issue 53 item 4): an OS-dependent fact is read from
its row of :data:`bundlegraph.core.platforms.PLATFORMS`, never spelled as a comparison with an OS name
in another module."""

from __future__ import annotations

import ast
from pathlib import Path

from bundlegraph.core.platforms import OS_NAMES

PKG = Path(__file__).resolve().parents[2] / "bundlegraph"
TABLE = PKG / "platforms.py"


def _names_an_os(node: ast.expr) -> bool:
    if isinstance(node, ast.Constant):
        return node.value in OS_NAMES
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return any(_names_an_os(e) for e in node.elts)
    return False


def os_comparisons(f: Path) -> list[str]:
    """``path:line: text`` of each comparison in ``f`` whose one side is an OS name (``spec.os ==
    "windows"``, ``os_name in ("linux", "macos")``)."""
    src = f.read_text(encoding="utf-8")
    out = []
    for node in ast.walk(ast.parse(src)):
        if isinstance(node, ast.Compare) and any(_names_an_os(x) for x in (node.left, *node.comparators)):
            where = f.relative_to(PKG.parent).as_posix() if f.is_relative_to(PKG.parent) else f.as_posix()
            out.append(f"{where}:{node.lineno}: {ast.get_source_segment(src, node)}")
    return out


def test_os_names_are_compared_only_in_the_platforms_table():
    found = [c for f in sorted(PKG.rglob("*.py")) if f != TABLE for c in os_comparisons(f)]
    assert not found, "read the fact from bundlegraph.core.platforms.platform(os) instead:\n" + "\n".join(found)


def test_the_rule_sees_a_comparison_in_each_form(tmp_path):
    # outside the checkout: a pytest started beside this one (tests/integration/test_ci_isolation.py,
    # another xdist worker's) checks that the checkout gains no file
    f = tmp_path / "probe_for_the_house_rule.py"
    f.write_text('a = x == "windows"\nb = "linux" != y\nc = z in ("macos", "q")\nd = w == "cuda"\n', encoding="utf-8")
    got = [c.split(": ", 1)[1] for c in os_comparisons(f)]
    assert got == ['x == "windows"', '"linux" != y', 'z in ("macos", "q")']


def facts_imports(init: Path) -> list[str]:
    """The modules a backend package's facts (``init``, its ``__init__.py``) import, absolute,
    except ``__future__`` and the standard library's ``typing``."""
    pkg = init.parent.relative_to(PKG.parent).as_posix().split("/")
    out = []
    for node in ast.walk(ast.parse(init.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            base = pkg[: len(pkg) - node.level + 1] if node.level else []
            out.append(".".join([*base, *([node.module] if node.module else [])]))
        elif isinstance(node, ast.Import):
            out += [a.name for a in node.names]
    return [m for m in out if m not in ("__future__", "typing")]


def test_a_backends_facts_import_only_core():
    """Every backend package's facts (its ``__init__``, which the registry imports on every load)
    import only :mod:`bundlegraph.core` (issue 53 item 1): its SDK, smoke side
    and verify rows sit beside them and are imported by name (pyproject's import-linter contracts)."""
    from bundlegraph.schemas import backend as backends

    inits = [PKG / "backends" / b.NAME / "__init__.py" for b in backends.BACKENDS]
    assert all(f.is_file() for f in inits), [str(f) for f in inits if not f.is_file()]
    bad = [
        f"{f.relative_to(PKG.parent).as_posix()}: imports {m}"
        for f in inits
        for m in facts_imports(f)
        if not (m.startswith("bundlegraph.core") or m in {"bundlegraph.core"}) and m.startswith("bundlegraph")
    ]
    assert not bad, "a backend's facts import only bundlegraph.core:\n" + "\n".join(bad)
    # the walker resolves relative imports (no facts module imports anything today)
    assert "bundlegraph.backends" in facts_imports(PKG / "backends" / "hip" / "sdk_ref.py")
