"""Compiler launcher (ccache or sccache): used only when present *and* positively working.

"Working" means: ``<launcher> --version`` succeeds and a one-line C file compiles through it
with the leg's own C compiler twice in a scratch directory. Otherwise the build is uncached and a
warning says why. A cache must never fail a build, so any error here only disables it.
``BUNDLEGRAPH_LAUNCHER=none`` disables it; ``=ccache``/``=sccache`` prefers one.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from .. import proc, settings
from ..errors import BundleGraphError
from ..report import warn


@dataclass(frozen=True)
class Launcher:
    """``name`` (``ccache``/``sccache``/None), ``path`` and the ``args`` to append to cmake
    (``-DCMAKE_<LANG>_COMPILER_LAUNCHER=<path>``); ``why`` says why none is used."""

    name: str | None
    path: str | None = None
    args: list[str] = field(default_factory=list)
    why: str = ""


def _works(exe: str, cc: str, env: dict[str, str], scratch: Path) -> str:
    """Empty when ``exe`` works with ``cc``, else the reason."""
    try:
        proc.run([exe, "--version"], env=env, capture=True, echo=False, what=f"{Path(exe).name} --version")
        scratch.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=scratch) as d:
            src = Path(d) / "probe.c"
            src.write_text("int bundlegraph_probe(int x) { return x + 1; }\n", encoding="utf-8")
            for _ in range(2):
                proc.run([exe, cc, "-c", str(src), "-o", str(Path(d) / "probe.o")], cwd=d, env=env,
                         capture=True, echo=False, what=f"{Path(exe).name} test compile")
            if not (Path(d) / "probe.o").is_file():
                return "the test compile produced no object"
    except BundleGraphError as e:
        return str(e).splitlines()[0]
    return ""


def compiler_launcher(cc: str | None, env: dict[str, str], scratch: Path, langs: list[str]) -> Launcher:
    """Pick a working launcher for compiler ``cc`` (an absolute path), or none with a warning.
    MSVC's ``cl.exe`` takes ``/c``-style flags: no launcher is probed for it."""
    choice = settings.get("LAUNCHER", env) or settings.get("LAUNCHER") or ""
    if choice == "none":
        return Launcher(None, why="BUNDLEGRAPH_LAUNCHER=none")
    if not cc or Path(cc).name.lower() == "cl.exe":
        return Launcher(None, why="no probe-able C compiler")
    names = [choice] if choice else ["ccache", "sccache"]
    reasons = []
    for name in names:
        exe = proc.which(name, env)
        if exe is None:
            reasons.append(f"{name} not installed")
            continue
        why = _works(exe, cc, env, scratch)
        if why:
            reasons.append(f"{name} does not work: {why}")
            continue
        return Launcher(name, exe, [f"-DCMAKE_{lang}_COMPILER_LAUNCHER={Path(exe).as_posix()}" for lang in langs])
    warn(f"building without a compiler cache ({'; '.join(reasons)})")
    return Launcher(None, why="; ".join(reasons))
