"""Shared fixtures. Every test gets its own BUNDLEGRAPH_WORKDIR; the cache is shared
(``BUNDLEGRAPH_CACHE`` or ``~/.cache/bundlegraph``) so large real inputs download once."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))


@pytest.fixture
def workdir(tmp_path, monkeypatch) -> Path:
    """A fresh work directory (build/, dist/, .bundlegraph/) for one test."""
    wd = tmp_path / "work"
    wd.mkdir()
    monkeypatch.setenv("BUNDLEGRAPH_WORKDIR", str(wd))
    for v in ("BUNDLEGRAPH_ONLY_PROFILE", "BUNDLEGRAPH_ONLY_LEG", "BUNDLEGRAPH_ARTIFACTS", "BUNDLEGRAPH_ARCHS",
              "BUNDLEGRAPH_TOOLKIT_SOURCE"):
        monkeypatch.delenv(v, raising=False)
    return wd


@pytest.fixture
def bundles_copy(tmp_path) -> Path:
    """A private copy of the real bundles/ directory to edit."""
    dst = tmp_path / "bundles"
    shutil.copytree(ROOT / "bundles", dst)
    return dst


@pytest.fixture
def real_input():
    """``real_input(name)`` -> verified cached file; skips when the registry is unreachable."""
    import realinputs

    def get(name: str, unpack: bool = False) -> Path:
        try:
            return realinputs.unpacked(name) if unpack else realinputs.fetch(name)
        except realinputs.Unreachable as e:
            pytest.skip(f"real input {name} unreachable: {e}")

    return get


def slow_enabled() -> bool:
    return os.environ.get("BUNDLEGRAPH_SLOW") == "1"
