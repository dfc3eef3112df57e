"""Benchmark (a prediction, no build): the release's critical path on 4-vCPU runners for the
workflow shapes and shard counts of issue 28, from the real aarch64 Blackwell leg's cold ninja log.

Usage::

    .venv/bin/python bench/critical_path.py [--cuda-record F] [--cpu-record F] [--jobs 3]
                                            [--measured-minutes 26.7] [--json OUT]

Inputs: the cost records made from the cold ninja logs of ``build:linux-arm64-cuda13-blackwell``
(153 compile steps: 144 CUDA objects for sm_120a/121a, 9 of ggml-base) and ``build:linux-arm64-cpu``
(``bundlegraph costs LEG --build-dir DIR``; committed as ``bundles/costs/*.json``). Every leg of
the real release gets a record: a CUDA leg the Blackwell one with each CUDA object's seconds
scaled by its arch count / 2 (the 7-arch portable legs: x3.5, as measured by the pipeline we
replace), a CPU leg the aarch64 CPU one (a stated stand-in for the x64 and Windows CPU legs).

The runner: ``--jobs`` compiles at once (3: the memory ceiling of a 4-vCPU runner), and a
``speed`` that makes the model's unsharded compile of the mission leg
(``windows-arm64-cuda13-portable``: the same 2 archs, objects and record) equal the 26.7 min that
leg's cold compile took on a 4-vCPU runner in the pipeline we replace (FINDINGS). The fixed parts
of each job are :data:`bundlegraph.release.critical_path.OVERHEAD_S`.

Shapes:

- ``waves``: the workflow before issue 28 (plan -> compile on a compile runner -> base legs ->
  backend legs, each compiling in its own job -> manifest);
- ``at-once``: today's workflow with every leg unsharded (every compile in the first wave);
- ``shards=N``: today's workflow with every CUDA leg in N shards;
- ``chosen``: today's workflow with each leg's ``[build] shards`` as its spec says.

Printed per shape: the whole release's critical path, and the mission leg's and the 7-arch legs'
own path (from the run's start to the end of the leg's packaging row, i.e. its bundle made,
excluding the wait for the slowest base leg of the release: the ``compile`` part of that row starts
when its shards end), in minutes.
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
from bundlegraph.release.critical_path import Assumptions, timeline
from bundlegraph.release.jobs import JOBS, JobRow, rows
from bundlegraph.specs.loader import load_matrix

MISSION = "windows-arm64-cuda13-portable"
WIDE = ("linux-x64-cuda13-portable", "windows-x64-cuda13-portable")
LEGACY_JOBS = (("compile", ("plan",)), ("base", ("plan", "compile")), ("backend", ("plan", "compile", "base")))


def records_for(m, cuda: costs.CostRecord, cpu: costs.CostRecord) -> dict[str, costs.CostRecord]:
    out = {}
    for leg, spec in m.legs.items():
        if spec.cuda:
            f = len(spec.cuda.archs) / 2
            out[leg] = costs.CostRecord(
                leg, {k: v * f if k.endswith(".cu") else v for k, v in cuda.objects.items()}, dict(cuda.other)
            )
        else:
            out[leg] = costs.CostRecord(leg, dict(cpu.objects), dict(cpu.other))
    return out


def with_shards(m, n: int):
    legs = {leg: (s.replace(build=s.build.replace(shards=n)) if s.cuda else s) for leg, s in m.legs.items()}
    return dataclasses.replace(m, legs=legs)


def legacy_rows(m) -> list[JobRow]:
    """The workflow before issue 28: base and backend legs compile in their own job."""
    out = []
    for r in rows(with_shards(m, 1), list(m.legs)):
        if r.job == "compile" and r.role == "backend" and not r.compile_runner:
            continue  # compiled in its backend job
        job = {"base-imported": "base"}.get(r.job, r.job)
        imports = r.imports_build and bool(r.compile_runner)
        out.append(dataclasses.replace(r, job=job, imports_build=imports))
    return out


def compile_path(t, leg: str) -> float:
    """The leg's compile critical path: its longest compile row's compile part (a shard, or the
    whole compile) plus, when sharded, the final compile's (cache hits and the link)."""
    rows_ = [
        s
        for s in t.slots
        if s.name.startswith(leg) and "compile" in s.parts and (s.job in ("compile", "compile-final") or s.name == leg)
    ]
    shard = max((s.parts["compile"] for s in rows_ if " shard " in s.name), default=0.0)
    whole = [s.parts["compile"] for s in rows_ if " shard " not in s.name]
    return shard + max(whole, default=0.0)


