"""The predicted timeline of a release: every job of the release workflow
(:mod:`bundlegraph.release.jobs`), its predicted minutes from the legs' cost records
(:mod:`bundlegraph.pipeline.compile.costs`) and the runners' job count, and the critical path (the chain
of jobs that decides when the manifest job ends). ``bundlegraph plan --critical-path`` prints it
and writes the same timeline as a Mermaid ``gantt`` block (GitHub renders it in a step summary);
``bench/critical_path.py`` compares workflow shapes and shard counts with it.

A row's predicted seconds (:func:`row_seconds`) are the sum of:

- the fixed parts of a job (:data:`OVERHEAD_S`: start, checkout and setup; Debian packages on a
  Linux runner; the source; the CUDA toolkit; configure; verify/merge/package/smoke; artifacts);
- its compile: all steps of the leg (a whole compile), one shard's slice (:func:`~.pipeline.shards.split`
  of the same record, as the shard job splits), or only cache hits (a final compile after the
  shards), scheduled longest first on ``jobs`` slots (:func:`~.pipeline.shards.makespan`), plus
  the leg's other steps (links) one after another; times ``speed`` (a runner core's seconds per
  second of the core that measured the record).

A job starts when every row of every job it needs has ended (GitHub's ``needs:`` is per job);
all rows of a job run at once (one runner each). A leg without a cost record is predicted from
:data:`NO_RECORD` (stated step counts) and the stated per-step estimates.

Two pictures of one workflow (every figure here is modeled from cost records, never measured):

- **warm** (:attr:`Assumptions.cold` False): every sharded leg's final compile takes its shards'
  objects as cache hits, except the legs of :attr:`Assumptions.uncached` (a leg whose final compile
  cannot take hits, e.g. no compiler cache for its compiler), which are modeled as a full compile;
- **cold** (:attr:`Assumptions.cold` True): every final compile misses everything and compiles the
  whole leg, the worst case a row can meet (a shard never compiles more than its slice).

A row's ``timeout-minutes`` (:func:`row_timeout`) covers its cold figure with
:data:`COLD_MARGIN` and :data:`TIMEOUT_SLACK_MIN`, at most :data:`GITHUB_JOB_LIMIT_MIN`;
:func:`timeout_problems` refuses a leg that cannot fit even so and flags a final compile that
fits only with its shards' hits.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import field, replace

from ..backends.cuda.spec import CUDA
from ..core.lightclass import frozen
from ..core.platforms import platform
from ..pipeline.compile.costs import CostRecord
from ..pipeline.compile.ninja_graph import CompileStep
from ..pipeline.compile.shards import ESTIMATE_SECONDS, HIT_SECONDS, CostedStep, costed, makespan, split
from ..pipeline.configure import side_of
from ..schemas.records import BundleSpec
from .jobs import JOBS, MANIFEST_NEEDS, JobRow

OVERHEAD_S: dict[str, float] = {
    "job": 90.0,  # a hosted runner's start, checkout, setup-python and `pip install -e .[tools]`
    "apt": 40.0,  # Linux rows: apt-get install of the toolchain's packages (the cross compilers, qemu-user)
    "source": 20.0,  # the llama.cpp source: pip download of the sdist and unpack (BENCHMARKS: ~15 s cold)
    "toolkit_wheels": 60.0,  # CUDA from NVIDIA's wheels: 6 wheels, ~1.3 GB (BENCHMARKS "toolkit": 14.7 s here)
    "toolkit_redist": 120.0,  # CUDA from NVIDIA's redist archives on windows-2022: our install took 25 s for 689 MB
    # here (BENCHMARKS "toolkit"), taken x4 for a runner's network and NTFS (the full installer
    # the pipeline we replace runs took 7 min there: FINDINGS)
    "toolkit_host": 0.0,
    "configure_cuda": 48.0,  # a CUDA leg's configure on a 4-vCPU runner: 48 s (FINDINGS, the WoA leg)
    "configure_cpu": 20.0,
    "package": 120.0,  # verify, merge, package, smoke and the bundle's upload (BENCHMARKS main job: ~50 s here)
    "artifact": 30.0,  # one artifact's upload or download (built-<leg>, shard caches)
    "plan": 60.0,  # the plan job: start, checkout, pip install -e ., bundlegraph matrix
    "manifest": 150.0,  # the manifest job: downloads, manifest, SHA index, coverage gate, upload
}
"""Seconds of the fixed parts of a job (estimates, each with its source)."""

NO_RECORD = {"cpu_steps": 300, "cuda_steps": 144, "cuda_host_steps": 9}
"""A leg with no cost record: llama.cpp's CPU build (313 ninja steps on aarch64, BENCHMARKS main
job) and ggml-cuda (144 CUDA objects, 9 C/C++ of ggml-base: FINDINGS) at the stated estimates."""


@frozen
class Assumptions:
    """``jobs``: compiles a runner runs at once (``-j``; 3 on a 4-vCPU runner, the memory ceiling
    FINDINGS names); ``speed``: a runner core's seconds per recorded second; ``overhead``:
    :data:`OVERHEAD_S` with any changes; ``cold``: every final compile misses everything (module
    docstring); ``uncached``: leg ids whose final compile cannot take cache hits (modeled as a full
    compile even when warm)."""

    jobs: int = 3
    speed: float = 1.0
    overhead: Mapping[str, float] = field(default_factory=lambda: dict(OVERHEAD_S))
    cold: bool = False
    uncached: frozenset[str] = frozenset()


def _lang(key: str) -> str:
    return "CUDA" if key.endswith(".cu") else "C" if key.endswith(".c") else "CXX"


def leg_steps(spec: BundleSpec, record: CostRecord | None) -> tuple[list[CostedStep], float]:
    """The costed compile steps of a leg as its record knows them (or :data:`NO_RECORD`), and
    the seconds of its other steps (links)."""
    archs = side_of(spec.backend).device_targets(spec)
    if record is not None and record.objects:
        steps = [CompileStep(k, "", _lang(k)) for k in sorted(record.objects)]
        return costed(steps, record.objects, archs), sum(record.other.values())
    if CUDA.get(spec) is not None:
        steps = [CompileStep(f"estimated/cuda-{i}.cu", "", "CUDA") for i in range(NO_RECORD["cuda_steps"])]
        steps += [CompileStep(f"estimated/host-{i}.cpp", "", "CXX") for i in range(NO_RECORD["cuda_host_steps"])]
        links = 1
    else:
        steps = [CompileStep(f"estimated/cpu-{i}.cpp", "", "CXX") for i in range(NO_RECORD["cpu_steps"])]
        links = 15
    return costed(steps, {}, archs), links * ESTIMATE_SECONDS["LINK"]


def row_seconds(row: JobRow, spec: BundleSpec, record: CostRecord | None, a: Assumptions) -> dict[str, float]:
    """The predicted seconds of one row, by part (module docstring); ``sum(...values())`` is
    the row's."""
    o = a.overhead
    parts: dict[str, float] = {"job": o["job"]}
    for step in platform(spec.os).setup_steps:  # what the runner installs first (Linux: the pinned .debs)
        parts[step] = o[step]
    if (cuda := CUDA.get(spec)) is not None:
        parts["toolkit"] = o.get(f"toolkit_{cuda.toolkit.source}", 0.0)
    steps, other = leg_steps(spec, record)
    compiles = row.shard or row.job in ("compile", "compile-final") or not row.imports_build
    if compiles:
        parts["source"] = o["source"]
        parts["configure"] = o["configure_cuda" if cuda is not None else "configure_cpu"]
    if row.shard:
        i, n = (int(x) for x in row.shard.split("/"))
        mine = split(steps, n)[i - 1]
        parts["compile"] = a.speed * mine.wall(a.jobs)
        parts["artifact"] = o["artifact"]
    elif row.merges_shards:
        parts["artifact"] = o["artifact"] * 2
        if a.cold or row.id in a.uncached:  # every object a miss: the whole leg again
            parts["compile"] = a.speed * (makespan([c.seconds for c in steps], a.jobs) + other)
        else:
            parts["compile"] = a.speed * other + HIT_SECONDS * len(steps) / max(1, a.jobs)
    elif compiles:
        parts["compile"] = a.speed * (makespan([c.seconds for c in steps], a.jobs) + other)
    for hand_off in (row.imports_build, row.uploads_build):
        if hand_off:
            parts["artifact"] = parts.get("artifact", 0.0) + o["artifact"]
    if row.job in ("base", "base-imported", "backend"):
        parts["package"] = o["package"] + (o["artifact"] if row.role == "backend" else 0.0)
    return parts


