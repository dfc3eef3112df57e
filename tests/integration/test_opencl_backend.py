"""The OpenCL backend (issue 53's proof that a backend is one folder), on real parts: its SDK task
fetches the pinned Debian packages (``bundles/locks/opencl-3.0-debs.toml``: the Khronos headers
and the ICD loader, about 60 kB; seconds once cached) and says what it holds; a shared library
built by GCC against that SDK is a real ELF importing ``libOpenCL.so.1``, and the backend's verify
rows pass it, refuse it without embedded kernels and refuse a bundle that ships the loader.

The full leg (``doit package:linux-x64-opencl``: ggml-opencl built from the pinned llama.cpp,
about 2 minutes of compile on two cores) is a background run, not CI; its figures are in the
closing note of issue 53.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import linux_only, require_tools

from bundlegraph.backends.opencl import sdk as ocl
from bundlegraph.backends.opencl.sdk_ref import OpenClSdk
from bundlegraph.backends.opencl.verify import KERNEL_MARK
from bundlegraph.core import proc
from bundlegraph.pipeline.base import Context, Filters
from bundlegraph.pipeline.toolkit import plans
from bundlegraph.specs.loader import load_matrix
from bundlegraph.verification import VerifyPolicy, verify_path

ROOT = Path(__file__).resolve().parents[2]
LEG = "linux-x64-opencl"

pytestmark = linux_only


@pytest.fixture(scope="module")
def sdk_ref() -> OpenClSdk:
    """The OpenCL leg's SDK task, run from the real bundles directory (fetching on a cold cache)."""
    require_tools("apt-get", "dpkg-deb")
    m = load_matrix(ROOT / "bundles")
    (task,) = [p for p in plans(Context(m, [LEG], Filters())) if p.name.startswith("opencl-")]
    plan = task.preview()
    outputs = ocl.run(plan)
    assert outputs[0] == plan.ref.receipt
    return plan.ref


def test_the_sdk_task_unpacks_the_pinned_packages_and_says_what_it_holds(sdk_ref):
    r = json.loads(sdk_ref.receipt.read_text(encoding="utf-8"))
    assert r["sdk"] == "opencl" and r["headers_version"] == "3.0" == sdk_ref.version
    assert sorted(p["name"] for p in r["packages"]) == sorted(ocl.NEEDS)
    assert r["cmake"] == sdk_ref.cmake_cache() and not sdk_ref.missing()
    assert Path(r["cmake"]["OpenCL_LIBRARY"]).resolve().name.startswith("libOpenCL.so.1")


def _library(sdk_ref: OpenClSdk, out: Path, *, kernels: bool) -> Path:
    """A real libggml-opencl.so stand-in, compiled and linked against the SDK: it calls
    clGetPlatformIDs and (``kernels``) holds a kernel's text as ggml embeds them."""
    src = out.parent / "stub.c"
    text = "kernel void kernel_add(global float * a) { }" if kernels else "no kernels here"
    src.write_text(
        "#define CL_TARGET_OPENCL_VERSION 300\n#include <CL/cl.h>\n"
        f'const char * ggml_cl_src = "{text}";\n'
        "int ggml_cl_count(void) { cl_uint n = 0; clGetPlatformIDs(0, 0, &n); return (int)n; }\n",
        encoding="utf-8",
    )
    cache = sdk_ref.cmake_cache()
    lib = Path(cache["OpenCL_LIBRARY"])
    proc.run(
        ["gcc", "-shared", "-fPIC", "-o", out, src, f"-I{cache['OpenCL_INCLUDE_DIR']}", f"-L{lib.parent}", "-lOpenCL"],
        echo=False,
    )
    return out


def _bundle(tmp_path: Path, sdk_ref: OpenClSdk, *, kernels: bool = True, ship_loader: bool = False) -> Path:
    d = tmp_path / ("k" if kernels else "nok") / "bundle"
    d.mkdir(parents=True)
    _library(sdk_ref, d / "libggml-opencl.so", kernels=kernels)
    if ship_loader:
        shutil.copy(Path(sdk_ref.cmake_cache()["OpenCL_LIBRARY"]).resolve(), d / "libOpenCL.so.1")
    return d


def _failures(path: Path) -> list[str]:
    policy = VerifyPolicy(os="linux", arch="x64", backend="opencl", external=("libOpenCL.so.1",))
    return [f.line() for f in verify_path(path, policy).failures]


def test_a_library_built_against_the_sdk_passes_the_opencl_rows(tmp_path, sdk_ref):
    require_tools("gcc")
    d = _bundle(tmp_path, sdk_ref)
    assert KERNEL_MARK in (d / "libggml-opencl.so").read_bytes()
    assert [f for f in _failures(d) if "opencl-" in f] == []


def test_a_library_without_its_kernels_or_a_shipped_loader_is_refused(tmp_path, sdk_ref):
    require_tools("gcc")
    bare = _failures(_bundle(tmp_path, sdk_ref, kernels=False))
    assert [f for f in bare if "opencl-kernels" in f] == [
        "libggml-opencl.so: opencl-kernels: holds no embedded OpenCL kernels (GGML_OPENCL_EMBED_KERNELS off?): "
        "it would read add.cl and the other .cl files from beside itself at run time, and the bundle carries none"
    ]
    shipped = _failures(_bundle(tmp_path / "s", sdk_ref, ship_loader=True))
    assert any(f.startswith("libOpenCL.so.1: opencl-loader: the bundle ships") for f in shipped), shipped
