"""Stage ``toolkit``: install each distinct SDK of the selected legs once, verified, and tell
later stages where everything is. Which SDK a leg needs is its backend's business
(:attr:`bundlegraph.schemas.backend.Backend.SDK` names a :class:`~bundlegraph.toolkit.sdk.SdkModule`):
CUDA's toolkit (:mod:`bundlegraph.backends.cuda.sdk`, tasks ``toolkit:cuda…``: what it promises
the later stages is described there),
Vulkan's headers, loader and glslc (:mod:`bundlegraph.backends.vulkan.sdk`, tasks
``toolkit:vulkan-<version>-<platform>-<hash6>``), HIP's pinned AMD TheRock tarball
(:mod:`bundlegraph.backends.hip.sdk`, tasks ``toolkit:therock-<build>-<os>-<family>-<hash6>``); a
backend without an SDK (CPU, Metal) has no task.
This stage never names a backend. ``LegContext.sdk`` is the leg's SDK as later stages read it
(:class:`~bundlegraph.toolchains.sdk_ref.SdkRef`). Beside the SDKs it installs each pinned
compiler the selected legs' toolchains name (:mod:`bundlegraph.toolkit.compiler`).
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

from ..core.state import Present
from ..schemas import backend as backends
from ..toolkit.compiler import CompilerPlan
from ..toolkit.compiler import plan as plan_compiler
from ..toolkit.compiler import run as run_compiler
from ..toolkit.sdk import SdkModule, sdk_module
from .base import Context, Prepared, TaskPlan, known, run_plan

NAME = "toolkit"
"""The stage's name: its tasks are ``toolkit:<leg>`` (:mod:`bundlegraph.pipeline.stages`)."""


def _run_sdk(mod: SdkModule, plan: Any) -> list[Path | Present]:
    return mod.run(plan)


def _run_compiler(plan: CompilerPlan) -> list[Path | Present]:
    return run_compiler(plan)


def compiler_plans(ctx: Context) -> list[Any]:
    """One ``toolkit:gcc-<version>-<target>-<6 hex>`` task per distinct pinned compiler among the
    selected legs' toolchains (:mod:`bundlegraph.toolkit.compiler`). Legs built elsewhere
    (``built=DIR``) count too: a cross leg's smoke runs under qemu with its target C library."""
    groups: dict[str, tuple[Any, list[str]]] = {}
    for leg in ctx.legs:
        c = ctx.leg(leg).compiler
        if c is not None:
            groups.setdefault(c.name, (c, []))[1].append(leg)
    out = []
    for _name, (c, legs) in sorted(groups.items()):
        probs = [ctx.host_problem(leg) for leg in legs]
        cp = plan_compiler(c, tuple(legs), probs[0] if all(probs) else None)
        out.append(
            TaskPlan(
                stage=NAME,
                name=c.name,
                leg=None,
                doc=cp.doc(),
                prepare=partial(Prepared.of, cp),
                apply=partial(run_plan, _run_compiler),
                preview=partial(known, cp),
            )
        )
    return out


def plans(ctx: Context) -> list[Any]:
    """One ``toolkit:<name>`` task per distinct SDK among the selected legs (legs whose backend
    names the same SDK identity share it)."""
    groups: dict[str, tuple[SdkModule, Any, list[str]]] = {}
    for leg in ctx.legs:
        mod = sdk_module(backends.backend(ctx.spec(leg).backend))
        if mod is None:
            continue
        f = ctx.matrix.files.get(leg)
        name, ident = mod.group(ctx.spec(leg), ctx.matrix.root, str(f) if f else "")
        groups.setdefault(name, (mod, ident, []))[2].append(leg)
    out = compiler_plans(ctx)
    for name, (mod, ident, legs) in sorted(groups.items()):
        probs = [ctx.host_problem(leg) for leg in legs]
        tp = mod.plan(ident, tuple(legs), ctx.matrix.root, probs[0] if all(probs) else None)
        out.append(
            TaskPlan(
                stage=NAME,
                name=name,
                leg=None,
                doc=tp.doc(),
                prepare=partial(Prepared.of, tp),
                apply=partial(run_plan, partial(_run_sdk, mod)),
                preview=partial(known, tp),
            )
        )
    return out


__all__ = ["NAME", "compiler_plans", "plans"]