@frozen
class Slot:
    """One row on the timeline: ``job``, ``name``, ``start``/``end`` (seconds from the start of
    the run), ``parts`` (:func:`row_seconds`), ``critical`` (on the critical path), ``timeout``
    (the row's ``timeout-minutes``, :func:`row_timeout`; 0 for the plan and manifest jobs)."""

    job: str
    name: str
    start: float
    end: float
    parts: Mapping[str, float]
    critical: bool = False
    timeout: int = 0

    @property
    def minutes(self) -> float:
        return (self.end - self.start) / 60


@frozen
class Timeline:
    """Every :class:`Slot` in start order and the critical ``path`` (names of its slots)."""

    slots: tuple[Slot, ...]
    title: str

    @property
    def total(self) -> float:
        return max((s.end for s in self.slots), default=0.0)

    @property
    def path(self) -> list[Slot]:
        return [s for s in self.slots if s.critical]

    def _beside(self, cold: Timeline | None) -> list[tuple[Slot, Slot | None]]:
        """Each slot with the same row of ``cold`` (the same job and name; None: not there, or no
        ``cold``)."""
        colds = {(s.job, s.name): s for s in cold.slots} if cold else {}
        return [(s, colds.get((s.job, s.name))) for s in self.slots]

    def text(self, cold: Timeline | None = None) -> str:
        """A table: job, row, start, end, minutes, ``*`` on the critical path; then the path.
        With ``cold`` (the same rows modeled cold, :func:`predict_both`): each row's cold
        minutes and ``timeout-minutes`` too, and the cold critical path."""
        head = f"{'job':<14} {'row':<46} {'start':>6} {'end':>6} {'min':>6}"
        lines = [self.title, head + (f" {'cold':>6} {'timeout':>7}" if cold else "")]
        for s, c in self._beside(cold):
            extra = f" {c.minutes:6.1f} {c.timeout or '-':>7}" if c else ""
            lines.append(
                f"{s.job:<14} {s.name:<46} {s.start / 60:6.1f} {s.end / 60:6.1f} {s.minutes:6.1f}{extra}"
                f"{'  *' if s.critical else ''}"
            )
        warm = " (warm: final compiles take cache hits)" if cold else ""
        lines.append(f"critical path (*): {self.path_line()}{warm}")
        if cold:
            lines.append(f"critical path, cold (every final compile a full compile): {cold.path_line()}")
            lines.append(
                f"(modeled, not measured; timeout = ceil({COLD_MARGIN:g} x the leg's whole cold compile and the "
                f"row's other parts + {TIMEOUT_SLACK_MIN}), at most {GITHUB_JOB_LIMIT_MIN})"
            )
        return "\n".join(lines)

    def path_line(self) -> str:
        """``plan -> compile[row] -> ... -> manifest: N min``."""
        return (
            " -> ".join(f"{s.job}[{s.name}]" if s.name != s.job else s.job for s in self.path)
            + f": {self.total / 60:.1f} min"
        )

    def mermaid(self) -> str:
        """A Mermaid ``gantt`` block in minutes from the run's start (``crit`` marks the path).

        Mermaid reads ``dateFormat X``/``x`` values as a time since 1970 and draws the axis with d3's
        time format in the viewer's time zone, so ``%H:%M`` showed clock times that depend on where
        the summary is read. Here each value is the row's *minutes x 1000*, written where
        ``dateFormat x`` expects epoch milliseconds (whole numbers: Mermaid parses strictly, and a
        decimal ``X`` value falls back to ``new Date("1.5")``), and ``axisFormat %s`` prints d3's
        whole seconds since the epoch, which has no time zone: the axis reads minutes from the start
        anywhere."""
        lines = [
            "```mermaid",
            "gantt",
            f"    title {_mm(self.title)} (axis in minutes from the start)",
            "    dateFormat x",
            "    axisFormat %s",
        ]
        for job in dict.fromkeys(s.job for s in self.slots):
            lines.append(f"    section {_mm(job)}")
            for k, s in enumerate(x for x in self.slots if x.job == job):
                tag = "crit, " if s.critical else ""
                lines.append(
                    f"    {_mm(s.name)} ({s.minutes:.1f} min) :{tag}{_id(job)}{k}, "
                    f"{round(s.start * 1000 / 60)}, {round(s.end * 1000 / 60)}"
                )
        lines.append("```")
        return "\n".join(lines)

    def markdown(self, cold: Timeline | None = None) -> str:
        """The step-summary form: a heading, the Mermaid block(s) and the table (with ``cold``:
        both pictures, each row's cold minutes and timeout)."""
        head = "| job | row | start (min) | end (min) | minutes |"
        rule = "|---|---|---|---|---|"
        if cold:
            head += " cold minutes | timeout |"
            rule += "---|---|"
        rows = [head + " critical |", rule + "---|"]
        for s, c in self._beside(cold):
            extra = f" {c.minutes:.1f} | {c.timeout or '-'} |" if c else ""
            rows.append(
                f"| {s.job} | {s.name} | {s.start / 60:.1f} | {s.end / 60:.1f} | {s.minutes:.1f} |{extra} "
                f"{'yes' if s.critical else ''} |"
            )
        out = [f"### {self.title}", "", "Modeled from the legs' cost records, not measured.", "", self.mermaid(), ""]
        if cold:
            out += [f"#### {cold.title}", "", cold.mermaid(), ""]
        out += [*rows, ""]
        if cold:
            out.append(
                f"Critical path, warm (final compiles take cache hits): **{self.total / 60:.1f} min**; "
                f"cold (every final compile a full compile): **{cold.total / 60:.1f} min**. "
                f"Each compiling row's timeout is ceil({COLD_MARGIN:g} x (its leg's whole cold compile + the "
                f"row's other parts) + {TIMEOUT_SLACK_MIN}) minutes, at most {GITHUB_JOB_LIMIT_MIN}."
            )
        else:
            out.append(f"Critical path: **{self.total / 60:.1f} min**.")
        return "\n".join(out)


