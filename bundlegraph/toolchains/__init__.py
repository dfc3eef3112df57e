"""Toolchains as data: which machine builds (build host), which machine runs the output
(target), the compilers, and the CMake toolchain file each generates.

- ``registry``: the static facts of each toolchain id (machines, CUDA capability);
- ``base``/``linux``/``windows``: the typed definition per id (:func:`get`), which renders the
  CMake toolchain file and resolves the binaries it names;
- ``cuda``: target library paths inside a toolkit prefix and nvcc's host-compiler table;
- ``msvc``: the MSVC developer environment, ``_MSC_VER`` check, ``/Zc:preprocessor``;
- ``tools``: the pinned cmake and ninja.
"""

from __future__ import annotations

from collections.abc import Callable

from .base import Toolchain


def get(toolchain_id: str) -> Toolchain:
    """The definition of ``toolchain_id`` (ids are validated when specs load; an unknown id
    here is a bug)."""
    from .linux import GccLinux
    from .windows import ClangWindows, Msvc

    table: dict[str, Callable[[], Toolchain]] = {
        "gcc-linux-x86_64": lambda: GccLinux("gcc-linux-x86_64", "", "gcc g++", "x86_64"),
        "gcc-cross-linux-aarch64": lambda: GccLinux(
            "gcc-cross-linux-aarch64", "aarch64-linux-gnu-", "gcc-aarch64-linux-gnu g++-aarch64-linux-gnu", "aarch64"
        ),
        "msvc-amd64_arm64-cuda": lambda: Msvc("msvc-amd64_arm64-cuda", "amd64_arm64"),
        "msvc-x64-cuda": lambda: Msvc("msvc-x64-cuda", "amd64"),
        "msvc-x64": lambda: Msvc("msvc-x64", "amd64"),
        "clang-arm64-windows": lambda: ClangWindows("clang-arm64-windows"),
    }
    return table[toolchain_id]()


__all__ = ["Toolchain", "get"]
