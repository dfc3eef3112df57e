"""``build:<leg>`` as one shard (``doit build:L shard=I/N``): compile only shard *I*'s slice of
the leg's compile steps (:mod:`.shards`) through the compiler cache, link nothing, and leave a
shard folder for the leg's final compile.

The run (:func:`run_shard`):

1. reads the compile steps of the leg's targets from ninja (:func:`~.ninja_graph.compile_steps`)
   and the leg's cost record (:func:`~.costs.find`), splits them into N slices and takes slice I;
2. builds exactly those objects (``cmake --build <dir> --target <objects>``) with the build's
   compiler-cache environment (:func:`~.compiler_cache.build_env`: remote storage when
   ``BUNDLEGRAPH_CACHE_REMOTE`` is set);
3. writes ``build/<leg>/shard/`` (atomically): ``shard.json`` (the shard, its objects, the
   predicted and measured seconds, the cache's figures and the digest of the whole split) and,
   without remote storage, ``ccache/``: the cache entries this shard added, which the release
   workflow uploads as artifact ``shard-<leg>-<I>`` and the final compile merges
   (:func:`merge_shards`, ``bundlegraph shard-merge``).

A shard of a leg configured without a compiler cache is refused before it compiles, and one whose
compiles ccache could not cache fails naming ccache's reasons (:mod:`.compile.shard_guard`): either
would hand the final compile nothing. A shard records no stamp and no ``build.json``: it is never
complete and never packaged. Its measured seconds go into ``shard.json``, not the cost record, so
no shard changes what the others split by; :func:`merge_shards` folds them in.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from functools import partial
from pathlib import Path
from typing import Any

from ..core import paths, proc, settings
from ..core.buildenv import allowed_env
from ..core.errors import BundleGraphError, ToolFailed
from ..core.fsutil import atomic_dir, atomic_write_json
from ..core.lightclass import frozen
from ..core.remote_url import secrets_of
from ..core.report import say, warn
from ..schemas.shard_record import SHARD_FORMAT, ShardRecord
from ..toolchains.base import scrubbed
from .base import Context, Prepared, TaskPlan, run_plan
from .build import NAME, BuildPlan, Progress, configured_launcher, launcher_refusal, plan_build, record_cache_stats
from .compile import build_measure, compiler_cache, costs, shard_guard
from .compile import jobs as jobs_mod
from .compile.git_blind import without_git
from .compile.shards import ShardRef, ShardSlice, costed, count_problem, split


@frozen
class ShardPlan:
    """Shard ``shard`` of the leg whose full build is ``build``; ``out_dir`` the shard folder."""

    build: BuildPlan
    shard: ShardRef
    out_dir: Path

    def key(self) -> dict[str, Any]:
        """The shard and the leg's targets (shown, never recorded: a shard has no stamp)."""
        return {"shard": str(self.shard), "targets": self.build.targets}

    def describe(self) -> dict[str, Any]:
        return {"shard": str(self.shard)}


def plan_shard(ctx: Context, leg: str, shard: ShardRef) -> ShardPlan:
    """The :class:`ShardPlan` (pure: no process). Raises when ``shard`` does not fit the spec."""
    spec = ctx.spec(leg)
    if spec.build.shards != shard.count:
        raise BundleGraphError(
            f"shard={shard}: {leg} has [build] shards = {spec.build.shards} ({ctx.matrix.files.get(leg, leg)})"
            + (": it is not sharded" if spec.build.shards == 1 else f"; give shard=I/{spec.build.shards}")
        )
    return ShardPlan(plan_build(ctx, leg), shard, paths.build_dir(leg) / "shard")


def prepare_shard(ctx: Context, leg: str, shard: ShardRef) -> Prepared[ShardPlan]:
    """The shard task's plan value (its key is shown, never recorded)."""
    return Prepared.of(plan_shard(ctx, leg, shard))


def split_digest(slices: list[ShardSlice]) -> str:
    """sha256 of the whole split (every shard's outputs): equal on every shard of one leg when
    they split alike."""
    h = hashlib.sha256()
    for s in slices:
        h.update(json.dumps([s.index, s.outputs]).encode())
    return h.hexdigest()


