"""``bundlegraph explain TASK``: why a task would run now — which input changed, from what to
what, or which output was touched — or that it is up to date. Runs nothing.

It answers in every state: a task that never completed ("would run: never completed", with what
it would consume, or why that is known only after its dependencies ran), a group name (``build``:
one line per task of the stage), a task of a leg this host cannot compile (the refusal it will
meet), and a task whose inputs cannot be computed now (say a toolkit lock was switched: "its
inputs cannot be computed now: ..."). Exit 0 unless the name is no task or stage.
"""

from __future__ import annotations

import argparse
from typing import Any

from ..core import state
from ..core.errors import BundleGraphError
from ..graph.context import Graph, TaskPlan, load_graph
from . import add_filter_args, filters_from


def explain_task(g: Graph, plan: TaskPlan) -> tuple[bool, list[str]]:
    """``(would run, lines)`` for one task (see the module docstring)."""
    lines: list[str] = []
    stamp = state.load(plan.full_name)
    moved: tuple[str, ...] = ()
    try:
        prepared = plan.prepared()
        key: dict[str, Any] | None = prepared.key
        moved = prepared.stale
        err = None
    except BundleGraphError as e:
        key, err = None, str(e).splitlines()[0]
    if stamp is None:
        lines.append("never completed (no stamp), or its last run failed or was interrupted")
        if key is not None:
            lines.append(f"it would consume: {', '.join(sorted(key))}")
        elif err:
            lines.append(f"what it consumes is known once its dependencies ran ({err})")
    elif key is None:
        lines.append(f"its inputs cannot be computed now: {err}")
    else:
        lines += state.explain(plan.full_name, key) or list(moved)
    for dep in plan.deps:
        try:
            d = g.find(dep)
            p = d.prepared()
            stale = state.load(d.full_name) is None or bool(state.explain(d.full_name, p.key) or p.stale)
        except BundleGraphError:
            stale = True
        if stale:
            lines.append(f"depends on {dep}, which would run first (see: bundlegraph explain {dep})")
    if plan.leg is not None:
        refusal = g.ctx.host_problem(plan.leg)
        if refusal and (lines or stamp is None):
            lines.append(f"on this host it is refused before any download: {refusal}")
    return bool(lines), lines


def run(args: argparse.Namespace) -> int:
    g = load_graph(args.bundles, filters_from(args))
    stage = g.by_stage().get(args.task)
    if stage is not None and not any(p.full_name == args.task for p in stage):
        for plan in stage:  # a group name: one line per task of the stage
            due, lines = explain_task(g, plan)
            print(f"{plan.full_name}: " + (f"would run: {lines[0]}" if due else "up to date"))
        return 0
    plan = g.find(args.task)
    due, lines = explain_task(g, plan)
    print(f"{plan.full_name}: " + ("would run" if due else "up to date"))
    for r in lines:
        print(f"  - {r}")
    return 0


def register(sub: Any) -> None:
    p = sub.add_parser("explain", help="say why a task would run now, or that it is up to date")
    p.add_argument("task", help="a task name as `doit list` shows it (build:linux-arm64-cpu), or a stage (build)")
    add_filter_args(p)
    p.set_defaults(func=run)
