"""Stage ``toolkit``: install each distinct CUDA component set once, verified, laid out per
target, and tell later stages where everything is.

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

from ..core.errors import HostMismatch, ToolkitError
from ..core.lightclass import frozen
from ..core.state import Present
from ..toolkit.identity import ComponentSet, component_set
from ..toolkit.ref import RECEIPT, CudaToolkit, ref_for_set, toolkits_root
from .base import Context, Prepared, TaskPlan, known, run_plan

NAME = "toolkit"
"""The stage's name: its tasks are ``toolkit:<leg>`` (:mod:`bundlegraph.pipeline.stages`)."""


def _set_of(ctx: Context, leg: str) -> ComponentSet:
    spec = ctx.spec(leg)
    f = ctx.matrix.files.get(leg)
    return component_set(spec, ctx.matrix.root, str(f) if f else "")


def toolkit_for_leg(ctx: Context, leg: str) -> CudaToolkit:
    """The toolkit of ``leg`` (see the module docstring; the leg's context keeps it,
    :attr:`~.base.LegContext.toolkit`). Raises :class:`ToolkitError`, also for a CPU leg."""
    tk = ctx.leg(leg).toolkit
    if tk is None:
        raise ToolkitError(f"{leg}: the leg has no [cuda] table, so no CUDA toolkit")
    return tk


@frozen
class ToolkitPlan:
    """What ``toolkit:<set name>`` does: install ``components`` (the resolved
    :class:`~bundlegraph.toolkit.identity.ComponentSet`) at ``ref`` (the
    :class:`CudaToolkit` later stages read); ``bundles`` resolves the spec's lock files;
    ``legs`` use it; ``host_problem``: set when none of them can compile on this host (and none
    imports its build output), so nothing is downloaded for them."""

    components: ComponentSet
    ref: CudaToolkit
    bundles: Path
    legs: tuple[str, ...]
    host_problem: str | None = None

    def key(self) -> dict[str, Any]:
        """The component set with every resolved name, version, platform and sha256
        (:func:`bundlegraph.toolkit.key.key_inputs`; a redist set reads its manifest)."""
        from ..toolkit.key import key_inputs

        return key_inputs(self.components, self.bundles)

    def describe(self) -> dict[str, Any]:
        """The legs using it, where it installs, its receipt, its target directory, its components."""
        return {
            "legs": list(self.legs),
            "prefix": str(self.ref.prefix),
            "receipt": str(self.ref.receipt),
            "target_dir": self.ref.target_dir,
            **self.components.identity(),
        }


def run(plan: ToolkitPlan) -> list[Path | Present]:
    """Install (or verify the installed) toolkit from ``plan`` alone; returns its receipt.
    Refuses (:class:`HostMismatch`) before any download when no leg of it can use it here."""
    from ..toolkit.install import install

    if plan.host_problem:
        raise HostMismatch(f"toolkit:{plan.components.name}: {plan.host_problem}")
    receipt = install(plan.components, plan.ref, plan.bundles)
    if plan.components.source == "host":
        return [receipt]
    from ..toolkit.validate import required_paths

    # every required file by presence (not hashed: the receipt holds the archives' sha256), so a
    # toolkit whose files were deleted after install is not up to date
    return [receipt, *(Present(p) for p in required_paths(plan.ref.prefix, plan.components))]


def plans(ctx: Context) -> list[Any]:
    """One ``toolkit:<set name>`` task per distinct component set among the selected CUDA legs."""
    groups: dict[str, tuple[ComponentSet, list[str]]] = {}
    for leg in ctx.legs:
        if ctx.spec(leg).backend != "cuda":
            continue
        cs = _set_of(ctx, leg)
        groups.setdefault(cs.name, (cs, []))[1].append(leg)
    out = []
    for name, (cs, legs) in sorted(groups.items()):
        probs = [ctx.host_problem(leg) for leg in legs]
        tp = ToolkitPlan(
            components=cs,
            ref=ref_for_set(cs),
            bundles=ctx.matrix.root,
            legs=tuple(legs),
            host_problem=probs[0] if all(probs) else None,
        )
        out.append(
            TaskPlan(
                stage=NAME,
                name=name,
                leg=None,
                doc=f"install CUDA {cs.cuda_version} ({cs.source}) {cs.host_platform} host + "
                f"{cs.target_platform} target for {', '.join(legs)}",
                prepare=partial(Prepared.of, tp),
                apply=partial(run_plan, run),
                preview=partial(known, tp),
            )
        )
    return out


__all__ = ["NAME", "RECEIPT", "CudaToolkit", "ToolkitPlan", "plans", "ref_for_set", "toolkit_for_leg", "toolkits_root"]
