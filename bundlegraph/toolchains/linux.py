"""GCC toolchains on a Linux x86_64 host: native (``gcc-linux-x86_64``) and the
``aarch64-linux-gnu-gcc/g++`` cross compiler (``gcc-cross-linux-aarch64``), which is also nvcc's
host compiler (``CMAKE_CUDA_HOST_COMPILER``) so device-side host code is aarch64 code.

Both are pinned (the machine file's ``[compiler]``, :mod:`.compiler`): Debian 12's GCC 12,
binutils and C library unpacked by the task ``toolkit:gcc-…`` into a prefix, whose wrappers
compile with ``--sysroot=<prefix>``. The toolchain file names the wrappers and the prefix's
binutils (``CMAKE_AR`` ...), so CMake takes no compiler, archiver, header or library of the
runner. A wrapper that is not there yet raises :class:`ToolMissing` naming the task. Their
``--version`` output goes into the action key.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ..core import proc
from ..core.errors import BundleGraphError, ToolMissing
from .base import Resolved, Sdk, Toolchain, cmake_str, cuda_of
from .compiler import BINUTILS, compiler_of
from .cuda import CudaToolkit
from .prefix_maps import PrefixMaps
from .registry import ToolchainInfo
from .tools import _version_by_run

# nvcc 13's crt/host_config.h refuses GCC newer than this (``#if __GNUC__ > 15``).
_GNUC_RE = re.compile(r"#if\s+__GNUC__\s*>\s*(\d+)")


class GccLinux(Toolchain):
    """A machine file of kind ``gcc``: ``binaries`` ``c``/``cxx`` (the wrappers' names in the
    pinned compiler's ``bin/``), ``[compiler]`` (:mod:`.compiler`) and ``properties``
    ``cmake_system_processor``."""

    def __init__(self, info: ToolchainInfo):
        self.info = info
        self.system_name = "Linux"
        self.system_processor = info.prop("cmake_system_processor")
        self.compiler = compiler_of(info)

    def names(self) -> dict[str, str]:
        """Role -> the compiler: the pinned compiler's wrapper (an absolute path; the machine
        file's name when it pins none)."""
        roles = ("c", "cxx")
        if self.compiler is None:
            return {r: self.info.binary(r) for r in roles}
        return {r: self.compiler.wrapper(r).as_posix() for r in roles}

    def resolve(self, sdk: Sdk | None, env: dict[str, str] | None = None) -> Resolved:
        env = self.environment(env)
        cuda = cuda_of(sdk)
        bins: dict[str, str] = {}
        key: dict[str, Any] = {}
        for role, name in self.names().items():
            p = proc.which(name, env)
            if p is None:
                where = (
                    f"run {self.compiler.task} first (it installs the pinned compiler)" if self.compiler else "on PATH"
                )
                raise ToolMissing(f"toolchain {self.id}: compiler '{name}' is missing; {where}")
            bins[role] = p
            key[Path(name).name] = _version_by_run(Path(p), Path(name).name)
        if self.compiler is not None:
            key["compiler_lock"] = self.compiler.lock_digest
        if cuda is not None:
            bins["cuda_host"] = bins["cxx"]
            if not cuda.nvcc.is_file():
                raise ToolMissing(f"toolchain {self.id}: nvcc not found at {cuda.nvcc} (toolkit {cuda.prefix})")
            self._check_gcc_supported(cuda, key[Path(self.names()["cxx"]).name])
        gpu_bins, gpu_key = self.gpu_binaries(sdk, env)
        return Resolved(bins | gpu_bins, env, key | gpu_key)

    def _check_gcc_supported(self, cuda: CudaToolkit, gcc_version: str) -> None:
        hc = cuda.prefix / "include" / "crt" / "host_config.h"
        if not hc.is_file():
            hc = cuda.prefix / "targets" / "x86_64-linux" / "include" / "crt" / "host_config.h"
        if not hc.is_file():
            return
        m = _GNUC_RE.search(hc.read_text(encoding="utf-8", errors="replace"))
        if m and int(gcc_version.split(".")[0]) > int(m.group(1)):
            raise BundleGraphError(
                f"toolchain {self.id}: {self.names()['cxx']} {gcc_version} is newer than nvcc {cuda.version} "
                f"supports (GCC <= {m.group(1)} per {hc}); install a supported GCC. bundlegraph never "
                f"passes -allow-unsupported-compiler"
            )

    def render(self, leg: str, sdk: Sdk | None, binaries: dict[str, str], maps: PrefixMaps | None = None) -> str:
        what = (
            "Cross-compiles for Linux aarch64 on an x86_64 host with a pinned aarch64-linux-gnu GCC."
            if self.info.cross
            else "Native Linux x86_64 build with a pinned GCC."
        )
        lines = self._header(leg, what)
        lines += [
            "",
            f'set( CMAKE_C_COMPILER   {cmake_str(binaries["c"])} CACHE FILEPATH "" )',
            f'set( CMAKE_CXX_COMPILER {cmake_str(binaries["cxx"])} CACHE FILEPATH "" )',
        ]
        if self.compiler is not None:
            c = self.compiler
            lines += [
                f"# {c.task}: {c.lock.name}; the wrappers compile with --sysroot=<its prefix>, and CMake",
                "# takes the prefix's binutils too, none of the runner's.",
            ]
            pins = {var: c.binutil(tool) for var, tool in BINUTILS.items()} | c.lto_tools()
            lines += [f'set( {var} {cmake_str(path.as_posix())} CACHE FILEPATH "" )' for var, path in pins.items()]
        if self.info.cross:
            lines += [
                "# Headers and libraries of the target come from the cross compiler's own sysroot;",
                "# programs found at configure time run on the build host.",
                "set( CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER )",
            ]
        lines += self._flags_init(maps)
        lines += self._sdk_lines(
            sdk,
            binaries,
            cmake_str(binaries["cxx"]),
            "FindCUDAToolkit selects the host's libraries (lib64, targets/x86_64-linux) in a cross build.",
            maps,
        )
        return "\n".join(lines) + "\n"


def planned_binaries(tc: GccLinux, env: dict[str, str] | None = None) -> dict[str, str]:
    """Binaries for ``bundlegraph plan`` without failing: the pinned compiler's wrappers (where
    its task puts them; pure), else resolved when present, else the bare name (configure itself
    refuses a missing one)."""
    if tc.compiler is not None:
        out = tc.names()
        out["cuda_host"] = out["cxx"]
        return out
    out = {role: proc.which(name, env) or name for role, name in tc.names().items()}
    out["cuda_host"] = out["cxx"]
    return out
