"""Where a leg's Vulkan SDK is: :class:`VulkanSdk`, what the SDK task of a Vulkan leg
(``toolkit:vulkan-<version>-<platform>-<hash6>``, :mod:`bundlegraph.toolkit.vulkan`) promises
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

from pathlib import Path
from typing import Literal

from ..core.lightclass import frozen

RECEIPT = "bundlegraph-vulkan-sdk.json"
"""The SDK task's receipt file name: the header and glslc versions, the packages or installer."""


@frozen
class VulkanSdk:
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

    @property
    def root(self) -> str:
        """The prefix in CMake's form (forward slashes)."""
        return self.prefix.as_posix()

    def path(self, rel: str) -> Path:
        """``prefix / rel`` (``rel`` one of the prefix-relative fields)."""
        return self.prefix / rel

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


__all__ = ["RECEIPT", "VulkanSdk"]
