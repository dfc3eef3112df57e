"""The ``apple-clang`` kind: Apple's clang from Xcode on a GitHub macOS runner (``macos-26`` for
arm64, ``macos-15-intel`` for x86_64, as the fork builds: ``unsloth-prebuilt.yml``'s
``MACOS_INCLUDE``). The compilers are looked up on PATH (``/usr/bin/clang`` is Xcode's shim);
the deployment target is the leg's ``[macos] deployment_target``, passed by its CMake entries
(``CMAKE_OSX_DEPLOYMENT_TARGET``), not by the toolchain.

Never run here: no macOS host exists in this project's CI but GitHub's runners.
"""

from __future__ import annotations

from ..core import proc
from .base import Sdk, cmake_str
from .linux import GccLinux
from .prefix_maps import PrefixMaps
from .registry import ToolchainInfo


class AppleClang(GccLinux):
    """A machine file of kind ``apple-clang``: ``binaries`` ``c``/``cxx`` (names on PATH),
    ``properties`` ``cmake_system_processor`` (``arm64``, ``x86_64``) and ``osx_architectures``
    (``CMAKE_OSX_ARCHITECTURES``: one architecture per bundle, never a universal binary). No CUDA."""

    def __init__(self, info: ToolchainInfo):
        self.info = info
        self.compiler = None  # Xcode's clang from PATH: no pinned [compiler] (bundlegraph plan read it)
        self.package = "the Xcode command line tools (xcode-select --install)"
        self.system_name = "Darwin"
        self.system_processor = info.prop("cmake_system_processor")

    def render(self, leg: str, sdk: Sdk | None, binaries: dict[str, str], maps: PrefixMaps | None = None) -> str:
        lines = self._header(leg, "Native macOS build with Xcode's Apple clang.")
        lines += [
            "",
            f'set( CMAKE_C_COMPILER   {cmake_str(binaries["c"])} CACHE FILEPATH "" )',
            f'set( CMAKE_CXX_COMPILER {cmake_str(binaries["cxx"])} CACHE FILEPATH "" )',
            f'set( CMAKE_OSX_ARCHITECTURES {cmake_str(self.info.prop("osx_architectures"))} CACHE STRING "" )',
        ]
        lines += self._flags_init(maps)
        return "\n".join(lines) + "\n"


def planned_binaries(tc: AppleClang, env: dict[str, str] | None = None) -> dict[str, str]:
    """Binaries for ``bundlegraph plan`` without failing (as :func:`.linux.planned_binaries`)."""
    return {role: proc.which(name, env) or name for role, name in tc.names().items()}
