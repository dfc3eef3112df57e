"""Stage ``toolkit``: install each distinct SDK of the selected legs once, verified, and tell
later stages where everything is. Which SDK a leg needs is its backend's business
(:attr:`bundlegraph.backends.Backend.SDK` names a :class:`~bundlegraph.toolkit.sdk.SdkModule`):
CUDA's toolkit (:mod:`bundlegraph.toolkit.cuda_sdk`, tasks ``toolkit:cuda…``, described below),
Vulkan's headers, loader and glslc (:mod:`bundlegraph.backends.vulkan.sdk`, tasks
``toolkit:vulkan-<version>-<platform>-<hash6>``), HIP's pinned AMD TheRock tarball
(:mod:`bundlegraph.backends.hip.sdk`, tasks ``toolkit:therock-<build>-<os>-<family>-<hash6>``); a
backend without an SDK (CPU, Metal) has no task.
This stage never names a backend. ``LegContext.sdk`` is the leg's SDK as later stages read it.

Contract for later stages (configure, build, verify, package)
-------------------------------------------------------------
``toolkit_for_leg(ctx, leg) -> CudaToolkit`` (no side effects, no network; works before the
toolkit is installed). The configure task of ``leg`` adds ``ref.task`` to its ``deps`` and
``upstream_digest(ref.task)`` to its action-key inputs; after that task ran, the paths below
exist and have passed validation (every required file of both roles present). Raises
:class:`~bundlegraph.core.errors.ToolkitError` for a leg without ``[cuda]`` or an unusable toolkit
spec (message names the spec file and key).

``CudaToolkit`` (frozen):

- ``task``: full doit task name, ``toolkit:cuda13.5-linux-x86_64+linux-sbsa-3f9a1c``; legs
  with the same component set get the same task.
- ``name``: the part after ``toolkit:``; ``prefix``: the installed toolkit (``Path``; for the
  ``host`` source the host's own toolkit, read-only); ``receipt``: ``Path`` of the receipt JSON
  (``components[]`` with name/role/version/platform/sha256/size/source/origin, ``generated[]``
  files that must never ship, e.g. the link-only ``libcuda.so`` stub).
- ``version`` (``"13.5"``, the leg's CUDA version), ``source`` (``redist|wheels|host``),
  ``host_platform``/``target_platform`` (NVIDIA redist keys), ``target_dir`` (nvcc
  ``-target-dir`` value: ``sbsa-linux``, ``x86_64-linux``, ``arm64``, ``x64``);
  ``cross`` (target differs from host); ``windows`` (target is Windows).
- ``nvcc`` (``bin/nvcc`` or ``bin/nvcc.exe``),
  ``lib_dir`` (Linux ``targets/<dir>/lib``; Windows ``lib/<arch>``), ``bin_dir`` (Windows
  ``bin/<arch>`` runtime DLLs; Linux = ``lib_dir``).
- ``library(role)`` for role in ``cudart cudart_static cudadevrt cublas cublasLt
  cuda_driver``: the file to link (``libcudart.so``/``cudart.lib``, ..., Linux
  ``stubs/libcuda.so``); ``libraries()`` all of them as a dict.
- ``runtime(name)``: a shipped runtime file (``cudart`` -> ``bin/arm64/cudart64_13.dll`` or
  ``targets/sbsa-linux/lib/libcudart.so.13``).
- ``nvcc_target_flags()``: ``["-target-dir", target_dir]`` for cross builds, else ``[]``.
- ``cmake_cache()``: FindCUDAToolkit pins (``CMAKE_CUDA_COMPILER``, ``CUDAToolkit_ROOT``,
  ``CUDA_cudart_LIBRARY``, ``CUDA_cublas_LIBRARY``, ``CUDA_cublasLt_LIBRARY``,
  ``CUDA_cuda_driver_LIBRARY``) so FindCUDAToolkit never picks the host's x86_64 libraries.
- ``never_ship()``: prefix-relative paths the receipt marks as generated (read after the task ran).
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

from .. import backends
from ..core.errors import ToolkitError
from ..core.state import Present
from ..toolchains.base import cuda_of
from ..toolkit.compiler import CompilerPlan
from ..toolkit.compiler import plan as plan_compiler
from ..toolkit.compiler import run as run_compiler
from ..toolkit.cuda_sdk import ToolkitPlan
from ..toolkit.cuda_sdk import run as run_cuda
from ..toolkit.ref import RECEIPT, CudaToolkit, ref_for_set, toolkits_root
from ..toolkit.sdk import SdkModule, sdk_module
from .base import Context, Prepared, TaskPlan, known, run_plan

NAME = "toolkit"
"""The stage's name: its tasks are ``toolkit:<leg>`` (:mod:`bundlegraph.pipeline.stages`)."""


def toolkit_for_leg(ctx: Context, leg: str) -> CudaToolkit:
    """The toolkit of ``leg`` (see the module docstring; the leg's context keeps it,
    :attr:`~.base.LegContext.sdk`). Raises :class:`ToolkitError`, also for a CPU leg."""
    tk = cuda_of(ctx.leg(leg).sdk)
    if tk is None:
        raise ToolkitError(f"{leg}: the leg has no [cuda] table, so no CUDA toolkit")
    return tk


def run(plan: ToolkitPlan) -> list[Path | Present]:
    """Install (or verify the installed) CUDA toolkit from ``plan`` alone
    (:func:`bundlegraph.toolkit.cuda_sdk.run`)."""
    return run_cuda(plan)


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


__all__ = [
    "NAME",
    "RECEIPT",
    "CudaToolkit",
    "ToolkitPlan",
    "plans",
    "ref_for_set",
    "run",
    "toolkit_for_leg",
    "toolkits_root",
]
