"""Where a HIP leg's SDK is: :class:`HipSdk`, what the SDK task of a HIP leg
(``toolkit:therock-<build>-<os>-<archive family>-<hash6>``, :mod:`bundlegraph.toolkit.therock`)
promises later stages, as :class:`~.vulkan.VulkanSdk` is for Vulkan. Pure data.

The CMake entries (:meth:`HipSdk.cmake_cache`) point ggml-hip's ``find_package(hip)``,
``find_package(hipblas)`` and ``find_package(rocblas)`` at the extracted TheRock tree
(``CMAKE_PREFIX_PATH``; ggml's ``ggml/src/ggml-hip/CMakeLists.txt`` otherwise adds
``$ENV{ROCM_PATH}`` or ``/opt/rocm``), so nothing is searched on the build machine. The HIP
compiler (``CMAKE_HIP_COMPILER``) is the machine file's ``hip`` binary, resolved under the
prefix first (:meth:`~.base.Toolchain.gpu_binaries`).
"""

from __future__ import annotations

from pathlib import Path

from ..core.lightclass import frozen


@frozen
class HipSdk:
    """A HIP SDK (one TheRock tarball, extracted) as later stages see it.

    - ``name``/``task``: ``therock-7.14.0-linux-gfx110X-all-e78a44`` / ``toolkit:<name>``;
    - ``version``: TheRock's build (``7.14.0``); ``os``: the target OS; ``family``: the gfx
      family (``gfx110X``); ``targets``: the gfx targets the tree is checked for;
    - ``tarball``/``sha256``: the pinned file (``sha256`` empty: not pinned, the task refuses);
    - ``prefix``: where the task extracts it; ``receipt``: its receipt file.
    """

    name: str
    task: str
    version: str
    os: str
    family: str
    targets: tuple[str, ...]
    tarball: str
    sha256: str
    prefix: Path
    receipt: Path

    @property
    def root(self) -> str:
        """The prefix in CMake's form (forward slashes)."""
        return self.prefix.as_posix()

    def path(self, rel: str) -> Path:
        """``prefix / rel``."""
        return self.prefix / rel

    def info(self) -> dict[str, str | None]:
        """What a bundle's info file records of its SDK (``sdk``: source, build, tarball, sha256;
        None while unpinned), as :meth:`bundlegraph.toolkit.therock.SdkPlan.receipt`."""
        return {"source": "therock", "version": self.version, "tarball": self.tarball, "sha256": self.sha256 or None}

    def cmake_cache(self) -> dict[str, str]:
        """The CMake entries that pin the SDK (module docstring): ``CMAKE_PREFIX_PATH``."""
        return {"CMAKE_PREFIX_PATH": self.root}


__all__ = ["HipSdk"]
