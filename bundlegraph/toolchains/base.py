"""The typed toolchain definition every toolchain id implements.

A :class:`Toolchain` is data plus three pure functions and one that may start processes:

- :meth:`Toolchain.host_problems` -- why this host cannot run the build (wrong OS/arch), pure;
- :meth:`Toolchain.render` -- the CMake toolchain file text for a leg (pure; paths with forward
  slashes, CMake's form on every host);
- :meth:`Toolchain.nvcc_flags` -- the nvcc flags that select the target (``-target-dir``);
- :meth:`Toolchain.environment` -- the environment cmake runs in (the captured MSVC developer
  environment on Windows) and :meth:`Toolchain.resolve` which checks every binary the toolchain
  file names exists (a missing one raises :class:`ToolMissing` saying how to get it; in a cross
  build nothing is looked up on PATH later by CMake).

Host and build machine are always explicit (:class:`~.registry.ToolchainInfo`).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Self

from ..core import proc
from ..core.buildenv import allowed_env
from ..core.errors import ToolMissing
from ..core.lightclass import frozen
from ..core.platforms import platform
from .cuda import PLATFORMS, CudaToolkit, target_dir
from .prefix_maps import PrefixMaps, flag_text
from .registry import ToolchainInfo
from .sdk_ref import LineInputs, SdkRef

Sdk = SdkRef
"""A leg's backend SDK as the toolchain sees it: anything that satisfies :class:`~.sdk_ref.SdkRef`."""
"""A leg's SDK as a toolchain takes it (the backend's, :attr:`bundlegraph.pipeline.base.LegContext.sdk`)."""


FOREIGN_BUILD_VARS = (
    "CC",
    "CXX",
    "CUDACXX",
    "CUDAHOSTCXX",
    "HIPCXX",
    "CFLAGS",
    "CXXFLAGS",
    "CPPFLAGS",
    "LDFLAGS",
    "CUDAFLAGS",
    "HIPFLAGS",
    "NVCC_CCBIN",
    "NVCC_PREPEND_FLAGS",
    "NVCC_APPEND_FLAGS",
    "CPATH",
    "C_INCLUDE_PATH",
    "CPLUS_INCLUDE_PATH",
    "OBJC_INCLUDE_PATH",
    "LIBRARY_PATH",
    "COMPILER_PATH",
    "GCC_EXEC_PREFIX",
)
"""Variables of the runner that choose a compiler or add flags and search paths behind the
toolchain file's back (CMake's ``CUDAHOSTCXX`` and ``CC``, nvcc's ``NVCC_PREPEND_FLAGS`` and
``NVCC_CCBIN``, GCC's ``CPATH``): never passed to configure or build, nor any ``CMAKE_*``
variable (bundlegraph says everything on cmake's command line). Found on the Ubuntu 24.04 GPU
machine: its environment named ``/opt/gcc/bin/g++`` as the CUDA host compiler, so ggml-cuda's
host code compiled against glibc 2.39 (``__isoc23_strtol``) whatever the toolchain file said."""


