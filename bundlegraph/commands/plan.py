"""``bundlegraph plan [LEG]``: each selected leg's stages, their dependencies and inputs
(commands, paths, toolchain files) as the graph would run them. Runs nothing.

``LEG`` shows one leg of the selected graph as it runs there (a CUDA leg's merge after its
base's ``package:`` task); ``--only-leg LEG`` plans the graph of that leg alone, as a one-leg
runner runs it (the merge base then comes from ``dist/`` or ``artifacts=``)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ..errors import BundleGraphError
from ..graph import STAGE_ORDER, TaskPlan, load_graph
from ..state import canonical, key_of
from . import add_filter_args, filters_from


def run(args: argparse.Namespace) -> int:
    g = load_graph(args.bundles, filters_from(args))
    legs = list(g.ctx.legs)
    if args.leg:
        if args.leg not in legs:
            print(f"bundlegraph plan: {args.leg!r} is not a leg of the selected graph; its legs: "
                  f"{', '.join(legs) or '(none)'}", file=sys.stderr)
            return 2
        legs = [args.leg]
    out: dict[str, dict[str, Any]] = {}
    for leg in legs:
        spec = g.ctx.spec(leg)
        stages = []
        for p in sorted((p for p in g.plans if p.leg == leg), key=lambda p: STAGE_ORDER.index(p.stage)):
            stages.append({"task": p.full_name, "doc": p.doc, "deps": p.deps, **p.details(),
                           **(_key(p) if args.keys else {})})
        out[leg] = {
            "bundle": spec.bundle_name(g.ctx.release.tag, g.ctx.release.bundle_prefix),
            "promised": spec.promised,
            "profile": spec.profile.dump(),
            "toolchain": spec.toolchain,
            "stages": stages,
        }
    shared = [{"task": p.full_name, "doc": p.doc, "deps": p.deps, **p.details(), **(_key(p) if args.keys else {})}
              for p in g.plans if p.leg is None]
    if args.json:
        print(json.dumps({"legs": out, "shared": shared}, indent=2, default=str))
        return 0
    for leg, info in out.items():
        print(f"== {leg}  ->  {info['bundle']}{'' if info['promised'] else '  (not promised)'}")
        print(f"   profile {info['profile']['name']} (line {info['profile']['line']}, klass "
              f"{info['profile']['klass']}, rank {info['profile']['rank']}), toolchain {info['toolchain']}")
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


def _key(p: TaskPlan) -> dict:
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
    p.add_argument("--keys", action="store_true",
                   help="also each task's action key as it stands now (what its stamp records when it runs; "
                        "resolving it may start compilers and fetch NVIDIA's redist manifest)")
    p.set_defaults(func=run)
