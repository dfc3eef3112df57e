"""Stage ``build``: ``cmake --build build/<leg>/cmake --target <targets> -j N``.

Pure plan (:func:`plan_build`) plus run (:func:`run_build`). ``targets`` are the spec's
``build.targets`` (empty: everything) unless a target filter is given: the doit variable
``build_targets=`` or ``BUNDLEGRAPH_BUILD_TARGETS`` (comma- or semicolon-separated CMake target
names or ninja outputs relative to ``build/<leg>/cmake``, e.g. an object file
``ggml/src/ggml-cuda/CMakeFiles/ggml-cuda.dir/argmax.cu.o``). A filtered build is recorded as
such (``filtered: true`` in ``build.json``) and its action key differs, so a later full build
runs. ``N`` comes from :mod:`.jobs` (``BUNDLEGRAPH_JOBS`` overrides).

The action key holds configure's output digest, the source digest, the targets and the
cmake/ninja versions; ninja does the fine-grained work inside. Progress: ninja's ``[n/N]`` lines
with elapsed time; full output in ``build/<leg>/logs/build.log`` (rewritten each run); on
failure the failing step's output and command and the log's tail.

Outputs for later stages (``build/<leg>/build.json``, the stamp's first output):
``artifacts_dir`` (``build/<leg>/cmake/bin``: llama.cpp's and the stand-in's libraries and
programs), ``outputs`` (``{path relative to the work dir: sha256}`` of every regular file in
``artifacts_dir`` plus each filtered ninja output that is a file), ``targets``, ``filtered``,
(the command line, job count and time are in the log and
the stamp, not here, so a record holds only what describes the outputs). The stamp fingerprints ``build.json`` and those files.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import time
from collections.abc import Callable
from dataclasses import field, replace
from pathlib import Path
from typing import Any

from ..core import paths, proc, report, settings
from ..core.buildenv import allowed_env
from ..core.errors import BundleGraphError, ToolFailed
from ..core.fsutil import atomic_dir, atomic_write_json, rmtree, sha256_file
from ..core.lightclass import frozen
from ..core.platforms import platform
from ..core.remote_url import secrets_of
from ..core.report import say
from ..toolchains.base import scrubbed
from ..toolchains.tools import build_tools
from .base import Context, Prepared, file_listing, leg_task, upstream_digest
from .compile import build_measure, compiler_cache, costs, shard_guard
from .compile import jobs as jobs_mod
from .compile.git_blind import without_git
from .configure import side_of
from .source import source_record_if_any
from .stage_records import BuildRecord, read_configure

NAME = "build"
"""The stage's name: its tasks are ``build:<leg>`` (:mod:`bundlegraph.pipeline.stages`)."""

_PROGRESS = re.compile(r"^\[(\d+)/(\d+)\]\s*(.*)$")


def target_filter(get_var: Callable[[str, object], object] | None = None) -> list[str] | None:
    """The target filter: doit ``build_targets=`` else ``BUNDLEGRAPH_BUILD_TARGETS``; None when unset.
    doit's variables are read only inside a doit run (doit already imported): the ``bundlegraph``
    command does not import doit for them."""
    raw = None
    if get_var is None and "doit" in sys.modules:
        from doit import get_var as doit_var

        get_var = doit_var
    if get_var is not None:
        raw = get_var("build_targets", None)
    if raw:
        return [t.strip() for t in re.split(r"[,;]", str(raw)) if t.strip()]
    targets: list[str] | None = settings.get("BUILD_TARGETS")
    return targets