def scrubbed(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` without :data:`FOREIGN_BUILD_VARS` and ``CMAKE_*`` (names compared as the OS does:
    upper-cased on Windows), except ``CMAKE_BUILD_PARALLEL_LEVEL``."""

    def fold(k: str) -> str:
        return k.upper() if sys.platform == "win32" else k

    drop = {fold(k) for k in FOREIGN_BUILD_VARS}
    return {
        k: v
        for k, v in env.items()
        if fold(k) not in drop and not (fold(k).startswith("CMAKE_") and fold(k) != "CMAKE_BUILD_PARALLEL_LEVEL")
    }


def cuda_of(sdk: Sdk | None) -> CudaToolkit | None:
    """``sdk`` when it is a CUDA toolkit, else None."""
    return sdk if isinstance(sdk, CudaToolkit) else None


def this_host() -> tuple[str, str]:
    """``(os, arch)`` of the machine running bundlegraph: os ``linux``/``windows``/``macos``
    (``os.uname`` says ``Darwin``; the spec and :mod:`bundlegraph.core.platforms` say ``macos``),
    arch ``x64``/``arm64`` (x86_64/AMD64 -> x64, aarch64/ARM64 -> arm64).

    On Windows both come from the process environment (``PROCESSOR_ARCHITEW6432``, else
    ``PROCESSOR_ARCHITECTURE``: Microsoft's "WOW64 Implementation Details"), never from
    :mod:`platform`: since Python 3.12 ``platform.system()``/``machine()`` query WMI there, which
    costs a COM round trip on every start and aborts under wine 8 (``propsys.VariantToString``
    unimplemented). Elsewhere :func:`os.uname`."""
    if sys.platform == "win32":
        import platform  # the last resort only (2 ms to import on every start elsewhere)

        system = "windows"
        machine = (
            os.environ.get("PROCESSOR_ARCHITEW6432") or os.environ.get("PROCESSOR_ARCHITECTURE") or platform.machine()
        ).lower()
    else:
        u = os.uname()
        system, machine = u.sysname.lower(), u.machine.lower()
        system = {"darwin": "macos"}.get(system, system)
    arch = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64"}.get(machine, machine)
    return system, arch


def cmake_str(value: str) -> str:
    """A CMake quoted argument (backslashes and quotes escaped)."""
    return '"' + value.replace("\\", "/").replace('"', '\\"') + '"'


def cache_lines(entries: Mapping[str, str], filepaths: frozenset[str] = frozenset()) -> list[str]:
    """``set( VAR "value" CACHE PATH "" )`` for each of ``entries`` (CMake cache variable ->
    value), ``FILEPATH`` for those named in ``filepaths`` (a library): an SDK's pins in the
    toolchain file, so CMake's find modules search nothing on the build machine."""
    return [
        f'set( {var} {cmake_str(value)} CACHE {"FILEPATH" if var in filepaths else "PATH"} "" )'
        for var, value in entries.items()
    ]


def cmake_text(value: str) -> str:
    """``value`` inside a CMake quoted argument, every character kept (backslash, quote and
    ``$`` escaped): for flags, where ``/d1trimfile:C:\\a\\b`` must keep its backslashes."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("$", "\\$")


@frozen
class Resolved:
    """What :meth:`Toolchain.resolve` found: ``binaries`` (role -> absolute path, the ones the
    toolchain file names), ``env`` (the complete environment for cmake), ``key`` (the
    action-key inputs: compiler versions, relevant environment such as ``VCToolsVersion``)."""

    binaries: dict[str, str]
    env: dict[str, str]
    key: dict[str, Any]


class Toolchain:
    """Base class; subclasses set ``info`` and implement :meth:`render` and :meth:`resolve`."""

    info: ToolchainInfo
    #: ``CMAKE_SYSTEM_NAME`` / ``CMAKE_SYSTEM_PROCESSOR`` written only for cross toolchains
    system_name: str = ""
    system_processor: str = ""

    @property
    def id(self) -> str:
        return self.info.id

    def host_problems(self, host: tuple[str, str] | None = None) -> list[str]:
        """Reasons this host cannot build with this toolchain (empty: it can)."""
        os_, arch = host or this_host()
        want = (self.info.build_os, self.info.build_arch)
        if (os_, arch) != want:
            return [f"toolchain {self.id} runs on a {want[0]} {want[1]} build host; this host is {os_} {arch}"]
        return []

    def prefix_map_flags(self, maps: PrefixMaps) -> list[str]:
        """The C and C++ compiler's flags mapping ``maps``' roots to stable names
        (:mod:`.prefix_maps`): ``-ffile-prefix-map`` for GCC and clang; MSVC overrides."""
        return maps.gnu_flags()

    def nvcc_flags(self, maps: PrefixMaps | None = None) -> list[str]:
        """nvcc flags of every CUDA compile (``CMAKE_CUDA_FLAGS_INIT``): ``-target-dir`` (the
        target's headers and libraries: ``sbsa-linux``, ``x86_64-linux``, ``arm64``, ``x64``) and
        ``--objdir-as-tempdir`` (``-objtemp``, nvcc 12.x+): nvcc's intermediate files are named
        after the object file instead of ``tmpxft_<pid>_...`` in the temp directory, and those
        names land in the object (the ``.cudafe1.cpp`` file name), so without it two builds of one
        source differ. The per-file ``-frandom-seed`` that fixes nvcc's generated device-symbol
        names comes from :mod:`bundlegraph.toolchains.cmake_hooks` (one seed per source, as nvcc's
        help asks). With ``maps``, the host compiler's prefix maps follow through ``-Xcompiler=``
        (nvcc's host preprocessing maps the device code's ``__FILE__`` with them)."""
        if not self.info.cuda:
            return []
        mapped = [f"-Xcompiler={f}" for f in self.prefix_map_flags(maps)] if maps else []
        tdir = target_dir(PLATFORMS[(self.info.target_os, self.info.target_arch)])
        return [f"-target-dir={tdir}", "-objtemp", *mapped]

    def environment(self, base: dict[str, str] | None = None) -> dict[str, str]:
        """The environment cmake and the compilers run in: ``base`` (default: this process's)
        through the allow-list of :mod:`bundlegraph.core.buildenv` (no secret meets build code),
        without the variables that would choose compilers or flags behind the toolchain file
        (:func:`scrubbed`)."""
        return scrubbed(allowed_env(os.environ if base is None else base))

    def resolve(self, sdk: Sdk | None, env: dict[str, str] | None = None) -> Resolved:
        """The compilers (and the SDK's GPU compilers, :meth:`gpu_binaries`) as absolute paths,
        the environment and the key. ``sdk``: the leg's backend SDK (None: a CPU leg)."""
        raise NotImplementedError

    def render(self, leg: str, sdk: Sdk | None, binaries: dict[str, str], maps: PrefixMaps | None = None) -> str:
        """The leg's CMake toolchain file for the backend SDK ``sdk`` (its CMake entries and GPU
        compilers); ``maps``: the build-host roots its compiles map to stable names
        (:mod:`.prefix_maps`), none when absent."""
        raise NotImplementedError

    def gpu_binaries(self, sdk: Sdk | None, env: dict[str, str]) -> tuple[dict[str, str], dict[str, Any]]:
        """The GPU compilers of ``sdk`` this machine file names under ``[binaries]``, resolved:
        ``({role: absolute path}, {role: version})``: the SDK's :meth:`~.sdk_ref.SdkRef.gpu_compiler`
        (a Vulkan SDK's ``glslc``, searched in the SDK's ``bin_dir`` first, then on ``env``'s PATH);
        a missing one raises :class:`ToolMissing` naming the machine file's entry. (nvcc comes from
        the CUDA toolkit's own layout, :meth:`cuda_lines`.)"""
        if sdk is None or (gpu := sdk.gpu_compiler()) is None:
            return {}, {}
        role, what, sdk_dir, hint = gpu.role, gpu.what, gpu.sdk_dir, gpu.hint
        from .tools import _version_by_run

        if not self.info.has_binary(role):
            raise ToolMissing(
                f"toolchain {self.id}: {self.info.file} names no [binaries] {role}; a leg of {what} needs it"
            )
        name = self.info.binary(role)
        plat = platform(self.info.build_os)
        exe = name if name.lower().endswith(plat.exe_suffix) else plat.program(name)
        found = sdk.path(sdk_dir) / exe if sdk_dir else None
        if found is None or not found.is_file():
            hit = proc.which(name, env)
            found = Path(hit) if hit else None
        if found is None:
            where = f"in {sdk.path(sdk_dir)} ({what}, {sdk.task}) nor " if sdk_dir else ""
            raise ToolMissing(
                f"toolchain {self.id}: {role} '{name}' ([binaries] {role} of {Path(self.info.file).name}) is neither "
                f"{where}on PATH{hint}"
            )
        return {role: found.as_posix()}, {role: _version_by_run(found, role)}

    # -- shared rendering pieces -------------------------------------------------------------
    def _header(self, leg: str, comment: str) -> list[str]:
        out = [
            f"# Generated by bundlegraph for leg {leg} (toolchain {self.id}); rewritten by configure:{leg}.",
            f"# {comment}",
        ]
        if self.info.cross:
            out += [
                f"set( CMAKE_SYSTEM_NAME {self.system_name} )",
                f"set( CMAKE_SYSTEM_PROCESSOR {self.system_processor} )",
            ]
        return out

    def _flags_init(self, maps: PrefixMaps | None, extra: str = "") -> list[str]:
        """``CMAKE_C_FLAGS_INIT``/``CMAKE_CXX_FLAGS_INIT``: ``extra`` (CMake text) and the prefix
        maps. Set, not appended: CMake reads a toolchain file more than once."""
        mapped = cmake_text(flag_text(self.prefix_map_flags(maps))) if maps else ""
        flags = " ".join(x for x in (extra, mapped) if x)
        if not flags:
            return []
        out = [""]
        if maps:
            out.append("# Build-host paths mapped to stable names: bytes that do not depend on where the build ran.")
        return out + [
            f'set( CMAKE_C_FLAGS_INIT   "{flags}" )',
            f'set( CMAKE_CXX_FLAGS_INIT "{flags}" )',
        ]

    def _sdk_lines(
        self,
        sdk: Sdk | None,
        binaries: dict[str, str] | None,
        host_compiler: str,
        pin_comment: str,
        maps: PrefixMaps | None,
    ) -> list[str]:
        """The lines ``sdk`` adds to a toolchain file (:meth:`~.sdk_ref.SdkRef.toolchain_lines`);
        none for a leg without an SDK."""
        if sdk is None:
            return []
        return sdk.toolchain_lines(self, LineInputs(binaries or {}, host_compiler, pin_comment, maps))

    def machine_binary(self, role: str) -> str:
        """The machine file's ``[binaries]`` entry ``role``. Raises ``KeyError`` naming the file."""
        return self.info.binary(role)

    def with_sdk(self, root: Path) -> Self:
        """This toolchain with its compilers taken from the SDK at ``root``: itself, for every kind
        that keeps its own (:meth:`~.windows.ClangWindows.with_sdk` takes TheRock's clang)."""
        return self

    def cuda_lines(
        self, sdk: SdkRef, host_compiler: str, pin_comment: str, maps: PrefixMaps | None = None
    ) -> list[str]:
        """CUDA_ROOT, nvcc, its host compiler, ``-target-dir`` and (cross only) the library pins."""
        cuda = cuda_of(sdk)
        assert cuda is not None, "cuda_lines is asked by a CUDA toolkit only (CudaToolkit.toolchain_lines)"
        lines = [
            "",
            f"set( CUDA_ROOT {cmake_str(cuda.root)} )",
            'set( CUDAToolkit_ROOT "${CUDA_ROOT}" CACHE PATH "" )',
            f'set( CMAKE_CUDA_COMPILER "${{CUDA_ROOT}}/{cuda.nvcc_rel}" CACHE FILEPATH "" )',
            f'set( CMAKE_CUDA_HOST_COMPILER {host_compiler} CACHE FILEPATH "" )',
            f'set( CMAKE_CUDA_FLAGS_INIT "{cmake_text(flag_text(self.nvcc_flags(maps)))}" )',
        ]
        if self.info.cross:
            lines += ["", f"# {pin_comment}"]
            libs = cuda.libraries()
            width = max(len(k) for k in libs)
            for var, rel in libs.items():
                lines.append(f'set( {var:<{width}} "${{CUDA_ROOT}}/{rel}" CACHE FILEPATH "" )')
        return lines
