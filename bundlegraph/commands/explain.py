"""``bundlegraph explain TASK``: why a task would run now — which input changed, from what to
what, or which output was touched — or that it is up to date. Runs nothing."""

from __future__ import annotations

import argparse
from typing import Any

from .. import state
from ..graph import load_graph
from . import add_filter_args, filters_from


def run(args: argparse.Namespace) -> int:
    g = load_graph(args.bundles, filters_from(args))
    plan = g.find(args.task)
    reasons = state.explain(plan.full_name, plan.key())
    stale_deps = []
    for dep in plan.deps:
        try:
            d = g.find(dep)
        except Exception:
            continue
        if state.explain(d.full_name, d.key()):
            stale_deps.append(d.full_name)
    if not reasons and not stale_deps:
        print(f"{plan.full_name}: up to date")
        return 0
    print(f"{plan.full_name}: would run")
    for r in reasons:
        print(f"  - {r}")
    for dep in stale_deps:
        print(f"  - depends on {dep}, which would run first (see: bundlegraph explain {dep})")
    return 0


def register(sub: Any) -> None:
    p = sub.add_parser("explain", help="say why a task would run now, or that it is up to date")
    p.add_argument("task", help="a task name as `doit list` shows it, e.g. build:linux-arm64-cpu")
    add_filter_args(p)
    p.set_defaults(func=run)