def leg_slices(plan: BuildPlan, count: int) -> tuple[list[ShardSlice], costs.CostRecord | None]:
    """The split of a configured leg into ``count`` slices, and the cost record it used. Raises
    :class:`BundleGraphError` (one line, :func:`~.compile.shards.count_problem`) when the leg has
    fewer compile steps than ``count``: a shard would compile nothing, a runner spent for nothing."""
    from .compile.ninja_graph import compile_steps

    steps = compile_steps(plan.ninja, plan.cmake_dir, plan.targets)
    bad = count_problem(plan.leg, count, len(steps), plan.targets)
    if bad:
        raise BundleGraphError(bad)
    record = costs.find(plan.leg, plan.bundles)
    measured = record.objects if record else {}
    return split(costed(steps, measured, plan.cuda_archs), count), record


def run_shard(plan: ShardPlan) -> list[Path]:
    """Compile the shard (module docstring). Returns no stamp outputs (a shard records none).
    Raises :class:`ToolFailed` when a compile fails, :class:`BundleGraphError` when the leg is
    not configured."""
    bp, shard = plan.build, plan.shard
    leg = bp.leg
    if not (bp.cmake_dir / "CMakeCache.txt").is_file():
        raise BundleGraphError(f"build:{leg}: {bp.cmake_dir} is not configured; run configure:{leg}")
    chosen = configured_launcher(bp)
    if chosen is None:  # its objects would land nowhere: refused before compiling
        raise BundleGraphError(shard_guard.no_cache_problem(leg, shard.count, f"shard {shard}", launcher_refusal(bp)))
    slices, record = leg_slices(bp, shard.count)
    mine = slices[shard.index - 1]
    total = sum(len(s.steps) for s in slices)
    j = jobs_mod.decide(bp.cuda_archs, bp.msvc_host)
    origin = record.origin.as_posix() if record and record.origin else "the stated estimates"
    say(
        f"build:{leg}: shard {shard}: {len(mine.steps)} of {total} compile steps, {mine.seconds:.0f} CPU s predicted "
        f"(~{mine.wall(j.n):.0f} s at -j {j.n}; costs from {origin}); links nothing"
    )
    stats_log = bp.log.with_name("compiler-cache-stats.log")
    stats_log.unlink(missing_ok=True)
    spec = compiler_cache.remote_storage()
    remote = compiler_cache.writes_remote(spec)
    bp.log.parent.mkdir(parents=True, exist_ok=True)
    bp.log.write_text("", encoding="utf-8")
    with compiler_cache.remote_config(chosen, spec) as conf:
        env = without_git(
            compiler_cache.build_env(chosen, scrubbed(allowed_env(os.environ)), stats_log, conf), bp.cmake_dir.parent
        )
        cache_dir = None if remote else compiler_cache.local_dir(chosen, env)
        before = compiler_cache.snapshot(cache_dir)
        offset = build_measure.log_size(bp.cmake_dir)
        t0 = time.monotonic()
        if mine.outputs:
            argv = [bp.argv[0], "--build", bp.cmake_dir.as_posix(), "--target", *mine.outputs, "-j", str(j.n)]
            prog = Progress(leg)
            try:
                proc.run(
                    argv, env=env, log=bp.log, on_line=prog, what=f"build:{leg} shard {shard}", secrets=secrets_of(spec)
                )
            except ToolFailed as e:
                step = "\n".join(prog.failed) or "(no ninja FAILED: line; see the log)"
                raise ToolFailed(
                    f"build:{leg}: shard {shard} failed (exit {e.returncode})\nfailing step:\n{step}\n"
                    f"full output: {bp.log}",
                    returncode=e.returncode,
                    log=str(bp.log),
                ) from None
        else:
            say(f"build:{leg}: shard {shard} has no compile step (more shards than steps)")
    seconds = time.monotonic() - t0
    results = compiler_cache.results_by_source(stats_log) if chosen else None
    m = build_measure.measure(
        [c.step for c in mine.steps], build_measure.log_since(bp.cmake_dir, offset), results, bp.cmake_dir
    )
    stats = record_cache_stats(
        bp,
        chosen,
        env,
        stats_log,
        seconds,
        ok=True,
        extra={"shard": str(shard), "objects": len(mine.steps)},
        record=plan.out_dir.parent / "compiler-cache.json",
    )
    lost = shard_guard.uncacheable_problem(leg, str(shard), stats) if stats else ""
    if lost:  # no shard folder: nothing for the final compile to merge as if it were complete
        raise BundleGraphError(lost)
    with atomic_dir(plan.out_dir) as tmp:
        added = compiler_cache.copy_added(cache_dir, before, tmp / "ccache") if cache_dir else 0
        written = ShardRecord(  # the one type shard-merge validates it against
            format=SHARD_FORMAT,
            leg=leg,
            shard=str(shard),
            objects=list(mine.outputs),
            predicted_seconds=round(mine.seconds, 1),
            jobs=j.n,
            seconds=round(seconds, 1),
            costs_from=origin,
            split_digest=split_digest(slices),
            measured={k: round(v, 1) for k, v in sorted(m.objects.items())},
            cache={k: stats[k] for k in ("launcher", "version", "hits", "misses", "remote")} if stats else None,
            cache_entries_added=added,
            remote_storage=remote,
        )
        atomic_write_json(tmp / "shard.json", written.dump())
    say(
        f"build:{leg}: shard {shard} compiled {len(m.compiled)} object(s) in {seconds:.1f}s; "
        + (
            f"{added} cache entries in {plan.out_dir / 'ccache'}"
            if cache_dir
            else "its cache entries went to the remote storage"
        )
    )
    return []


