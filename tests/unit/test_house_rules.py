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
            out.append(f"{f.relative_to(PKG.parent).as_posix()}:{node.lineno}: {ast.get_source_segment(src, node)}")
    return out


def test_os_names_are_compared_only_in_the_platforms_table():
    found = [c for f in sorted(PKG.rglob("*.py")) if f != TABLE for c in os_comparisons(f)]
    assert not found, "read the fact from bundlegraph.core.platforms.platform(os) instead:\n" + "\n".join(found)


def test_the_rule_sees_a_comparison_in_each_form(tmp_path):
    f = PKG / "_probe_for_the_house_rule.py"  # (never committed: written and removed here)
    f.write_text('a = x == "windows"\nb = "linux" != y\nc = z in ("macos", "q")\nd = w == "cuda"\n', encoding="utf-8")
    try:
        got = [c.split(": ", 1)[1] for c in os_comparisons(f)]
    finally:
        f.unlink()
    assert got == ['x == "windows"', '"linux" != y', 'z in ("macos", "q")']
