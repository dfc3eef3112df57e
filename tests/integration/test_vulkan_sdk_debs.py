"""The Vulkan SDK task of the debs source, for real: the pinned Debian packages
(``bundles/locks/vulkan-1.4.309-debs.toml``) fetched with ``apt-get download`` into the blob
cache (about 4 MB on a cold cache; seconds once cached), unpacked into the toolkit cache, and its
receipt: the header version from ``vulkan_core.h``, glslc's version, the packages. The glslc
wrapper compiles a compute shader; the cross leg's loader is an AArch64 ELF; a lock row whose
sha256 is not the package's fails closed, naming the lock file and the package."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import require_tools

from bundlegraph.core import proc
from bundlegraph.core.errors import HashMismatch
from bundlegraph.pipeline.base import Context, Filters
from bundlegraph.pipeline.toolkit import plans
from bundlegraph.schemas.loader import load_matrix
from bundlegraph.toolkit import debs
from bundlegraph.toolkit import vulkan as vk

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
    assert r["glslc_version"].startswith("shaderc ") and "2023.2" in r["glslc_version"]
    assert [(p["name"], p["architecture"]) for p in r["packages"]] == [
        ("libvulkan-dev", "amd64"),
        ("libvulkan1", "amd64"),
        ("spirv-headers", "all"),
        ("glslc", "amd64"),
        ("libshaderc1", "amd64"),
    ]
    assert r["cmake"] == ref.cmake_cache() and not ref.missing()
    # the wrapper runs Debian's glslc with the prefix's libshaderc: a compute shader compiles
    shader = tmp_path / "t.comp"
    shader.write_text("#version 450\nlayout(local_size_x = 1) in;\nvoid main() {}\n", encoding="utf-8")
    out = tmp_path / "t.spv"
    proc.run([ref.prefix / "bin" / "glslc", "--target-env=vulkan1.3", "-o", out, shader], echo=False)
    assert out.read_bytes()[:4] == b"\x03\x02\x23\x07"  # SPIR-V magic, little-endian
    # run again: the prefix is kept (its receipt names the lock's packages), nothing is fetched
    again = vk.run(plan)
    assert again == outputs


def test_the_cross_sdk_holds_an_arm64_loader_and_the_build_machines_glslc():
    plan, _ = install_vulkan_sdk("linux-arm64-vulkan")
    lib = plan.ref.path(plan.ref.library).resolve()
    head = lib.read_bytes()[:20]
    assert head[:4] == b"\x7fELF" and int.from_bytes(head[18:20], "little") == 183  # EM_AARCH64
    r = json.loads(plan.ref.receipt.read_text(encoding="utf-8"))
    assert {(p["name"], p["architecture"]) for p in r["packages"]} >= {("libvulkan1", "arm64"), ("glslc", "amd64")}


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
