"""The Vulkan SDK task of the debs source, for real: the pinned Debian packages
(``bundles/locks/vulkan-1.4.309-debs.toml``) fetched with ``apt-get download`` into the blob
cache (about 4 MB on a cold cache; seconds once cached), unpacked into the toolkit cache, and its
receipt: the header version from ``vulkan_core.h``, glslc's version, the packages. The glslc
wrapper (glslc 2026.4 run by its own Debian 13 C library's loader) compiles a compute shader and
passes all 7 of ggml's shader feature tests with the arguments of ggml-vulkan's CMake, for the x64
and the arm64 cross leg alike; the cross leg's loader is an AArch64 ELF; a lock row whose sha256
is not the package's fails closed, naming the lock file and the package."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import require_tools
from realinputs import sdist

from bundlegraph.backends.vulkan import sdk as vk
from bundlegraph.core import proc
from bundlegraph.core.errors import HashMismatch
from bundlegraph.pipeline.base import Context, Filters
from bundlegraph.pipeline.toolkit import plans
from bundlegraph.specs.loader import load_matrix
from bundlegraph.toolkit import debs

ROOT = Path(__file__).resolve().parents[2]


def install_vulkan_sdk(leg: str) -> tuple[vk.VulkanSdkPlan, list]:
    """The SDK task of ``leg`` in the real bundles directory, run (fetching on a cold cache)."""
    require_tools("apt-get", "dpkg-deb")
    m = load_matrix(ROOT / "bundles")
    ctx = Context(m, [leg], Filters())
    (task,) = [p for p in plans(ctx) if p.name.startswith("vulkan-")]
    plan = task.preview()
    return plan, vk.run(plan)


def test_the_debs_sdk_installs_and_its_receipt_says_what_it_holds(tmp_path):
    plan, outputs = install_vulkan_sdk("linux-x64-vulkan")
    ref = plan.ref
    assert outputs[0] == ref.receipt and all(Path(getattr(o, "path", o)).exists() for o in outputs)
    r = json.loads(ref.receipt.read_text(encoding="utf-8"))
    assert r["vulkan_header_version"] == "1.4.309"
    assert r["glslc_version"] == "shaderc 2026.4-1"
    assert [(p["name"], p["architecture"]) for p in r["packages"]] == [
        ("libvulkan-dev", "amd64"),
        ("libvulkan1", "amd64"),
        ("spirv-headers", "all"),
        ("glslc", "amd64"),
        ("libshaderc1", "amd64"),
        ("libc6", "amd64"),
        ("libstdc++6", "amd64"),
        ("libgcc-s1", "amd64"),
    ]
    # the build machine's C library stays out of the directory whose loader a leg links
    assert not (ref.path(ref.library).parent / "libc.so.6").exists()
    assert r["cmake"] == ref.cmake_cache() and not ref.missing()
    # the wrapper runs Debian's glslc with the prefix's libshaderc: a compute shader compiles
    shader = tmp_path / "t.comp"
    shader.write_text("#version 450\nlayout(local_size_x = 1) in;\nvoid main() {}\n", encoding="utf-8")
    out = tmp_path / "t.spv"
    proc.run([ref.prefix / "bin" / "glslc", "--target-env=vulkan1.3", "-o", out, shader], echo=False)
    assert out.read_bytes()[:4] == b"\x03\x02\x23\x07"  # SPIR-V magic, little-endian
    # glslc loads nothing of the host's: once the prefix's loader runs, every object it maps is the
    # prefix's (the lines before are /bin/sh's own, the wrapper's shell); LD_LIBRARY_PATH is ignored
    import os

    env = {**os.environ, "LD_DEBUG": "libs", "LD_LIBRARY_PATH": "/usr/lib/x86_64-linux-gnu"}
    trace = proc.run([ref.prefix / "bin" / "glslc", "--version"], env=env, capture=True, echo=False).output
    inits = [line.split("calling init: ", 1)[1].strip() for line in trace.splitlines() if "calling init: " in line]
    own = [i for i, f in enumerate(inits) if f.startswith(str(ref.prefix))]
    assert own and all(f.startswith(str(ref.prefix)) for f in inits[own[0] :]), inits
    assert any(f.endswith("/glslc/usr/lib/x86_64-linux-gnu/libc.so.6") for f in inits[own[0] :]), inits
    # run again: the prefix is kept (its receipt names the lock's packages), nothing is fetched
    again = vk.run(plan)
    assert again == outputs


def test_the_cross_sdk_holds_an_arm64_loader_and_the_build_machines_glslc():
    plan, _ = install_vulkan_sdk("linux-arm64-vulkan")
    lib = plan.ref.path(plan.ref.library).resolve()
    head = lib.read_bytes()[:20]
    assert head[:4] == b"\x7fELF" and int.from_bytes(head[18:20], "little") == 183  # EM_AARCH64
    r = json.loads(plan.ref.receipt.read_text(encoding="utf-8"))
    assert {(p["name"], p["architecture"]) for p in r["packages"]} >= {
        ("libvulkan1", "arm64"),
        ("glslc", "amd64"),
        ("libc6", "amd64"),
    }


FEATURE_TESTS = {
    "coopmat.comp": "GL_KHR_cooperative_matrix",
    "coopmat2.comp": "GL_NV_cooperative_matrix2",
    "coopmat2_decode_vector.comp": "GL_NV_cooperative_matrix_decode_vector",
    "integer_dot.comp": "GL_EXT_integer_dot_product",
    "bfloat16.comp": "GL_EXT_bfloat16",
    "float_e2m1.comp": "GL_EXT_float_e2m1",
    "float_e4m3.comp": "GL_EXT_float_e4m3",
}
"""ggml's shader feature tests (``ggml/src/ggml-vulkan/vulkan-shaders/feature-tests/``) -> the
extension ``test_shader_extension_support`` in ggml-vulkan's ``CMakeLists.txt`` looks for."""


