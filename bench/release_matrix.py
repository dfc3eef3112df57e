"""Benchmark (a prediction, no build): the whole CUDA matrix (issue 43: the fork's 21 legs) against
today's 9-leg release on 4-vCPU runners: wall time, runner-minutes, and the shard count each leg
needs so that no leg's compile is longer than the longest one of today's release.

Usage::

    .venv/bin/python bench/release_matrix.py [--jobs 3] [--measured-minutes 26.7] [--json OUT]

Inputs: the cost records in ``bundles/costs/`` (every record of a new leg is derived from the
measured ``linux-arm64-cuda13-blackwell`` one and says so in its ``note``), the specs in
``bundles/``, and the job model of :mod:`bundlegraph.release.critical_path` (:data:`OVERHEAD_S`). The
runner's ``speed`` is calibrated as in ``bench/critical_path.py``: the mission leg's unsharded
compile equals the 26.7 min its cold compile took on a 4-vCPU runner in the pipeline we replace.

Printed, every figure MODELED:

1. per leg: the smallest shard count whose compile path (longest shard + final compile from
   cache hits + link) is no longer than the longest compile path of today's release
   (``target``), beside the count its spec says;
2. the release, today's 9 legs, all legs unsharded and all legs as the specs say, warm (final compiles take their
   shards' objects as cache hits) and cold: wall minutes, the critical path, runner-minutes (the
   sum of every row's minutes: what a hosted-runner bill counts) and rows (runners started).

Runner-minutes count each row from its start to its end, job overheads included; the plan and
manifest jobs count too.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bundlegraph.pipeline.compile import costs
from bundlegraph.pipeline.compile.shards import makespan
from bundlegraph.release.critical_path import Assumptions, Timeline, timeline
from bundlegraph.release.jobs import JOBS, rows
from bundlegraph.specs.loader import load_matrix

MISSION = "windows-arm64-cuda13-portable"
TODAY = (
    "linux-arm64-cpu",
    "linux-arm64-cuda13-blackwell",
    "linux-arm64-cuda13-portable",
    "linux-x64-cpu",
    "linux-x64-cuda13-portable",
    "windows-arm64-cpu",
    "windows-arm64-cuda13-portable",
    "windows-x64-cpu",
    "windows-x64-cuda13-portable",
)
"""The 9 legs of the release before issue 43."""


def compile_path(t: Timeline, leg: str) -> float:
    """Seconds of ``leg``'s compile path: its longest shard's compile part plus its final
    compile's (or its whole compile when unsharded)."""
    mine = [s for s in t.slots if s.name.startswith(leg) and "compile" in s.parts]
    shard = max((s.parts["compile"] for s in mine if " shard " in s.name), default=0.0)
    whole = [s.parts["compile"] for s in mine if " shard " not in s.name]
    return shard + max(whole, default=0.0)


def predict(m, legs: list[str], recs, a: Assumptions) -> Timeline:
    return timeline(rows(m, legs), m.legs, recs, a, jobs=JOBS)


def with_shards(m, leg: str, n: int):
    s = m.legs[leg]
    return dataclasses.replace(m, legs={**m.legs, leg: s.replace(build=s.build.replace(shards=n))})


def runner_minutes(t: Timeline) -> float:
    return sum(s.end - s.start for s in t.slots) / 60


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=3)
    ap.add_argument("--measured-minutes", type=float, default=26.7)
    ap.add_argument("--json", help="also write the figures here")
    args = ap.parse_args()
    m = load_matrix(ROOT / "bundles")
    recs = {leg: costs.find(leg, m.root) for leg in m.legs}
    missing = [leg for leg, r in recs.items() if r is None]
    if missing:
        print(f"bench: no cost record for {', '.join(missing)} (bundles/costs/<leg>.json)", file=sys.stderr)
        return 2
    mission = recs[MISSION]
    raw = makespan(list(mission.objects.values()), args.jobs) + sum(mission.other.values())
    a = Assumptions(jobs=args.jobs, speed=args.measured_minutes * 60 / raw)
    today = predict(m, list(TODAY), recs, a)
    target = max(compile_path(today, leg) for leg in TODAY if m.legs[leg].cuda)
    print(
        f"MODELED (no build ran): -j{args.jobs}, speed {a.speed:.3f}; target compile path = today's longest, "
        f"{target / 60:.1f} min"
    )
    print(f"{'leg':<34} {'archs':>5} {'spec':>4} {'needs':>5} {'path at needs':>13} {'unsharded':>9}")
    chosen = {}
    for leg, s in m.legs.items():
        if not s.cuda:
            continue
        one = compile_path(predict(with_shards(m, leg, 1), [leg], recs, a), leg)
        need = (
            next(
                n for n in range(1, 33) if compile_path(predict(with_shards(m, leg, n), [leg], recs, a), leg) <= target
            )
            if one > target
            else 1
        )
        at = compile_path(predict(with_shards(m, leg, need), [leg], recs, a), leg)
        chosen[leg] = {"spec": s.build.shards, "needs": need, "path_minutes": round(at / 60, 1)}
        print(
            f"{leg:<34} {len(s.cuda.archs):5} {s.build.shards:4} {need:5} {at / 60:13.1f} {one / 60:9.1f}"
            + ("" if need == s.build.shards else "  <- spec differs")
        )
    figures = {}
    unsharded = m
    for leg, s in m.legs.items():
        if s.cuda:
            unsharded = with_shards(unsharded, leg, 1)
    shapes = (
        ("today (9 legs)", m, list(TODAY)),
        (f"all ({len(m.legs)} legs, unsharded)", unsharded, list(m.legs)),
        (f"all ({len(m.legs)} legs, specs' shards)", m, list(m.legs)),
    )
    for name, mm, legs in shapes:
        for mode in ("warm", "cold"):
            t = predict(mm, legs, recs, dataclasses.replace(a, cold=mode == "cold"))
            figures[f"{name}, {mode}"] = {
                "wall_minutes": round(t.total / 60, 1),
                "runner_minutes": round(runner_minutes(t)),
                "rows": len(t.slots),
                "path": " -> ".join(f"{s.job}[{s.name}]" for s in t.path),
            }
    print(f"\n{'release':<36} {'wall min':>8} {'runner-min':>10} {'rows':>5}  critical path")
    for name, f in figures.items():
        print(f"{name:<36} {f['wall_minutes']:8.1f} {f['runner_minutes']:10} {f['rows']:5}  {f['path']}")
    if args.json:
        out = {"speed": a.speed, "jobs": args.jobs, "target_minutes": target / 60, "legs": chosen, "releases": figures}
        Path(args.json).write_text(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
