"""What a build does with the launcher configure chose (:mod:`.launcher`): its environment,
ccache's remote storage, and the statistics of the build.

With ccache, :func:`build_env` is the environment of the build (source: ccache's manual,
"Configuration options"): ``base_dir`` = the work directory (paths inside it hash relative, so two
work directories share entries; why nothing wider: :func:`build_env`), ``compiler_check=content``
(the toolkit's nvcc is extracted on each runner with a new mtime, and ccache's default ``mtime``
check would miss across runners), a per-build ``stats_log`` (:func:`build_stats` reads it back).

**Remote storage, kept from build code** (issue 51). ``BUNDLEGRAPH_CACHE_REMOTE`` (with
``|read-only=true`` for ``BUNDLEGRAPH_CACHE_REMOTE_MODE=read-only``: :func:`remote_storage`) holds
the credential of the storage. ccache runs as the compiler launcher: ninja starts it, and it starts
the compiler with its own environment, so a variable ccache reads, every compiler and every
program the build runs reads too. The URL therefore never goes into an environment: it goes into
a configuration file of its own (:func:`remote_config`: ``remote_storage = URL``, mode 0600, in a
new directory of the system's temporary directory, outside the work directory and the source tree,
removed when the compile ends), and the build's environment names that file
(``CCACHE_CONFIGPATH``: ccache's primary configuration file, so ``$CCACHE_DIR/ccache.conf`` is not
read during the build; ``CCACHE_*`` variables still override it). Residual risk, stated: build code
runs as the same user as ccache, so a program of the build that looks for it can still read that
file (its path is in its environment), as it can read ``/proc/<pid>/environ`` of bundlegraph's own
process, which got ``BUNDLEGRAPH_CACHE_REMOTE`` from the job. Hiding the URL keeps it out of what
build code dumps or logs by accident; it does not stop a deliberate thief. What does is the
release's credential itself: ``release.yml`` gets one that can only read (README, "Compiler
cache"), so what a thief gets fills nothing a release compiles.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path, PureWindowsPath
from typing import Any

from ...core import paths, proc, remote_url, settings
from ...core.errors import SettingError
from ...core.fsutil import rmtree

redact = remote_url.redact


def remote_storage(env: Mapping[str, str] | None = None) -> str:
    """ccache's ``remote_storage`` value from ``BUNDLEGRAPH_CACHE_REMOTE`` and
    ``BUNDLEGRAPH_CACHE_REMOTE_MODE`` (empty when unset). Raises :class:`SettingError` for a URL
    of another scheme, or one ccache would refuse printing its credential
    (:func:`~bundlegraph.core.remote_url.problems`); the message names no secret."""
    url = settings.get("CACHE_REMOTE", env) or ""
    if not url:
        return ""
    bad = remote_url.problems(url)
    if bad:
        raise SettingError("; ".join(bad))
    if settings.get("CACHE_REMOTE_MODE", env) == "read-only" and "read-only" not in url:
        url += "|read-only=true"
    return url


def writes_remote(remote: str) -> bool:
    """Whether a build with ccache's ``remote`` value stores entries there (set, not read-only)."""
    return bool(remote) and "read-only=true" not in remote


