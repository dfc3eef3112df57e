"""Toolchains as data: which machine builds (build host), which machine runs the output
(target), the compilers, and the CMake toolchain file each generates.

- ``machines/<id>.toml``: each toolchain id's machine file (build machine, host machine,
  binaries, properties), loaded and checked by ``registry``;
- ``base``/``linux``/``windows``/``macos``: the behaviour of each kind (:func:`get`), which renders the
  CMake toolchain file and resolves the binaries it names;
- ``cuda``: target library paths inside a toolkit prefix and nvcc's host-compiler table;
- ``msvc``: the MSVC developer environment, ``_MSC_VER`` check, ``/Zc:preprocessor``;
- ``tools``: the pinned cmake and ninja.
"""

from __future__ import annotations

from collections.abc import Callable

from .base import Toolchain
from .registry import ToolchainInfo


def get(toolchain_id: str) -> Toolchain:
    """The toolchain of ``toolchain_id``: its machine file (:data:`.registry.TOOLCHAINS`) given
    the behaviour of its ``kind``. Ids are validated when specs load; an unknown id here raises
    ``KeyError``."""
    from .linux import GccLinux
    from .macos import AppleClang
    from .registry import TOOLCHAINS
    from .windows import ClangWindows, Msvc

    kinds: dict[str, Callable[[ToolchainInfo], Toolchain]] = {
        "gcc": GccLinux,
        "msvc": Msvc,
        "clang-windows": ClangWindows,
        "apple-clang": AppleClang,
    }
    info = TOOLCHAINS[toolchain_id]
    return kinds[info.kind](info)


__all__ = ["Toolchain", "get"]
