"""Every Sphinx-style cross-reference in bundlegraph's docstrings names something that exists
(issue 30: six named things that were renamed or removed)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2] / "bundlegraph"
ROLE = re.compile(r":(?:func|class|mod|data|attr|meth|exc|obj):`~?\.?([^`<>]+?)`")
OUTSIDE = (
    "doit",
    "pydantic",
    "httpx",
    "subprocess",
    "os",
    "pathlib",
    "shutil",
    "json",
    "hashlib",
    "platformdirs",
    "signal",
    "tarfile",
    "zipfile",
    "sqlite3",
    "dataclasses",
    "typing",
    "collections",
    "functools",
    "re",
    "pefile",
    "elftools",
    "signify",
    "filelock",
    "argparse",
    "difflib",
    "tomllib",
    "zlib",
    "gzip",
    "io",
)


def defined_names() -> set[str]:
    """Every module (dotted and last part), function, class, method and assigned name in bundlegraph."""
    names: set[str] = set()
    for f in ROOT.rglob("*.py"):
        rel = f.relative_to(ROOT.parent).with_suffix("")
        parts = [p for p in rel.parts if p != "__init__"]
        names |= {".".join(parts[i:]) for i in range(len(parts))}
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, ast.Assign):
                names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                names.add(node.target.id)
    return names


def test_every_docstring_reference_names_something_that_exists():
    names = defined_names()
    dangling = []
    for f in sorted(ROOT.rglob("*.py")):
        for ref in ROLE.findall(f.read_text(encoding="utf-8")):
            ref = ref.strip().removesuffix("()")
            if ref.split(".")[0] in OUTSIDE:
                continue
            dotted = ref.removeprefix("bundlegraph.")
            if ref.split(".")[-1] not in names and dotted not in names:
                dangling.append(f"{f.relative_to(ROOT.parent)}: {ref}")
    assert dangling == []