@contextmanager
def remote_config(launcher: dict[str, Any] | None, remote: str) -> Iterator[Path | None]:
    """A private ccache configuration file holding ``remote_storage = remote`` for the length of
    the block (module docstring); None (and nothing written) without ccache or without ``remote``."""
    if not remote or not launcher or launcher.get("name") != "ccache":
        yield None
        return
    d = Path(tempfile.mkdtemp(prefix="bundlegraph-ccache-"))  # mode 0700
    conf = d / "ccache.conf"
    try:
        fd = os.open(conf, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(f"remote_storage = {remote}\n")
        yield conf
    finally:
        rmtree(d)


def build_env(
    launcher: dict[str, Any] | None, base: Mapping[str, str], stats_log: Path, config: Path | None = None
) -> dict[str, str]:
    """The environment a build runs in when configure chose ``launcher`` (``configure.json``'s
    entry): ``base`` (the allow-listed environment, :mod:`bundlegraph.core.buildenv`) plus, for
    ccache, ``CCACHE_BASEDIR`` (the work directory; a ``CCACHE_BASEDIR`` of ``base`` wins),
    ``CCACHE_COMPILERCHECK=content``, ``CCACHE_STATSLOG=stats_log``, ``CCACHE_CONFIGPATH=config``
    (the remote storage's file, :func:`remote_config`, when there is one) and
    ``CCACHE_IGNOREOPTIONS`` for the work directory's prefix maps (:func:`ignored_prefix_maps`).
    Never ``CCACHE_REMOTE_STORAGE``. Other launchers: ``base`` unchanged.

    Why the work directory and nothing wider: ccache compiles with the paths it rewrote, so a
    source file under ``base_dir`` is compiled by a relative name and its ``__FILE__`` strings
    (ggml's asserts) change with it. The source tree and the toolkit live in bundlegraph's cache,
    outside the work directory, and every compile maps them to stable names (issue 32), so with
    or without ccache the bytes agree; only the work directory's own paths
    (``-I<build dir>/ggml/src``) become relative, and its prefix maps are left out of the hash
    (:func:`ignored_prefix_maps`), so two work directories share entries."""
    env = {k: v for k, v in base.items() if k not in ("CCACHE_REMOTE_STORAGE", "CCACHE_SECONDARY_STORAGE")}
    if not launcher or launcher.get("name") != "ccache":
        return env
    env.setdefault("CCACHE_BASEDIR", str(paths.workdir()))
    env.setdefault("CCACHE_COMPILERCHECK", "content")
    ignore = " ".join([*base.get("CCACHE_IGNOREOPTIONS", "").split(), *ignored_prefix_maps(paths.workdir())])
    if ignore:
        env["CCACHE_IGNOREOPTIONS"] = ignore
    env["CCACHE_STATSLOG"] = str(stats_log)
    if config is not None:
        env["CCACHE_CONFIGPATH"] = str(config)
    return env


def ignored_prefix_maps(workdir: Path) -> list[str]:
    """ccache ``ignore_options`` patterns for the prefix maps whose old side is the work directory
    or below it (the work and build roots, :mod:`bundlegraph.toolchains.prefix_maps`): they name
    each work directory's own path, so hashed they would keep two work directories from sharing
    an entry, while what they do is the same in both (a root of the work directory becomes the
    same stable name; ccache's ``base_dir`` makes the work directory's paths relative anyway).
    The source tree's, the toolkit's and the cache's maps stay hashed (the same on every runner
    of one image: the cache is under the runner user's home). Every spelling a compiler of a leg
    gets is listed: GCC's and clang's ``-ffile-prefix-map``, cl.exe's ``/d1trimfile:`` with the
    backslashed path (ccache hashes it as any option it does not know; its option table,
    ``compopt.cpp``, has no entry refusing it), and nvcc's ``-Xcompiler=`` of either. A path with a
    space cannot be written in the space-separated list: none then.

    The release's runners share entries whatever this list holds: GitHub gives every runner of a
    repository one workspace path, so the work directory is the same on all of them. ccache also
    hashes the directory of every MSVC-group object (``hash_dir``, on by default; ccache's
    ``ccache.cpp``: "the object file produced by MSVC includes the full path to the source file
    even without debug flags"), so two *different* work directories on one machine share GCC
    entries but not cl.exe or clang-cl ones."""
    w = workdir.as_posix()
    if " " in w:
        return []
    win = str(PureWindowsPath(workdir))
    return [
        f"-ffile-prefix-map={w}*",
        f"-Xcompiler=-ffile-prefix-map={w}*",
        f"/d1trimfile:{win}*",
        f"-Xcompiler=/d1trimfile:{win}*",
    ]


#: ccache's counter IDs (``--print-log-stats``; ccache's ``Statistic.hpp``) summed into
#: :func:`build_stats`'s figures: hits, misses, and the calls ccache could not cache.
_HITS = ("direct_cache_hit", "preprocessed_cache_hit")
_MISSES = ("cache_miss",)
_UNCACHEABLE = (
    "autoconf_test",
    "bad_compiler_arguments",
    "bad_input_file",
    "bad_output_file",
    "called_for_link",
    "called_for_preprocessing",
    "compile_failed",
    "compiler_check_failed",
    "compiler_produced_empty_output",
    "compiler_produced_no_output",
    "compiler_produced_stdout",
    "could_not_find_compiler",
    "could_not_use_modules",
    "could_not_use_precompiled_header",
    "disabled",
    "error_hashing_extra_file",
    "internal_error",
    "missing_cache_file",
    "modified_input_file",
    "multiple_source_files",
    "no_input_file",
    "output_to_stdout",
    "preprocessor_error",
    "unsupported_code_directive",
    "unsupported_compiler_option",
    "unsupported_environment_variable",
    "unsupported_source_language",
)


def uncacheable_counters(counters: dict[str, int]) -> dict[str, int]:
    """The nonzero counters of ``counters`` that made a call uncacheable (:data:`_UNCACHEABLE`)."""
    return {k: v for k, v in sorted(counters.items()) if k in _UNCACHEABLE and v}


def build_stats(
    launcher: dict[str, Any] | None, env: dict[str, str], stats_log: Path, remote: str = ""
) -> dict[str, Any] | None:
    """What the launcher did in one build with ccache's ``remote`` value (``remote``: it
    redacted, :func:`redact`): ``{"launcher", "version", "remote", "hits",
    "misses", "local_hits", "remote_hits", "remote_errors", "uncacheable", "counters"}`` read from the build's
    stats log (``ccache --print-log-stats --format json``; ``counters``: every nonzero one).
    None without ccache; an unreadable log gives ``counters`` empty and the reason in ``error``."""
    if not launcher or launcher.get("name") != "ccache" or not launcher.get("path"):
        return None
    out: dict[str, Any] = {
        "launcher": "ccache",
        "version": launcher.get("version", ""),
        "remote": redact(remote),
        "counters": {},
    }
    counters: dict[str, int] = {}
    if stats_log.is_file():
        r = proc.run(
            [launcher["path"], "--print-log-stats", "--format", "json"],
            env=env,
            capture=True,
            echo=False,
            check=False,
            what="ccache --print-log-stats",
        )
        try:
            raw = json.loads(r.output[r.output.index("{") :])
            counters = {
                k: int(v)
                for k, v in raw.items()
                if isinstance(v, (int, float))
                and v
                and not k.startswith(("max_", "stats_", "cache_size", "files_in_cache"))
            }
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


def describe(stats: dict[str, Any]) -> str:
    """One line: ``ccache 4.14.2: 140 hits (140 remote, 0 local), 0 misses, 3 uncacheable``."""
    return (
        f"{stats['launcher']} {stats['version'].split()[-1] if stats['version'] else ''}: "
        f"{stats['hits']} hits ({stats['remote_hits']} remote, {stats['local_hits']} local), "
        f"{stats['misses']} misses, {stats['uncacheable']} uncacheable"
        + (f", remote {stats['remote']}" if stats.get("remote") else "")
        + (
            f", {stats['remote_errors']} REMOTE ERRORS (see ccache's log: CCACHE_DEBUG=1)"
            if stats.get("remote_errors")
            else ""
        )
    )


def results_by_source(stats_log: Path) -> dict[str, str]:
    """What ccache did with each compiled file of one build, from its stats log (ccache's
    ``stats_log``: a ``# <input file>`` line, then the counter IDs that call bumped): ``{path:
    "hit" | "miss" | "uncacheable"}``, the path as ccache logged it. The last call of a path wins.
    An absent log gives ``{}``."""
    try:
        text = stats_log.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return {}
    out: dict[str, str] = {}
    cur: str | None = None
    for line in text.splitlines():
        if line.startswith("# "):
            cur = line[2:].strip()
            out[cur] = "uncacheable"
        elif cur is not None:
            word = line.strip()
            if word in _HITS:
                out[cur] = "hit"
            elif word in _MISSES and out[cur] != "hit":
                out[cur] = "miss"
    return out


_NOT_ENTRIES = {"stats", "CACHEDIR.TAG", "ccache.conf"}
"""Files of a ccache directory that are bookkeeping, not cache entries (ccache's manual,
"Cache directory layout")."""


def local_dir(launcher: dict[str, Any] | None, env: dict[str, str]) -> Path | None:
    """ccache's local cache directory for ``env`` (``CCACHE_DIR``, else ``ccache -k cache_dir``);
    None without ccache."""
    if not launcher or launcher.get("name") != "ccache" or not launcher.get("path"):
        return None
    if env.get("CCACHE_DIR"):
        return Path(env["CCACHE_DIR"]).expanduser().resolve()
    r = proc.run(
        [launcher["path"], "-k", "cache_dir"],
        env=env,
        capture=True,
        echo=False,
        check=False,
        what="ccache -k cache_dir",
    )
    d = r.output.strip().splitlines()[-1:] if r.returncode == 0 else []
    return Path(d[0]).expanduser().resolve() if d else None


def snapshot(cache_dir: Path | None) -> dict[str, tuple[int, int]]:
    """The cache entries of ``cache_dir`` now (relative path -> size, mtime), to diff later."""
    out: dict[str, tuple[int, int]] = {}
    if cache_dir is None or not cache_dir.is_dir():
        return out
    for p in cache_dir.rglob("*"):
        rel = p.relative_to(cache_dir)
        if (
            not p.is_file()
            or p.name in _NOT_ENTRIES
            or p.name.endswith((".lock", ".tmp"))
            or ".tmp." in p.name
            or rel.parts[0] in ("tmp", "lock")
        ):
            continue
        st = p.stat()
        out[rel.as_posix()] = (st.st_size, st.st_mtime_ns)
    return out


def _copy(source: Path, dest: Path, rels: list[str]) -> int:
    """Copy the entries ``rels`` of ``source`` to the same relative paths under ``dest``, each
    through a temporary name so a reader never sees half an entry; returns ``len(rels)``."""
    import shutil

    for rel in rels:
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(target.name + ".bundlegraph-merge.tmp")
        shutil.copy2(source / rel, tmp)
        tmp.replace(target)
    return len(rels)


def copy_added(cache_dir: Path, before: dict[str, tuple[int, int]], dest: Path) -> int:
    """Copy the entries of ``cache_dir`` that are new or changed since ``before`` into ``dest``
    (same relative paths: a ccache directory of only what this build added). Returns the count."""
    return _copy(cache_dir, dest, [rel for rel, sig in sorted(snapshot(cache_dir).items()) if before.get(rel) != sig])


def merge_into(source: Path, cache_dir: Path) -> int:
    """Copy every cache entry of the ccache directory ``source`` into ``cache_dir`` (entries
    already there are kept: an entry's name is its content's hash). Returns the count copied."""
    have = snapshot(cache_dir)
    return _copy(source, cache_dir, [rel for rel in sorted(snapshot(source)) if rel not in have])


__all__ = [
    "build_env",
    "build_stats",
    "copy_added",
    "describe",
    "local_dir",
    "merge_into",
    "redact",
    "remote_config",
    "remote_storage",
    "results_by_source",
    "snapshot",
    "uncacheable_counters",
    "writes_remote",
]
