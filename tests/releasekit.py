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


def reseal(dist: Path) -> None:
    """Re-seal a tampered copy of a release as someone with write access to it would: every
    listed file's sha256 and size in the SHA index from its bytes now (the manifest's too), and
    the provenance's subjects from that index (:func:`bundlegraph.schemas.provenance.subjects`). The
    other fields of the provenance stay as the tamperer left them."""
    import hashlib

    from bundlegraph.schemas.provenance import PROVENANCE_NAME, subjects

    ip = dist / installerkit.INDEX_NAME
    index = json.loads(ip.read_text())
    for name, e in index["artifacts"].items():
        p = dist / name
        if p.is_file():
            data = p.read_bytes()
            e["sha256"], e["size"] = hashlib.sha256(data).hexdigest(), len(data)
    raw = (json.dumps(index, indent=2) + "\n").encode()
    ip.write_bytes(raw)
    pp = dist / PROVENANCE_NAME
    st = json.loads(pp.read_text())
    st["subject"] = subjects(installerkit.INDEX_NAME, raw, index)
    pp.write_text(json.dumps(st, sort_keys=True, indent=2) + "\n")
