"""Static facts about CUDA components: roles, NVIDIA's names, wheel names, pip platform tags,
``nvcc -target-dir`` values and the required-file list checked before any CMake runs.

Sources of the facts:

- Component and platform keys are NVIDIA's redist names (``redistrib_<ver>.json``: ``cuda_nvcc``,
  ``cuda_crt``, ``libnvvm``, ``cuda_cccl`` (``cccl`` in some releases), ``cuda_cudart``,
  ``libcublas``; platforms ``linux-x86_64``, ``linux-sbsa``, ``windows-x86_64``,
  ``windows-arm64``).
- Wheel distribution names and their layout (``nvidia/cu13/{bin,include,lib,nvvm}``, Windows
  ``lib/<arch>``/``bin/<arch>``) are those of NVIDIA's wheels fetched with ``pip download``.
- The required files are what CMake's CUDA compiler check and ggml-cuda's link need
  (``cudadevrt`` + ``cudart_static`` for the check; cudart, cublas, cublasLt, the driver).
"""

from __future__ import annotations

from ..core.lightclass import frozen
from ..toolchains.cuda import is_windows, target_dir

# component -> NVIDIA wheel distribution (pip name).
WHEELS: dict[str, str] = {
    "cuda_nvcc": "nvidia-cuda-nvcc",
    "cuda_crt": "nvidia-cuda-crt",
    "libnvvm": "nvidia-nvvm",
    "cuda_cccl": "nvidia-cuda-cccl",
    "cuda_cudart": "nvidia-cuda-runtime",
    "libcublas": "nvidia-cublas",
}

# Components whose wheel versions follow the CUDA release (13.5.x); the others (cccl, cublas)
# have their own version lines.
RELEASE_VERSIONED = frozenset({"cuda_nvcc", "cuda_crt", "libnvvm", "cuda_cudart"})

# NVIDIA redist platform -> pip ``--platform`` tags asked for (first = the canonical one).
# (``manylinux_2_27_aarch64`` answered with an empty 0.0.0a0 placeholder: not used.)
PIP_TAGS: dict[str, tuple[str, ...]] = {
    "linux-x86_64": (
        "manylinux2014_x86_64",
        "manylinux_2_17_x86_64",
        "manylinux2010_x86_64",
        "manylinux_2_12_x86_64",
        "manylinux1_x86_64",
        "manylinux_2_5_x86_64",
    ),
    "linux-sbsa": ("manylinux2014_aarch64", "manylinux_2_17_aarch64"),
    "windows-x86_64": ("win_amd64",),
    "windows-arm64": ("win_arm64",),
}


@frozen
class Required:
    """One file a validated toolkit must hold: ``path`` relative to the prefix, the ``component``
    that provides it, its ``role`` (``host``/``target``) and ``platform``."""

    path: str
    component: str
    role: str
    platform: str


def required_files(
    host_platform: str,
    target_platform: str,
    cuda_major: int,
    *,
    driver_stub_from: str = "cuda_cudart",
    cublas: bool = True,
) -> list[Required]:
    """The required-file list of a toolkit for (host, target) platforms.

    Host (runs on the build machine): ``bin/nvcc(.exe)``, ``nvvm/bin/cicc(.exe)``,
    ``bin/crt/link.stub``, a CCCL header (under ``include/cccl/`` from CUDA 13 on) and a crt header. Target: cudart (shared and static),
    cudadevrt, cublas, cublasLt and the driver import library: ``lib/<arch>/*.lib`` and
    ``bin/<arch>/*64_<major>.dll`` on Windows, ``targets/<dir>/lib/*`` on Linux.
    ``driver_stub_from`` names what provides the Linux ``stubs/libcuda.so`` (the redist cudart
    archive, or ``generated stub`` for wheels). ``cublas=False`` (a leg whose
    ``cuda.toolkit.target`` does not list ``libcublas``) drops the cublas/cublasLt files.
    """
    exe = ".exe" if is_windows(host_platform) else ""
    out: list[Required] = []

    def h(path: str, comp: str) -> None:
        out.append(Required(path, comp, "host", host_platform))

    def t(path: str, comp: str) -> None:
        out.append(Required(path, comp, "target", target_platform))

    h(f"bin/nvcc{exe}", "cuda_nvcc")
    h("bin/crt/link.stub", "cuda_nvcc")
    h(f"nvvm/bin/cicc{exe}", "libnvvm")
    inc = "include" if is_windows(target_platform) else f"targets/{target_dir(target_platform)}/include"
    host_inc = [] if is_windows(host_platform) else [f"targets/{target_dir(host_platform)}/include"]
    # CUDA 13 moved CCCL (cub, thrust, libcu++) from include/ into include/cccl/ (CUDA 13.0
    # release notes); CUDA 12 keeps it directly under include/
    cccl = "cccl/" if cuda_major >= 13 else ""
    for d in (inc, *host_inc):
        h(f"{d}/{cccl}cuda/std/version", "cuda_cccl")
        h(f"{d}/crt/host_config.h", "cuda_crt")
    if is_windows(target_platform):
        arch = target_dir(target_platform)
        for lib, comp in (
            ("cudart", "cuda_cudart"),
            ("cudart_static", "cuda_cudart"),
            ("cudadevrt", "cuda_cudart"),
            ("cuda", "cuda_cudart"),
            ("cublas", "libcublas"),
            ("cublasLt", "libcublas"),
        ):
            t(f"lib/{arch}/{lib}.lib", comp)
        for dll, comp in (("cudart", "cuda_cudart"), ("cublas", "libcublas"), ("cublasLt", "libcublas")):
            t(f"bin/{arch}/{dll}64_{cuda_major}.dll", comp)
    else:
        lib = f"targets/{target_dir(target_platform)}/lib"
        for f, comp in (
            ("libcudart.so", "cuda_cudart"),
            ("libcudart_static.a", "cuda_cudart"),
            ("libcudadevrt.a", "cuda_cudart"),
            ("libcublas.so", "libcublas"),
            ("libcublasLt.so", "libcublas"),
            ("stubs/libcuda.so", driver_stub_from),
        ):
            t(f"{lib}/{f}", comp)
    t(f"{inc}/cuda_runtime.h", "cuda_cudart")
    if not cublas:
        out = [r for r in out if r.component != "libcublas"]
    return out
