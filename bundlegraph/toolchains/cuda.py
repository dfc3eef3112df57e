"""A CUDA toolkit (:class:`CudaToolkit`): where its prefix keeps what a CMake CUDA configure and the
stages need, per target.

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
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from ..core.errors import ToolkitError
from ..core.fsutil import read_json_object
from ..core.lightclass import frozen
from ..core.platforms import platform
from .sdk_ref import InPrefix

if TYPE_CHECKING:
    from .sdk_ref import BuildsWith, LineInputs, SdkRef, T

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
table :class:`CudaToolkit` reads."""

PINNED_VARS: dict[str, str] = {
    "CUDA_CUDART": "cudart",
    "CUDA_cudart_LIBRARY": "cudart",
    "CUDA_cublas_LIBRARY": "cublas",
    "CUDA_cublasLt_LIBRARY": "cublasLt",
    "CUDA_cuda_driver_LIBRARY": "cuda_driver",
}
"""The FindCUDAToolkit cache variables pinned to the target's files, each with its library role."""


TARGET_DIRS: dict[str, str] = {
    "linux-x86_64": "x86_64-linux",
    "linux-sbsa": "sbsa-linux",
    "linux-aarch64": "aarch64-linux",
    "windows-x86_64": "x64",
    "windows-arm64": "arm64",
}
"""nvcc's ``-target-dir`` per NVIDIA redist platform (the subfolder of ``targets`` on Linux, of
``lib``/``bin`` on Windows): the one table every ``-target-dir`` comes from."""

PLATFORMS: dict[tuple[str, str], str] = {
    ("linux", "x64"): "linux-x86_64",
    ("linux", "arm64"): "linux-sbsa",
    ("windows", "x64"): "windows-x86_64",
    ("windows", "arm64"): "windows-arm64",
}
"""The redist platform of a machine in spec terms (``(os, arch)``)."""


def is_windows(platform: str) -> bool:
    """True for ``windows-*`` redist platforms."""
    return platform.startswith("windows-")


def target_dir(platform: str) -> str:
    """nvcc's ``-target-dir`` value for a redist platform (``linux-sbsa`` -> ``sbsa-linux``).
    Raises ``KeyError`` naming an unknown platform."""
    try:
        return TARGET_DIRS[platform]
    except KeyError:
        raise KeyError(f"no nvcc target directory known for platform {platform!r}") from None


