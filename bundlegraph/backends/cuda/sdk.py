"""The CUDA backend's SDK (:attr:`bundlegraph.backends.cuda.SDK`): the toolkit of a CUDA leg as
the toolkit stage's :class:`~bundlegraph.toolkit.sdk.SdkModule`, made of :mod:`bundlegraph.toolkit`'s
CUDA machinery. Its tasks keep their names (``toolkit:cuda13.5-linux-x86_64+linux-sbsa-3f9a1c``,
:mod:`bundlegraph.toolkit.identity`) and their keys (:func:`bundlegraph.toolkit.key.key_inputs`),
so no existing stamp changes.

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

from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...core.errors import HostMismatch
from ...core.lightclass import frozen
from ...core.state import Present
from ...schemas.records import BundleSpec
from ...toolkit.identity import ComponentSet
from ...toolkit.ref import CudaToolkit, ref_for_set
from ...toolkit.sdk import SdkTaskPlan
from .toolkit_set import component_set

if TYPE_CHECKING:
    from ...pipeline.base import Context


@frozen
class ToolkitPlan(SdkTaskPlan):
    """What ``toolkit:<set name>`` does: install ``components`` (the resolved
    :class:`~bundlegraph.toolkit.identity.ComponentSet`) at ``ref`` (the
    :class:`CudaToolkit` later stages read) for the :class:`~bundlegraph.toolkit.sdk.SdkTaskPlan`'s
    legs."""

    components: ComponentSet = field(kw_only=True)
    ref: CudaToolkit = field(kw_only=True)

    def key(self) -> dict[str, Any]:
        """The component set with every resolved name, version, platform and sha256
        (:func:`bundlegraph.toolkit.key.key_inputs`; a redist set reads its manifest)."""
        from ...toolkit.key import key_inputs

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

    def doc(self) -> str:
        """The task's doc line."""
        cs = self.components
        return (
            f"install CUDA {cs.cuda_version} ({cs.source}) {cs.host_platform} host + "
            f"{cs.target_platform} target for {', '.join(self.legs)}"
        )


def group(spec: BundleSpec, bundles: Path, spec_file: str) -> tuple[str, ComponentSet]:
    """The leg's component set and its name (legs with equal sets share a task)."""
    cs = component_set(spec, bundles, spec_file)
    return cs.name, cs


def ref(spec: BundleSpec, bundles: Path, spec_file: str) -> CudaToolkit:
    """The leg's toolkit where ``toolkit:<name>`` installs it."""
    return ref_for_set(component_set(spec, bundles, spec_file))


def plan(ident: ComponentSet, legs: tuple[str, ...], bundles: Path, host_problem: str | None) -> ToolkitPlan:
    """The plan of the toolkit task of ``ident``."""
    return ToolkitPlan(components=ident, ref=ref_for_set(ident), bundles=bundles, legs=legs, host_problem=host_problem)


def run(plan: ToolkitPlan) -> list[Path | Present]:
    """Install (or verify the installed) toolkit from ``plan`` alone; returns its receipt.
    Refuses (:class:`HostMismatch`) before any download when no leg of it can use it here."""
    from ...toolkit.install import install

    if plan.host_problem:
        raise HostMismatch(f"toolkit:{plan.components.name}: {plan.host_problem}")
    receipt = install(plan.components, plan.ref, plan.bundles)
    if plan.components.source == "host":
        return [receipt]
    from ...toolkit.validate import required_paths

    # every required file by presence (not hashed: the receipt holds the archives' sha256), so a
    # toolkit whose files were deleted after install is not up to date
    return [receipt, *(Present(p) for p in required_paths(plan.ref.prefix, plan.components))]


__all__ = ["ToolkitPlan", "group", "plan", "ref", "run"]


def toolkit_for_leg(ctx: Context, leg: str) -> CudaToolkit:
    """The toolkit of ``leg`` (the module docstring's contract; the leg's context keeps it,
    :attr:`~bundlegraph.pipeline.base.LegContext.sdk`). Raises :class:`ToolkitError`, also for
    a leg of another backend."""
    from ...core.errors import ToolkitError
    from ...toolchains.base import cuda_of

    tk = cuda_of(ctx.leg(leg).sdk)
    if tk is None:
        raise ToolkitError(f"{leg}: the leg has no [cuda] table, so no CUDA toolkit")
    return tk
