"""NVIDIA's wheels as the toolkit source, for real: fetched with ``pip download`` (cached in the
shared blob cache), laid out for an x86_64 host + linux-sbsa target, validated, and used to
cross-compile a CUDA program for aarch64. The full set with the 560 MB aarch64 cublas wheel runs
through doit from a fresh cache in the last test."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pefile
import pytest
from conftest import require_input, require_tools
from elftools.elf.elffile import ELFFile

from bundlegraph.backends.cuda.toolkit_set import component_set
from bundlegraph.core import proc
from bundlegraph.core.errors import ToolkitError
from bundlegraph.specs.loader import load_matrix
from bundlegraph.toolkit import layout
from bundlegraph.toolkit.identity import ComponentSet
from bundlegraph.toolkit.install import install
from bundlegraph.toolkit.lockfile import load_lock
from bundlegraph.toolkit.ref import ref_for_set

ROOT = Path(__file__).resolve().parents[2]
LEG = "linux-arm64-cuda13-blackwell"

pytestmark = pytest.mark.network


def _no_cublas_set(bundles: Path) -> ComponentSet:
    spec = bundles / f"{LEG}.toml"
    spec.write_text(
        spec.read_text().replace(
            'target_platform = "linux-sbsa"', 'target_platform = "linux-sbsa"\ntarget = ["cuda_cudart"]'
        )
    )
    m = load_matrix(bundles)
    return component_set(m.legs[LEG], m.root, str(spec))


def test_wheels_sbsa_toolkit_cross_compiles(bundles_copy, workdir, tmp_path):
    require_input("cuda-13.5-sbsa-cross")
    cs = _no_cublas_set(bundles_copy)
    ref = ref_for_set(cs)
    receipt = install(cs, ref, bundles_copy)
    p = ref.prefix
    r = json.loads(receipt.read_text())
    lock = load_lock(bundles_copy / "locks/cuda-13.5-wheels.toml")
    comps = {(c["component"], c["platform"]): c for c in r["components"]}
    assert set(comps) == {(c, "linux-x86_64") for c in ("cuda_nvcc", "cuda_crt", "libnvvm", "cuda_cccl")} | {
        ("cuda_cudart", "linux-sbsa")
    }
    for (c, plat), row in comps.items():
        assert row["sha256"] == lock.row(c, plat).sha256 and row["source"] == "wheels"
    # the wheels' simplified profile is replaced by the standard one that honours -target-dir
    prof = (p / "bin/nvcc.profile").read_text()
    assert "$(_TARGET_DIR_)/lib$(_TARGET_SIZE_)" in prof and r["profile"]["path"] == "bin/nvcc.profile"
    # the generated driver stub: soname libcuda.so.1, AArch64, recorded as never shipped
    assert r["generated"][0]["path"] == "targets/sbsa-linux/lib/stubs/libcuda.so" and r["generated"][0]["ship"] is False
    assert ref.never_ship() == ["targets/sbsa-linux/lib/stubs/libcuda.so"]
    with open(ref.library("cuda_driver"), "rb") as f:
        assert ELFFile(f)["e_machine"] == "EM_AARCH64"
    with open(ref.library("cudart"), "rb") as f:  # the unversioned link points at the aarch64 library
        assert ELFFile(f)["e_machine"] == "EM_AARCH64"
    out = proc.run([ref.nvcc, "--version"], capture=True, echo=False).output
    assert "release 13.5" in out
    vj = json.loads((p / "version.json").read_text())
    assert vj["cuda"]["version"] == "13.5.37"
    # NVIDIA's license of each wheel (its dist-info, which the layout drops) is kept per component,
    # and a shipped runtime file finds its own component's license
    from bundlegraph.toolkit.install import license_of

    rt = comps[("cuda_cudart", "linux-sbsa")]
    assert rt["license"] and (p / rt["license"]).is_file() and rt["license"].startswith("share/cuda_cudart/")
    assert "NVIDIA" in (p / rt["license"]).read_text(errors="replace")
    assert license_of(p, "targets/sbsa-linux/lib/libcudart.so.13") == ("cuda_cudart", p / rt["license"])

    require_tools("aarch64-linux-gnu-g++")
    src = tmp_path / "t.cu"
    src.write_text(
        "#include <cuda_runtime.h>\n#include <cuda/std/cstddef>\n#include <cuda.h>\n"
        "__global__ void k(float *x) { x[threadIdx.x] *= 2; }\n"
        "int main() { float *d; cudaMalloc(&d, 4); k<<<1, 1>>>(d); CUdevice v; cuDeviceGet(&v, 0);"
        " return cudaDeviceSynchronize(); }\n"
    )
    exe = tmp_path / "t"
    proc.run(
        [
            ref.nvcc,
            "-ccbin",
            "aarch64-linux-gnu-g++",
            *ref.nvcc_target_flags(),
            "-arch",
            "sm_120",
            "-o",
            exe,
            src,
            "-lcuda",
        ],
        cwd=tmp_path,
        log=tmp_path / "nvcc.log",
    )
    with open(exe, "rb") as f:
        elf = ELFFile(f)
        assert elf["e_machine"] == "EM_AARCH64"
        needed = [
            t.needed
            for s in elf.iter_sections()
            if s.header.sh_type == "SHT_DYNAMIC"
            for t in s.iter_tags()
            if t.entry.d_tag == "DT_NEEDED"
        ]
    assert "libcuda.so.1" in needed and not any("stubs" in n for n in needed)
    assert "libcudart" not in " ".join(needed)  # cudart_static from the sbsa directory was linked


def test_win_arm64_cudart_wheel_lands_in_bin_arm64(real_input, tmp_path):
    wheel = real_input("cudart-win-arm64")
    stage, prefix = tmp_path / "stage", tmp_path / "prefix"
    with zipfile.ZipFile(wheel) as zf:
        zf.extractall(stage)
    layout.place(
        stage / "nvidia/cu13", prefix, component="cuda_cudart", role="target", platform="windows-arm64", owners={}
    )
    dll = prefix / "bin/arm64/cudart64_13.dll"
    pe = pefile.PE(str(dll), fast_load=True)
    assert pe.FILE_HEADER.Machine == 0xAA64  # a real ARM64 DLL
    for lib in ("cudart", "cudart_static", "cudadevrt", "cuda"):
        assert (prefix / f"lib/arm64/{lib}.lib").is_file()
    assert (prefix / "include/cuda_runtime.h").is_file()
    # ...but a whole Windows toolkit from wheels is refused (the cublas wheel has no .lib)
    cs = ComponentSet(
        "wheels",
        "13.5",
        "windows-x86_64",
        "windows-arm64",
        ("cuda_nvcc",),
        ("cuda_cudart", "libcublas"),
        {"lock": "x"},
        "bundles/w.toml",
    )
    with pytest.raises(ToolkitError, match="no cublas.lib/cublasLt.lib import libraries"):
        install(cs, ref_for_set(cs), tmp_path)


@pytest.mark.slow
def test_doit_toolkit_for_blackwell_leg_then_noop(workdir, tmp_path, monkeypatch):
    """The 'done when' of the issue on a fresh cache: pip download of all six wheels, a
    validated toolkit whose receipt lists every sha256, then a second run that does nothing."""
    import re

    import graphrun

    cache = tmp_path / "fresh-cache"
    monkeypatch.setenv("BUNDLEGRAPH_CACHE", str(cache))
    r1 = graphrun.doit([f"only_leg={LEG}", "toolkit"], workdir=workdir, timeout=1800, BUNDLEGRAPH_CACHE=str(cache))
    assert r1.returncode == 0, r1.stdout + r1.stderr
    m = load_matrix(ROOT / "bundles")
    ref = ref_for_set(component_set(m.legs[LEG], m.root))
    assert re.search(rf"^\.\s+{re.escape(ref.task)}$", r1.stdout, re.M), r1.stdout
    assert "installed 6 components" in r1.stdout
    r = json.loads(ref.receipt.read_text())
    lock = load_lock(ROOT / "bundles/locks/cuda-13.5-wheels.toml")
    assert {c["sha256"] for c in r["components"]} == {
        lock.row(c["component"], c["platform"]).sha256 for c in r["components"]
    }
    assert len(r["components"]) == 6
    assert ref.library("cublasLt").resolve().stat().st_size > 100_000_000
    with open(ref.library("cublas"), "rb") as f:
        assert ELFFile(f)["e_machine"] == "EM_AARCH64"
    r2 = graphrun.doit([f"only_leg={LEG}", "toolkit"], workdir=workdir, BUNDLEGRAPH_CACHE=str(cache))
    assert r2.returncode == 0 and re.search(rf"^--\s+{re.escape(ref.task)}$", r2.stdout, re.M), r2.stdout
