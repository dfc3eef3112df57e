"""Where a toolkit prefix keeps what a CMake CUDA configure needs, per target.

Layouts (the toolkit stage's, see ``pipeline/toolkit.py``):

- Linux: ``bin/nvcc`` (host), ``targets/<target_dir>/lib/{libcudart.so, libcudart_static.a,
  libcudadevrt.a, libcublas.so, libcublasLt.so, stubs/libcuda.so}`` with ``target_dir``
  ``x86_64-linux`` or ``sbsa-linux``;
- Windows: ``bin/nvcc.exe`` (host), ``lib/<target_dir>/{cudart,cudart_static,cudadevrt,cublas,
  cublasLt,cuda}.lib`` with ``target_dir`` ``x64`` or ``arm64``.

CMake's FindCUDAToolkit (https://cmake.org/cmake/help/latest/module/FindCUDAToolkit.html)
searches the *host's* library directory in a cross build (``lib/x64`` on Windows, ``lib64`` /
``targets/x86_64-linux`` on Linux). Pinning the cache variables ``CUDA_CUDART`` (from which it
derives the library directory for ``cudart_static`` and ``cudadevrt``), ``CUDA_cudart_LIBRARY``,
``CUDA_cublas_LIBRARY``, ``CUDA_cublasLt_LIBRARY`` and ``CUDA_cuda_driver_LIBRARY`` to the
target's files avoids that; nvcc's own link search is pointed at the target with
``-target-dir=<target_dir>`` (nvcc docs, "--target-directory": the subfolder of ``targets``
holding the default include and library paths), which a standard ``nvcc.profile`` honours.

:func:`msc_ver_range` reads the ``_MSC_VER`` range nvcc accepts from the toolkit's own
``include/crt/host_config.h`` (``#if _MSC_VER < 1920 || _MSC_VER >= 1950`` -> ``(1920, 1950)``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from ..core.errors import ToolkitError

LIBRARIES: dict[str, dict[str, str]] = {
    "linux": {
        "cudart": "libcudart.so",
        "cudart_static": "libcudart_static.a",
        "cudadevrt": "libcudadevrt.a",
        "cublas": "libcublas.so",
        "cublasLt": "libcublasLt.so",
        "cuda_driver": "stubs/libcuda.so",
    },
    "windows": {
        "cudart": "cudart.lib",
        "cudart_static": "cudart_static.lib",
        "cudadevrt": "cudadevrt.lib",
        "cublas": "cublas.lib",
        "cublasLt": "cublasLt.lib",
        "cuda_driver": "cuda.lib",
    },
}
"""The link inputs of a target, by role, in its library directory (the layouts above): the one
table the toolchain file (:class:`CudaLayout`) and the installed toolkit
(:class:`bundlegraph.toolkit.ref.ToolkitRef`) read."""

PINNED_VARS = (
    "CUDA_CUDART",
    "CUDA_cudart_LIBRARY",
    "CUDA_cublas_LIBRARY",
    "CUDA_cublasLt_LIBRARY",
    "CUDA_cuda_driver_LIBRARY",
)


@dataclass(frozen=True)
class CudaLayout:
    """A toolkit prefix seen from one target: ``prefix`` (absolute), ``target_os``,
    ``target_dir`` (``sbsa-linux``/``x86_64-linux``/``arm64``/``x64``), ``host_os`` (where nvcc
    runs), ``version`` (``"13.5"``). Paths are rendered with forward slashes (CMake's form on
    every host)."""

    prefix: Path
    target_os: str
    target_dir: str
    host_os: str
    version: str

    @property
    def root(self) -> str:
        return PurePosixPath(self.prefix.as_posix()).as_posix()

    @property
    def nvcc(self) -> str:
        return f"{self.root}/bin/nvcc{'.exe' if self.host_os == 'windows' else ''}"

    @property
    def nvcc_path(self) -> Path:
        """nvcc as a path of this host (``prefix`` joined with :attr:`nvcc`'s part below the root)."""
        return self.prefix / Path(self.nvcc).relative_to(self.root)

    def lib_rel(self) -> str:
        """The target library directory relative to the prefix."""
        if self.target_os == "windows":
            return f"lib/{self.target_dir}"
        return f"targets/{self.target_dir}/lib"

    def libraries(self) -> dict[str, str]:
        """``{cache variable: path relative to the prefix}`` of the pinned target libraries."""
        d = self.lib_rel()
        f = LIBRARIES["windows" if self.target_os == "windows" else "linux"]
        return {
            "CUDA_CUDART": f"{d}/{f['cudart']}",
            "CUDA_cudart_LIBRARY": f"{d}/{f['cudart']}",
            "CUDA_cublas_LIBRARY": f"{d}/{f['cublas']}",
            "CUDA_cublasLt_LIBRARY": f"{d}/{f['cublasLt']}",
            "CUDA_cuda_driver_LIBRARY": f"{d}/{f['cuda_driver']}",
        }

    def required_files(self, with_cublas: bool = True) -> list[str]:
        """Files (relative) a configure cannot do without: nvcc, the pinned libraries, and the
        ``cudart_static``/``cudadevrt`` CMake's compiler check links."""
        d = self.lib_rel()
        table = LIBRARIES["windows" if self.target_os == "windows" else "linux"]
        extra = [table["cudart_static"], table["cudadevrt"]]
        libs = self.libraries()
        if not with_cublas:
            libs = {k: v for k, v in libs.items() if "cublas" not in k and "driver" not in k}
        nvcc = self.nvcc[len(self.root) + 1 :]
        return [nvcc, *dict.fromkeys(libs.values()), *(f"{d}/{e}" for e in extra)]

    def missing(self, with_cublas: bool = True) -> list[str]:
        return [r for r in self.required_files(with_cublas) if not (self.prefix / r).is_file()]


_MSC_RE = re.compile(r"#if\s+_MSC_VER\s*<\s*(\d{4})\s*\|\|\s*_MSC_VER\s*>=\s*(\d{4})")


def msc_ver_range(host_config: Path) -> tuple[int, int]:
    """``(lowest supported, first unsupported)`` ``_MSC_VER`` from nvcc's ``host_config.h``.

    Raises :class:`ToolkitError` naming the file when it has no such check."""
    try:
        text = host_config.read_text(encoding="utf-8", errors="replace")
    except OSError as e:
        raise ToolkitError(f"{host_config}: cannot read nvcc's host compiler table: {e}") from None
    m = _MSC_RE.search(text)
    if not m:
        raise ToolkitError(f"{host_config}: no '_MSC_VER < X || _MSC_VER >= Y' check found")
    return int(m.group(1)), int(m.group(2))


def msc_ver_of(vctools_version: str) -> int:
    """``_MSC_VER`` of an MSVC toolset version: ``14.44.35207`` -> 1944 (``19<minor>``; VS 2022
    17.x is 14.3x-14.4x, i.e. 1930-1949; VS 2026 is 14.50+). Raises ValueError on junk."""
    m = re.match(r"^14\.(\d+)", vctools_version.strip())
    if not m:
        raise ValueError(f"not an MSVC 14.x toolset version: {vctools_version!r}")
    return 1900 + int(m.group(1))
