"""Windows toolchains (Windows x64 build host): MSVC ``amd64_arm64`` + x86_64 nvcc
``-target-dir=arm64`` (``msvc-amd64_arm64-cuda``, the Windows ARM64 CUDA leg), clang targeting
``arm64-pc-windows-msvc`` (``clang-arm64-windows``, the CPU leg), and MSVC x64 with and without
CUDA.

The generated files follow llama.cpp's ``cmake/arm64-windows-msvc-cuda.cmake`` and
``cmake/arm64-windows-llvm.cmake`` line by line, with three differences: ``CUDA_ROOT`` is the
toolkit bundlegraph installed (not ``CUDA_PATH``); the C/C++ compilers are named explicitly
(``$VCToolsInstallDir/bin/Hostx64/<arch>/cl.exe``; clang from the Visual Studio LLVM component
``$VCINSTALLDIR/Tools/Llvm/x64/bin`` or ``BUNDLEGRAPH_CLANG``) instead of found on PATH; and a
missing developer environment is a configure error. MSVC paths are read from the environment
cmake runs in (the captured developer environment), so the file text is the same on every host
and ``bundlegraph plan`` can print it on Linux.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Self

from ..core import settings
from ..core.buildenv import allowed_env
from ..core.errors import ToolMissing
from . import msvc
from .base import Resolved, Sdk, Toolchain, cmake_str, cuda_of, scrubbed
from .prefix_maps import PrefixMaps
from .registry import ToolchainInfo

_ENV_GUARD = (
    "if ( NOT DEFINED ENV{{{var}}} )\n"
    '    message( FATAL_ERROR "{var} is not set: configure from an MSVC developer environment '
    '(vcvarsall.bat {arch})" )\n'
    "endif()\n"
    'file( TO_CMAKE_PATH "$ENV{{{var}}}" {cmvar} )'
)


class _VisualStudio(Toolchain):
    """A toolchain run in the MSVC developer environment of its ``vcvars_arch`` property."""

    system_name = "Windows"

    def __init__(self, info: ToolchainInfo):
        self.info = info
        self.vcvars_arch = info.prop("vcvars_arch")
        self.system_processor = info.target_arch

    def environment(self, base: dict[str, str] | None = None) -> dict[str, str]:
        return scrubbed(allowed_env(msvc.developer_env(self.vcvars_arch, base), windows=True))


class Msvc(_VisualStudio):
    """MSVC ``cl.exe`` from ``$VCToolsInstallDir/bin/Hostx64/<target arch>``; CUDA optional."""

    @property
    def cl_rel(self) -> str:
        """``cl.exe`` below ``$VCToolsInstallDir`` (the machine file's ``binaries.c``)."""
        return self.info.binary("c")

    def prefix_map_flags(self, maps: PrefixMaps) -> list[str]:
        """cl.exe's ``/d1trimfile:OLD`` per root (:mod:`.prefix_maps` says why this flag)."""
        return maps.msvc_flags()

    def resolve(self, sdk: Sdk | None, env: dict[str, str] | None = None) -> Resolved:
        env = self.environment(env)
        cuda = cuda_of(sdk)
        cl = Path(env["VCToolsInstallDir"]) / self.cl_rel
        if not cl.is_file():
            raise ToolMissing(
                f"toolchain {self.id}: {cl} is missing; add the MSVC {self.info.target_arch} build tools "
                f"(VCToolsVersion {env.get('VCToolsVersion')}) in the Visual Studio Installer"
            )
        key: dict[str, Any] = {"msvc": msvc.key_env(env)}
        bins = {"c": cl.as_posix(), "cxx": cl.as_posix()}
        if cuda is not None:
            key["msc_ver"] = msvc.check_nvcc_supports(cuda, env)
            bins["cuda_host"] = cl.as_posix()
        gpu_bins, gpu_key = self.gpu_binaries(sdk, env)
        return Resolved(bins | gpu_bins, env, key | gpu_key)

    def render(
        self, leg: str, sdk: Sdk | None, binaries: dict[str, str] | None = None, maps: PrefixMaps | None = None
    ) -> str:
        cuda = cuda_of(sdk)
        what = {
            ("arm64", True): "Used to cross-compile ggml-cuda for Windows ARM64 on an x64 Windows host.",
            ("x64", True): "Native Windows x64 build with MSVC and nvcc.",
        }.get((self.info.target_arch, cuda is not None), f"Windows {self.info.target_arch} build with MSVC.")
        lines = self._header(leg, what)
        cl = f'"${{MSVC_TOOLS_ROOT}}/{self.cl_rel}"'
        lines += [
            "",
            _ENV_GUARD.format(var="VCToolsInstallDir", arch=self.vcvars_arch, cmvar="MSVC_TOOLS_ROOT"),
            f'set( CMAKE_C_COMPILER   {cl} CACHE FILEPATH "" )',
            f'set( CMAKE_CXX_COMPILER {cl} CACHE FILEPATH "" )',
        ]
        lines += self._flags_init(maps)
        lines += self._sdk_lines(
            sdk, binaries, cl, "FindCUDAToolkit selects lib/x64 from the host architecture on Windows.", maps
        )
        return "\n".join(lines) + "\n"


class ClangWindows(_VisualStudio):
    """clang targeting ``arm64-pc-windows-msvc`` with ``-march=armv8.7-a``, linking against the
    ARM64 libraries of an ``amd64_arm64`` MSVC environment (``LIB``)."""

    sdk_root: Path | None = None
    """The leg's SDK prefix its ``c``/``cxx`` are relative to (a ROCm leg: TheRock's clang,
    :meth:`with_sdk`); None: relative to ``$VCINSTALLDIR`` (Visual Studio's LLVM)."""

    def __init__(self, info: ToolchainInfo):
        super().__init__(info)
        self.c_rel, self.cxx_rel = info.binary("c"), info.binary("cxx")

    def with_sdk(self, root: Path) -> Self:
        """This toolchain with its compilers taken from the SDK at ``root`` (a copy)."""
        import copy

        made = copy.copy(self)
        made.sdk_root = root
        return made

    def resolve(self, sdk: Sdk | None, env: dict[str, str] | None = None) -> Resolved:
        env = self.environment(env)
        override = settings.get("CLANG", env) or settings.get("CLANG")
        vc = Path(env.get("VCINSTALLDIR", ""))
        base = Path(override).parent if override else ((self.sdk_root or vc) / self.c_rel).parent
        bins = {"c": (base / Path(self.c_rel).name).as_posix(), "cxx": (base / Path(self.cxx_rel).name).as_posix()}
        for b in bins.values():
            if not Path(b).is_file():
                raise ToolMissing(
                    f"toolchain {self.id}: {b} is missing; add 'C++ Clang Compiler for Windows' in the Visual "
                    "Studio Installer or set BUNDLEGRAPH_CLANG to an LLVM clang.exe"
                )
        gpu_bins, gpu_key = self.gpu_binaries(sdk, env)  # a HIP leg: TheRock's clang++ as the HIP compiler
        key = {"msvc": msvc.key_env(env), "clang_dir": base.as_posix() if override else ""}
        return Resolved(bins | gpu_bins, env, key | gpu_key)

    def render(
        self, leg: str, sdk: Sdk | None, binaries: dict[str, str] | None = None, maps: PrefixMaps | None = None
    ) -> str:
        what = (
            f"the SDK's clang for Windows ({self.info.summary})."
            if self.sdk_root
            else "clang for Windows ARM64 (llama.cpp's cmake/arm64-windows-llvm.cmake)."
        )
        lines = self._header(leg, what)
        override = settings.get("CLANG")
        lines.append("")
        if override:
            d = Path(override).parent.as_posix()
            cc, cxx = cmake_str(f"{d}/{Path(self.c_rel).name}"), cmake_str(f"{d}/{Path(self.cxx_rel).name}")
        elif self.sdk_root:
            cc, cxx = (
                cmake_str((self.sdk_root / self.c_rel).as_posix()),
                cmake_str((self.sdk_root / self.cxx_rel).as_posix()),
            )
        else:
            lines.append(_ENV_GUARD.format(var="VCINSTALLDIR", arch=self.vcvars_arch, cmvar="VC_ROOT"))
            cc, cxx = f'"${{VC_ROOT}}/{self.c_rel}"', f'"${{VC_ROOT}}/{self.cxx_rel}"'
        lines += [
            f"set( target {self.info.prop('target')} )",
            "",
            f'set( CMAKE_C_COMPILER    {cc} CACHE FILEPATH "" )',
            f'set( CMAKE_CXX_COMPILER  {cxx} CACHE FILEPATH "" )',
            "",
            "set( CMAKE_C_COMPILER_TARGET   ${target} )",
            "set( CMAKE_CXX_COMPILER_TARGET ${target} )",
            "set( CMAKE_ASM_COMPILER_TARGET ${target} )",
            "",
            f'set( arch_c_flags "{self.info.prop("arch_flags")}" )',
            f'set( warn_c_flags "{self.info.prop("warn_flags")}" )',
            *self._flags_init(maps, "${arch_c_flags} ${warn_c_flags}"),
        ]
        lines += self._sdk_lines(sdk, binaries, "", "", maps)  # a HIP leg's SDK prefix and HIP compiler
        return "\n".join(lines) + "\n"
