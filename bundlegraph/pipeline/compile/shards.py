"""Shards: one leg's compile spread over N CI jobs, balanced by measured cost.

A spec's ``[build] shards = N`` (N > 1) splits the compile steps of the leg's targets (ninja's
own list: :func:`~.ninja_graph.compile_steps`) into N slices. Shard *I* (``doit build:L
shard=I/N``) compiles only its slice, through the compiler cache, and links nothing; the leg's
final compile then finds every object in the cache and only links. A shard is a filtered build:
no stamp, no ``build.json``, never packaged.

The split (:func:`split`) is longest-processing-time first: the steps sorted by cost (most
expensive first; ties by object key), each given to the shard with the least total so far (ties:
the lowest index). The cost of a step is its measured seconds in the leg's cost record
(:mod:`.costs`), else the stated estimate of :func:`estimate`. For the same steps, record and N
the split is the same on every runner.

:func:`makespan` predicts the wall seconds of a set of steps on a runner running ``jobs``
compiles at once (the same greedy list schedule ninja approximates).
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Iterable, Mapping, Sequence

from ...core.errors import BundleGraphError
from ...core.lightclass import frozen
from ...schemas.records import MAX_SHARDS
from .ninja_graph import CompileStep

ESTIMATE_SECONDS = {"CUDA_PER_ARCH": 15.0, "CXX": 4.0, "C": 2.0, "OTHER_LANG": 3.0, "LINK": 5.0}
"""The stated estimate of a step no record measured, in seconds of one core. Source: the cold
ggml-cuda build of ``shared/FINDINGS.md`` (archs 120;121, one core per job: 4,248 s CPU over 144
CUDA objects = 29.5 s each, i.e. ~15 s per arch; ggml-base's C/C++ objects 1-4 s) and the link
of ``libggml-cuda.so`` (~5 s)."""

HIT_SECONDS = 0.2
"""What a compiler-cache hit of one step costs (ccache, local or remote storage on a LAN:
BENCHMARKS.md "Compiler cache": 153 remote hits in 7.1 s at -j2)."""


@frozen
class ShardRef:
    """Shard ``index`` of ``count`` (1-based, as the command line writes it: ``shard=1/3``)."""

    index: int
    count: int

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def parse_shard(text: str, where: str = "shard") -> ShardRef:
    """``"2/3"`` -> ShardRef(2, 3). Raises :class:`BundleGraphError` of one line naming ``where``
    and the value for anything but ``I/N`` with ``1 <= I <= N`` and ``2 <= N <= MAX_SHARDS`` (the
    most a spec's ``[build] shards`` may say)."""
    m = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text or "")
    if not m:
        raise BundleGraphError(f"{where}={text!r}: expected I/N, two whole numbers with 1 <= I <= N (e.g. 1/3)")
    shown = text.strip()
    # read at most 9 digits: a longer number is out of range anyway (and int() refuses 4,300 digits)
    i, n = (int(g) if len(g.lstrip("0")) <= 9 else 10**9 for g in m.groups())
    if n < 2:
        raise BundleGraphError(f"{where}={shown}: N must be at least 2 (a leg of one shard is not sharded)")
    if n > MAX_SHARDS:
        raise BundleGraphError(f"{where}={shown}: N must be at most {MAX_SHARDS} (what a spec's [build] shards allows)")
    if not 1 <= i <= n:
        raise BundleGraphError(f"{where}={shown}: I must be between 1 and {n}")
    return ShardRef(i, n)


def count_problem(leg: str, count: int, steps: int, targets: Sequence[str]) -> str:
    """The one line refusing a split of ``leg`` into ``count`` shards that cannot be: more than
    :data:`MAX_SHARDS`, fewer than 1, or more shards than the ``steps`` compile steps of its
    ``targets`` (a shard would compile nothing: a runner spent for nothing); empty when it can."""
    if not 1 <= count <= MAX_SHARDS:
        return f"{leg}: {count} shards: expected 1 to {MAX_SHARDS} (what a spec's [build] shards allows)"
    if count > steps:
        return (
            f"build:{leg}: {count} shards, but its targets ({' '.join(targets) or 'all'}) have {steps} compile "
            f"step(s): a shard would compile nothing; set [build] shards to at most {max(1, steps)}"
        )
    return ""


def estimate(step: CompileStep, cuda_archs: int) -> float:
    """The stated estimate of one step (:data:`ESTIMATE_SECONDS`)."""
    if step.lang == "CUDA":
        return ESTIMATE_SECONDS["CUDA_PER_ARCH"] * max(1, cuda_archs)
    return ESTIMATE_SECONDS.get(step.lang, ESTIMATE_SECONDS["OTHER_LANG"])


@frozen
class CostedStep:
    """A step with its ``seconds`` and whether they were ``measured`` (else estimated)."""

    step: CompileStep
    seconds: float
    measured: bool


def costed(steps: Iterable[CompileStep], measured: Mapping[str, float], cuda_archs: int) -> list[CostedStep]:
    """Each step with its measured seconds (by object key) or the estimate."""
    out = []
    for s in steps:
        m = measured.get(s.key)
        out.append(CostedStep(s, m, True) if m is not None else CostedStep(s, estimate(s, cuda_archs), False))
    return out


@frozen
class ShardSlice:
    """Shard ``index`` of ``count``: its ``steps`` (costed, in build order = by output) and
    ``seconds`` (their sum: CPU seconds of one core)."""

    index: int
    count: int
    steps: tuple[CostedStep, ...]

    @property
    def seconds(self) -> float:
        return sum(c.seconds for c in self.steps)

    @property
    def outputs(self) -> list[str]:
        """The ninja outputs this shard builds."""
        return [c.step.output for c in self.steps]

    def wall(self, jobs: int) -> float:
        """Predicted wall seconds at ``jobs`` compiles at once (:func:`makespan`)."""
        return makespan([c.seconds for c in self.steps], jobs)


def split(steps: Sequence[CostedStep], count: int) -> list[ShardSlice]:
    """The longest-first split of ``steps`` into ``count`` slices (module docstring)."""
    if count < 1:
        raise ValueError("count must be >= 1")
    order = sorted(steps, key=lambda c: (-c.seconds, c.step.key, c.step.output))
    heap = [(0.0, i) for i in range(count)]
    buckets: list[list[CostedStep]] = [[] for _ in range(count)]
    for c in order:
        load, i = heapq.heappop(heap)
        buckets[i].append(c)
        heapq.heappush(heap, (load + c.seconds, i))
    return [ShardSlice(i + 1, count, tuple(sorted(b, key=lambda c: c.step.output))) for i, b in enumerate(buckets)]


def makespan(seconds: Iterable[float], jobs: int) -> float:
    """Wall seconds of running tasks of ``seconds`` on ``jobs`` slots, longest first, each to the
    slot free soonest (Graham's LPT list schedule; within 4/3 of the optimum)."""
    slots = [0.0] * max(1, jobs)
    heapq.heapify(slots)
    for s in sorted(seconds, reverse=True):
        heapq.heappush(slots, heapq.heappop(slots) + s)
    return max(slots)


__all__ = [
    "ESTIMATE_SECONDS",
    "HIT_SECONDS",
    "CostedStep",
    "ShardRef",
    "ShardSlice",
    "costed",
    "count_problem",
    "estimate",
    "makespan",
    "parse_shard",
    "split",
]
