"""Debian 13's CUDA 12.4 packages as a toolkit (``source = "debs"``), for real: the locked .debs
(1.26 GB, ``bundles/locks/cuda-12.4-debs.toml``) fetched with ``apt-get download`` and installed
once into the shared cache by the module's setup, laid out as a standard toolkit; nvcc 12.4 then
compiles real objects whose fatbins ``bundlegraph fatbin --archs`` and ``verify``'s check read:
legacy PTX 50/61 only, SASS 75.

Time: cold cache ~3.5 min here (fetch 16 s, extracting nvidia-cuda-dev's 934 MB .deb most of the
rest); warm ~10 s (the installed toolkit is reused: its receipt names the set's digest)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import require_tools
from debskit import ROOT, debs_set, debs_toolkit
from elftools.elf.dynamic import DynamicSection
from elftools.elf.elffile import ELFFile

from bundlegraph.checks.bundle import mapped
from bundlegraph.checks.fatbin import check_archs
from bundlegraph.checks.inspect import inspect_file
from bundlegraph.core import proc
from bundlegraph.core.errors import ToolkitError
from bundlegraph.schemas.archs import parse_arch
from bundlegraph.toolkit import debs
from bundlegraph.toolkit.debsrc import check_set
from bundlegraph.toolkit.install import license_of

pytestmark = pytest.mark.slow

KERNEL = """
__global__ void axpy(float a, const float *x, float *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] += a * x[i];
}
int main() {
    float *x = nullptr;
    cudaMalloc(&x, 16);
    axpy<<<1, 4>>>(2.0f, x, x, 4);
    return cudaDeviceSynchronize() == cudaSuccess ? 0 : 1;
}
"""


@pytest.fixture(scope="module")
def tk(tmp_path_factory):
    require_tools("apt-get", "dpkg-deb", "g++")
    return debs_toolkit(tmp_path_factory.mktemp("debs"))


def nvcc(tk, *args: str, cwd: Path) -> None:
    proc.run([tk.nvcc, *args], cwd=cwd, echo=False, what="nvcc 12.4")


def inventory(path: Path):
    with mapped(path) as data:
        return inspect_file(path.name, data).fatbin


def test_the_debs_toolkit_is_a_standard_toolkit_pinned_by_the_lock(tk):
    lock = debs.load_lock(ROOT / "bundles/locks/cuda-12.4-debs.toml")
    r = json.loads(tk.receipt_file.read_text())
    assert r["source"] == "debs" and r["lock"]["debs"] == lock.digest()
    assert [(c["component"], c["sha256"]) for c in r["components"]] == [(p.name, p.sha256) for p in lock.packages]
    out = proc.run([tk.nvcc, "--version"], capture=True, echo=False).output
    assert "release 12.4, V12.4.131" in out
    assert json.loads((tk.prefix / "version.json").read_text())["cuda"]["version"] == "12.4.131"
    # nvcc reads the profile beside itself: relative to the prefix, never Debian's /etc/nvcc.profile
    prof = tk.prefix / "bin/nvcc.profile"
    assert not prof.is_symlink() and "/usr/lib" not in prof.read_text() and "$(_HERE_)" in prof.read_text()
    assert "include/cccl" not in prof.read_text()  # CUDA 12 keeps CCCL in include/; CMake refuses a missing dir
    for role in ("cudart", "cudart_static", "cudadevrt", "cublas", "cublasLt", "cuda_driver"):
        assert tk.library(role).is_file(), role
    assert tk.runtime("cudart").name == "libcudart.so.12" and tk.runtime("cudart").is_file()
    # each shipped runtime file goes with its package's Debian copyright file
    comp, lic = license_of(tk.prefix, "targets/x86_64-linux/lib/libcudart.so.12")
    assert comp == "libcudart12" and "NVIDIA" in lic.read_text()
    # static archives no CUDA build links were dropped; those it links were kept
    assert "debian/usr/lib/x86_64-linux-gnu/libcufft_static.a" in r["pruned"]
    assert (tk.lib_dir / "libcublasLt_static.a").is_file() and not (tk.lib_dir / "libcufft_static.a").exists()


def test_legacy_object_holds_ptx_50_and_61_only(tk, tmp_path, capsys):
    (tmp_path / "k.cu").write_text(KERNEL)
    gens = ["-gencode", "arch=compute_50,code=compute_50", "-gencode", "arch=compute_61,code=compute_61"]
    nvcc(tk, "-c", "k.cu", "-o", "legacy.o", *gens, cwd=tmp_path)
    inv = inventory(tmp_path / "legacy.o")
    assert inv is not None and dict(inv.ptx) == {50: 1, 61: 1} and not inv.sass
    legacy = [parse_arch("50-virtual"), parse_arch("61-virtual")]
    assert check_archs(inv, legacy) == []
    # SASS for a PTX-only arch is refused, as is a missing PTX
    nvcc(tk, "-c", "k.cu", "-o", "sass50.o", "-gencode", "arch=compute_50,code=[compute_50,sm_50]", cwd=tmp_path)
    problems = check_archs(inventory(tmp_path / "sass50.o"), legacy)
    assert problems == ["missing PTX for compute_61", "unexpected SASS for sm_50 (the spec asks for PTX only)"]
    # and `bundlegraph fatbin --archs` reports it
    from bundlegraph.cli import main

    assert main(["fatbin", str(tmp_path / "legacy.o"), "--archs", "50-virtual,61-virtual"]) == 0
    assert "archs 50-virtual,61-virtual: ok" in capsys.readouterr().out
    assert main(["fatbin", str(tmp_path / "sass50.o"), "--archs", "50-virtual,61-virtual"]) == 1
    assert (
        "archs 50-virtual,61-virtual: unexpected SASS for sm_50 (the spec asks for PTX only)" in capsys.readouterr().out
    )


def test_sm75_program_links_the_toolkits_shared_cudart(tk, tmp_path):
    (tmp_path / "k.cu").write_text(KERNEL)
    nvcc(tk, "k.cu", "-o", "k75", "-gencode", "arch=compute_75,code=sm_75", "-cudart", "shared", cwd=tmp_path)
    inv = inventory(tmp_path / "k75")
    assert inv is not None and set(inv.sass) == {75} and not inv.ptx
    with open(tmp_path / "k75", "rb") as f:
        dyn = next(s for s in ELFFile(f).iter_sections() if isinstance(s, DynamicSection))
        needed = [t.needed for t in dyn.iter_tags() if t.entry.d_tag == "DT_NEEDED"]
    assert "libcudart.so.12" in needed


def test_the_set_is_named_by_the_debs_and_refuses_what_they_cannot_build(tk, tmp_path):
    bundles = tmp_path / "bundles"
    shutil.copytree(ROOT / "bundles", bundles)
    cs = debs_set(bundles)
    assert cs.name == tk.name and cs.name.startswith("cuda12.4-linux-x86_64+linux-x86_64-")
    lock_file = bundles / "locks/cuda-12.4-debs.toml"
    lock = debs.load_lock(lock_file)
    text = lock_file.read_text()
    lock_file.write_text(text.replace(lock.packages[3].sha256, "0" * 64))
    assert debs_set(bundles).name != cs.name  # another sha256 pin: another toolkit
    lock_file.write_text(text)
    spec = bundles / "linux-x64-cuda12-older.toml"
    spec.write_text(spec.read_text().replace('version = "12.4"', 'version = "12.8"'))
    from bundlegraph.backends.cuda.toolkit_set import component_set
    from bundlegraph.specs.loader import load_matrix

    m = load_matrix(bundles)
    cs128 = component_set(m.legs["linux-x64-cuda12-older"], m.root, str(spec))
    with pytest.raises(ToolkitError, match=r"cuda-12\.4-debs\.toml: nvcc 12\.4\.131 .*asks for cuda\.version 12\.8"):
        check_set(cs128, debs.load_lock(lock_file))


def test_real_ggml_cuda_slice_for_an_older_and_a_legacy_leg(tk, tmp_path, workdir):
    """The real llama.cpp (the release's sdist pin) configured through the graph for a
    ``cuda12-older``-like leg (75) and a ``cuda12-legacy``-like leg (50-virtual;61-virtual) with
    the debs toolkit; two real ggml-cuda objects each, whose fatbins hold what the leg promises
    and nothing else (legacy: PTX 50 and 61, no SASS). ~15 s per leg here once the toolkit and
    the sdist are cached (bench/cuda12_slice.py compiles more, and times it)."""
    import graphrun
    from conftest import require_input
    from debskit import debs_leg

    require_input("llama-sdist")
    bundles = tmp_path / "bundles"
    shutil.copytree(ROOT / "bundles", bundles)
    objs = [f"ggml/src/ggml-cuda/CMakeFiles/ggml-cuda.dir/{n}.cu.o" for n in ("fill", "arange")]
    for leg, archs, klass in (
        ("linux-x64-cuda12-older", ["75"], "older"),
        ("linux-x64-cuda12-legacy", ["50-virtual", "61-virtual"], "legacy"),
    ):
        debs_leg(bundles, leg, archs, klass)
        r = graphrun.doit(
            [f"build:{leg}", "build_targets=" + ",".join(objs)], bundles=bundles, workdir=workdir, timeout=900
        )
        assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]
        cmake = workdir / "build" / leg / "cmake"
        cache = (cmake / "CMakeCache.txt").read_text()
        assert f"CMAKE_CUDA_COMPILER:STRING={tk.prefix.as_posix()}/bin/nvcc\n" in cache
        for o in objs:
            inv = inventory(cmake / o)
            assert check_archs(inv, [parse_arch(a) for a in archs]) == [], (leg, o, inv and inv.summary())
        if klass == "legacy":
            assert not inv.sass and set(inv.ptx) == {50, 61}
