"""Where a HIP leg's SDK is: :class:`HipSdk`, what the SDK task of a HIP leg
(``toolkit:therock-<build>-<os>-<archive family>-<hash6>``, :mod:`bundlegraph.backends.hip.sdk`)
promises later stages, as :class:`~bundlegraph.backends.vulkan.sdk_ref.VulkanSdk` is for Vulkan. Pure data.

The CMake entries (:meth:`HipSdk.cmake_cache`) point ggml-hip's ``find_package(hip)``,
``find_package(hipblas)`` and ``find_package(rocblas)`` at the extracted TheRock tree
(``CMAKE_PREFIX_PATH``; ggml's ``ggml/src/ggml-hip/CMakeLists.txt`` otherwise adds
``$ENV{ROCM_PATH}`` or ``/opt/rocm``), so nothing is searched on the build machine. The HIP
compiler (``CMAKE_HIP_COMPILER``) is the machine file's ``hip`` binary, resolved under the
prefix first (:meth:`~.base.Toolchain.gpu_binaries`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from ...core.lightclass import frozen
from ...core.platforms import platform
from ...toolchains.sdk_ref import GpuCompiler, InPrefix
from .. import hip as hip_facts

if TYPE_CHECKING:
    from ...toolchains.sdk_ref import BuildsWith, LineInputs, SdkRef, T


RUNTIME_DIRS: dict[str, tuple[str, ...]] = {
    "linux": ("lib", "lib/rocm_sysdeps/lib", "lib/llvm/lib"),
    "windows": ("bin",),
}
"""Per OS, the prefix folders the runtime files are taken from, first hit wins (the fork's copy
steps: ``lib/``, ``lib/rocm_sysdeps/lib/`` and ``lib/llvm/lib/`` on Linux, ``bin/`` on Windows)."""


def runtime_files(prefix: Path, os_name: str) -> list[tuple[str, Path]]:
    """``(name in the bundle, file)`` for every runtime file of an installed TheRock tree at
    ``prefix`` that a HIP bundle ships (:data:`bundlegraph.backends.hip_facts.RUNTIME_FILES`, flat
    beside the programs; a Linux library's version links kept as links) and every file of its
    kernel folders (:data:`~bundlegraph.backends.hip_facts.KERNEL_FOLDERS`, under the same relative
    path, ``rocblas/library/...``), sorted by name. A glob nothing matches is left out here:
    the spec's ``required`` entries name what must be there."""
    import fnmatch

    out: dict[str, Path] = {}
    for d in RUNTIME_DIRS[os_name]:
        folder = prefix / d
        if not folder.is_dir():
            continue
        for f in sorted(folder.iterdir()):
            if (f.is_file() or f.is_symlink()) and f.name not in out:
                if any(fnmatch.fnmatchcase(f.name, g) for g in hip_facts.RUNTIME_FILES[os_name]):
                    out[f.name] = f
    lib = prefix / platform(os_name).library_dir
    for k in hip_facts.KERNEL_FOLDERS:
        root = lib / k
        if root.is_dir():
            for f in sorted(root.rglob("*")):
                if f.is_file():
                    out[f"{k}/{f.relative_to(root).as_posix()}"] = f
    return sorted(out.items())


@frozen
class HipSdk(InPrefix):
    """A HIP SDK (one TheRock tarball, extracted) as later stages see it.

    - ``name``/``task``: ``therock-7.14.0-linux-gfx110X-all-e78a44`` / ``toolkit:<name>``;
    - ``version``: TheRock's build (``7.14.0``); ``os``: the target OS; ``family``: the gfx
      family (``gfx110X``); ``targets``: the gfx targets the tree is checked for;
    - ``tarball``/``sha256``: the pinned file (``sha256`` empty: not pinned, the task refuses);
    - ``prefix``: where the task extracts it; ``receipt``: its receipt file.
    """

    SHIPS_OWN_RUNTIME: ClassVar[bool] = True
    """whether every bundle of it ships files of it beyond the spec's ``[runtime] ships`` (:meth:`shipped_runtime`)"""

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

    def info(self) -> dict[str, str | None]:
        """What a bundle's info file records of its SDK (``sdk``: source, build, tarball, sha256;
        None while unpinned), as :meth:`bundlegraph.backends.hip.sdk.SdkPlan.receipt`."""
        return {"source": "therock", "version": self.version, "tarball": self.tarball, "sha256": self.sha256 or None}

    def cmake_cache(self) -> dict[str, str]:
        """The CMake entries that pin the SDK (module docstring): ``CMAKE_PREFIX_PATH``."""
        return {"CMAKE_PREFIX_PATH": self.root}

    # -- what the stages ask of it (:class:`~.sdk_ref.SdkRef`) ------------------------------------
    def gpu_compiler(self) -> GpuCompiler:
        """The machine file's ``hip`` binary, under the prefix first."""
        return GpuCompiler("hip", "the HIP SDK", ".")

    def toolchain_lines(self, tc: BuildsWith, at: LineInputs) -> list[str]:
        """The SDK's prefix (:meth:`cmake_cache`: ggml-hip's ``find_package`` calls search it) and
        the HIP compiler (the machine file's ``hip`` binary, under the prefix first: CMake's HIP
        language, ``CMAKE_HIP_COMPILER``). With ``maps``, the prefix maps of every HIP compile
        (``CMAKE_HIP_FLAGS_INIT``, clang's ``-ffile-prefix-map``: the HIP language takes neither
        ``CMAKE_C_FLAGS`` nor ``CMAKE_CXX_FLAGS``, and ggml-hip's sources name their ``__FILE__``
        in ``GGML_ABORT``), so verify's ``host-path`` row finds no build host's directory in
        ``libggml-hip``."""
        from ...toolchains.base import cmake_str, cmake_text
        from ...toolchains.prefix_maps import flag_text

        hip = at.binaries.get("hip") or self.path(tc.machine_binary("hip")).as_posix()
        lines = ["", f"# The HIP SDK (AMD TheRock {self.version}, {self.task}) and the HIP compiler."]
        for var, value in self.cmake_cache().items():
            lines.append(f'set( {var} {cmake_str(value)} CACHE PATH "" )')
        lines.append(f'set( CMAKE_HIP_COMPILER {cmake_str(hip)} CACHE FILEPATH "" )')
        if at.maps:
            lines.append(f'set( CMAKE_HIP_FLAGS_INIT "{cmake_text(flag_text(at.maps.gnu_flags()))}" )')
        return lines

    def missing(self) -> list[str]:
        """Nothing: the toolkit task checks the extracted tree (:func:`bundlegraph.backends.hip.sdk.layout_problems`)."""
        return []

    def for_toolchain(self, tc: T) -> T:
        """``tc`` with its compilers from this SDK where its kind takes them from one (TheRock's
        clang on Windows: :meth:`~.windows.ClangWindows.with_sdk`)."""
        return tc.with_sdk(self.prefix)

    def bundle_info(self) -> dict[str, str | None] | None:
        """What a bundle's info file records of it as ``sdk``: its TheRock build and tarball (:meth:`info`)."""
        return self.info()

    def info_toolkit(self) -> None:
        """None: the info file records TheRock as ``sdk`` (:meth:`bundle_info`)."""
        return None

    def configure_record(self, log: Path) -> dict[str, Any]:
        """Nothing beyond the toolkit's digest (its flags are the configure's ``compile_flags``)."""
        return {}

    def runtime_from(self) -> tuple[Path, str]:
        """The tree and version the spec's shipped runtime files come from: this TheRock tree."""
        return self.prefix, self.version

    def shipped_runtime(self, os_name: str) -> list[tuple[str, Path]]:
        """The HIP runtime and kernel files every HIP bundle ships from the tree
        (:func:`runtime_files`)."""
        return runtime_files(self.prefix, os_name)


if TYPE_CHECKING:

    def _holds_the_protocol(sdk: HipSdk) -> SdkRef:  # mypy holds HipSdk to what the stages ask of an SDK
        return sdk


__all__ = ["RUNTIME_DIRS", "HipSdk", "runtime_files"]