@frozen
class MergeResult:
    """What :func:`merge_shards` did: ``entries`` copied into the cache, ``legs`` ->
    ``{"shards": found, "of": N, "measured": n}``, ``problems`` (one line each)."""

    entries: int
    legs: dict[str, dict[str, Any]]
    problems: list[str]


def plans(ctx: Context) -> list[TaskPlan]:
    """The build stage's tasks (:func:`bundlegraph.pipeline.build.plans`), where a shard run
    (``shard=I/N``) replaces each compiled leg of ``shards = N`` by its shard: compile shard I into
    the compiler cache, link nothing, record no stamp. Kept here, above the build stage, so that
    stage never imports its shards (no import circle)."""
    from .build import plans as build_plans

    shard = ctx.filters.shard
    out = []
    for p in build_plans(ctx):
        leg = p.leg
        if (
            shard is None
            or leg is None
            or ctx.imported_build(leg) is not None
            or ctx.spec(leg).build.shards != shard.count
        ):
            out.append(p)
            continue
        out.append(
            TaskPlan(
                stage=NAME,
                name=leg,
                leg=leg,
                deps=[f"configure:{leg}"],
                recorded=False,
                doc=f"compile shard {shard} of {leg} into the compiler cache (links nothing; never recorded)",
                prepare=partial(prepare_shard, ctx, leg, shard),
                apply=partial(run_plan, run_shard),
                preview=partial(plan_shard, ctx, leg, shard),
            )
        )
    return out


def missing_shards(leg: str, seen: list[str], of: int, root: Path) -> str:
    """The one line naming the shards of ``leg`` (of ``of``) whose artifact did not arrive under
    ``root`` (``seen``: the ``I/N`` that did); empty when none is missing."""
    gone = [i for i in range(1, of + 1) if f"{i}/{of}" not in seen]
    if not gone:
        return ""
    return (
        f"{leg}: shard {', '.join(f'{i}/{of}' for i in gone)} did not arrive: no shard.json of "
        f"{'it' if len(gone) == 1 else 'them'} under {root} (artifact {', '.join(f'shard-{leg}-{i}' for i in gone)}); "
        f"the final compile refuses to compile {'its' if len(gone) == 1 else 'their'} objects itself: "
        f"re-run the failed shard job"
    )


