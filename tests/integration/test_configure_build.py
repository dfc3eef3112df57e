"""The real graph (dodo.py, same pipeline modules) on the minillama stand-in and on real
llama.cpp: configure + build with real cmake/ninja/nvcc/aarch64 GCC, action keys (a rerun
executes nothing; an arch change reconfigures and rebuilds that leg only), the target filter of
the build task, and the /Zc:preprocessor hook on a real CMake project."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import graphrun
import pytest
from conftest import linux_only, needs_host_cuda, require_input, require_tools
from elftools.elf.elffile import ELFFile

from bundlegraph.core import proc
from bundlegraph.toolchains.msvc import hooks_cmake
from bundlegraph.toolchains.tools import build_tools

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"

pytestmark = linux_only  # Debian's cross compilers; each test requires what it uses


@pytest.fixture(autouse=True)
def _cross_gcc():
    require_tools("aarch64-linux-gnu-gcc", "aarch64-linux-gnu-g++", "gcc")


def executed(out: str) -> list[str]:
    """Tasks doit ran (``.  task``), not the up-to-date ones (``-- task``)."""
    return re.findall(r"^\.  (\S+)", out, re.M)


@pytest.fixture
def blackwell_wheels():
    """NVIDIA's 13.5 wheels of the blackwell leg (x86_64 host tools, sbsa cudart + cublas),
    fetched into the blob cache on a cold cache."""
    return require_input("cuda-13.5-blackwell")


def machine(path: Path) -> str:
    with open(path, "rb") as f:
        return ELFFile(f)["e_machine"]


@pytest.fixture
def mini(tmp_path):
    """A private copy of the stand-in source and its bundles (+ the real wheels lock). The aarch64
    CUDA leg here also links cuBLAS (as the real blackwell leg does), so the cross build's
    library pins are checked for both NVIDIA libraries."""
    shutil.copytree(DATA / "minillama", tmp_path / "minillama")
    shutil.copytree(DATA / "bundles", tmp_path / "bundles")
    shutil.copytree(ROOT / "bundles" / "locks", tmp_path / "bundles" / "locks", dirs_exist_ok=True)
    spec = tmp_path / "bundles" / "mini-linux-arm64-cuda.toml"
    text = spec.read_text()
    assert 'target = ["cuda_cudart"]' in text
    spec.write_text(text.replace('target = ["cuda_cudart"]', 'target = ["cuda_cudart", "libcublas"]'))
    wd = tmp_path / "work"
    wd.mkdir()
    return tmp_path / "bundles", wd


def run(args, bundles, wd, **env):
    r = graphrun.doit(args, bundles=bundles, workdir=wd, **env)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]
    return r.stdout


def test_cross_cpu_leg_builds_aarch64_and_rerun_is_noop(mini):
    bundles, wd = mini
    out = run(["build:mini-linux-arm64-cpu"], bundles, wd)
    ran = executed(out)
    # the pinned cross compiler's task before configure (issue 50)
    assert ran[1].startswith("toolkit:gcc-12.2.0-linux-arm64-"), ran
    assert ran[:1] + ran[2:] == [
        "source:mini-linux-arm64-cpu",
        "configure:mini-linux-arm64-cpu",
        "build:mini-linux-arm64-cpu",
    ]
    assert re.search(r"\[build:mini-linux-arm64-cpu\] 100% \[\d+/\d+\]", out)  # ninja progress
    bdir = wd / "build" / "mini-linux-arm64-cpu"
    rec = json.loads((bdir / "build.json").read_text())
    built = {Path(p).name for p in rec["outputs"]}
    assert {"llama-cli", "libggml-base.so", "libggml-cpu.so"} <= built
    for name in ("llama-cli", "libggml-base.so", "libggml-cpu.so"):
        assert machine(bdir / "cmake" / "bin" / name) == "EM_AARCH64"
    conf = json.loads((bdir / "configure.json").read_text())
    assert "-DCMAKE_TOOLCHAIN_FILE=" + (bdir / "toolchain.cmake").as_posix() in conf["argv"]
    assert "-DLLAMA_BUILD_COMMIT=0123456" in conf["argv"] and "-DLLAMA_BUILD_NUMBER=42" in conf["argv"]
    assert executed(run(["build:mini-linux-arm64-cpu"], bundles, wd)) == []


def test_cross_cuda_leg_arch_change_rebuilds_that_leg_only(mini, blackwell_wheels):
    bundles, wd = mini
    tasks = ["build:mini-linux-arm64-cuda", "build:mini-linux-arm64-cpu"]
    out = run(tasks, bundles, wd)
    assert {"configure:mini-linux-arm64-cuda", "build:mini-linux-arm64-cuda", "build:mini-linux-arm64-cpu"} <= set(
        executed(out)
    )
    bdir = wd / "build" / "mini-linux-arm64-cuda"
    lib = bdir / "cmake" / "bin" / "libggml-cuda.so"
    assert machine(lib) == "EM_AARCH64"
    with open(lib, "rb") as f:
        dyn = ELFFile(f).get_section_by_name(".dynamic")
        needed = [t.needed for t in dyn.iter_tags() if t.entry.d_tag == "DT_NEEDED"]
        runpath = [t.runpath for t in dyn.iter_tags() if t.entry.d_tag == "DT_RUNPATH"]
    assert "libcudart.so.13" in needed and runpath == ["$ORIGIN"]
    cache = (bdir / "cmake" / "CMakeCache.txt").read_text()
    assert re.search(r"^CUDA_cudart_LIBRARY:FILEPATH=.*/targets/sbsa-linux/lib/libcudart\.so$", cache, re.M)
    checks = json.loads((bdir / "configure.json").read_text())["checks"]
    assert checks["CUDA_cublas_LIBRARY"].endswith("/targets/sbsa-linux/lib/libcublas.so")
    cc = json.loads((bdir / "cmake" / "compile_commands.json").read_text())
    cu = [c["command"] for c in cc if c["file"].endswith(".cu")]
    assert cu and all("sm_121a" in c and "-target-dir=sbsa-linux" in c for c in cu)

    assert executed(run(tasks, bundles, wd)) == []
    spec = bundles / "mini-linux-arm64-cuda.toml"
    spec.touch()  # same content: nothing runs
    assert executed(run(tasks, bundles, wd)) == []
    spec.write_text(spec.read_text().replace('archs = ["120", "121"]', 'archs = ["120"]'))
    out = run(tasks, bundles, wd)
    assert executed(out) == ["configure:mini-linux-arm64-cuda", "build:mini-linux-arm64-cuda"]
    cc = json.loads((bdir / "cmake" / "compile_commands.json").read_text())
    assert all("sm_121a" not in c["command"] for c in cc if c["file"].endswith(".cu"))

    # the target filter goes through the build: task and is keyed (a later full build reruns)
    obj = "CMakeFiles/ggml-cuda.dir/src/ggml-cuda/scale.cu.o"
    (bdir / "cmake" / obj).unlink()
    out = run(["build:mini-linux-arm64-cuda", f"build_targets={obj}"], bundles, wd)
    assert executed(out) == ["build:mini-linux-arm64-cuda"]
    assert machine(bdir / "cmake" / obj) == "EM_AARCH64"
    assert json.loads((bdir / "build.json").read_text())["filtered"] is True
    assert executed(run(["build:mini-linux-arm64-cuda"], bundles, wd)) == ["build:mini-linux-arm64-cuda"]


@needs_host_cuda
def test_cuda_host_flag_hook_adds_once(tmp_path):
    """The /Zc:preprocessor hook, exercised with a GCC flag on a real CMake + nvcc configure:
    added to the CUDA target that lacks it, not added again when CMAKE_CUDA_FLAGS has it."""
    tools = build_tools()
    hook = tmp_path / "hooks.cmake"
    hook.write_text(hooks_cmake("-fno-common"))
    for extra, where in (([], "hook"), (["-DCMAKE_CUDA_FLAGS=-Xcompiler=-fno-common"], "flags")):
        b = tmp_path / f"b-{where}"
        proc.run(
            [
                str(tools.cmake.path),
                "-S",
                str(DATA / "minillama"),
                "-B",
                str(b),
                "-G",
                "Ninja",
                f"-DCMAKE_MAKE_PROGRAM={tools.ninja.path}",
                "-DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc",
                "-DGGML_CUDA=ON",
                "-DGGML_NATIVE=OFF",
                "-DCMAKE_CUDA_ARCHITECTURES=120",
                "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON",
                f"-DCMAKE_PROJECT_TOP_LEVEL_INCLUDES={hook}",
                *extra,
            ],
            log=tmp_path / f"{where}.log",
            echo=False,
        )
        cc = json.loads((b / "compile_commands.json").read_text())
        cu = [c["command"] for c in cc if c["file"].endswith(".cu")]
        c_ = [c["command"] for c in cc if c["file"].endswith(".c")]
        assert cu and all(c.count("-fno-common") == 1 for c in cu), cu
        assert all("-fno-common" not in c for c in c_)
        log = (tmp_path / f"{where}.log").read_text()
        assert ("added -Xcompiler=-fno-common" in log) == (where == "hook")


def test_real_llama_cpp_blackwell_configure_and_two_objects(workdir, blackwell_wheels):
    """The real linux-arm64-cuda13-blackwell leg: real configure, two small ggml-cuda objects
    compiled through the build: task, checked to be aarch64 code; a rerun executes nothing."""
    require_input("llama-sdist")
    objs = [f"ggml/src/ggml-cuda/CMakeFiles/ggml-cuda.dir/{n}.cu.o" for n in ("fill", "arange")]
    args = ["build:linux-arm64-cuda13-blackwell", "build_targets=" + ",".join(objs)]
    r = graphrun.doit(args, workdir=workdir, timeout=900)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]
    assert "configure:linux-arm64-cuda13-blackwell" in executed(r.stdout)
    cmake_dir = workdir / "build" / "linux-arm64-cuda13-blackwell" / "cmake"
    for o in objs:
        assert machine(cmake_dir / o) == "EM_AARCH64"
    cache = (cmake_dir / "CMakeCache.txt").read_text()
    for var in ("CUDA_cudart_LIBRARY", "CUDA_cublas_LIBRARY", "CUDA_cublasLt_LIBRARY", "CUDA_cuda_driver_LIBRARY"):
        assert re.search(rf"^{var}:FILEPATH=.*/targets/sbsa-linux/lib/", cache, re.M), var
    r = graphrun.doit(args, workdir=workdir)
    assert r.returncode == 0 and executed(r.stdout) == []