@frozen
class BuildPlan:
    """``argv`` without ``-j`` (added at run time), ``targets``, ``filtered``, ``cmake_dir``,
    ``artifacts_dir``, ``record`` (build.json), ``log``."""

    leg: str
    argv: list[str]
    targets: list[str]
    filtered: bool
    cmake_dir: Path
    artifacts_dir: Path
    record: Path
    log: Path
    cuda_archs: int
    msvc_host: bool
    shards: int = 1
    """The spec's ``[build] shards``: a sharded leg's build reports the objects its cache missed."""
    bundles: Path | None = None
    """The bundles directory (where a committed cost record is found: :mod:`.costs`)."""
    ninja: str = "ninja"
    consumed: dict[str, Any] = field(default_factory=dict)
    """What the prepared plan read of upstream tasks and this host (:func:`prepare`):
    ``configure`` (configure's output digest), ``source_digest``, ``tools`` (cmake's and ninja's
    versions); empty in a plan not prepared to run (:func:`plan_build`)."""

    def command(self, n: int | str = "N") -> str:
        return proc.quote([*self.argv, "-j", str(n)])

    def key(self) -> dict[str, Any]:
        """configure's output digest, the source digest, the targets, the tool versions."""
        c = self.consumed
        return {
            "configure": c.get("configure", "missing"),
            "source_digest": c.get("source_digest", "missing"),
            "targets": self.targets,
            "filtered": self.filtered,
            "tools": c.get("tools"),
        }

    def describe(self) -> dict[str, Any]:
        """The build command with the jobs it would run, why that many, where its output and log go."""
        j = jobs_mod.decide(self.cuda_archs, self.msvc_host)
        return {
            "build": self.command(j.n),
            "jobs": j.why,
            "artifacts_dir": self.artifacts_dir.as_posix(),
            "log": self.log.as_posix(),
        }


def plan_build(ctx: Context, leg: str) -> BuildPlan:
    """The build plan of ``leg`` (pure: no process)."""
    spec = ctx.spec(leg)
    flt = target_filter()
    targets = flt if flt is not None else list(spec.build.targets)
    bdir = paths.build_dir(leg)
    cmake_dir = bdir / "cmake"
    try:
        tools = build_tools()
        cmake, ninja = str(tools.cmake.path), str(tools.ninja.path)
    except BundleGraphError:
        cmake, ninja = "cmake", "ninja"
    argv = [cmake, "--build", cmake_dir.as_posix()]
    if targets:
        argv += ["--target", *targets]
    return BuildPlan(
        leg,
        argv,
        targets,
        flt is not None,
        cmake_dir,
        cmake_dir / "bin",
        bdir / "build.json",
        ctx.log(leg, "build"),
        side_of(spec.backend).device_targets(spec),
        platform(spec.os).msvc_host,
        spec.build.shards,
        ctx.matrix.root,
        ninja,
    )


def _outputs(plan: BuildPlan) -> list[Path]:
    files: list[Path] = []
    if plan.artifacts_dir.is_dir():
        files += sorted(p for p in plan.artifacts_dir.rglob("*") if p.is_file() and not p.is_symlink())
    if plan.filtered:
        for t in plan.targets:
            p = plan.cmake_dir / t
            if p.is_file() and p not in files:
                files.append(p)
    return files


class Progress:
    """Prints ninja's ``[n/N]`` lines with elapsed time; remembers the last failing step."""

    def __init__(self, leg: str):
        self.leg = leg
        self.t0 = time.monotonic()
        self.failed: list[str] = []
        self._in_failure = 0

    def __call__(self, line: str) -> None:
        m = _PROGRESS.match(line)
        if m:
            self._in_failure = 0
            n, total, what = m.groups()
            el = time.monotonic() - self.t0
            pct = 100 * int(n) // max(1, int(total))
            say(f"[build:{self.leg}] {pct:3d}% [{n}/{total}] {el:7.1f}s {what[:140]}")
            return
        if line.startswith("FAILED:"):
            self.failed = [line]
            self._in_failure = 1
        elif self._in_failure and len(self.failed) < 2:
            self.failed.append(line)  # ninja prints the failing command right after FAILED:


def prepare(ctx: Context, leg: str) -> Prepared[BuildPlan]:
    """``build:<leg>``'s plan value: the :class:`BuildPlan` and the key computed from it."""
    src = source_record_if_any(leg)
    consumed = {
        "configure": upstream_digest(f"configure:{leg}"),
        "source_digest": src.digest if src is not None else "missing",
        "tools": build_tools().key(),
    }
    return Prepared.of(replace(plan_build(ctx, leg), consumed=consumed))


