"""Toolkit pieces without processes or network: shared task names, CudaToolkit paths, the
wheels lock against REAL-INPUTS, refusals, the required-file list, the driver stub's ELF."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from elftools.elf.dynamic import DynamicSection
from elftools.elf.elffile import ELFFile

from bundlegraph.backends.cuda.sdk import toolkit_for_leg
from bundlegraph.backends.cuda.toolkit_set import component_set
from bundlegraph.core.errors import ToolkitError
from bundlegraph.graph.context import Context, Filters
from bundlegraph.pipeline.toolkit import plans
from bundlegraph.specs.loader import load_matrix
from bundlegraph.toolkit.components import required_files
from bundlegraph.toolkit.install import refuse_windows_wheels
from bundlegraph.toolkit.lockfile import load_lock
from bundlegraph.toolkit.stub import SONAME, build_stub, driver_symbols

ROOT = Path(__file__).resolve().parents[2]


def ctx_for(bundles: Path) -> Context:
    m = load_matrix(bundles)
    return Context(m, list(m.legs), Filters())


def test_legs_with_one_component_set_share_one_task():
    ctx = ctx_for(ROOT / "bundles")
    a = toolkit_for_leg(ctx, "linux-arm64-cuda13-blackwell")
    b = toolkit_for_leg(ctx, "linux-arm64-cuda13-portable")
    c = toolkit_for_leg(ctx, "linux-x64-cuda13-portable")
    assert a == b and a.task != c.task
    assert re.fullmatch(r"toolkit:cuda13\.5-linux-x86_64\+linux-sbsa-[0-9a-f]{6}", a.task)
    names = [p.full_name for p in plans(ctx)]
    # CUDA: sbsa, x86_64 (13.5 wheels), windows arm64, windows x64 (13.4 redist), linux and windows
    # x64 (12.8 redist), the legacy legs' 12.4 (Linux: Debian's .debs; Windows: redist); Vulkan: each Vulkan leg's SDK; HIP: one TheRock tarball per (os, gfx family)
    vk = [n for n in names if n.startswith("toolkit:vulkan-")]
    rock = [n for n in names if n.startswith("toolkit:therock-")]
    # and one pinned compiler per Linux target (issue 50): x64 (native, ROCm's host code), arm64 (cross)
    gcc = [n for n in names if n.startswith("toolkit:gcc-")]
    assert [n.rsplit("-", 1)[0] for n in gcc] == ["toolkit:gcc-12.2.0-linux-arm64", "toolkit:gcc-12.2.0-linux-x64"]
    # and each SDK of a backend added as a package (issue 53: OpenCL's Debian .debs, one set)
    ocl = [n for n in names if n.startswith("toolkit:opencl-")]
    assert [n.rsplit("-", 1)[0] for n in ocl] == ["toolkit:opencl-3.0-linux-x64"]
    assert len(names) == len(set(names)) == 8 + len(vk) + len(rock) + len(gcc) + len(ocl) and vk and len(rock) == 14
    with pytest.raises(ToolkitError, match="no \\[cuda\\] table"):
        toolkit_for_leg(ctx, "linux-arm64-cpu")


def test_ref_paths_linux_and_windows():
    ctx = ctx_for(ROOT / "bundles")
    r = toolkit_for_leg(ctx, "linux-arm64-cuda13-blackwell")
    assert (r.version, r.source, r.target_platform, r.target_dir, r.cross) == (
        "13.5",
        "wheels",
        "linux-sbsa",
        "sbsa-linux",
        True,
    )
    assert r.nvcc == r.prefix / "bin/nvcc" and r.receipt.parent == r.prefix
    assert r.library("cudart") == r.prefix / "targets/sbsa-linux/lib/libcudart.so"
    assert r.library("cuda_driver") == r.prefix / "targets/sbsa-linux/lib/stubs/libcuda.so"
    assert r.runtime("cublasLt") == r.prefix / "targets/sbsa-linux/lib/libcublasLt.so.13"
    assert r.nvcc_target_flags() == ["-target-dir", "sbsa-linux"]
    assert r.cmake_cache()["CUDA_cublas_LIBRARY"].endswith("targets/sbsa-linux/lib/libcublas.so")
    w = toolkit_for_leg(ctx, "windows-arm64-cuda13-portable")
    assert (w.target_dir, w.version, w.source) == ("arm64", "13.4", "redist")
    assert w.nvcc.name == "nvcc.exe" and w.library("cublasLt") == w.prefix / "lib/arm64/cublasLt.lib"
    assert w.runtime("cudart") == w.prefix / "bin/arm64/cudart64_13.dll"
    with pytest.raises(KeyError):
        w.library("cufft")


def test_lock_hashes_match_real_inputs():
    from realinputs import LOCK_PINS as pins

    lock = load_lock(ROOT / "bundles/locks/cuda-13.5-wheels.toml")
    assert len(lock.wheel) == 8
    for row in lock.wheel:
        dist = row.requirement.split("==")[0]
        tag = row.filename[:-4].split("-")[-1].split(".")[0]
        assert pins[f"{dist} {row.version} {tag}"] == row.sha256, row.filename


def test_lock_row_without_hash_refused(tmp_path):
    text = (ROOT / "bundles/locks/cuda-13.5-wheels.toml").read_text()
    bad = tmp_path / "lock.toml"
    bad.write_text(re.sub(r'sha256 = "[0-9a-f]{64}"', 'sha256 = ""', text, count=1))
    with pytest.raises(ToolkitError, match=r"lock.toml: wheel\.0\.sha256: '' is not 64 lowercase hex digits"):
        load_lock(bad)


def test_lock_missing_row_names_spec_key(tmp_path, bundles_copy):
    lock = bundles_copy / "locks/cuda-13.5-wheels.toml"
    text = lock.read_text()
    lock.write_text(
        re.sub(r'\n\[\[wheel\]\]\ncomponent = "libcublas"\nplatform = "linux-sbsa"\n(?:[^\[]*\n)', "\n", text)
    )
    m = load_matrix(bundles_copy)
    with pytest.raises(
        ToolkitError,
        match=r"linux-arm64-cuda13-blackwell.toml: cuda.toolkit.target: component "
        r"libcublas on linux-sbsa has no row in .*cuda-13.5-wheels.toml",
    ):
        component_set(m.legs["linux-arm64-cuda13-blackwell"], m.root, str(m.files["linux-arm64-cuda13-blackwell"]))


def test_windows_target_from_wheels_refused_with_reason(bundles_copy):
    spec = bundles_copy / "windows-arm64-cuda13-portable.toml"
    t = spec.read_text().replace(
        'source = "redist"\nmanifest = "13.4.2"', 'source = "wheels"\nlock = "locks/cuda-13.5-wheels.toml"'
    )
    t = t.replace('version = "13.4"', 'version = "13.5"')  # the lock's version (refused at load otherwise)
    spec.write_text(t)
    m = load_matrix(bundles_copy)
    leg = "windows-arm64-cuda13-portable"
    with pytest.raises(ToolkitError):  # the lock has no Windows rows either
        component_set(m.legs[leg], m.root, str(spec))
    from bundlegraph.toolkit.identity import ComponentSet

    cs = ComponentSet(
        "wheels", "13.5", "windows-x86_64", "windows-arm64", ("cuda_nvcc",), ("libcublas",), {}, str(spec)
    )
    with pytest.raises(
        ToolkitError,
        match=r"windows-arm64-cuda13-portable.toml: cuda.toolkit.source: 'wheels' "
        r"cannot provide .* no cublas.lib/cublasLt.lib import libraries",
    ):
        refuse_windows_wheels(cs)


def test_required_files_per_role_and_platform():
    lin = {r.path: r.component for r in required_files("linux-x86_64", "linux-sbsa", 13)}
    for f in (
        "bin/nvcc",
        "nvvm/bin/cicc",
        "bin/crt/link.stub",
        "targets/sbsa-linux/include/cccl/cuda/std/version",
        "targets/sbsa-linux/lib/libcudart_static.a",
        "targets/sbsa-linux/lib/libcudadevrt.a",
        "targets/sbsa-linux/lib/stubs/libcuda.so",
        "targets/sbsa-linux/lib/libcublasLt.so",
    ):
        assert f in lin
    assert lin["targets/sbsa-linux/lib/libcublas.so"] == "libcublas"
    win = {r.path: r.component for r in required_files("windows-x86_64", "windows-arm64", 13)}
    for f in (
        "bin/nvcc.exe",
        "nvvm/bin/cicc.exe",
        "lib/arm64/cudart.lib",
        "lib/arm64/cudart_static.lib",
        "lib/arm64/cudadevrt.lib",
        "lib/arm64/cublas.lib",
        "lib/arm64/cublasLt.lib",
        "lib/arm64/cuda.lib",
        "bin/arm64/cudart64_13.dll",
    ):
        assert f in win
    assert not any("cublas" in r.path for r in required_files("linux-x86_64", "linux-sbsa", 13, cublas=False))


@pytest.mark.parametrize("platform,machine", [("linux-sbsa", "EM_AARCH64"), ("linux-x86_64", "EM_X86_64")])
def test_driver_stub_is_an_elf_with_soname(platform, machine):
    header = (
        "#define cuMemAlloc cuMemAlloc_v2\nCUresult CUDAAPI cuInit(unsigned int Flags);\n"
        "CUresult CUDAAPI cuMemAlloc(CUdeviceptr *p, size_t n); /* cuFake( */\n"
    )
    syms = driver_symbols(header)
    assert syms == ["cuInit", "cuMemAlloc", "cuMemAlloc_v2"]
    elf = ELFFile(io.BytesIO(build_stub(syms, platform)))
    assert elf["e_machine"] == machine and elf["e_type"] == "ET_DYN"
    dyn = next(s for s in elf.iter_sections() if isinstance(s, DynamicSection))
    assert [t.soname for t in dyn.iter_tags() if t.entry.d_tag == "DT_SONAME"] == [SONAME]
    dynsym = elf.get_section_by_name(".dynsym")
    names = {s.name: s for s in dynsym.iter_symbols() if s.name}
    assert set(names) == set(syms)
    assert all(s["st_info"]["type"] == "STT_FUNC" and s["st_shndx"] != "SHN_UNDEF" for s in names.values())