def _mm(text: str) -> str:
    return text.replace(":", " ").replace("#", " ").replace(";", ",")


def _id(job: str) -> str:
    return "".join(ch for ch in job if ch.isalnum())


def timeline(
    rows: Sequence[JobRow],
    specs: Mapping[str, BundleSpec],
    records: Mapping[str, CostRecord | None],
    a: Assumptions,
    *,
    jobs: Sequence[tuple[str, Sequence[str]]] = JOBS,
    manifest_needs: Sequence[str] = MANIFEST_NEEDS,
    title: str = "",
) -> Timeline:
    """The predicted :class:`Timeline` of ``rows`` grouped into ``jobs`` (name, needs), after a
    ``plan`` job and before a ``manifest`` job needing ``manifest_needs``."""
    needs_of: dict[str, Sequence[str]] = {"plan": (), **dict(jobs), "manifest": manifest_needs}
    ends: dict[str, float] = {}
    slots: dict[str, list[Slot]] = {}
    for name, needs in needs_of.items():
        start = max(ends.get(n, 0.0) for n in needs) if name != "plan" else 0.0
        if name in ("plan", "manifest"):
            slots[name] = [Slot(name, name, start, start + a.overhead[name], {name: a.overhead[name]})]
        else:
            slots[name] = []
            for r in [r for r in rows if r.job == name]:
                parts = row_seconds(r, specs[r.id], records.get(r.id), a)
                limit = row_timeout(sum(cover_seconds(r, specs[r.id], records.get(r.id), a).values()))
                slots[name].append(Slot(name, r.name, start, start + sum(parts.values()), parts, timeout=limit))
        ends[name] = max((s.end for s in slots[name]), default=start)
    critical: set[tuple[str, str]] = set()
    job = "manifest"
    while True:
        last = max(slots[job], key=lambda s: s.end)
        critical.add((job, last.name))
        prior = [n for n in needs_of[job] if slots.get(n)]
        if not prior:
            break
        job = max(prior, key=lambda n: ends[n])
        if ends[job] < last.start - 1e-6:  # started by nothing that ran (all it needs were empty)
            break
    out = [replace(s, critical=(s.job, s.name) in critical) for job_slots in slots.values() for s in job_slots]
    return Timeline(tuple(out), title or f"Predicted release timeline (runners at -j{a.jobs})")