def run_build(plan: BuildPlan) -> list[Path]:
    """Build by ``plan`` alone (the one its key was computed from); returns the stamp outputs
    (``build.json`` first). Raises :class:`ToolFailed` with the failing command and the log tail."""
    leg = plan.leg
    if not (plan.cmake_dir / "CMakeCache.txt").is_file():
        raise BundleGraphError(f"build:{leg}: {plan.cmake_dir} is not configured; run configure:{leg}")
    j = jobs_mod.decide(plan.cuda_archs, plan.msvc_host)
    argv = [*plan.argv, "-j", str(j.n)]
    say(
        f"build:{leg}: targets {' '.join(plan.targets) or '(all)'}{' (filtered)' if plan.filtered else ''}, "
        f"-j {j.n} [{j.why}]"
    )
    plan.log.parent.mkdir(parents=True, exist_ok=True)
    plan.log.write_text("", encoding="utf-8")
    prog = Progress(leg)
    t0 = time.monotonic()
    chosen = configured_launcher(plan)
    merged = shard_guard.read_merged(plan.record.parent) if plan.shards > 1 and not plan.filtered else None
    if merged is not None and chosen is None:  # the final compile of shards: refused before compiling
        raise BundleGraphError(
            shard_guard.no_cache_problem(leg, plan.shards, "the final compile", launcher_refusal(plan))
        )
    if merged is not None and shard_guard.absent_shards(merged):  # a shard's artifact never arrived
        raise BundleGraphError(shard_guard.absent_problem(merged, plan.record.parent / shard_guard.MERGED))
    stats_log = plan.log.with_name("compiler-cache-stats.log")
    stats_log.unlink(missing_ok=True)
    remote = compiler_cache.remote_storage()
    with compiler_cache.remote_config(chosen, remote) as conf:
        env = without_git(
            compiler_cache.build_env(chosen, scrubbed(allowed_env(os.environ)), stats_log, conf), plan.cmake_dir.parent
        )
        offset = build_measure.log_size(plan.cmake_dir)
        try:
            proc.run(argv, env=env, log=plan.log, on_line=prog, what=f"build:{leg}", secrets=secrets_of(remote))
        except ToolFailed as e:
            record_cache_stats(plan, chosen, env, stats_log, time.monotonic() - t0, ok=False)
            tail = plan.log.read_text(encoding="utf-8", errors="replace").splitlines()[-40:]
            step = "\n".join(prog.failed) or "(no ninja FAILED: line; see the log)"
            raise ToolFailed(
                f"build:{leg}: {proc.quote(argv)} failed (exit {e.returncode})\nfailing step:\n{step}\n"
                f"--- last lines of {plan.log} ---\n" + "\n".join(tail),
                returncode=e.returncode,
                log=str(plan.log),
            ) from None
    outs = _outputs(plan)
    if plan.filtered:
        missing = [t for t in plan.targets if "/" in t and not (plan.cmake_dir / t).is_file()]
        if missing:
            raise BundleGraphError(f"build:{leg}: the build did not produce {', '.join(missing)}")
    took = time.monotonic() - t0
    measured = None if plan.filtered else _measure_full_build(plan, chosen, stats_log, offset)
    stats = record_cache_stats(plan, chosen, env, stats_log, took, ok=True, measured=measured, merged=merged)
    if stats is not None and stats.get("shard_shortfall"):
        # no build.json: the task fails and records nothing (shard_guard's module docstring says why)
        raise BundleGraphError(stats["shard_shortfall"])
    wd = paths.workdir()
    built = BuildRecord(
        leg=leg,
        targets=plan.targets,
        filtered=plan.filtered,
        artifacts_dir=plan.artifacts_dir.as_posix(),
        cmake_dir=plan.cmake_dir.as_posix(),
        outputs={_rel(p, wd): sha256_file(p) for p in outs},
    )
    atomic_write_json(plan.record, built.to_json())
    if merged is not None:
        (plan.record.parent / shard_guard.MERGED).unlink(missing_ok=True)  # judged: later builds are local ones
    say(f"build:{leg}: {proc.quote(argv)} finished in {took:.1f}s")
    return [plan.record, *outs]


def _measure_full_build(
    plan: BuildPlan, chosen: dict[str, Any] | None, stats_log: Path, offset: int
) -> build_measure.Measured | None:
    """After a complete build: what it measured (:mod:`.build_measure`), folded into the leg's
    cost record (:mod:`.costs`: only real compiles and the other steps it ran). A failure to
    read ninja's graph or log costs the record, never the build: it is said and ignored."""
    from .compile.ninja_graph import compile_steps

    try:
        steps = compile_steps(plan.ninja, plan.cmake_dir, plan.targets)
        ran = build_measure.log_since(plan.cmake_dir, offset)
        results = compiler_cache.results_by_source(stats_log) if chosen else None
        m = build_measure.measure(steps, ran, results, plan.cmake_dir)
        if m.objects or m.other:
            record = costs.find(plan.leg, plan.bundles) or costs.CostRecord(plan.leg)
            saved = costs.save(record.merged(m.objects, m.other))
            say(f"build:{plan.leg}: cost record {saved}: {len(m.objects)} compile step(s) measured anew")
        return m
    except BundleGraphError as e:
        report.warn(f"build:{plan.leg}: no cost figures from this build: {str(e).splitlines()[0]}")
        return None