def leg_end(t, leg: str) -> float:
    """When ``leg``'s bundle is made if its packaging job waited only for the leg's own compile."""
    own = [s for s in t.slots if s.name.startswith(leg) and s.job in ("compile", "compile-final")]
    pack = next(s for s in t.slots if s.name == leg and s.job in ("base", "base-imported", "backend"))
    ready = max((s.end for s in own), default=pack.start)
    if not own:  # compiled in its own packaging job (the old waves): from that job's start
        ready = pack.start
    return ready + (pack.end - pack.start)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cuda-record", default=str(ROOT / "bundles/costs/linux-arm64-cuda13-blackwell.json"))
    ap.add_argument("--cpu-record", default=str(ROOT / "bundles/costs/linux-arm64-cpu.json"))
    ap.add_argument("--jobs", type=int, default=3)
    ap.add_argument(
        "--measured-minutes",
        type=float,
        default=26.7,
        help="the mission leg's cold compile on a 4-vCPU runner (the pipeline we replace)",
    )
    ap.add_argument("--json", help="also write the figures here")
    args = ap.parse_args()
    m = load_matrix(ROOT / "bundles")
    cuda = costs.load(Path(args.cuda_record), "linux-arm64-cuda13-blackwell")
    cpu = costs.load(Path(args.cpu_record), "linux-arm64-cpu")
    recs = records_for(m, cuda, cpu)
    raw = makespan(list(recs[MISSION].objects.values()), args.jobs) + sum(recs[MISSION].other.values())
    speed = args.measured_minutes * 60 / raw
    a = Assumptions(jobs=args.jobs, speed=speed)
    print(
        f"record: {len(cuda.objects)} compile steps, {sum(cuda.objects.values()):.0f} CPU s, longest "
        f"{max(cuda.objects.values()):.0f} s; unsharded -j{args.jobs} compile {raw / 60:.1f} min as recorded, "
        f"speed {speed:.3f} makes it the measured {args.measured_minutes} min"
    )
    results = {}
    msvc = frozenset(leg for leg, spec in m.legs.items() if spec.toolchain.startswith("msvc"))
    shapes = [
        ("waves", None),
        ("at-once", 1),
        *((f"shards={n}", n) for n in (2, 3, 4, 5, 6, 8)),
        ("chosen", 0),
        ("chosen, no MSVC cache", -1),
    ]
    print("MODELED minutes (no build ran); 'compile': the leg's compile critical path (longest shard + final")
    print("compile + link); 'leg': plan -> its compile rows -> its packaging row, job overheads included;")
    print("'release': the whole run. warm: a final compile takes its shards' objects as cache hits where the leg")
    print("has a compiler cache; cold: every final compile misses everything (a full compile). 'no MSVC cache':")
    print(f"the MSVC legs ({', '.join(sorted(msvc))}) compile their final compile whole even warm")
    print(
        f"{'shape':<22} {'release':>8} {'cold':>6} {'mission compile':>16} {'cold':>6} {'mission leg':>12} "
        f"{'cold':>6} {'7-arch compile':>15} {'7-arch leg':>11}  release critical path (warm)"
    )
    for name, n in shapes:
        figures = {}
        for mode in ("warm", "cold"):
            am = dataclasses.replace(a, cold=mode == "cold", uncached=msvc if n == -1 else frozenset())
            if n is None:
                t = timeline(
                    legacy_rows(m),
                    m.legs,
                    recs,
                    am,
                    jobs=LEGACY_JOBS,
                    manifest_needs=("plan", "compile", "base", "backend"),
                )
            else:
                mm = with_shards(m, n) if n and n > 0 else m  # 0, -1: the shards the specs choose
                t = timeline(rows(mm, list(mm.legs)), mm.legs, recs, am, jobs=JOBS)
            figures[mode] = t
        t, tc = figures["warm"], figures["cold"]
        mission = leg_end(t, MISSION) / 60
        wide = max(leg_end(t, w) for w in WIDE) / 60
        mc = compile_path(t, MISSION) / 60
        wc = max(compile_path(t, w) for w in WIDE) / 60
        path = " -> ".join(f"{s.job}[{s.name}]" for s in t.path)
        results[name] = {
            "release_minutes": round(t.total / 60, 1),
            "release_cold_minutes": round(tc.total / 60, 1),
            "mission_compile_minutes": round(mc, 1),
            "mission_compile_cold_minutes": round(compile_path(tc, MISSION) / 60, 1),
            "mission_leg_minutes": round(mission, 1),
            "mission_leg_cold_minutes": round(leg_end(tc, MISSION) / 60, 1),
            "wide_compile_minutes": round(wc, 1),
            "wide_leg_minutes": round(wide, 1),
            "path": path,
        }
        r = results[name]
        print(
            f"{name:<22} {r['release_minutes']:8.1f} {r['release_cold_minutes']:6.1f} {mc:16.1f} "
            f"{r['mission_compile_cold_minutes']:6.1f} {mission:12.1f} {r['mission_leg_cold_minutes']:6.1f} "
            f"{wc:15.1f} {wide:11.1f}  {path}"
        )
    base = results["at-once"]
    for name in [s for s, _ in shapes if s.startswith(("shards", "chosen"))]:
        r = results[name]
        print(
            f"{name}: mission compile path {r['mission_compile_minutes']} min = "
            f"{r['mission_compile_minutes'] / args.measured_minutes:.2f} of the measured {args.measured_minutes}-min "
            f"compile (leg {r['mission_leg_minutes']} min); 7-arch compile path {r['wide_compile_minutes']} min = "
            f"{r['wide_compile_minutes'] / base['wide_compile_minutes']:.2f} of unsharded "
            f"({base['wide_compile_minutes']} min; leg {r['wide_leg_minutes']} vs {base['wide_leg_minutes']} min)"
        )
    if args.json:
        Path(args.json).write_text(json.dumps({"speed": speed, "jobs": args.jobs, "shapes": results}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