def feature_tests(dest: Path) -> Path:
    """The feature tests of the release's pinned llama.cpp source (its sdist), unpacked into ``dest``."""
    import tarfile

    with tarfile.open(sdist()) as tar:
        for m in tar.getmembers():
            if m.isfile() and "/ggml-vulkan/vulkan-shaders/feature-tests/" in m.name and m.name.endswith(".comp"):
                data = tar.extractfile(m)
                assert data is not None
                (dest / m.name.rsplit("/", 1)[-1]).write_bytes(data.read())
    return dest


@pytest.mark.parametrize("leg", ["linux-x64-vulkan", "linux-arm64-vulkan"])
def test_the_pinned_glslc_passes_all_seven_of_ggmls_feature_tests(leg, tmp_path):
    plan, _ = install_vulkan_sdk(leg)
    tests = feature_tests(tmp_path)
    assert sorted(p.name for p in tests.glob("*.comp")) == sorted(FEATURE_TESTS)
    glslc = plan.ref.prefix / "bin" / "glslc"
    for name, ext in FEATURE_TESTS.items():
        # exactly CMake's arguments (test_shader_extension_support's execute_process)
        argv = [glslc, "-o", "-", "-fshader-stage=compute", "--target-env=vulkan1.3", tests / name]
        r = proc.run(argv, capture=True, echo=False, check=False, what=f"glslc {name}")
        assert r.returncode == 0 and f"extension not supported: {ext}" not in r.output, (name, r.output)


def test_a_lock_row_with_another_sha256_fails_closed_naming_the_lock_and_package(tmp_path):
    require_tools("apt-get", "dpkg-deb")
    real = debs.load_lock(ROOT / "bundles" / "locks" / "vulkan-1.4.309-debs.toml")
    row = next(p for p in real.packages if p.name == "libvulkan1" and p.architecture == "amd64")
    wrong = "0" * 63 + "1"
    lock_file = tmp_path / "bad-debs.toml"
    lock_file.write_text(debs.dump_lock([row.__class__(**{**row.__dict__, "sha256": wrong})]), encoding="utf-8")
    bad = debs.load_lock(lock_file)
    with pytest.raises(HashMismatch) as e:
        debs.fetch(bad)
    msg = str(e.value)
    assert msg.startswith(f"{lock_file}: package libvulkan1 1.4.309.0-1") and wrong in msg and row.sha256 in msg
    assert not debs.paths.blob_path(wrong).exists()  # nothing unverified entered the cache