def configured_launcher(plan: BuildPlan) -> dict[str, Any] | None:
    """The ``launcher`` entry configure recorded (``configure.json``), None when none."""
    try:
        rec = read_configure(plan.leg, plan.record.parent)
    except BundleGraphError:
        return None
    got = rec.launcher if rec is not None else None
    return got if isinstance(got, dict) and got.get("name") else None


def launcher_refusal(plan: BuildPlan) -> str:
    """Why configure chose no launcher (``configure.json``'s ``launcher.refused``), empty when
    it did not say or the record cannot be read."""
    try:
        rec = read_configure(plan.leg, plan.record.parent)
    except BundleGraphError:
        return ""
    got = rec.launcher if rec is not None else None
    return str(got.get("refused") or "") if isinstance(got, dict) else ""


def record_cache_stats(
    plan: BuildPlan,
    chosen: dict[str, Any] | None,
    env: dict[str, str],
    stats_log: Path,
    seconds: float,
    *,
    ok: bool,
    measured: build_measure.Measured | None = None,
    record: Path | None = None,
    extra: dict[str, Any] | None = None,
    merged: dict[str, Any] | None = None,
) -> dict[str, Any] | None:
    """Write ``build/<leg>/compiler-cache.json`` (or ``record``; not a stamp output: hit counts
    describe the run, not the outputs) and, on GitHub Actions, a line of the step summary. With
    ``measured``: ``missed_objects`` lists the compile steps the cache missed; a sharded leg's
    full build that missed any says so, naming them. With ``merged`` (the shards this final
    compile took, :func:`~.compile.shard_guard.read_merged`): a miss of an object the shards wrote
    is a shortfall: ``shard_shortfall`` (one line naming the leg and the objects) and
    ``shard_missed`` go into the record and the summary, and the caller fails the build. Returns
    the statistics written (None without a cache)."""
    from . import ci

    stats = compiler_cache.build_stats(chosen, env, stats_log, compiler_cache.remote_storage())
    record = record or plan.record.with_name("compiler-cache.json")
    if stats is None:
        why = "no compiler cache" if chosen is None else f"{chosen.get('name')}: no statistics"
        atomic_write_json(
            record, {"leg": plan.leg, "launcher": None, "why": why, "seconds": round(seconds, 1), **(extra or {})}
        )
        return None
    stats |= {"leg": plan.leg, "seconds": round(seconds, 1), "build_ok": ok, "filtered": plan.filtered, **(extra or {})}
    if measured is not None:
        stats["missed_objects"] = sorted(measured.missed)
    lost: list[str] = []
    shortfall = ""
    if merged is not None:
        lost, shortfall = shard_guard.shortfall(
            merged,
            measured.compiled if measured is not None else None,
            measured.hit if measured is not None else None,
            stats["hits"],
        )
        stats["shards_wrote"] = len(merged.get("objects", []))
        if shortfall:
            stats |= {"shard_shortfall": shortfall, "shard_missed": lost}
    atomic_write_json(record, stats)
    say(f"build:{plan.leg}: {compiler_cache.describe(stats)}")
    ci.write_cache_summary(stats)
    if shortfall:
        report.warn(shortfall, annotate=True)
        ci.write_missed_summary(plan.leg, plan.shards, lost, failed=True)
    elif measured is not None and plan.shards > 1 and not extra:
        if measured.missed:
            names = ", ".join(sorted(measured.missed)[:20]) + (" ..." if len(measured.missed) > 20 else "")
            msg = (
                f"build:{plan.leg}: the final compile of a leg of {plan.shards} shards missed the compiler cache "
                f"for {len(measured.missed)} object(s), compiled here instead (slower, not wrong): {names}"
            )
            report.warn(msg, annotate=True)
            ci.write_missed_summary(plan.leg, plan.shards, sorted(measured.missed))
        else:
            say(f"build:{plan.leg}: the final compile of {plan.shards} shards found every compiled object in the cache")
    return stats


def _rel(p: Path, wd: Path) -> str:
    try:
        return p.resolve().relative_to(wd).as_posix()
    except ValueError:
        return p.resolve().as_posix()


