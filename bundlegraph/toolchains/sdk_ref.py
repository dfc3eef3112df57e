"""What every backend SDK promises the stages after its toolkit task (issue 53: one typed SDK
reference in the leg context, verbs instead of ``isinstance`` chains): :class:`SdkRef`, which
:class:`~.cuda.CudaToolkit`, :class:`~bundlegraph.backends.vulkan.sdk_ref.VulkanSdk` and :class:`~.hip.HipSdk` satisfy
(mypy checks each against it), and :class:`GpuCompiler`, the GPU compiler an SDK brings.

A stage holds a leg's SDK as ``SdkRef | None`` (:attr:`bundlegraph.pipeline.base.LegContext.sdk`,
None: a backend without an SDK) and asks it, never which one it is: the lines it adds to the
leg's CMake toolchain file, its GPU compiler, what of it is missing on disk, the toolchain that
compiles with it, and what the configure record keeps of it.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, Self, TypeVar

from ..core.lightclass import frozen

if TYPE_CHECKING:
    from .prefix_maps import PrefixMaps


@frozen
class GpuCompiler:
    """The GPU compiler an SDK brings, as the leg's machine file names it: ``role`` (its
    ``[binaries]`` entry: ``glslc``, ``hip``), ``what`` (the SDK, for messages), ``sdk_dir`` (the
    prefix-relative folder searched first, ``.`` the prefix itself; empty: PATH only) and
    ``hint`` (how to get it, appended to the message when it is found nowhere)."""

    role: str
    what: str
    sdk_dir: str
    hint: str = ""


@frozen
class LineInputs:
    """What the toolchain hands an SDK for its lines of the toolchain file: ``binaries`` (the
    resolved compilers, role -> path), ``host_compiler`` and ``pin_comment`` (the C++ compiler a
    device compiler hosts, and the comment that pins it) and ``maps`` (the build-host roots every
    compile maps to stable names; None: none)."""

    binaries: Mapping[str, str]
    host_compiler: str = ""
    pin_comment: str = ""
    maps: PrefixMaps | None = None


class BuildsWith(Protocol):
    """The leg's toolchain as an SDK sees it (:class:`~.base.Toolchain` satisfies it): the
    machine file's binaries, the CUDA lines its kind renders, and a copy that takes its compilers
    from an SDK. (A protocol here, not the class, so the SDK types import nothing of the toolchain.)"""

    def machine_binary(self, role: str) -> str:
        """the machine file's ``[binaries]`` entry ``role`` (a name or a prefix-relative path)"""
        ...

    def cuda_lines(self, cuda: SdkRef, host_compiler: str, pin_comment: str, maps: PrefixMaps | None) -> list[str]:
        """the CUDA toolkit's lines of the toolchain file, as this kind renders them"""
        ...

    def with_sdk(self, root: Path) -> Self:
        """this toolchain with its compilers taken from the SDK at ``root`` (itself for most kinds)"""
        ...


T = TypeVar("T", bound=BuildsWith)


class SdkRef(Protocol):
    """A backend's SDK as the stages after its toolkit task see it."""

    SHIPS_OWN_RUNTIME: ClassVar[bool]
    """whether every bundle of it ships files of it beyond the spec's ``[runtime] ships`` (HIP's runtime)"""

    @property
    def task(self) -> str:
        """the toolkit task that installs it (``toolkit:vulkan-1.4.309-linux-x64-3f9a1c``): configure waits for it"""
        ...

    @property
    def root(self) -> str:
        """the prefix in CMake's form (forward slashes)"""
        ...

    def path(self, rel: str) -> Path:
        """``prefix / rel``"""
        ...

    def gpu_compiler(self) -> GpuCompiler | None:
        """the GPU compiler the machine file must name for it (None: none, or one the SDK's own
        layout places, as nvcc)"""
        ...

    def toolchain_lines(self, tc: BuildsWith, at: LineInputs) -> list[str]:
        """the lines it adds to the leg's CMake toolchain file: its CMake entries and its GPU
        compiler (``at``: what the toolchain resolved, :class:`LineInputs`)"""
        ...

    def missing(self) -> list[str]:
        """the files configure needs of it that are not there, prefix-relative (empty: none)"""
        ...

    def for_toolchain(self, tc: T) -> T:
        """the toolchain that compiles a leg with it: ``tc``, or ``tc`` taking its compilers from
        the SDK (TheRock's clang on Windows)"""
        ...

    def runtime_from(self) -> tuple[Path, str] | None:
        """``(prefix, version)`` the spec's ``[runtime] ships`` files of ``from = "toolkit"`` are
        taken from and recorded with (None: a bundle ships nothing of it)"""
        ...

    def shipped_runtime(self, os_name: str) -> list[tuple[str, Path]]:
        """``(name in the bundle, file)`` of what every bundle of it ships from it on ``os_name``
        beyond the spec's ``[runtime] ships`` (HIP's runtime and kernel folders; empty: nothing)"""
        ...

    def bundle_info(self) -> dict[str, str | None] | None:
        """what a bundle's info file records of it as ``sdk`` (None: nothing)"""
        ...

    def info_toolkit(self) -> tuple[Path, str] | None:
        """``(prefix, version)`` of the toolkit a bundle's info file names by its own fields
        (``toolkit_version``; the toolkit's licenses are read below ``prefix``): CUDA's; None:
        the info file records it as ``sdk`` (:meth:`bundle_info`) or not at all"""
        ...

    def configure_record(self, log: Path) -> dict[str, Any]:
        """what ``configure.json`` keeps of it beyond the toolkit's digest, from the configure's
        output ``log``: top-level entries (empty: none, so the record of such a leg keeps its bytes)"""
        ...


class InPrefix:
    """The :class:`SdkRef` verbs of an SDK installed under one folder, ``prefix`` (every SDK the
    toolkit stage installs): a base its class takes."""

    prefix: Path

    @property
    def root(self) -> str:
        """The prefix in CMake's form (forward slashes)."""
        return self.prefix.as_posix()

    def path(self, rel: str) -> Path:
        """``prefix / rel``."""
        return self.prefix / rel


class ShipsNothing:
    """The :class:`SdkRef` verbs of an SDK that a bundle ships nothing of and whose toolchain is the
    leg's own (the Vulkan SDK, the OpenCL SDK): a base its class takes, so only its own verbs are
    written there."""

    SHIPS_OWN_RUNTIME: ClassVar[bool] = False

    def for_toolchain(self, tc: T) -> T:
        """``tc``: the leg's own compilers build with it."""
        return tc

    def runtime_from(self) -> None:
        """None: a bundle ships nothing of the SDK (the loader is the driver's)."""
        return None

    def shipped_runtime(self, os_name: str) -> list[tuple[str, Path]]:
        """Nothing."""
        return []

    def bundle_info(self) -> dict[str, str | None] | None:
        """None: the info file's entry for the backend comes from the configure record."""
        return None

    def info_toolkit(self) -> None:
        """None: the info file names no toolkit of it."""
        return None


__all__ = ["BuildsWith", "GpuCompiler", "InPrefix", "LineInputs", "SdkRef", "ShipsNothing"]