@frozen
class CudaToolkit(InPrefix):
    """A CUDA toolkit as a leg uses it: installed (or to be installed, by ``toolkit:<name>``) at
    ``prefix``, ``version`` (``"13.5"``), with nvcc for ``host_platform`` and libraries for
    ``target_platform`` (NVIDIA's redist keys: ``linux-x86_64``, ``windows-arm64``, ...).
    ``name``/``task``/``receipt``/``source``: the component set it was made from
    (:func:`bundlegraph.toolkit.ref.ref_for_set`). One type for the toolchain file (rendered with
    forward slashes, CMake's form on every host) and the stages that read the installed files.

    Layout: nvcc in ``bin/``; target libraries in ``targets/<target_dir>/lib`` (Linux) or
    ``lib/<target_dir>`` (Windows), runtime DLLs in ``bin/<target_dir>`` (Windows)."""

    SHIPS_OWN_RUNTIME: ClassVar[bool] = False
    """whether every bundle of it ships files of it beyond the spec's ``[runtime] ships`` (:meth:`shipped_runtime`)"""

    prefix: Path
    version: str
    host_platform: str
    target_platform: str
    name: str = ""
    task: str = ""
    receipt: Path | None = None
    source: str = ""
    with_cublas: bool = True
    """whether the leg links cuBLAS (its ``cuda.toolkit.target`` holds ``libcublas``): configure then needs it"""

    # -- the machines --------------------------------------------------------------------------
    @property
    def target_dir(self) -> str:
        """nvcc's ``-target-dir`` for the target (``sbsa-linux``, ``x86_64-linux``, ``arm64``, ``x64``)."""
        return target_dir(self.target_platform)

    @property
    def windows(self) -> bool:
        """The target is Windows."""
        return is_windows(self.target_platform)

    @property
    def target_os(self) -> str:
        return "windows" if self.windows else "linux"

    @property
    def host_os(self) -> str:
        """Where nvcc runs."""
        return "windows" if is_windows(self.host_platform) else "linux"

    @property
    def cross(self) -> bool:
        return self.host_platform != self.target_platform

    @property
    def major(self) -> int:
        return int(self.version.split(".")[0])

    # -- paths ---------------------------------------------------------------------------------
    @property
    def nvcc(self) -> Path:
        """nvcc, a path of this host."""
        return self.prefix / self.nvcc_rel

    @property
    def nvcc_rel(self) -> str:
        """nvcc relative to the prefix (``bin/nvcc``, ``bin/nvcc.exe``)."""
        return platform(self.host_os).program("bin/nvcc")

    def lib_rel(self) -> str:
        """The target library directory relative to the prefix."""
        return f"lib/{self.target_dir}" if self.windows else f"targets/{self.target_dir}/lib"

    @property
    def lib_dir(self) -> Path:
        return self.prefix / self.lib_rel()

    @property
    def bin_dir(self) -> Path:
        """Where the target's runtime files are (``bin/<target_dir>`` on Windows, the library directory on Linux)."""
        return self.prefix / "bin" / self.target_dir if self.windows else self.lib_dir

    def library(self, role: str) -> Path:
        """The link input for ``role`` (``cudart``, ``cudart_static``, ``cudadevrt``, ``cublas``,
        ``cublasLt``, ``cuda_driver``: :data:`LIBRARIES`). Raises KeyError for another role."""
        table = LIBRARIES[self.target_os]
        if role not in table:
            raise KeyError(f"unknown library role {role!r}; roles: {', '.join(table)}")
        return self.lib_dir / table[role]

    def libraries(self) -> dict[str, str]:
        """``{cache variable: path relative to the prefix}`` of the pinned target libraries
        (:data:`PINNED_VARS`)."""
        d, f = self.lib_rel(), LIBRARIES[self.target_os]
        return {var: f"{d}/{f[role]}" for var, role in PINNED_VARS.items()}

    def runtime(self, name: str) -> Path:
        """A runtime file of ``name`` (``cudart``, ``cublas``, ``cublasLt``) as shipped."""
        if self.windows:
            return self.bin_dir / f"{name}64_{self.major}.dll"
        return self.lib_dir / f"lib{name}.so.{self.major}"

    def required_files(self, with_cublas: bool = True) -> list[str]:
        """Files (relative) a configure cannot do without: nvcc, the pinned libraries, and the
        ``cudart_static``/``cudadevrt`` CMake's compiler check links."""
        d = self.lib_rel()
        table = LIBRARIES[self.target_os]
        extra = [table["cudart_static"], table["cudadevrt"]]
        libs = self.libraries()
        if not with_cublas:
            libs = {k: v for k, v in libs.items() if "cublas" not in k and "driver" not in k}
        return [self.nvcc_rel, *dict.fromkeys(libs.values()), *(f"{d}/{e}" for e in extra)]

    def missing(self) -> list[str]:
        """:meth:`required_files` (with cuBLAS where the leg links it) that are not there."""
        return [r for r in self.required_files(self.with_cublas) if not (self.prefix / r).is_file()]

    # -- what the stages ask of it (:class:`~.sdk_ref.SdkRef`) ------------------------------------
    def gpu_compiler(self) -> None:
        """None: nvcc comes from the toolkit's own layout (:attr:`nvcc_rel`)."""
        return None

    def toolchain_lines(self, tc: BuildsWith, at: LineInputs) -> list[str]:
        """CUDA_ROOT, nvcc, its host compiler, ``-target-dir`` and (cross only) the library pins:
        the toolchain's own rendering of them (:meth:`~.base.Toolchain.cuda_lines`, which the
        kinds' host compilers and cross settings shape)."""
        return tc.cuda_lines(self, at.host_compiler, at.pin_comment, at.maps)

    def for_toolchain(self, tc: T) -> T:
        """``tc``: nvcc hosts the leg's own C++ compiler."""
        return tc

    def bundle_info(self) -> dict[str, str | None] | None:
        """What a bundle's info file records of it as ``sdk``: None: the info file names the CUDA toolkit by its own fields."""
        return None

    def info_toolkit(self) -> tuple[Path, str]:
        """The prefix and version the info file names as the bundle's toolkit (``toolkit_version``,
        NVIDIA's licenses from the prefix)."""
        return self.prefix, self.version

    def configure_record(self, log: Path) -> dict[str, Any]:
        """Nothing beyond its layout (``configure.json``'s ``cuda`` entry, :meth:`layout_json`)."""
        return {}

    def runtime_from(self) -> tuple[Path, str]:
        """The prefix and version the spec's ``from = "toolkit"`` runtime files come from."""
        return self.prefix, self.version

    def shipped_runtime(self, os_name: str) -> list[tuple[str, Path]]:
        """Nothing beyond the spec's ``[runtime] ships``."""
        return []

    def nvcc_target_flags(self) -> list[str]:
        """``["-target-dir", target_dir]`` for a cross toolkit, else ``[]``."""
        return ["-target-dir", self.target_dir] if self.cross else []

    def cmake_cache(self) -> dict[str, str]:
        """The CMake cache entries that point a configure at this toolkit's target files."""
        out = {"CMAKE_CUDA_COMPILER": self.nvcc.as_posix(), "CUDAToolkit_ROOT": self.prefix.as_posix()}
        return out | {v: self.library(role).as_posix() for v, role in PINNED_VARS.items() if v != "CUDA_CUDART"}

    @property
    def receipt_file(self) -> Path:
        """The install receipt's path. Raises :class:`ToolkitError` for a toolkit not made from a
        component set (no receipt)."""
        if self.receipt is None:
            raise ToolkitError(f"the toolkit at {self.prefix} has no install receipt (not made from a component set)")
        return self.receipt

    def never_ship(self) -> list[str]:
        """Prefix-relative paths the install receipt marks as generated (the link-only driver
        stub): what no bundle may ship. Empty before the toolkit task ran."""
        if self.receipt is None:
            return []
        data = read_json_object(self.receipt) or {}
        return [g["path"] for g in data.get("generated", [])]

    def layout_json(self) -> dict[str, str]:
        """What ``configure.json`` records of the toolkit (its ``cuda`` entry)."""
        return {
            "prefix": self.root,
            "target_os": self.target_os,
            "target_dir": self.target_dir,
            "host_os": self.host_os,
            "version": self.version,
        }


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


if TYPE_CHECKING:

    def _holds_the_protocol(sdk: CudaToolkit) -> SdkRef:  # mypy holds CudaToolkit to what the stages ask of an SDK
        return sdk
