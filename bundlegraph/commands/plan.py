"""``bundlegraph plan [LEG]``: each selected leg's stages, their dependencies and inputs
(commands, paths, toolchain files) as the graph would run them. Runs nothing.

``LEG`` shows one leg of the selected graph as it runs there (a CUDA leg's merge after its
base's ``package:`` task); ``--only-leg LEG`` plans the graph of that leg alone, as a one-leg
runner runs it (the merge base then comes from ``dist/`` or ``artifacts=``)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from ..core.errors import BundleGraphError
from ..core.state import canonical, key_of
from ..graph.context import STAGE_ORDER, TaskPlan, load_graph
from . import add_filter_args, filters_from


def run(args: argparse.Namespace) -> int:
    if args.critical_path:
        return _critical_path(args)
    g = load_graph(args.bundles, filters_from(args))
    legs = list(g.ctx.legs)
    if args.leg:
        if args.leg not in legs:
            print(
                f"bundlegraph plan: {args.leg!r} is not a leg of the selected graph; its legs: "
                f"{', '.join(legs) or '(none)'}",
                file=sys.stderr,
            )
            return 2
        legs = [args.leg]
    if args.shards:
        if not args.leg:
            print("bundlegraph plan --shards: name the leg (bundlegraph plan LEG --shards)", file=sys.stderr)
            return 2
        return _shards(args, g.ctx, args.leg)

    def entry(p: TaskPlan) -> dict[str, Any]:
        return {"task": p.full_name, "doc": p.doc, "deps": p.deps, **p.describe(), **(_key(p) if args.keys else {})}

    out: dict[str, dict[str, Any]] = {}
    for leg in legs:
        spec = g.ctx.spec(leg)
        stages = [
            entry(p) for p in sorted((p for p in g.plans if p.leg == leg), key=lambda p: STAGE_ORDER.index(p.stage))
        ]
        out[leg] = {
            "bundle": spec.bundle_name(g.ctx.release.tag, g.ctx.release.bundle_prefix),
            "promised": spec.promised,
            "profile": spec.profile.dump(),
            "toolchain": spec.toolchain,
            "stages": stages,
        }
    shared = [entry(p) for p in g.plans if p.leg is None]
    from ..core import paths

    release = _release(g.ctx.release)
    release["coverage"] = _coverage(g.ctx.matrix)
    if args.json:
        print(
            json.dumps(
                {
                    "work_directory": paths.workdir().as_posix(),
                    "bundles": Path(args.bundles).as_posix(),
                    "release": release,
                    "legs": out,
                    "shared": shared,
                },
                indent=2,
                default=str,
            )
        )
        return 0
    print(f"work directory {paths.workdir()} (build/, dist/, .bundlegraph/); bundles {args.bundles}")
    print(f"release {release['tag']}: {release['source']}")
    for pr in release["merged_prs"]:
        print(f"   + {pr['repo']}#{pr['number']} at {pr['sha']}" + (f": {pr['title']}" if pr["title"] else ""))
    cov = release["coverage"]
    if cov["rules"]:
        print("coverage rules (release.toml [coverage]):")
        for line in cov["rules"]:
            print(f"   {line}")
        state = "hold" if not cov["problems"] else f"are broken ({len(cov['problems'])} problem(s)); publish refuses"
        print(f"   judged on the promised legs' bundles before anything builds: the rules {state}")
        for line in cov["problems"]:
            print(f"   - {line}")
    for leg, info in out.items():
        print(f"== {leg}  ->  {info['bundle']}{'' if info['promised'] else '  (not promised)'}")
        print(
            f"   profile {info['profile']['name']} (line {info['profile']['line'] or 'none: not a CUDA leg'}, klass "
            f"{info['profile']['klass']}, rank {info['profile']['rank']}), toolchain {info['toolchain']}"
        )
        for st in info["stages"]:
            print(f"   [{st['task']}] {st['doc']}")
            if st["deps"]:
                print(f"      after: {', '.join(st['deps'])}")
            for k, v in st.items():
                if k in ("task", "doc", "deps", "key"):
                    continue
                _print_value(k, v)
    for st in shared:
        print(f"== [{st['task']}] {st['doc']}")
        if st["deps"]:
            print(f"      after: {', '.join(st['deps'])}")
    return 0


def _coverage(matrix: Any) -> dict[str, list[str]]:
    """The release's coverage rules in words and what breaks them now, judged on the bundles
    every promised leg of the whole matrix (not only the selected legs) will ship: the publish
    gate's verdict before anything builds (:mod:`bundlegraph.installer.coverage`)."""
    from ..installer.coverage import describe, offers_of_specs, rule_problems

    rel = matrix.release
    return {
        "rules": describe(rel.coverage),
        "problems": rule_problems(rel.coverage, offers_of_specs(matrix), prefix=rel.bundle_prefix, tag=rel.tag),
    }


