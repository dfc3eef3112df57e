"""The known toolchain ids and the machines they involve.

Host and target are always explicit (Meson's build/host machine split): the Windows ARM64
CUDA leg is built on a Windows x64 host for an ARM64 target. ``redist_host`` is NVIDIA's redist
platform key of the build host, used for host CUDA components (nvcc, crt, nvvm, cccl).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class ToolchainInfo:
    """Static facts of one toolchain id.

    ``build_os``/``build_arch``: the machine the build runs on; ``target_os``/``target_arch``:
    the machine the output runs on; ``cuda``: can compile CUDA; ``redist_host``: NVIDIA redist
    platform key of the build machine.
    """

    id: str
    build_os: Literal["windows", "linux"]
    build_arch: Literal["x64", "arm64"]
    target_os: Literal["windows", "linux"]
    target_arch: Literal["x64", "arm64"]
    cuda: bool
    redist_host: str
    summary: str

    @property
    def cross(self) -> bool:
        return (self.build_os, self.build_arch) != (self.target_os, self.target_arch)


TOOLCHAINS: dict[str, ToolchainInfo] = {
    t.id: t
    for t in [
        ToolchainInfo(
            "msvc-amd64_arm64-cuda",
            "windows",
            "x64",
            "windows",
            "arm64",
            True,
            "windows-x86_64",
            "MSVC amd64_arm64 cross (Hostx64/arm64/cl.exe) with x86_64 nvcc -target-dir=arm64",
        ),
        ToolchainInfo(
            "clang-arm64-windows",
            "windows",
            "x64",
            "windows",
            "arm64",
            False,
            "windows-x86_64",
            "clang targeting arm64-pc-windows-msvc (-march=armv8.7-a) on a Windows x64 host",
        ),
        ToolchainInfo(
            "msvc-x64-cuda",
            "windows",
            "x64",
            "windows",
            "x64",
            True,
            "windows-x86_64",
            "MSVC x64 native with nvcc",
        ),
        ToolchainInfo(
            "msvc-x64",
            "windows",
            "x64",
            "windows",
            "x64",
            False,
            "windows-x86_64",
            "MSVC x64 native",
        ),
        ToolchainInfo(
            "gcc-linux-x86_64",
            "linux",
            "x64",
            "linux",
            "x64",
            True,
            "linux-x86_64",
            "GCC native on Linux x86_64 (also the nvcc host compiler)",
        ),
        ToolchainInfo(
            "gcc-cross-linux-aarch64",
            "linux",
            "x64",
            "linux",
            "arm64",
            True,
            "linux-x86_64",
            "Debian's aarch64-linux-gnu-gcc/g++ on an x86_64 host, also CMAKE_CUDA_HOST_COMPILER",
        ),
    ]
}
