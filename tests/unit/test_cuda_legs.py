"""The fork's x64 CUDA matrix as our specs (issue 43): every leg's line, class, rank, archs,
toolkit and runner; the legacy leg's stated SMs and their refusals; the cuda12 legs' toolkit
components against a real CUDA 12 redist manifest; their cost records marked as derived."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from bundlegraph.backends.cuda.toolkit_set import component_set
from bundlegraph.core.errors import SpecError
from bundlegraph.specs.loader import load_matrix
from bundlegraph.toolkit.components import required_files
from bundlegraph.toolkit.redist import resolve

ROOT = Path(__file__).resolve().parents[2]
REDIST = ROOT / "tests" / "data" / "redist"

# The fork's resolve matrix (unslothai/llama.cpp d32676d7, .github/workflows/unsloth-prebuilt.yml,
# restated in issue 43): profile -> (line, class, rank, archs, toolkit major.minor)
FORK = {
    "cuda12-legacy": ("cuda12", "legacy", 5, ["50-virtual", "61-virtual"], "12.8"),
    "cuda12-older": ("cuda12", "older", 10, ["70", "75", "80", "86", "89"], "12.8"),
    "cuda12-newer": ("cuda12", "newer", 20, ["86", "89", "90", "100", "120"], "12.8"),
    "cuda12-portable": ("cuda12", "portable", 30, ["70", "75", "80", "86", "89", "90", "100", "120"], "12.8"),
    "cuda13-older": ("cuda13", "older", 40, ["75", "80", "86", "89"], "13"),
    "cuda13-newer": ("cuda13", "newer", 50, ["86", "89", "90", "100", "120"], "13"),
    "cuda13-portable": ("cuda13", "portable", 60, ["75", "80", "86", "89", "90", "100", "120"], "13"),
}
NEW = [f"{os_}-x64-{p}" for os_ in ("linux", "windows") for p in FORK if p != "cuda13-portable"]
OURS = {"cuda12-legacy": "12.4"}
"""Where our toolkit differs from the fork's, on purpose: the legacy leg is PTX-only and served to
drivers from 12.4, which cannot JIT CUDA 12.8's PTX ISA 8.7 (issue 52 item 5, tests/unit/test_ptx_isa.py)."""
REDIST_LABEL = {"windows-x64-cuda12-legacy": "12.4.1"}
"""A cuda12 leg's redist manifest label when not 12.8.0 (the Linux legacy leg takes Debian's 12.4 .debs)."""


@pytest.fixture(scope="module")
def matrix():
    return load_matrix(ROOT / "bundles")


@pytest.mark.parametrize("os_", ["linux", "windows"])
@pytest.mark.parametrize("profile", FORK)
def test_every_x64_class_of_the_fork_is_one_spec(matrix, os_, profile):
    line, klass, rank, archs, toolkit = FORK[profile]
    toolkit = OURS.get(profile, toolkit)
    s = matrix.legs[f"{os_}-x64-{profile}"]
    assert (s.os, s.arch, s.backend, s.install_kind) == (os_, "x64", "cuda", f"{os_}-cuda")
    assert (s.profile.name, s.profile.line, s.profile.klass, s.profile.rank) == (profile, line, klass, rank)
    assert s.cuda.cmake_archs == archs
    assert str(s.cuda.version) == toolkit if toolkit.startswith("12.") else s.cuda.version.major == 13
    assert s.merge.base == f"{os_}-x64-cpu"
    if os_ == "windows":
        assert (s.runner, s.toolchain, s.signing) == ("windows-2022", "msvc-x64-cuda", "required")
        major = line.removeprefix("cuda")
        assert [r.name for r in s.runtime.ships] == [
            f"cudart64_{major}.dll",
            f"cublas64_{major}.dll",
            f"cublasLt64_{major}.dll",
        ]
        # each shipped DLL is a file every validated toolkit of the leg holds (the layout puts a
        # CUDA 12 archive's bin/*.dll under bin/x64/ as CUDA 13's are)
        required = {r.path for r in required_files("windows-x86_64", "windows-x86_64", int(major))}
        assert {r.path for r in s.runtime.ships} <= required, [r.path for r in s.runtime.ships]
    else:
        assert s.runner == ("ubuntu-22.04" if klass == "legacy" else "ubuntu-24.04")
        assert s.linux is None  # the floors are the toolchain's (issue 50)
    if line == "cuda12" and s.id == "linux-x64-cuda12-legacy":  # Debian's CUDA 12.4, pinned .debs
        assert (s.cuda.toolkit.source, s.cuda.toolkit.lock) == ("debs", "locks/cuda-12.4-debs.toml")
    elif line == "cuda12":
        assert (s.cuda.toolkit.source, s.cuda.toolkit.manifest) == ("redist", REDIST_LABEL.get(s.id, "12.8.0"))


