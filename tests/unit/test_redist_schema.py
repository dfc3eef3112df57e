"""NVIDIA's redist manifest: the three real manifests parse; variant-nested entries; unknown
keys kept; cuda_cccl vs cccl; what we cannot use is refused naming the key."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bundlegraph.core.errors import ToolkitError
from bundlegraph.schemas.redist import load_manifest, parse_manifest

DATA = Path(__file__).resolve().parents[1] / "data" / "redist"


@pytest.mark.parametrize(
    "label,n,cccl_key,cccl_version",
    [
        ("12.9.1", 49, "cuda_cccl", "12.9.27"),
        ("13.0.2", 49, "cuda_cccl", "13.0.85"),
        ("13.4.2", 40, "cccl", "13.3.4.3.1"),
    ],
)
def test_real_manifests_parse(label, n, cccl_key, cccl_version):
    m = load_manifest(DATA / f"redistrib_{label}.json")
    raw = json.loads((DATA / f"redistrib_{label}.json").read_text())
    assert m.release_label == label and m.release_product == "cuda" and m.release_date == raw["release_date"]
    assert len(m.components) == n
    for alias in ("cuda_cccl", "cccl"):
        c = m.component(alias)
        assert c is not None and c.key == cccl_key and c.version == cccl_version
    cub = m.component("libcublas")
    art = cub.artifact("linux-sbsa")
    assert art.size == int(raw["libcublas"]["linux-sbsa"]["size"]) and isinstance(art.size, int)
    assert art.sha256 == raw["libcublas"]["linux-sbsa"]["sha256"]
    assert art.relative_path.startswith("libcublas/linux-sbsa/libcublas-linux-sbsa-")


def test_windows_arm64_first_in_13_4():
    assert load_manifest(DATA / "redistrib_13.0.2.json").component("cuda_cudart").artifact("windows-arm64") is None
    m = load_manifest(DATA / "redistrib_13.4.2.json")
    for c in ("cuda_cudart", "libcublas", "cuda_nvcc"):
        a = m.component(c).artifact("windows-arm64")
        assert a is not None and a.relative_path.endswith("-archive.zip")
    assert m.component("cuda_cudart").version == "13.4.92"


def test_variant_nested_and_unknown_keys_kept():
    # the documented shape of e.g. cuda_compat in 13.3.1: "<platform>": {"<variant>": {...}}
    doc = {
        "release_date": "2026-05-01",
        "release_label": "13.3.1",
        "release_product": "cuda",
        "release_notes": "kept",
        "cuda_compat": {
            "name": "CUDA compat L4T",
            "license": "CUDA Toolkit",
            "license_path": "cuda_compat/LICENSE.txt",
            "version": "13.3.40",
            "cuda_variant": ["13.3"],
            "future_field": {"x": 1},
            "linux-x86_64": {
                "cuda13.3": {
                    "relative_path": "cuda_compat/linux-x86_64/cuda_compat-linux-x86_64-13.3.40_cuda13.3-archive.tar.xz",
                    "sha256": "a" * 64,
                    "md5": "b" * 32,
                    "size": "1234",
                    "extra": "kept",
                }
            },
            "linux-sbsa": {"relative_path": "cuda_compat/linux-sbsa/c.tar.xz", "sha256": "c" * 64, "size": "5"},
        },
    }
    m = parse_manifest(doc)
    c = m.component("cuda_compat")
    assert m.model_extra["release_notes"] == "kept"
    assert c.model_extra["cuda_variant"] == ["13.3"]
    assert c.variants["linux-x86_64"]["cuda13.3"].size == 1234
    assert c.artifact("linux-x86_64").sha256 == "a" * 64  # one variant: picked
    assert c.artifact("linux-x86_64", "cuda13.3").model_extra["extra"] == "kept"
    assert c.artifact("linux-x86_64", "cuda12") is None
    assert c.artifact("linux-sbsa").size == 5
    assert c.artifact("windows-arm64") is None


def test_refused_with_component_and_field_named():
    bad = {
        "release_label": "1.0",
        "libfoo": {
            "version": "1",
            "linux-x86_64": {"relative_path": "../../etc/passwd", "sha256": "zz", "size": "12kB"},
        },
    }
    with pytest.raises(ToolkitError) as e:
        parse_manifest(bad, "redistrib_1.0.json")
    msg = str(e.value)
    assert "redistrib_1.0.json: libfoo.linux-x86_64.relative_path" in msg
    assert "redistrib_1.0.json: libfoo.linux-x86_64.sha256" in msg
    assert "redistrib_1.0.json: libfoo.linux-x86_64.size" in msg and "12kB" in msg


def test_html_error_page_is_named(tmp_path):
    f = tmp_path / "redistrib_13.4.2.json"
    f.write_text("<html>503 Service Unavailable</html>")
    with pytest.raises(ToolkitError, match=r"redistrib_13.4.2.json: not valid JSON \(is it an HTML error page\?\)"):
        load_manifest(f)