def predict_release(
    matrix: object, legs: Sequence[str], a: Assumptions, records: Mapping[str, CostRecord | None], title: str = ""
) -> Timeline:
    """The timeline of the release workflow for ``legs`` of ``matrix`` (a plain ``Matrix``)."""
    from .jobs import rows as job_rows

    specs = matrix.legs  # type: ignore[attr-defined]
    return timeline(job_rows(matrix, list(legs)), specs, records, a, title=title)  # type: ignore[arg-type]


def predict_both(
    matrix: object, legs: Sequence[str], a: Assumptions, records: Mapping[str, CostRecord | None], title: str = ""
) -> tuple[Timeline, Timeline]:
    """The warm and the cold :class:`Timeline` of the same rows (module docstring)."""
    warm = predict_release(matrix, legs, replace(a, cold=False), records, title=title + " - warm, modeled")
    cold = predict_release(matrix, legs, replace(a, cold=True), records, title=title + " - cold, modeled")
    return warm, cold


GITHUB_JOB_LIMIT_MIN = 360
"""GitHub ends a job on a GitHub-hosted runner after 6 hours (its documented "job execution time"
usage limit); a larger ``timeout-minutes`` would change nothing."""

COLD_MARGIN = 2.0
"""A row's timeout is this many times its modeled cold minutes (plus :data:`TIMEOUT_SLACK_MIN`).
Why 2: 7 of the 9 committed cost records are derived from one Linux leg's cold build on a 2-core
VM (``bundles/costs/*.json`` ``note``), and that VM's speed varies by half within an evening
(README, "The tests, measured"); the one cold compile measured on a 4-vCPU runner for 8 archs, the
pipeline we replace's Windows x64 CUDA leg, took 189 min (FINDINGS) where this model, scaled to 8
archs, gives ~122 min: 1.55x. A timeout must be above the slowest honest run, not its average."""

