"""A spec states each choice once (issue 53 item 3): what follows from ``backend``, ``os`` and
``arch`` is derived when the file leaves it out (:mod:`bundlegraph.specs.derive`), and the real
release's spec files leave it out."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from bundlegraph.core.errors import SpecError
from bundlegraph.specs.derive import fill
from bundlegraph.specs.loader import load_matrix

BUNDLES = Path(__file__).resolve().parents[2] / "bundles"
OPTIONS = {"cuda": "GGML_CUDA", "vulkan": "GGML_VULKAN", "hip": "GGML_HIP", "metal": "GGML_METAL"}


def _spec_files() -> list[Path]:
    return sorted(p for p in BUNDLES.glob("*.toml") if p.name != "release.toml")


@pytest.mark.parametrize("f", _spec_files(), ids=lambda p: p.stem)
def test_a_real_spec_writes_nothing_that_follows_from_its_backend_os_and_arch(f):
    d = tomllib.loads(f.read_text(encoding="utf-8"))
    written = [k for k in ("install_kind", "required") if k in d]
    if "merge" in d:
        written += ["build.targets"] if "targets" in d.get("build", {}) else []
    written += ["hip.mapped_targets"] if "mapped_targets" in d.get("hip", {}) else []
    opt = OPTIONS.get(d["backend"])
    written += [f"cmake.{opt}"] if d.get("cmake", {}).get(opt) is True else []
    written += ["cmake.GPU_TARGETS"] if "GPU_TARGETS" in d.get("cmake", {}) and "hip" in d else []
    assert not written, f"{f.name} writes what bundlegraph/specs/derive.py derives: {written}"


def test_a_backend_only_cuda_leg_gets_its_kind_option_target_and_files():
    got = fill({"os": "windows", "arch": "x64", "backend": "cuda", "merge": {"base": "windows-x64-cpu"}})
    assert got["install_kind"] == "windows-cuda"
    assert got["cmake"] == {"GGML_CUDA": True}
    assert got["build"] == {"targets": ["ggml-cuda"]}
    assert got["required"] == ["ggml-cuda.dll", "cudart64_*.dll", "cublas64_*.dll", "cublasLt64_*.dll"]
    linux = fill({"os": "linux", "arch": "arm64", "backend": "cuda", "merge": {"base": "linux-arm64-cpu"}})
    assert (linux["install_kind"], linux["required"]) == ("linux-arm64-cuda", ["libggml-cuda.so*"])


def test_a_hip_leg_states_its_gfx_family_once():
    got = fill(
        {
            "os": "linux",
            "arch": "x64",
            "backend": "hip",
            "merge": {"base": "linux-x64-cpu"},
            "hip": {"gfx_target": "gfx103X"},
            "cmake": {"GGML_CPU": False},
        }
    )
    family = ["gfx1030", "gfx1031", "gfx1032", "gfx1034"]
    assert got["hip"]["mapped_targets"] == family
    assert got["cmake"] == {"GGML_CPU": False, "GGML_HIP": True, "GPU_TARGETS": family}
    assert got["required"][:2] == ["libggml-hip.so*", "libamdhip64.so*"]
    assert got["required"][-4:] == [f"rocblas/library/*{t}*" for t in family]


def test_a_whole_bundle_requires_the_installers_files_and_the_smokes_programs():
    got = fill({"os": "linux", "arch": "x64", "backend": "cpu"})
    assert got["install_kind"] == "linux-cpu"
    assert got["required"] == [
        "llama-server",
        "llama-quantize",
        "llama-cli",
        "libllama.so*",
        "libllama-common.so*",
        "libggml.so*",
        "libggml-base.so*",
        "libggml-cpu*.so*",
        "libmtmd.so*",
        "libllama-server-impl.so*",
        "libllama-quantize-impl.so*",
    ]
    assert "build" not in got and "cmake" not in got  # a CPU leg builds everything, with no option of its own


def test_what_a_file_says_is_kept_and_still_checked(tmp_path):
    for f in [BUNDLES / "release.toml", *_spec_files()]:
        (tmp_path / f.name).write_bytes(f.read_bytes())
    (tmp_path / "locks").mkdir()
    for f in (BUNDLES / "locks").iterdir():
        (tmp_path / "locks" / f.name).write_bytes(f.read_bytes())
    kept = fill(
        {"os": "linux", "arch": "x64", "backend": "vulkan", "merge": {"base": "x"}, "cmake": {"GGML_VULKAN": False}}
    )
    assert kept["cmake"] == {"GGML_VULKAN": False}
    leg = tmp_path / "linux-x64-vulkan.toml"
    leg.write_text('install_kind = "linux-cuda"\n' + leg.read_text(encoding="utf-8"), encoding="utf-8")
    with pytest.raises(SpecError) as e:
        load_matrix(tmp_path)
    assert any("linux-x64-vulkan.toml: install_kind: 'linux-cuda' serves" in p for p in e.value.problems), (
        e.value.problems
    )
