"""A backend's SDK as the toolkit stage sees it: :class:`SdkModule`, the shape of the module a
backend names in :attr:`bundlegraph.schemas.backend.Backend.SDK` (``bundlegraph.backends.cuda.sdk``,
``bundlegraph.backends.vulkan.sdk``), and :func:`sdk_module`, which imports it.

The stage (:mod:`bundlegraph.pipeline.toolkit`) asks each selected leg's backend for its SDK
module, groups the legs by :meth:`SdkModule.group` (legs that need the same SDK share one task
``toolkit:<name>``) and runs :meth:`SdkModule.run` on the plan :meth:`SdkModule.plan` made; later
stages read the leg's SDK from :meth:`SdkModule.ref` (a
:class:`~bundlegraph.toolchains.cuda.CudaToolkit`, a :class:`~bundlegraph.backends.vulkan.sdk_ref.VulkanSdk`).
The stage never names a backend. A module is imported by name so the backends table
(:mod:`bundlegraph.schemas.backend`, on the records' floor) imports no SDK code.
"""

from __future__ import annotations

import importlib
from dataclasses import field
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar, cast

from ..core.lightclass import frozen
from ..core.state import Present
from ..schemas.backend import Backend
from ..schemas.records import BundleSpec
from ..toolchains.sdk_ref import SdkRef


class SdkPlan(Protocol):
    """What one SDK task does: its key (the stamp), what ``bundlegraph plan`` shows, its doc line."""

    legs: tuple[str, ...]

    def key(self) -> dict[str, Any]: ...

    def describe(self) -> dict[str, Any]: ...

    def doc(self) -> str: ...


class SdkModule(Protocol):
    """A backend's SDK module (module docstring)."""

    def group(self, spec: BundleSpec, bundles: Path, spec_file: str) -> tuple[str, Any]:
        """``(task name after toolkit:, the SDK's identity)`` of a leg; pure, no network.
        Raises :class:`~bundlegraph.core.errors.ToolkitError` naming ``spec_file`` and the key."""
        ...

    def ref(self, spec: BundleSpec, bundles: Path, spec_file: str) -> SdkRef:
        """The SDK as later stages read it (its ``task`` is the SDK task's full name); pure."""
        ...

    def plan(self, ident: Any, legs: tuple[str, ...], bundles: Path, host_problem: str | None) -> SdkPlan:
        """The task's plan for the legs sharing ``ident``; ``host_problem``: why none of them
        can compile here (the run refuses before any download)."""
        ...

    def run(self, plan: Any) -> list[Path | Present]:
        """Install (or check) the SDK of ``plan``; returns the task's outputs (its receipt first)."""
        ...


@frozen
class SdkTaskPlan:
    """What the plan of an SDK task installed from a lock holds besides its SDK (each backend's
    record adds that, keyword-only: CUDA's ``components`` and ``ref``, Vulkan's and OpenCL's
    ``sdk`` and ``ref``): ``bundles``, the directory its lock files resolve against; ``legs``,
    the legs using it; ``host_problem``, set when none of them can compile on this host (and
    none imports its build output), so the run refuses before any download."""

    bundles: Path
    legs: tuple[str, ...]
    host_problem: str | None = None


class _Identified(Protocol):
    """An SDK's identity record (``VulkanSdkSet``, ``OpenClSdkSet``): what its key is taken over."""

    def identity(self) -> dict[str, Any]: ...


Ident = TypeVar("Ident", bound=_Identified)
R = TypeVar("R")


@frozen
class PrefixSdkTaskPlan(SdkTaskPlan, Generic[Ident, R]):
    """An SDK task that installs the SDK ``sdk`` (its identity record) into one prefix with a
    receipt, ``ref`` (what later stages read), and pins CMake entries: the Vulkan and OpenCL SDKs.
    ``bundlegraph plan`` shows it by :func:`prefix_description`."""

    sdk: Ident = field(kw_only=True)
    ref: R = field(kw_only=True)

    def describe(self) -> dict[str, Any]:
        """The legs using it, where it installs, its receipt, the CMake entries it pins."""
        return prefix_description(self.legs, self.ref, self.sdk.identity())


def prefix_description(legs: tuple[str, ...], ref: Any, identity: dict[str, Any]) -> dict[str, Any]:
    """What ``bundlegraph plan`` shows of an SDK task that installs into one prefix with a
    receipt and pins CMake entries (the Vulkan and OpenCL SDKs): the ``legs`` using it, ``ref``'s
    prefix, receipt and :meth:`cmake_cache`, then the SDK's ``identity``."""
    return {
        "legs": list(legs),
        "prefix": str(ref.prefix),
        "receipt": str(ref.receipt),
        "cmake": ref.cmake_cache(),
        **identity,
    }


def sdk_module(b: Backend) -> SdkModule | None:
    """The SDK module backend ``b`` names (None: ``b`` has no SDK). Raises ModuleNotFoundError
    for a name that is no module (a bug in the backends table)."""
    if b.SDK is None:
        return None
    return cast("SdkModule", importlib.import_module(b.SDK))


__all__ = ["SdkModule", "SdkPlan", "prefix_description", "sdk_module"]