def test_legacy_is_ptx_only_and_states_its_sms(matrix):
    for os_ in ("linux", "windows"):
        c = matrix.legs[f"{os_}-x64-cuda12-legacy"].cuda
        assert [(a.sm, a.sass, a.ptx) for a in c.archs] == [(50, False, True), (61, False, True)]
        assert c.supported_sms == [50, 52, 60, 61]
    assert all(
        matrix.legs[leg].cuda.supported_sms is None
        for leg in matrix.legs
        if matrix.legs[leg].cuda and "legacy" not in leg
    )


@pytest.mark.parametrize(
    "leg,old,new,expected",
    [
        (
            "linux-x64-cuda12-older",
            'archs = ["70", "75", "80", "86", "89"]',
            'archs = ["70", "75", "80", "86", "89"]\nsupported_sms = [70]',
            "bundles/linux-x64-cuda12-older.toml: cuda.supported_sms: only a PTX-only leg",
        ),
        (
            "linux-x64-cuda12-legacy",
            "supported_sms = [50, 52, 60, 61]",
            "supported_sms = [37, 50]",
            "cuda.supported_sms",
        ),
        (
            "linux-x64-cuda12-legacy",
            'archs = ["50-virtual", "61-virtual"]',
            'archs = ["52-virtual", "61-virtual"]',
            "cuda.supported_sms: [50] is below every PTX arch (52, 61)",
        ),
        (
            "windows-x64-cuda12-legacy",
            "supported_sms = [50, 52, 60, 61]",
            "supported_sms = [61, 50]",
            "cuda.supported_sms: [61, 50] must be a non-empty ascending list",
        ),
    ],
)
def test_supported_sms_refused_naming_the_key(bundles_copy, leg, old, new, expected):
    p = bundles_copy / f"{leg}.toml"
    text = p.read_text()
    assert old in text
    p.write_text(text.replace(old, new, 1))
    with pytest.raises(SpecError) as ei:
        load_matrix(bundles_copy)
    assert any(expected in line for line in ei.value.problems), ei.value.problems


@pytest.mark.parametrize("leg", [leg for leg in NEW if "cuda12" in leg and leg != "linux-x64-cuda12-legacy"])
def test_cuda12_components_resolve_in_a_real_cuda12_manifest(matrix, leg):
    """Every host and target component of a cuda12 leg has an archive for its platform, with a
    sha256, in NVIDIA's real ``redistrib_12.9.1.json`` (tests/data/redist): 12.8.0's is not
    reachable from here, and 12.x manifests share one component layout (no cuda_crt, no libnvvm:
    those are split out from 13.0 on)."""
    cs = component_set(matrix.legs[leg], ROOT / "bundles")
    assert cs.pins["manifest"] == REDIST_LABEL.get(leg, "12.8.0")
    local = dataclasses.replace(cs, pins={**cs.pins, "manifest": str(REDIST / "redistrib_12.9.1.json")})
    _origin, _path, arts = resolve(local, ROOT / "bundles")
    assert sorted((a.role, a.component) for a in arts) == [
        ("host", "cuda_cccl"),
        ("host", "cuda_nvcc"),
        ("target", "cuda_cudart"),
        ("target", "libcublas"),
    ]
    plat = f"{matrix.legs[leg].os}-x86_64"
    assert all(a.platform == plat and len(a.sha256) == 64 for a in arts), arts


@pytest.mark.parametrize("leg", NEW)
def test_new_legs_have_a_cost_record_marked_derived(matrix, leg):
    rec = json.loads((ROOT / "bundles" / "costs" / f"{leg}.json").read_text())
    assert rec["leg"] == leg and len(rec["objects"]) == 153
    assert rec["note"].startswith("derived from linux-arm64-cuda13-blackwell's record"), rec["note"]
    assert "a stated estimate until a build of this leg measures it" in rec["note"]
    n = len(matrix.legs[leg].cuda.archs)
    assert f"x{n / 2:g} ({n} archs / 2)" in rec["note"]
