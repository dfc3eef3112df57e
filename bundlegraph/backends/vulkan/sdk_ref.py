"""Where a leg's Vulkan SDK is: :class:`VulkanSdk`, what the SDK task of a Vulkan leg
(``toolkit:vulkan-<version>-<platform>-<hash6>``, :mod:`bundlegraph.backends.vulkan.sdk`) promises
later stages, as :class:`~.cuda.CudaToolkit` is for CUDA. Pure data: nothing here looks at the
disk except :meth:`VulkanSdk.missing`.

The CMake entries (:meth:`VulkanSdk.cmake_cache`) pin what CMake's ``FindVulkan`` and ggml's
``find_package(SPIRV-Headers CONFIG)`` would otherwise search for on the build machine:
``Vulkan_INCLUDE_DIR``, ``Vulkan_LIBRARY``, ``Vulkan_GLSLC_EXECUTABLE`` (FindVulkan's cache
variables, CMake's ``FindVulkan`` documentation) and ``SPIRV-Headers_DIR`` (the package's
config directory, CMake's ``find_package`` search procedure). A ``host`` SDK pins nothing but
glslc: CMake finds the machine's headers and loader itself.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ...core.fsutil import read_json_object
from ...core.lightclass import frozen
from ...toolchains.sdk_ref import GpuCompiler, InPrefix, ShipsNothing

if TYPE_CHECKING:
    from ...toolchains.sdk_ref import BuildsWith, LineInputs, SdkRef

RECEIPT = "bundlegraph-vulkan-sdk.json"
"""The SDK task's receipt file name: the header and glslc versions, the packages or installer."""

_EXT_LINE = re.compile(r"^(?:-- )?(GL_[A-Za-z0-9_]+) (not )?supported by glslc\s*$", re.M)


def shader_extensions(configure_output: str) -> dict[str, bool]:
    """The GLSL extensions ggml's CMake tested glslc for, from its configure output (lines
    ``-- GL_KHR_cooperative_matrix not supported by glslc``), each -> supported; the last word
    on an extension wins (a re-run configure prints them again)."""
    return {m.group(1): m.group(2) is None for m in _EXT_LINE.finditer(configure_output)}


@frozen
class VulkanSdk(InPrefix, ShipsNothing):
    """A Vulkan SDK as later stages see it.

    - ``name``/``task``: ``vulkan-1.4.309-linux-x64-3f9a1c`` / ``toolkit:<name>``;
    - ``source``: ``debs`` | ``host`` | ``lunarg``; ``version``: the SDK's Vulkan version
      (``1.4.309``; ``host`` for the build machine's own);
    - ``platform``: the target (``linux-x64``, ``linux-arm64``, ``windows-x64``);
    - ``prefix``: where it is installed (``host``: ``/``); ``receipt``: its receipt (:data:`RECEIPT`);
    - ``include_dir``, ``library``, ``spirv_headers_dir``: prefix-relative paths (POSIX form) of
      the headers directory, the loader to link and the SPIR-V headers' CMake config directory;
      empty: not pinned (CMake searches);
    - ``bin_dir``: prefix-relative directory searched first for the machine file's GPU compiler
      binaries (``glslc``), before PATH (:meth:`~.base.Toolchain.gpu_binaries`); empty: PATH only.
    """

    name: str
    task: str
    source: Literal["debs", "host", "lunarg"]
    version: str
    platform: str
    prefix: Path
    receipt: Path
    include_dir: str = ""
    library: str = ""
    spirv_headers_dir: str = ""
    bin_dir: str = ""

    def cmake_cache(self) -> dict[str, str]:
        """The CMake cache entries that pin this SDK's headers and loader (module docstring),
        absolute, CMake form; only the pinned ones. ``Vulkan_GLSLC_EXECUTABLE`` comes from the
        toolchain's resolved ``glslc`` binary, not from here."""
        pins = {
            "Vulkan_INCLUDE_DIR": self.include_dir,
            "Vulkan_LIBRARY": self.library,
            "SPIRV-Headers_DIR": self.spirv_headers_dir,
        }
        return {k: f"{self.root.rstrip('/')}/{v}" for k, v in pins.items() if v}

    def missing(self) -> list[str]:
        """The pinned files (prefix-relative) that are not there (empty: all are)."""
        rels = [self.include_dir, self.library, self.spirv_headers_dir]
        return [r for r in rels if r and not self.path(r).exists()]

    # -- what the stages ask of it (:class:`~.sdk_ref.SdkRef`) ------------------------------------
    def gpu_compiler(self) -> GpuCompiler:
        """``glslc``: searched in :attr:`bin_dir` first, then on PATH."""
        return GpuCompiler("glslc", "the Vulkan SDK", self.bin_dir, " (Debian/Ubuntu: apt-get install glslc)")

    def toolchain_lines(self, tc: BuildsWith, at: LineInputs) -> list[str]:
        """The SDK's pins (headers, loader, SPIR-V headers: :meth:`cmake_cache`) and the resolved
        glslc, so FindVulkan searches nothing on the build machine."""
        from ...toolchains.base import cache_lines, cmake_str

        glslc = at.binaries.get("glslc") or tc.machine_binary("glslc")
        lines = ["", f"# The Vulkan SDK ({self.source}, {self.task}) and the shader compiler."]
        lines += cache_lines(self.cmake_cache(), frozenset({"Vulkan_LIBRARY"}))
        lines.append(f'set( Vulkan_GLSLC_EXECUTABLE {cmake_str(glslc)} CACHE FILEPATH "" )')
        if self.source == "lunarg":
            # ggml finds SPIRV-Headers' CMake config in the SDK ($ENV{VULKAN_SDK}, which nothing sets here)
            lines.append(f"list( APPEND CMAKE_PREFIX_PATH {cmake_str(self.root)} )")
        return lines

    def configure_record(self, log: Path) -> dict[str, Any]:
        """``{"vulkan": ...}``: the SDK task and source, the header and glslc versions (its
        receipt), and ``shader_extensions``, each GLSL extension ggml's CMake tested glslc for
        (``test_shader_extension_support`` in ``ggml/src/ggml-vulkan/CMakeLists.txt``, which prints
        ``<EXT> supported by glslc`` or ``<EXT> not supported by glslc``) -> whether it was;
        ``compiled_out`` the unsupported ones (the shader paths the bundle lacks: cooperative
        matrix, integer dot, bf16 ...)."""
        exts = shader_extensions(log.read_text(encoding="utf-8", errors="replace"))
        receipt = read_json_object(self.receipt) or {}
        return {
            "vulkan": {
                "sdk": self.task,
                "source": self.source,
                "vulkan_header_version": receipt.get("vulkan_header_version"),
                "glslc_version": receipt.get("glslc_version"),
                "shader_extensions": exts,
                "compiled_out": sorted(k for k, ok in exts.items() if not ok),
            }
        }


if TYPE_CHECKING:

    def _holds_the_protocol(sdk: VulkanSdk) -> SdkRef:  # mypy holds VulkanSdk to what the stages ask of an SDK
        return sdk


__all__ = ["RECEIPT", "VulkanSdk", "shader_extensions"]
