"""Run the real ``doit`` (this project's dodo.py) and ``bundlegraph`` in a subprocess, with a
chosen bundles directory and work directory. Used by graph tests."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def env_for(bundles: Path | None, workdir: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BUNDLEGRAPH_ONLY")}
    env["BUNDLEGRAPH_WORKDIR"] = str(workdir)
    if bundles is not None:
        env["BUNDLEGRAPH_BUNDLES"] = str(bundles)
    env.update(extra)
    return env


def doit(args: list[str], *, bundles: Path | None = None, workdir: Path, timeout: float = 600, **extra: str):
    """``doit -f <project>/dodo.py ARGS`` -> CompletedProcess (text, stdout+stderr separate)."""
    return subprocess.run(
        [str(BIN / "doit"), "-f", str(ROOT / "dodo.py"), *args],
        capture_output=True,
        text=True,
        env=env_for(bundles, workdir, **extra),
        timeout=timeout,
    )


def cli(args: list[str], *, bundles: Path | None = None, workdir: Path, timeout: float = 120, **extra: str):
    """``bundlegraph --bundles B ARGS`` -> CompletedProcess."""
    pre = ["--bundles", str(bundles or ROOT / "bundles")]
    return subprocess.run(
        [str(BIN / "bundlegraph"), *pre, *args],
        capture_output=True,
        text=True,
        env=env_for(bundles, workdir, **extra),
        timeout=timeout,
    )


def executed(stdout: str) -> list[str]:
    """Task names doit executed (lines starting with '.  '), not the up-to-date ones ('-- ')."""
    return [l[3:].strip() for l in stdout.splitlines() if l.startswith(".  ")]


def standin_tree(root: Path) -> tuple[Path, Path]:
    """The stand-in release under ``root``: ``minillama/`` (the source its path pin names),
    ``bundles/`` (``tests/data/bundles`` plus the project's wheel locks) and an empty ``work/``.
    Returns ``(bundles, work)``."""
    import shutil

    data = ROOT / "tests" / "data"
    shutil.copytree(data / "minillama", root / "minillama")
    shutil.copytree(data / "bundles", root / "bundles")
    shutil.copytree(ROOT / "bundles" / "locks", root / "bundles" / "locks", dirs_exist_ok=True)
    (root / "work").mkdir()
    return root / "bundles", root / "work"


def link_blobs(src: Path, dest: Path) -> None:
    """Hard-link the content-addressed blobs of cache ``src`` (the toolkit's wheels, verified by
    sha256 when the toolkit installs) into cache ``dest`` (copies where the file system cannot
    link): that cache installs the toolkit at its own path, offline."""
    import shutil

    for f in (src / "blobs").rglob("*"):
        if f.is_file():
            t = dest / f.relative_to(src)
            t.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.link(f, t)
            except OSError:
                shutil.copy2(f, t)
