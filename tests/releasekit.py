"""The stand-in release built through the real graph, as the tests that read a whole ``dist/``
see it (:class:`Release`); the session fixture ``release`` (``tests/conftest.py``) builds it once
for the installer contract and ``verify-release`` tests. A test that changes it works on a copy."""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import graphrun
import installerkit


@dataclass
class Release:
    """The built stand-in: ``bundles/`` (specs, locks), ``work/`` (``BUNDLEGRAPH_WORKDIR``),
    ``work/dist`` (bundles, manifest, SHA index, source archive)."""

    root: Path

    @property
    def bundles(self) -> Path:
        return self.root / "bundles"

    @property
    def work(self) -> Path:
        w = self.root / "work"
        return w if w.is_dir() or not (self.root / "dist").is_dir() else self.root

    @property
    def dist(self) -> Path:
        return self.work / "dist"

    @cached_property
    def index(self) -> dict:
        return json.loads((self.dist / installerkit.INDEX_NAME).read_text())

    def cli(self, *args: str) -> subprocess.CompletedProcess:
        return graphrun.cli(list(args), bundles=self.bundles, workdir=self.work)

    def cli_json(self, *args: str) -> dict:
        r = self.cli(*args)
        assert r.returncode == 0, (
            f"bundlegraph {' '.join(args)} -> {r.returncode}\n{r.stdout[-3000:]}{r.stderr[-3000:]}"
        )
        return json.loads(r.stdout)
