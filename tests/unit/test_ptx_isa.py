"""Every bundle loads its kernels on the oldest driver it is selected for (issue 52 item 5): the PTX
ISA table, the fatbin's PTX ISA per SM, verify's ``ptx-isa`` row on real fatbins of three compilers
(``tests/data/ptx/README.md``), the driver floor derived from selection, and the spec rule at load."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from bundlegraph.backends.cuda import oldest_driver
from bundlegraph.checks.bundle import mapped
from bundlegraph.checks.inspect import inspect_file
from bundlegraph.checks.ptxisa import emitted_isa, first_driver, max_isa
from bundlegraph.core.errors import SpecError
from bundlegraph.installer.planned import planned_manifest
from bundlegraph.installer.selection import DRIVERS, Host, select
from bundlegraph.specs.loader import load_matrix
from bundlegraph.verification import verify_path
from bundlegraph.verification.policy import policy_from_spec

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "ptx"
LEGACY = ("linux-x64-cuda12-legacy", "windows-x64-cuda12-legacy")


@pytest.fixture(scope="module")
def matrix():
    return load_matrix(ROOT / "bundles")


def test_the_table_gives_the_isa_each_driver_reads_and_each_toolkit_writes():
    assert max_isa((12, 4)) == (8, 4)
    assert max_isa((12, 6)) == (8, 5)  # 12.6 still writes 8.5
    assert max_isa((12, 7)) == (8, 6)  # the R565 drivers
    assert max_isa((12, 8)) == (8, 7)
    assert max_isa((13, 0)) == (9, 0)
    assert max_isa((11, 8)) is None
    assert emitted_isa((12, 4)) == (8, 4) and emitted_isa((12, 8)) == (8, 7) and emitted_isa((13, 5)) == (9, 5)
    assert first_driver((8, 7)) == "CUDA 12.8"
    assert first_driver((9, 3)) == "a driver newer than CUDA 13.1"


@pytest.mark.parametrize(
    ("folder", "want"),
    [
        ("cuda12.4", {50: {(8, 4)}, 61: {(8, 4)}}),
        ("nvrtc12.8", {50: {(8, 7)}, 61: {(8, 7)}}),
        ("cuda13.5", {75: {(9, 5)}}),
    ],
)
def test_the_header_isa_of_each_ptx_entry_is_its_texts_version_line(folder, want):
    with mapped(DATA / folder / "libggml-cuda.so") as data:
        inv = inspect_file("libggml-cuda.so", data).fatbin
    assert inv is not None and inv.ptx_isa == want and inv.ptx_only() == sorted(want)
    for sm, isas in want.items():  # the text that went into the fatbin says the same
        text = (DATA / folder / f"compute_{sm}.ptx").read_text()
        m = re.search(r"^\.version (\d+)\.(\d+)$", text, re.M)
        assert m and {(int(m[1]), int(m[2]))} == isas
    assert inv.to_json()["ptx_isa"] == {str(sm): [f"{a}.{b}" for a, b in v] for sm, v in want.items()}


def test_the_legacy_legs_driver_floor_is_the_oldest_driver_selection_sends_them(matrix):
    manifest = planned_manifest(matrix)
    for leg in LEGACY:
        spec = matrix.legs[leg]
        floor = oldest_driver(spec.profile.line, spec.cuda.version.major)
        assert policy_from_spec(spec).driver_floor == f"{floor[0]}.{floor[1]}" == "12.4"
        asset = next(
            a.asset_name
            for a in manifest.artifacts
            if a.bundle_profile == spec.profile.name and a.install_kind == spec.install_kind
        )
        below = max(d for d in DRIVERS if d < floor)
        for sm in spec.cuda.supported_sms:
            assert asset in select(Host(spec.os, spec.arch, (sm,), floor), manifest).attempts
            assert asset not in select(Host(spec.os, spec.arch, (sm,), below), manifest).attempts
    # legs with SASS for every PTX arch have no PTX-only code: no floor, so their verify keys keep their form
    assert all(policy_from_spec(s).driver_floor is None for s in matrix.legs.values() if s.cuda and s.id not in LEGACY)


def test_verify_passes_cuda_12_4s_ptx_and_refuses_12_8s_and_13_5s_for_the_legacy_leg(matrix):
    policy = policy_from_spec(matrix.legs["linux-x64-cuda12-legacy"], built_tree=True)
    ok = verify_path(str(DATA / "cuda12.4"), policy)
    assert ok.ok, ok.lines()
    assert ok.bundle["ptx_isa"] == {
        "driver_floor": "12.4",
        "files": {"libggml-cuda.so": {"50": ["8.4"], "61": ["8.4"]}},
    }
    bad = verify_path(str(DATA / "nvrtc12.8"), policy)
    assert [(f.file, f.check, f.reason) for f in bad.failures] == [
        (
            "libggml-cuda.so",
            "ptx-isa",
            f"compute_{sm} PTX is ISA 8.7, which needs CUDA 12.8; the leg is selected for drivers from CUDA 12.4, "
            "which reads PTX ISA up to 8.4: build it with a toolkit of CUDA 12.4 or older, or raise its driver floor",
        )
        for sm in (50, 61)
    ]
    new = verify_path(str(DATA / "cuda13.5"), policy)
    isa = [f.reason for f in new.failures if f.check == "ptx-isa"]
    assert isa == [
        "compute_75 PTX is ISA 9.5, which needs CUDA 13.5; the leg is selected for drivers from CUDA 12.4, "
        "which reads PTX ISA up to 8.4: build it with a toolkit of CUDA 12.4 or older, or raise its driver floor"
    ]
    assert {f.check for f in new.failures} == {"gpu-code", "ptx-isa"}  # and it lacks compute_50/61


def test_a_legacy_leg_built_with_cuda_12_8_is_refused_at_load(tmp_path):
    bundles = tmp_path / "bundles"
    shutil.copytree(ROOT / "bundles", bundles)
    spec = bundles / "windows-x64-cuda12-legacy.toml"
    text = (
        spec.read_text()
        .replace('version = "12.4"', 'version = "12.8"')
        .replace('manifest = "12.4.1"', 'manifest = "12.8.0"')
    )
    spec.write_text(text)
    with pytest.raises(SpecError) as e:
        load_matrix(bundles)
    assert str(e.value).splitlines() == [
        f"{spec}: cuda.version: CUDA 12.8 writes PTX ISA 8.7 (which needs CUDA 12.8), but the PTX-only archs "
        "50-virtual, 61-virtual are JIT-compiled by drivers from CUDA 12.4, the oldest selection sends this leg "
        "to, which read PTX ISA up to 8.4: build with CUDA 12.4 or raise the leg's driver floor"
    ]