def merge_shards(
    root: Path, cache_dir: Path | None, bundles: Path | None, expect: dict[str, int] | None = None
) -> MergeResult:
    """Fold every shard folder under ``root`` (each ``shard.json``, as artifact downloads nest
    them) into this runner: their ``ccache/`` entries into ``cache_dir`` (skipped when None),
    their measured seconds into each leg's cost record (:func:`~.costs.save` to
    :func:`~.costs.write_dir`), and what they compiled into ``build/<leg>/shards-merged.json``
    (:func:`~.compile.shard_guard.write_merged`: the final compile fails when it misses one of
    those objects, and a record missing shards fails it before it compiles: :func:`missing_shards`).
    ``expect``: leg -> its shard count (``shard-merge --leg``): a leg of which no shard arrived at all
    is recorded too, with no shard. ``problems`` names, one line a leg, the shards that did not arrive;
    shards that split differently (their cost records differed) are a warning only. A damaged
    ``shard.json`` raises :class:`~bundlegraph.schemas.shard_record.ShardRecordError` (one line: file,
    key, value) before anything is merged; a damaged cost record :class:`~.costs.CostRecordError`."""
    from ..schemas.shard_record import read_shard

    found = sorted(root.rglob("shard.json"))
    by_leg: dict[str, list[tuple[Path, ShardRecord]]] = {}
    for f in found:  # every file is read and checked before anything is merged
        d = read_shard(f)
        by_leg.setdefault(d.leg, []).append((f.parent, d))
    entries = 0
    legs: dict[str, dict[str, Any]] = {}
    problems: list[str] = []
    for leg, n in sorted((expect or {}).items()):
        if leg not in by_leg:  # not one shard of it arrived
            problems.append(missing_shards(leg, [], n, root))
            shard_guard.write_merged(paths.build_dir(leg), leg, [], n, [], False)
            legs[leg] = {"shards": 0, "of": n, "measured": 0, "objects": 0}
    for leg, items in sorted(by_leg.items()):
        count = {d.count for _, d in items}
        seen = sorted({d.shard for _, d in items})
        n = (expect or {}).get(leg) or max(count)
        if len(count) > 1 or count != {n}:
            problems.append(
                f"{leg}: its shards were split {' and '.join(f'{c} ways' for c in sorted(count))}, "
                f"expected {n} (the spec's [build] shards): the shard jobs ran another spec"
            )
        elif missing_shards(leg, seen, n, root):
            problems.append(missing_shards(leg, seen, n, root))
        if len({d.split_digest for _, d in items}) > 1:
            warn(f"{leg}: its shards split differently (their cost records differed): expect misses")
        measured: dict[str, float] = {}
        for folder, d in items:
            if cache_dir is not None and (folder / "ccache").is_dir():
                entries += compiler_cache.merge_into(folder / "ccache", cache_dir)
            measured.update(d.measured)
        if measured:
            record = costs.find(leg, bundles) or costs.CostRecord(leg)
            costs.save(record.merged(measured))
        wrote = [str(o) for _, d in items for o in d.objects]
        remote = any(bool(d.remote_storage) for _, d in items)
        shard_guard.write_merged(paths.build_dir(leg), leg, seen, n, wrote, remote)
        legs[leg] = {"shards": len(seen), "of": n, "measured": len(measured), "objects": len(set(wrote))}
    if not found and not expect:
        problems.append(f"{root}: no shard.json under it (nothing to merge)")
    return MergeResult(entries, legs, problems)


def ccache_dir_for_merge(env: dict[str, str] | None = None) -> Path | None:
    """The local ccache directory the final compile will use (``CCACHE_DIR``, else what the
    installed ccache says), None without ccache."""
    from .compile.launcher import find

    env = dict(os.environ if env is None else env)
    if settings.get("LAUNCHER", env) == "none":
        return None
    exe = find("ccache", env)
    return compiler_cache.local_dir({"name": "ccache", "path": exe}, env) if exe else None


__all__ = [
    "NAME",
    "MergeResult",
    "ShardPlan",
    "ccache_dir_for_merge",
    "leg_slices",
    "merge_shards",
    "missing_shards",
    "plan_shard",
    "plans",
    "prepare_shard",
    "run_shard",
    "split_digest",
]
