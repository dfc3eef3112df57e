"""The guards that make a sharded leg's shards count (issue 39, item 1).

A leg of ``[build] shards = N`` compiles as N shard jobs that only fill the compiler cache, and a
final compile that should then only link. Two ways this silently wastes every shard, each now an
error naming the leg:

- **no compiler cache**: a shard run, or the final compile of shards, of a leg whose configure
  chose no launcher (:func:`no_cache_problem`). A shard's objects land nowhere else, so a shard
  without a cache is a runner spent for nothing, and the final compile recompiles everything;
- **a shard's compiles were uncacheable** (a compiler option ccache refuses, say): its work is
  lost as surely (:func:`uncacheable_problem`);
- **a shard never arrived**: ``shard-merge --leg L`` records the shards it found, also none; a
  final compile whose record lacks a shard fails before compiling, naming the leg, the shard and
  its artifact (:func:`absent_problem`): it would compile that shard's objects itself;
- **the final compile missed what the shards wrote**: ``bundlegraph shard-merge`` leaves
  ``build/<leg>/shards-merged.json`` (:func:`write_merged`: the objects the merged shards
  compiled, their count, whether the entries went to remote storage); the final compile (a full
  ``build:<leg>`` in the same work directory) compares its cache misses with it
  (:func:`shortfall`) and fails naming each missed object (a miss is slower, and on the
  Windows CUDA legs a full recompile does not fit the job: issue 39).

Which objects missed comes from ccache's stats log, which names each call's source file
(:func:`~.compiler_cache.results_by_source`): exact where one source makes one object (every
ggml-cuda object); a source compiled for several targets is named by its last call. The count is
exact either way.

A full build of a sharded leg with no ``shards-merged.json`` (a local build, no shards ran) is not
a final compile: its misses stay a warning. The record is removed once a final compile passes, so a
later local rebuild is judged as a local build again.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ...core.fsutil import atomic_write_json

MERGED = "shards-merged.json"
"""The file ``bundlegraph shard-merge`` leaves in ``build/<leg>/`` for the final compile."""

FORMAT = "bundlegraph-shards-merged/1"


def write_merged(build_dir: Path, leg: str, shards: list[str], of: int, objects: list[str], remote: bool) -> Path:
    """Write ``build_dir/shards-merged.json``: ``{"format", "leg", "shards": ["1/3", ...], "of": N,
    "objects": [ninja outputs the shards compiled], "remote_storage"}`` (atomically). Returns the
    path."""
    f = build_dir / MERGED
    atomic_write_json(
        f,
        {
            "format": FORMAT,
            "leg": leg,
            "shards": sorted(shards),
            "of": of,
            "objects": sorted(set(objects)),
            "remote_storage": remote,
        },
    )
    return f


def read_merged(build_dir: Path) -> dict[str, Any] | None:
    """``build_dir/shards-merged.json`` when it is there and well formed (a list of objects),
    else None: an unreadable record judges nothing (the build then warns as a local one)."""
    try:
        data = json.loads((build_dir / MERGED).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("objects"), list):
        return None
    return data


def absent_shards(merged: dict[str, Any]) -> list[str]:
    """The shards (``I/N``) of :func:`read_merged`'s record that ``shard-merge`` did not find."""
    of = merged.get("of")
    if not isinstance(of, int) or of < 2:
        return []
    seen = set(merged.get("shards") or [])
    return [f"{i}/{of}" for i in range(1, of + 1) if f"{i}/{of}" not in seen]


def absent_problem(merged: dict[str, Any], record: Path) -> str:
    """The one line failing the final compile of a leg some of whose shards never arrived
    (:func:`absent_shards`; ``record``: the file that says so), before anything compiles."""
    leg, gone = merged.get("leg", "?"), absent_shards(merged)
    artifacts = ", ".join(f"shard-{leg}-{g.partition('/')[0]}" for g in gone)
    return (
        f"build:{leg}: the final compile of a leg of {merged.get('of')} shards: shard {', '.join(gone)} did not "
        f"arrive (artifact {artifacts}; {record}): its objects "
        f"would be compiled here, slower and maybe past the job's limit; re-run the failed shard job (or delete "
        f"{record.name} to build the leg as a local build)"
    )


def no_cache_problem(leg: str, shards: int, role: str, why: str) -> str:
    """The one line refusing a shard run or final compile (``role``) of ``leg`` (``shards`` > 1)
    without a compiler cache; ``why`` is configure's reason for choosing none."""
    return (
        f"build:{leg}: {role} of a leg of {shards} shards without a compiler cache "
        f"({why or 'configure chose no launcher'}): the shards' objects reach the final compile only through "
        f"the cache, so every shard would be a runner spent for nothing; install ccache (pip install -e .[tools]) "
        f"and configure:{leg} again, or unset BUNDLEGRAPH_LAUNCHER=none"
    )


def shortfall(
    merged: dict[str, Any], compiled: list[str] | None, hit: list[str] | None, hits: int
) -> tuple[list[str], str]:
    """What the final compile did not take from its shards: ``(objects, line)``, both empty when
    nothing. ``merged``: :func:`read_merged`'s record; ``compiled``/``hit``: the ninja outputs the
    build compiled and those the cache hit (:class:`~.build_measure.Measured`): an object the
    shards wrote, compiled here and not a hit was missed *or uncacheable* (a compiler option
    ccache refuses loses every shard's work as surely as a miss). None when they could not be read:
    then ``hits`` below the shards' object count fails, naming no object."""
    wrote = [o.replace("\\", "/") for o in merged.get("objects", [])]
    if compiled is not None and hit is not None:
        took = {h.replace("\\", "/") for h in hit}
        lost = sorted(set(wrote) & {c.replace("\\", "/") for c in compiled} - took)
        if not lost:
            return [], ""
        short = len(lost)
    elif hits >= len(wrote):
        return [], ""
    else:
        lost, short = [], len(wrote) - hits
    leg = merged.get("leg", "?")
    names = ", ".join(lost[:20]) + (" ..." if len(lost) > 20 else "") if lost else "(objects unknown: no ninja log)"
    line = (
        f"build:{leg}: the final compile got {hits} cache hit(s) but its {len(merged.get('shards', []))} of "
        f"{merged.get('of', '?')} shards wrote {len(wrote)} object(s); it missed {short}: {names}"
    )
    return lost, line


def uncacheable_problem(leg: str, shard: str, stats: dict[str, Any]) -> str:
    """The one line failing shard ``shard`` of ``leg`` when some of its compiles were uncacheable
    (``stats``: :func:`~.compiler_cache.build_stats`), naming ccache's counters that say why; empty
    when none was. A shard compiles only into the cache, so an uncacheable compile is lost work."""
    from .compiler_cache import uncacheable_counters

    why = uncacheable_counters(stats.get("counters", {}))
    if not stats.get("uncacheable"):
        return ""
    return (
        f"build:{leg}: shard {shard}: {stats['uncacheable']} compile(s) could not be cached "
        f"({', '.join(f'{k}: {v}' for k, v in why.items())}); the final compile would compile them again: "
        f"run it with CCACHE_DEBUG=1 and see ccache's log for the option or input it refused"
    )


__all__ = [
    "FORMAT",
    "MERGED",
    "absent_problem",
    "absent_shards",
    "no_cache_problem",
    "read_merged",
    "shortfall",
    "uncacheable_problem",
    "write_merged",
]
