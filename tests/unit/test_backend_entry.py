"""Under GGML_BACKEND_DL every ggml backend library must export ggml_backend_init (issue 17,
item 15): which names count as backends, and the failure a missing entry point gives."""

from __future__ import annotations

from bundlegraph.checks.backends import missing_entry_points
from bundlegraph.checks.elf import ELFInfo
from bundlegraph.checks.pe import PEInfo


def _pe(*exports: str) -> PEInfo:
    return PEInfo(machine=0xAA64, machine_name="arm64", imports=(), exports=frozenset(exports))


def _elf(*exports: str) -> ELFInfo:
    return ELFInfo(machine="EM_AARCH64", machine_name="arm64", elf_type="ET_DYN", exports=frozenset(exports))


def test_only_backends_need_the_entry_point():
    pe = {
        "ggml-cuda.dll": _pe("ggml_backend_cuda_init"),
        "ggml-cpu-haswell.dll": _pe("ggml_backend_init"),
        "ggml-base.dll": _pe(),
        "ggml.dll": _pe(),
        "ggml.v0.4.0.dll": _pe(),
        "llama.dll": _pe(),
    }
    elf = {
        "lib/libggml-cpu.so": _elf(),
        "libggml-base.so": _elf(),
        "libggml.so": _elf(),
        "libggml-cuda.so": _elf("ggml_backend_init"),
    }
    got = [(f.file, f.check) for f in missing_entry_points(pe, elf)]
    assert got == [("ggml-cuda.dll", "backend"), ("lib/libggml-cpu.so", "backend")]
    assert "exports no ggml_backend_init: with GGML_BACKEND_DL=ON ggml loads this backend and ignores it" in str(
        missing_entry_points(pe, {})[0]
    )


def test_a_cuda_library_of_another_major_is_refused_even_when_declared():
    from bundlegraph.checks.backends import foreign_cuda_imports
    from bundlegraph.checks.pe import PEImport

    pe = {
        "ggml-cuda.dll": PEInfo(
            machine=0xAA64,
            machine_name="arm64",
            imports=(
                PEImport("cublas64_12.dll", ("cublasCreate_v2",), ()),
                PEImport("cudart64_13.dll", ("cudaMalloc",), ()),
            ),
        )
    }
    elf = {
        "libggml-cuda.so": ELFInfo(
            machine="EM_AARCH64",
            machine_name="arm64",
            elf_type="ET_DYN",
            needed=("libcudart.so.12", "libcublas.so.13", "libc.so.6"),
        )
    }
    got = [(f.file, f.reason.split(",")[0]) for f in foreign_cuda_imports(pe, elf, 13)]
    assert got == [("ggml-cuda.dll", "imports cublas64_12.dll"), ("libggml-cuda.so", "needs libcudart.so.12")]
    assert foreign_cuda_imports(pe, elf, 12)[0].reason.startswith(
        "imports cudart64_13.dll, CUDA 13; the leg is CUDA 12"
    )
