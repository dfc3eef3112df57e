"""``./dev.sh``, the README's two commands: a first run is never silent (issue 29, item 9)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_dev_sh_prints_one_line_per_setup_step():
    """The set-up steps of ``./dev.sh main`` (the test run's own .venv, already set up), then the
    main job's command: here ``doit --version``, which starts nothing."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("BUNDLEGRAPH_")}
    r = subprocess.run(
        ["bash", str(ROOT / "dev.sh"), "main", "--version"],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=600,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    steps = [l.split(":", 2)[1].strip() for l in r.stderr.splitlines() if l.startswith("dev.sh: ")]
    assert steps == ["venv", "pip", "apt", "main job"], r.stderr
    assert "dev.sh: apt: g++-aarch64-linux-gnu qemu-user already installed" in r.stderr
    assert r.stdout.strip(), "doit --version printed nothing"


def test_dev_sh_refuses_a_python_older_than_the_project_needs(tmp_path):
    """``PYTHON=`` picks the interpreter a new .venv is made with; one older than 3.11 is refused
    by name before anything is made (here a stand-in that reports 3.9)."""
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    (checkout / "dev.sh").write_bytes((ROOT / "dev.sh").read_bytes())
    (checkout / "pyproject.toml").write_bytes((ROOT / "pyproject.toml").read_bytes())
    old = tmp_path / "python3.9"
    old.write_text("#!/bin/sh\nexit 1\n")  # `import sys; sys.exit(sys.version_info < (3, 11))` -> 1
    old.chmod(0o755)
    r = subprocess.run(
        ["bash", "dev.sh", "test"],
        capture_output=True,
        text=True,
        cwd=checkout,
        timeout=60,
        env={**os.environ, "PYTHON": str(old)},
    )
    assert r.returncode == 2 and f"dev.sh: {old} is not Python 3.11 or newer; set PYTHON=" in r.stderr, r.stderr
    assert not (checkout / ".venv").exists()
