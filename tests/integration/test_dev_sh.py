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
    assert "dev.sh: apt: qemu-user already installed" in r.stderr  # the compilers are pinned .debs (issue 50)
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


def test_dev_sh_s_apt_get_waits_for_the_dpkg_lock(tmp_path):
    """``./dev.sh main`` and ``./dev.sh test`` started together on a fresh machine: the second's
    ``apt-get`` waits for dpkg's lock (``-o DPkg::Lock::Timeout=600``, on update and on install)
    instead of stopping with "Could not get lock" (exit 100). Run as root with every package
    missing, in a copy of the checkout whose .venv is set up; ``dpkg``, ``id`` and ``apt-get`` are
    stand-ins on PATH (the last records its arguments: no package is installed)."""
    import sys

    checkout = tmp_path / "checkout"
    (checkout / ".venv" / "bin").mkdir(parents=True)
    for f in ("dev.sh", "pyproject.toml"):
        (checkout / f).write_bytes((ROOT / f).read_bytes())
    (checkout / ".venv" / "bin" / "python").symlink_to(sys.executable)
    want = subprocess.run(
        [
            sys.executable,
            "-c",
            "import hashlib, json, tomllib; d = tomllib.load(open('pyproject.toml', 'rb')); "
            "print(hashlib.sha256(json.dumps([d.get('build-system'), d.get('project')], sort_keys=True)"
            ".encode()).hexdigest())",
        ],
        capture_output=True,
        text=True,
        cwd=checkout,
        check=True,
    ).stdout
    (checkout / ".venv" / ".bundlegraph-installed").write_text(want, encoding="utf-8")
    bindir, calls = tmp_path / "bin", tmp_path / "apt-get.calls"
    bindir.mkdir()
    stand_ins = {
        "dpkg": "exit 1\n",  # `dpkg -s PKG`: not installed
        "id": "echo 0\n",  # `id -u`: root
        "apt-get": f'echo "$*" >> {calls}\n',
        "doit": 'echo doit "$@"\n',
    }
    for name, body in stand_ins.items():
        f = (checkout / ".venv" / "bin" / name) if name == "doit" else bindir / name
        f.write_text("#!/bin/sh\n" + body)
        f.chmod(0o755)
    r = subprocess.run(
        ["bash", "dev.sh", "main", "--version"],
        capture_output=True,
        text=True,
        cwd=checkout,
        timeout=120,
        env={**os.environ, "PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}"},
    )
    assert r.returncode == 0 and r.stdout.strip() == "doit --version", r.stdout + r.stderr
    update, install = calls.read_text().splitlines()
    assert update == "-o DPkg::Lock::Timeout=600 update -qq", update
    assert install == "-o DPkg::Lock::Timeout=600 install -y -qq qemu-user", install
    assert "dev.sh: apt: installing qemu-user (as root; waits up to 10 min" in r.stderr
