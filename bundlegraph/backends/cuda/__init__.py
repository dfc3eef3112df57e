"""The CUDA backend (NVIDIA GPUs): ``ggml-cuda``, the driver it loads, its install kinds and the
installer's rules for choosing a CUDA bundle. Registered in :data:`bundlegraph.schemas.backend.BACKENDS`.

Sources: NVIDIA's driver packages install ``libcuda.so.1`` (Linux) and ``nvcuda.dll`` (Windows,
with the display driver); the install kinds, the runtime globs and the selection facts below are
the installer's (:data:`~bundlegraph.schemas.installer.CHECKED_AGAINST`,
``docs/installer-contract.md``), checked against its own code by
``tests/integration/test_installer_contract.py``. The toolkit itself (nvcc, the redistributable
archives) is still passed to toolchains as their ``cuda`` parameter: moving it here is the next
slice of issue 42.

Left at their defaults (:data:`~bundlegraph.schemas.backend.DEFAULTS`): no vendor routing (a CUDA
host is described by its SMs and driver, :mod:`bundlegraph.installer.selection`) and no CMake
targets entry (a CUDA leg's archs are ``[cuda] archs``, passed as ``CMAKE_CUDA_ARCHITECTURES``);
nvcc compiles the device code when the bundle is built.
"""

from __future__ import annotations

ORDER = 10
"""Its place in the registry (:data:`bundlegraph.schemas.backend.BACKENDS`, lowest first)."""

TITLE = "CUDA"
"""Its name in messages."""

GPU = True
"""A GPU backend: it has a driver, device code (a fatbin) and GPU smoke steps."""

LIBRARY = "ggml-cuda"
"""ggml's CUDA backend library stem (``libggml-cuda.so`` / ``ggml-cuda.dll``): the file whose
fatbin must match the promised archs, and whose load the smoke test judges."""

DRIVERS: dict[str, str] = {"linux": "libcuda.so.1", "windows": "nvcuda.dll"}
"""The driver's user-mode library per OS: present where a driver is installed, so a CUDA bundle
may import it without shipping it (never shipped, never stubbed: the toolkit's link-only
``stubs/libcuda.so`` crashes a process that loads it)."""

DRIVER_WHAT = "the NVIDIA driver"
"""What the driver library is, for messages."""

INSTALL_KINDS: dict[tuple[str, str], str] = {
    ("linux", "x64"): "linux-cuda",
    ("linux", "arm64"): "linux-arm64-cuda",
    ("windows", "x64"): "windows-cuda",
    ("windows", "arm64"): "windows-arm64-cuda",
}
"""``(os, arch)`` -> the install kind of this backend's bundles (the installer's names)."""

RUNTIME_GLOBS: dict[str, tuple[str, ...]] = {"windows": ("cudart64_*.dll", "cublas64_*.dll", "cublasLt64_*.dll")}
"""Per OS, the CUDA runtime files the installer checks when a bundle carries them (Windows only:
the cudart/cuBLAS trio)."""

CPU_FALLBACK: frozenset[tuple[str, str]] = frozenset({("windows", "arm64")})
"""``(os, arch)`` of the CUDA hosts that fall back to their CPU kind when no CUDA bundle fits
(elsewhere a CUDA host gets no CPU fallback)."""


MIN_DRIVER = (12, 4)
"""Drivers below this get no CUDA bundle (compressed fatbins need it; the installer's floor)."""


def driver_for(line: str) -> tuple[int, int]:
    """The oldest driver an installer serves runtime line ``cudaM`` to: CUDA ``M.0``, at least
    :data:`MIN_DRIVER`. Here, not in :mod:`bundlegraph.installer.selection`, so verify's policy (on the
    graph's load path) asks it without importing the manifest models (pydantic)."""
    return max((int(line.removeprefix("cuda")), 0), MIN_DRIVER)


def oldest_driver(line: str | None, toolkit_major: int) -> tuple[int, int]:
    """The oldest driver the installer's rules send a CUDA leg to: :func:`driver_for` its runtime
    line (``profile.line``, else ``cuda<toolkit major>``)."""
    return driver_for(line or f"cuda{toolkit_major}")


BELOW_FLOOR_TO_CPU: frozenset[tuple[str, str]] = frozenset({("windows", "x64")})
"""``(os, arch)`` of the hosts whose driver below :data:`MIN_DRIVER` asks for the CPU kind
instead, after the Vulkan kind (:data:`bundlegraph.backends.vulkan.CUDA_BELOW_FLOOR`); elsewhere
such a host still asks for its CUDA kind and gets nothing."""

RUNTIME_LINES_ON_DISK_ONLY: frozenset[str] = frozenset({"linux"})
"""OSes where the installer tries only runtime lines whose libraries are on disk (elsewhere those
first, then the rest the driver allows)."""

BLACKWELL_NEEDS_MAX_SM_100: frozenset[str] = frozenset({"windows"})
"""OSes where a Blackwell host (sm >= 100) refuses a bundle whose ``max_sm`` is below 100."""

BLACKWELL_LINES_FIRST: frozenset[str] = frozenset({"linux"})
"""OSes where a Blackwell host tries the runtime lines with a fitting bundle first."""

SPEC_TABLE: str | None = "cuda"
"""The spec table a CUDA leg must have (``[cuda]``: version, archs, toolkit)."""


COMPILER: str | None = "cuda"
"""The machine-file ``[binaries]`` entry a CUDA leg's toolchain must name (``cuda = "nvcc"``)."""


CMAKE_OPTION: str | None = "GGML_CUDA"
"""ggml's CMake option that builds this backend (``ggml/CMakeLists.txt``); on unless a spec says
otherwise (:mod:`bundlegraph.specs.derive`)"""
