"""Cross-field truth at load (issue 17, specs): each bad spec is refused with ``<file>: <key>:
message`` before any task, matrix or plan."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from bundlegraph.core.errors import SpecError
from bundlegraph.specs.loader import load_matrix

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def bundles(tmp_path) -> Path:
    d = tmp_path / "bundles"
    shutil.copytree(ROOT / "bundles", d)
    return d


def _problems(d: Path) -> str:
    with pytest.raises(SpecError) as e:
        load_matrix(d)
    return str(e.value)


def _edit(f: Path, old: str, new: str) -> None:
    text = f.read_text()
    assert old in text, (f, old)
    f.write_text(text.replace(old, new, 1))


def test_two_legs_that_write_one_bundle_are_refused(bundles):
    text = (bundles / "linux-x64-cpu.toml").read_text()
    (bundles / "linux-x64-cpu-copy.toml").write_text(text.replace('id = "linux-x64-cpu"', 'id = "linux-x64-cpu-copy"'))
    msg = _problems(bundles)
    assert (
        "linux-x64-cpu.toml: produces the bundle app-" in msg or "linux-x64-cpu-copy.toml: produces the bundle" in msg
    )
    assert "-linux-x64-cpu.tar.gz, as " in msg and "two legs would write one file" in msg


def test_a_cuda_version_of_another_line_or_manifest_is_refused(bundles):
    f = bundles / "windows-arm64-cuda13-portable.toml"
    _edit(f, 'version = "13.4"', 'version = "13.9"')
    msg = _problems(bundles)
    assert f"{f}: cuda.version: '13.9', but cuda.toolkit.manifest '13.4.2' is CUDA 13.4" in msg
    _edit(f, 'version = "13.9"', 'version = "12.9"')
    _edit(f, 'manifest = "13.4.2"', 'manifest = "12.9.1"')
    msg = _problems(bundles)
    assert f"{f}: profile.line: 'cuda13', but cuda.version 12.9 is CUDA 12" in msg


def test_ggml_cpu_on_the_msvc_arm64_cuda_leg_is_refused(bundles):
    f = bundles / "windows-arm64-cuda13-portable.toml"
    _edit(f, "GGML_CPU = false", "GGML_CPU = true")
    assert f"{f}: cmake.GGML_CPU: must be OFF for toolchain msvc-amd64_arm64-cuda" in _problems(bundles)


def test_a_merge_base_typo_gets_a_did_you_mean(bundles):
    f = bundles / "windows-arm64-cuda13-portable.toml"
    _edit(f, 'base = "windows-arm64-cpu"', 'base = "windows-arm64-cpux"')
    assert (
        "merge.base: no leg 'windows-arm64-cpux' in the bundles directory (did you mean 'windows-arm64-cpu'?)"
        in _problems(bundles)
    )


def test_a_duplicate_install_kind_and_profile_names_both_files(bundles):
    f = bundles / "linux-x64-cuda13-portable.toml"
    text = f.read_text().replace('id = "linux-x64-cuda13-portable"', 'id = "linux-x64-cuda13-portable2"')
    (bundles / "linux-x64-cuda13-portable2.toml").write_text(
        text.replace('name = "cuda13-portable"', 'name = "cuda13-portable"')
    )
    msg = _problems(bundles)
    assert "install_kind: ('linux-cuda', profile 'cuda13-portable') is also used by " in msg
    assert str(bundles / "linux-x64-cuda13-portable.toml") in msg and "linux-x64-cuda13-portable2.toml" in msg


def test_a_rank_written_as_text_is_refused(bundles):
    f = bundles / "linux-x64-cpu.toml"
    _edit(f, "rank = ", "rank = '")
    text = f.read_text()
    line = next(l for l in text.splitlines() if l.startswith("rank = '"))
    f.write_text(text.replace(line, line + "'"))
    assert f"{f}: profile.rank:" in _problems(bundles)


@pytest.mark.parametrize("bad", ['"3"', "3.0"])
def test_shards_written_as_text_or_a_float_are_refused(bundles, bad):
    # issue 39: [build] shards is an integer, like rank; "3" and 3.0 loaded before
    f = bundles / "linux-arm64-cuda13-blackwell.toml"
    _edit(f, "shards = 3", f"shards = {bad}")
    msg = _problems(bundles)
    assert f"{f}: build.shards: Input should be a valid integer" in msg, msg


def test_a_cuda_version_other_than_the_wheels_locks_is_refused(bundles):
    f = bundles / "linux-arm64-cuda13-blackwell.toml"
    text = f.read_text()
    assert 'version = "13.5"' in text and "lock = " in text
    f.write_text(text.replace('version = "13.5"', 'version = "13.4"'))
    assert f"{f}: cuda.version: '13.4', but the wheels lock cuda-13.5-wheels.toml is CUDA 13.5" in _problems(bundles)