TIMEOUT_SLACK_MIN = 15
"""Minutes added to every row's timeout for what no record models: a runner queued after start,
a slow package mirror or artifact service."""


def cover_seconds(row: JobRow, spec: BundleSpec, record: CostRecord | None, a: Assumptions) -> dict[str, float]:
    """What a row's timeout must cover, by part: :func:`row_seconds` modeled cold, and on a shard
    row the leg's whole compile instead of the slice (the slice is split by a record that may be a
    stated estimate: a shard's real cost is bounded by its leg's, not by the record)."""
    cold = replace(a, cold=True)
    parts = row_seconds(row, spec, record, cold)
    if row.shard:
        steps, other = leg_steps(spec, record)
        parts["compile"] = a.speed * (makespan([c.seconds for c in steps], a.jobs) + other)
    return parts


def row_timeout(cover: float) -> int:
    """A row's ``timeout-minutes``: ``ceil(COLD_MARGIN x cover minutes + TIMEOUT_SLACK_MIN)``, at
    most :data:`GITHUB_JOB_LIMIT_MIN`; ``cover``: the sum of :func:`cover_seconds`."""
    return min(GITHUB_JOB_LIMIT_MIN, math.ceil(COLD_MARGIN * cover / 60 + TIMEOUT_SLACK_MIN))


def timeout_problems(
    rows: Sequence[JobRow], specs: Mapping[str, BundleSpec], records: Mapping[str, CostRecord | None], a: Assumptions
) -> tuple[list[str], list[str]]:
    """``(refusals, flags)``, one line each, for rows whose timeout cannot cover what
    :func:`cover_seconds` asks within :data:`GITHUB_JOB_LIMIT_MIN`:

    - refused: a row whose *own* cold work with its margin does not fit (a shard's slice, or the
      whole compile of an unsharded leg): the leg cannot be built on a hosted runner; more shards
      are the fix;
    - flagged: a shard whose slice fits but whose leg's whole compile does not (its timeout is the
      limit), and a sharded leg's final compile that does not fit cold (it gets the limit and fits
      only when its shards' objects are cache hits, which the guard of the final compile checks)."""
    refusals, flags = [], []
    cold = replace(a, cold=True)
    for r in rows:
        spec, record = specs[r.id], records.get(r.id)
        cover = sum(cover_seconds(r, spec, record, a).values())
        if COLD_MARGIN * cover / 60 + TIMEOUT_SLACK_MIN <= GITHUB_JOB_LIMIT_MIN:
            continue
        own = sum(row_seconds(r, spec, record, cold).values())
        need = COLD_MARGIN * own / 60 + TIMEOUT_SLACK_MIN
        where = f"bundles/{r.id}.toml: build.shards"
        said = f"{r.job} row {r.name!r} models {own / 60:.0f} min cold at -j{a.jobs}"
        if need > GITHUB_JOB_LIMIT_MIN and not r.merges_shards:
            refusals.append(
                f"{where}: {said}, {need:.0f} min with its margin, over GitHub's {GITHUB_JOB_LIMIT_MIN}-min job "
                f"limit: expected more shards than {spec.build.shards}"
            )
        else:
            flags.append(
                f"{where}: {said} ({cover / 60:.0f} min for the whole leg cold): its timeout is capped at "
                f"{GITHUB_JOB_LIMIT_MIN} min" + (", enough only with its shards' cache hits" if r.merges_shards else "")
            )
    return refusals, flags


__all__ = [
    "COLD_MARGIN",
    "GITHUB_JOB_LIMIT_MIN",
    "NO_RECORD",
    "OVERHEAD_S",
    "TIMEOUT_SLACK_MIN",
    "Assumptions",
    "Slot",
    "Timeline",
    "cover_seconds",
    "leg_steps",
    "predict_both",
    "predict_release",
    "row_seconds",
    "row_timeout",
    "timeline",
    "timeout_problems",
]
