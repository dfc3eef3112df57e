"""Toolchain definitions without running compilers: MSVC version checks against nvcc's real
host_config.h, /Zc:preprocessor detection, job count, host detection, tool pins."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from bundlegraph import toolchains
from bundlegraph.core.errors import BundleGraphError, ToolkitError
from bundlegraph.pipeline.compile import jobs
from bundlegraph.toolchains import msvc
from bundlegraph.toolchains.cuda import CudaToolkit, msc_ver_of, msc_ver_range
from bundlegraph.toolchains.registry import TOOLCHAINS
from bundlegraph.toolchains.tools import PINS, build_tools

HOST_CONFIG = Path("/usr/local/cuda/include/crt/host_config.h")
needs_cuda = pytest.mark.skipif(
    not HOST_CONFIG.is_file(), reason="this host has no CUDA toolkit headers at /usr/local/cuda"
)


def test_every_registered_id_has_a_definition():
    for tid in TOOLCHAINS:
        tc = toolchains.get(tid)
        assert tc.id == tid
        assert tc.host_problems((tc.info.build_os, tc.info.build_arch)) == []
        assert tc.host_problems(("darwin", "arm64"))


@needs_cuda
def test_msc_ver_range_from_real_header():
    lo, hi = msc_ver_range(HOST_CONFIG)
    assert (lo, hi) == (1920, 1950)


def test_msc_ver_of():
    assert msc_ver_of("14.44.35207") == 1944
    assert msc_ver_of("14.29.30133") == 1929
    assert msc_ver_of("14.50.35717") == 1950
    with pytest.raises(ValueError):
        msc_ver_of("15.0")


@needs_cuda
def test_unsupported_msvc_names_both(tmp_path):
    (tmp_path / "include" / "crt").mkdir(parents=True)
    shutil.copy(HOST_CONFIG, tmp_path / "include" / "crt" / "host_config.h")
    cuda = CudaToolkit(tmp_path, "13.0", "windows-x86_64", "windows-arm64")
    assert msvc.check_nvcc_supports(cuda, {"VCToolsVersion": "14.44.35207"}) == 1944
    with pytest.raises(BundleGraphError) as e:
        msvc.check_nvcc_supports(cuda, {"VCToolsVersion": "14.50.35717"})
    msg = str(e.value)
    assert "nvcc 13.0" in msg and "1920..1949" in msg and "14.50.35717" in msg and "_MSC_VER 1950" in msg
    assert "never passes -allow-unsupported-compiler" in msg


def test_msc_range_missing_is_named(tmp_path):
    f = tmp_path / "host_config.h"
    f.write_text("/* nothing */\n")
    with pytest.raises(ToolkitError, match="host_config.h: no '_MSC_VER"):
        msc_ver_range(f)


def test_zc_preprocessor_detection():
    once = {"file": "a.cu", "command": 'nvcc.exe -Xcompiler "/Zc:preprocessor /EHsc" -c a.cu'}
    twice = {"file": "b.cu", "command": 'nvcc.exe -Xcompiler=/Zc:preprocessor -Xcompiler "/Zc:preprocessor" -c b.cu'}
    none = {"file": "c.cu", "command": "nvcc.exe -c c.cu"}
    cpp = {"file": "d.cpp", "command": "cl.exe /c d.cpp"}
    assert msvc.zc_preprocessor_problems([once, cpp]) == []
    bad = msvc.zc_preprocessor_problems([once, twice, none, cpp])
    assert bad == [
        "b.cu: /Zc:preprocessor appears 2 times in its nvcc command",
        "c.cu: /Zc:preprocessor appears 0 times in its nvcc command",
    ]


def test_parse_set_output():
    env = msvc.parse_set_output("PATH=C:\\a;C:\\b\nVCToolsVersion=14.44.35207\nnoise line\n")
    assert env == {"PATH": "C:\\a;C:\\b", "VCToolsVersion": "14.44.35207"}


def test_linux_required_files_and_pins(tmp_path):
    cuda = CudaToolkit(tmp_path, "13.5", "linux-x86_64", "linux-sbsa")
    libs = cuda.libraries()
    assert libs["CUDA_cuda_driver_LIBRARY"] == "targets/sbsa-linux/lib/stubs/libcuda.so"
    assert "targets/sbsa-linux/lib/libcudadevrt.a" in cuda.missing()
    assert "targets/sbsa-linux/lib/libcublas.so" in cuda.missing()
    no_blas = CudaToolkit(tmp_path, "13.5", "linux-x86_64", "linux-sbsa", with_cublas=False)
    assert "targets/sbsa-linux/lib/libcublas.so" not in no_blas.missing()


def test_jobs(monkeypatch):
    assert jobs.decide(2, False, {"BUNDLEGRAPH_JOBS": "3"}).n == 3
    with pytest.raises(BundleGraphError, match="BUNDLEGRAPH_JOBS='x'"):
        jobs.decide(2, False, {"BUNDLEGRAPH_JOBS": "x"})
    monkeypatch.setattr(jobs, "available_memory_mb", lambda: 2000)
    monkeypatch.setattr(jobs, "cores", lambda: 16)
    j = jobs.decide(2, False, {})
    assert j.n == 1 and "904 MiB per job" in j.why  # 2000 * 0.9 // 904 = 1
    assert jobs.per_job_mb(3, False) == 1104 and jobs.per_job_mb(0, False) == 512


def test_pinned_tools_are_the_wheels(workdir):
    t = build_tools()
    assert t.cmake.version == PINS["cmake"] and t.ninja.version == PINS["ninja"]
    assert t.key() == {
        "cmake": {"version": "4.4.5", "origin": "wheel"},
        "ninja": {"version": "1.13.2", "origin": "wheel"},
    }