def _release(rel: Any) -> dict[str, Any]:
    """What ``plan`` says of the release: its tag, upstream build, the kind of source and, for a
    mix, the base build and the pull requests merged on top (in order), and how the tag follows
    from them."""
    from ..schemas.records import MixPin

    src = rel.source
    out: dict[str, Any] = {
        "tag": rel.tag,
        "upstream_tag": rel.upstream_tag,
        "source_ref_kind": rel.source_ref_kind,
        "merged_prs": [],
    }
    if isinstance(src, MixPin):
        out["base"] = {"tag": src.base.tag, "commit": src.base.commit, "sha256": src.base.sha256, "url": src.url}
        out["merged_prs"] = [
            {"repo": p.repo, "number": p.number, "sha": p.sha, "title": p.title, "pin": p.pin_text} for p in src.prs
        ]
        out["source"] = (
            f"mix of upstream build {src.base.tag} ({src.base.commit[:12]}, from {src.url}) and "
            f"{len(src.prs)} pull request{'' if len(src.prs) == 1 else 's'}; tag derived from the pins"
            if src.prs
            else f"upstream build {src.base.tag} ({src.base.commit[:12]}, from {src.url}), no pull request"
        )
    else:
        out["source"] = f"{src.kind} source, upstream build {rel.upstream_tag}"
    return out


def _shards(args: argparse.Namespace, ctx: Any, leg: str) -> int:
    """Each shard's objects and predicted seconds: from ninja's graph when the leg is configured
    in this work directory, else from the leg's cost record (said in the output)."""
    from ..pipeline.build import plan_build
    from ..pipeline.compile import costs
    from ..pipeline.compile.shards import count_problem, split
    from ..pipeline.shard_build import leg_slices, split_digest
    from ..release.critical_path import leg_steps

    spec = ctx.spec(leg)
    n = args.count or spec.build.shards
    bp = plan_build(ctx, leg)
    if (bp.cmake_dir / "build.ninja").is_file():
        slices, record = leg_slices(bp, n)
        source = f"ninja's graph of {bp.cmake_dir}"
    else:
        record = costs.find(leg, ctx.matrix.root)
        steps, _other = leg_steps(spec, record)
        bad = count_problem(leg, n, len(steps) if record and record.objects else n, spec.build.targets)
        if bad:  # (without a record the steps are not known here: only the bounds are checked)
            raise BundleGraphError(bad)
        slices = split(steps, n)
        source = (
            "the cost record's steps (the leg is not configured here: configure it for ninja's own list)"
            if record and record.objects
            else "stated estimates (no cost record and not configured here)"
        )
    origin = record.origin.as_posix() if record and record.origin else "the stated estimates"
    out = {
        "leg": leg,
        "shards": n,
        "spec_shards": spec.build.shards,
        "steps_from": source,
        "costs_from": origin,
        "jobs": args.jobs,
        "split_digest": split_digest(slices),
        "slices": [
            {
                "shard": f"{s.index}/{s.count}",
                "cpu_seconds": round(s.seconds, 1),
                "predicted_seconds": round(s.wall(args.jobs), 1),
                "objects": [
                    {"output": c.step.output, "seconds": round(c.seconds, 1), "measured": c.measured} for c in s.steps
                ],
            }
            for s in slices
        ],
    }
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    print(
        f"== {leg}: {n} shard{'s' if n != 1 else ''} (spec: shards = {spec.build.shards}); steps from {source}; "
        f"costs from {origin}"
    )
    for sl in out["slices"]:
        print(
            f"   shard {sl['shard']}: {len(sl['objects'])} objects, {sl['cpu_seconds']:.0f} CPU s, "
            f"~{sl['predicted_seconds']:.0f} s at -j{args.jobs}"
        )
        for o in sl["objects"]:
            print(f"      {o['seconds']:7.1f} s{'' if o['measured'] else ' (estimate)'}  {o['output']}")
    return 0