@frozen
class ImportPlan:
    """``build:<leg>`` of a leg whose build ran on another runner (doit ``built=DIR``): copy the
    output folder ``source`` (``DIR/<leg>/`` or ``DIR/built-<leg>/``) into ``artifacts_dir`` (where
    a local build leaves it) and record its provenance in ``record`` (``build.json``:
    ``imported.from`` and the sha256 of every file). Verify, merge and package then treat it
    exactly as a local build."""

    leg: str
    source: Path
    artifacts_dir: Path
    record: Path
    listing: tuple[tuple[str, int, int], ...] = ()
    """The imported files (name, size, mtime) when prepared (:func:`prepare_import`)."""

    def key(self) -> dict[str, Any]:
        """The imported files, by name, size and mtime."""
        return {"imported": [list(x) for x in self.listing]}

    def describe(self) -> dict[str, Any]:
        return {"imported_from": self.source.as_posix()}


def plan_import(ctx: Context, leg: str) -> ImportPlan:
    """The :class:`ImportPlan` of ``leg`` (its ``built=`` folder must exist)."""
    src = ctx.imported_build(leg)
    if src is None:
        raise BundleGraphError(f"build:{leg}: no build output for {leg} in built={ctx.filters.built}")
    bp = plan_build(ctx, leg)
    return ImportPlan(leg, src, bp.artifacts_dir, bp.record)


def prepare_import(ctx: Context, leg: str) -> Prepared[ImportPlan]:
    """``build:<leg>`` (imported)'s plan value: keyed by the imported files (name, size, mtime)."""
    plan = plan_import(ctx, leg)
    listing = file_listing((p for p in plan.source.rglob("*") if not p.is_symlink()), plan.source)
    return Prepared.of(replace(plan, listing=tuple(listing)))


def run_import(plan: ImportPlan) -> list[Path]:
    """Copy the imported output into place (atomic: a fresh folder renamed over the old one) and
    write ``build.json`` with its provenance. Raises when the folder is empty or holds a link."""
    files = sorted(p for p in plan.source.rglob("*") if not p.is_dir())
    links = [p for p in files if p.is_symlink()]
    if links or not files:
        raise BundleGraphError(
            f"build:{plan.leg}: the imported output {plan.source} "
            + (f"holds links ({links[0].name}): copy real files" if links else "is empty")
        )
    if plan.artifacts_dir.exists():
        rmtree(plan.artifacts_dir)
    plan.artifacts_dir.parent.mkdir(parents=True, exist_ok=True)
    with atomic_dir(plan.artifacts_dir) as tmp:
        for f in files:
            dest = tmp / f.relative_to(plan.source)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(f, dest)
    outs = sorted(p for p in plan.artifacts_dir.rglob("*") if p.is_file())
    digests = {p.relative_to(plan.artifacts_dir).as_posix(): sha256_file(p) for p in outs}
    wd = paths.workdir()
    built = BuildRecord(
        leg=plan.leg,
        targets=[],
        filtered=False,
        artifacts_dir=plan.artifacts_dir.as_posix(),
        imported={"from": plan.source.as_posix(), "files": digests},
        outputs={_rel(p, wd): digests[p.relative_to(plan.artifacts_dir).as_posix()] for p in outs},
    )
    atomic_write_json(plan.record, built.to_json())
    say(
        f"build:{plan.leg}: imported {len(outs)} file{'' if len(outs) == 1 else 's'} built elsewhere from {plan.source}"
    )
    return [plan.record, *outs]


def plans(ctx: Context) -> list[Any]:
    """``build:<leg>`` for every selected leg, after ``configure:<leg>`` (a shard run's tasks:
    :func:`bundlegraph.pipeline.shard_build.plans`, which the graph uses for this stage)."""
    out = []
    for leg in ctx.legs:
        if (src := ctx.imported_build(leg)) is not None:
            doc, deps = f"import {leg}'s build output made on another runner ({src})", [f"source:{leg}"]
            out.append(
                leg_task(
                    NAME, ctx, leg, doc=doc, deps=deps, prepare=prepare_import, run=run_import, preview=plan_import
                )
            )
        else:
            doc, deps = f"cmake --build of {leg}", [f"configure:{leg}"]
            out.append(leg_task(NAME, ctx, leg, doc=doc, deps=deps, prepare=prepare, run=run_build, preview=plan_build))
    return out
