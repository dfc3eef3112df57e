"""Each backend plug-in module imports alone, first, in a fresh interpreter (no import circle)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def test_every_backend_plug_in_module_imports_first_in_a_fresh_process():
    """A backend's plug-in modules (smoke side, verify rows, SDK) import the floor that collects
    them (``pipeline.smoke``, ``verification``); collecting them at that floor's import time made
    ``import bundlegraph.backends.cuda.verify`` fail when nothing else was loaded first (an import
    circle hidden by test order). Each is imported first, alone, in its own interpreter."""
    pkg = Path(__file__).resolve().parents[2] / "bundlegraph" / "backends"
    mods = sorted(
        f"bundlegraph.backends.{f.parent.name}.{f.stem}"
        for f in pkg.glob("*/*.py")
        if f.stem != "__init__" and not f.parent.name.startswith("_")
    )
    assert len(mods) >= 7  # smoke sides of cuda, vulkan, hip, metal; verify rows of cuda, vulkan, hip
    failed = []
    for m in mods:
        r = subprocess.run([sys.executable, "-c", f"import {m}"], capture_output=True, text=True, check=False)
        if r.returncode:
            failed.append(f"{m}: {r.stderr.strip().splitlines()[-1]}")
    assert failed == []