def _critical_path(args: argparse.Namespace) -> int:
    """The release workflow's modeled timelines, warm and cold (:mod:`bundlegraph.release.critical_path`)."""
    from ..pipeline.base import select
    from ..pipeline.compile import costs
    from ..release.critical_path import Assumptions, predict_both
    from ..specs.loader import load_matrix

    m = load_matrix(args.bundles)
    legs = select(m, filters_from(args))
    records = {leg: costs.find(leg, m.root) for leg in legs}
    unknown = sorted(set(args.uncached) - set(m.legs))
    if unknown:
        raise BundleGraphError(f"--uncached {unknown[0]}: no such leg; legs: {', '.join(m.legs)}")
    a = Assumptions(jobs=args.jobs, speed=args.speed, uncached=frozenset(args.uncached))
    t, cold = predict_both(
        m, legs, a, records, title=f"Predicted release timeline of {m.release.tag} (runners at -j{args.jobs})"
    )
    if args.json:
        print(
            json.dumps(
                {
                    "modeled": True,
                    "total_minutes": round(t.total / 60, 2),
                    "cold_total_minutes": round(cold.total / 60, 2),
                    "uncached": sorted(a.uncached),
                    "jobs": args.jobs,
                    "speed": args.speed,
                    "costs_from": {
                        leg: (r.origin.as_posix() if r and r.origin else None) for leg, r in records.items()
                    },
                    "slots": [
                        {
                            "job": s.job,
                            "row": s.name,
                            "start_minutes": round(s.start / 60, 2),
                            "end_minutes": round(s.end / 60, 2),
                            "critical": s.critical,
                            "parts_seconds": {k: round(v, 1) for k, v in s.parts.items()},
                            "cold_minutes": round(c.minutes, 2),
                            "cold_critical": c.critical,
                            "timeout_minutes": s.timeout,
                        }
                        for s, c in zip(t.slots, cold.slots, strict=True)
                    ],
                },
                indent=2,
            )
        )
        return 0
    if args.markdown:
        print(t.markdown(cold))
        return 0
    print(t.text(cold))
    missing = [leg for leg, r in records.items() if r is None or not r.objects]
    if missing:
        print(f"(no cost record for {', '.join(missing)}: stated estimates)")
    print()
    print(t.mermaid())
    print(cold.mermaid())
    return 0


def _key(p: TaskPlan) -> dict[str, Any]:
    """The task's action key as its plan value computes it now (``key``, and ``key_digest``
    as the stamp records it), or why it cannot be computed on this host (``key_unavailable``)."""
    try:
        k = p.key()
    except BundleGraphError as e:
        return {"key_unavailable": str(e).splitlines()[0]}
    return {"key": json.loads(canonical(k)), "key_digest": key_of(k)}


def _print_value(k: str, v: object, indent: str = "      ") -> None:
    if isinstance(v, str) and "\n" in v:
        print(f"{indent}{k}:")
        for line in v.splitlines():
            print(f"{indent}  | {line}")
    elif isinstance(v, (dict, list)):
        print(f"{indent}{k}: {json.dumps(v, default=str)}")
    else:
        print(f"{indent}{k}: {v}")


def register(sub: Any) -> None:
    p = sub.add_parser("plan", help="print each leg's stages and inputs (runs nothing)")
    p.add_argument("leg", nargs="?", help="one leg (default: all selected legs)")
    add_filter_args(p)
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument(
        "--keys",
        action="store_true",
        help="also each task's action key as it stands now (what its stamp records when it runs; "
        "resolving it may start compilers and fetch NVIDIA's redist manifest)",
    )
    p.add_argument(
        "--shards",
        action="store_true",
        help="LEG's shards: each shard's objects and predicted seconds (the split doit build:L shard=I/N makes)",
    )
    p.add_argument("--count", type=int, metavar="N", help="with --shards: split into N instead of the spec's shards")
    p.add_argument(
        "--critical-path",
        action="store_true",
        help="the release workflow's predicted timeline, the critical path marked, and a Mermaid gantt",
    )
    p.add_argument("--markdown", action="store_true", help="with --critical-path: the step-summary form")
    p.add_argument(
        "--uncached",
        action="append",
        default=[],
        metavar="LEG",
        help="with --critical-path: model LEG's final compile without a compiler cache (a full compile); repeatable",
    )
    p.add_argument(
        "--jobs",
        type=int,
        default=3,
        metavar="J",
        help="compiles a runner runs at once, for the predictions (default 3: a 4-vCPU runner)",
    )
    p.add_argument(
        "--speed",
        type=float,
        default=1.0,
        help="a runner core's seconds per recorded second, for the predictions (default 1.0)",
    )
    p.set_defaults(func=run)
