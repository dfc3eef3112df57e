"""Every import inside bundlegraph resolves, lazy ones in function bodies included (a moved
module's function-level relative import fails only when that function runs)."""

from __future__ import annotations

import ast
import importlib
import importlib.util
from pathlib import Path

PKG = Path(__file__).resolve().parents[2] / "bundlegraph"


def _package_of(f: Path) -> list[str]:
    """The package a module's relative imports start from (a package's ``__init__``: itself)."""
    return ["bundlegraph", *f.relative_to(PKG).with_suffix("").parts][:-1]


def test_every_import_of_every_module_resolves():
    missing = []
    checked = 0
    for f in sorted(PKG.rglob("*.py")):
        pkg = _package_of(f)
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ImportFrom) or not node.level:
                continue
            if node.level > len(pkg):
                missing.append(f"{f.relative_to(PKG.parent)}:{node.lineno}: beyond the top-level package")
                continue
            base = pkg[: len(pkg) - (node.level - 1)]
            mod = ".".join(base + ([node.module] if node.module else []))
            checked += 1
            if importlib.util.find_spec(mod) is None:
                missing.append(f"{f.relative_to(PKG.parent)}:{node.lineno}: no module {mod}")
                continue
            if node.module is None:  # from . import a, b: each a module or a name of the package
                for a in node.names:
                    if importlib.util.find_spec(f"{mod}.{a.name}") is None:
                        init = importlib.import_module(mod)
                        if not hasattr(init, a.name):
                            missing.append(f"{f.relative_to(PKG.parent)}:{node.lineno}: no {mod}.{a.name}")
    assert checked > 300
    assert missing == []
