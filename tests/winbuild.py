"""Build trees of the Windows ARM64 legs as a Windows runner would hand them over (doit
``built=DIR``), made of real files: the real ARM64 ggml DLLs of npm ``@node-llama-cpp/win-arm64``
(pinned in :mod:`realinputs`), small real ARM64 PE files (clang ``--target=aarch64-pc-windows-msvc``
+ ``lld-link``, :mod:`binkit`) for what the installer requires and no reachable package holds,
and an ARM64 ``ggml-cuda.dll`` real in every part verify reads: its ``.nv_fatb`` section holds a
fatbin the host's nvcc compiled for sm_120 and sm_121; it imports by name what the real x64
``ggml-cuda.dll`` of npm ``@node-llama-cpp/win-x64-cuda`` imports from ``ggml-base.dll`` and
``cublas64_13.dll``, plus from ``cudart64_13.dll`` the names the main job's aarch64
``libggml-cuda.so`` takes from ``libcudart.so.13`` (``tests/data/windows/ggml-cuda-cudart-imports.txt``,
which cites its source); it exports ``ggml_backend_init`` as every ``GGML_BACKEND_DL`` backend does.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from binkit import Dll, build_dll

from bundlegraph.checks.pe import read_pe
from bundlegraph.core import proc

ROOT = Path(__file__).resolve().parents[1]
NVCC = Path("/usr/local/cuda/bin/nvcc")
CUDART_IMPORTS = ROOT / "tests" / "data" / "windows" / "ggml-cuda-cudart-imports.txt"
NPM_ARM64 = ("ggml-base.dll", "ggml-cpu.dll", "ggml.v0.4.0.dll", "llama.v0.4.0.dll", "llama-common.dll")
"""The real ARM64 files taken from npm @node-llama-cpp/win-arm64 (its versioned names kept: its
``llama-common.dll`` imports ``llama.v0.4.0.dll``)."""
NPM_X64 = (
    "ggml-base.dll",
    "ggml.cuda.v0.4.0.dll",
    "llama.cuda.v0.4.0.dll",
    "llama-common.dll",
    *(
        f"ggml-cpu-{v}.dll"
        for v in (
            "alderlake",
            "cannonlake",
            "cascadelake",
            "haswell",
            "icelake",
            "sandybridge",
            "skylakex",
            "sse42",
            "x64",
        )
    ),
)
"""The real x64 CPU-side files of npm @node-llama-cpp/win-x64-cuda (every ggml-cpu variant, as
``GGML_CPU_ALL_VARIANTS`` builds them)."""
SMALL_DLLS = ("llama.dll", "ggml.dll", "mtmd.dll", "llama-server-impl.dll", "llama-quantize-impl.dll")
SMALL_EXES = ("llama-server.exe", "llama-quantize.exe", "llama-cli.exe")


def cpu_tree(dest: Path, npm_bins: Path, arch: str = "arm64") -> Path:
    """``dest`` holding windows-<arch>-cpu's build output: the real npm DLLs (:data:`NPM_ARM64` /
    :data:`NPM_X64`), and small real PE files of that machine for the required names npm lacks
    (each importing a real ``ggml-base.dll`` export, so the import closure is checked against the
    real library)."""
    dest.mkdir(parents=True, exist_ok=True)
    for n in NPM_ARM64 if arch == "arm64" else NPM_X64:
        shutil.copyfile(npm_bins / n, dest / n)
    base_export = next(n for n in _exports(npm_bins / "ggml-base.dll") if n.startswith("ggml_") and n.isidentifier())
    work = dest.parent / f".{dest.name}-pe"
    for n in SMALL_DLLS:
        _move(
            build_dll(
                Dll(
                    n,
                    arch,
                    exports=("bg_" + n.split(".")[0].replace("-", "_"),),
                    imports=(("ggml-base.dll", (base_export,)),),
                ),
                work,
            ),
            dest,
        )
    for n in SMALL_EXES:
        _move(
            build_dll(Dll(n, arch, exports=("bg_main",), imports=(("ggml-base.dll", (base_export,)),), exe=True), work),
            dest,
        )
    shutil.rmtree(work)
    return dest


def fatbin(work: Path, sms: tuple[int, ...] = (120, 121)) -> bytes:
    """A real CUDA fatbin: ``nvcc -fatbin`` of a small kernel with SASS for each SM in ``sms``."""
    from conftest import HOST_NVCC

    work.mkdir(parents=True, exist_ok=True)
    (work / "k.cu").write_text("__global__ void bg_scale(float *x, float a) { x[threadIdx.x] *= a; }\n")
    gencode = [f"-gencode=arch=compute_{sm},code=sm_{sm}" for sm in sms]
    proc.run(
        [str(HOST_NVCC), "-fatbin", *gencode, "-o", str(work / "k.fatbin"), str(work / "k.cu")],
        cwd=work,
        capture=True,
        echo=False,
        what="nvcc -fatbin",
    )
    return (work / "k.fatbin").read_bytes()


def cuda_tree(dest: Path, x64_cuda_dll: Path, sms: tuple[int, ...] = (120, 121)) -> Path:
    """``dest`` holding windows-arm64-cuda13-portable's build output: the ARM64 ``ggml-cuda.dll``
    described in the module docstring."""
    dest.mkdir(parents=True, exist_ok=True)
    work = dest.parent / f".{dest.name}-pe"
    blob = fatbin(work, sms)
    imports = _imports(x64_cuda_dll)
    cudart = tuple(l for l in CUDART_IMPORTS.read_text().splitlines() if l and not l.startswith("#"))
    wanted = (
        ("ggml-base.dll", imports["ggml-base.dll"]),
        ("cublas64_13.dll", imports["cublas64_13.dll"]),
        ("cudart64_13.dll", cudart),
    )
    arr = ",".join(str(b) for b in blob)
    extra = (
        '__attribute__((section(".nv_fatb"), used, aligned(8))) '
        f"const unsigned char bg_fatbin[{len(blob)}] = {{{arr}}};\n"
        "const unsigned char *bg_fatbin_ref(void) { return bg_fatbin; }\n"
    )
    _move(
        build_dll(
            Dll(
                "ggml-cuda.dll",
                "arm64",
                exports=("ggml_backend_init", "ggml_backend_cuda_reg"),
                imports=wanted,
                extra_c=extra,
            ),
            work,
        ),
        dest,
    )
    shutil.rmtree(work)
    return dest


def _exports(dll: Path) -> list[str]:
    return sorted(read_pe(dll.read_bytes(), dll.name).exports)


def _imports(dll: Path) -> dict[str, tuple[str, ...]]:
    return {i.dll: i.names for i in read_pe(dll.read_bytes(), dll.name).imports if not i.delay}


def _move(built: Path, dest: Path) -> None:
    shutil.move(str(built), dest / built.name)
