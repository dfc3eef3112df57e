"""verify's HIP and Mach-O rows wired to the real readers, on real inputs:

- ROCm: ``ggml-hip`` stand-ins compiled here by Debian 12's hipcc for the gfx110X family (the
  offload bundles are real; no GPU is needed to compile), verified with a ROCm leg's promise
  (``gfx_targets`` = the leg's ``mapped_targets``): the right library passes the ``hip-code`` row,
  a library without gfx1103 and one with an unstated gfx1030 fail it with one line each, and a
  runtime library whose offload bundles lack a target is named too;
- macOS: npm's ``@node-llama-cpp/mac-arm64-metal`` and ``mac-x64`` 3.21.1 binaries (pinned in
  ``tests/realinputs.py``) verified with the macOS legs' policy: the fork's floor 13.3 refuses
  npm's minos 14 files one line each, a floor of 14.0 passes, the load-command closure holds, and
  a file whose ``@rpath`` dependency is removed is named.

Only the ``hip-code`` and ``macho*`` rows are judged: the stand-ins import Debian's HIP 5.2 runtime,
which no bundle here ships. About 10 s with a warm cache (four hipcc compiles).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import require_tools

from bundlegraph.core.proc import run
from bundlegraph.specs.loader import load_matrix
from bundlegraph.verification.policy import VerifyPolicy, policy_from_spec
from bundlegraph.verification.run import verify_path

ROOT = Path(__file__).resolve().parents[2]
KERNEL = """#include <hip/hip_runtime.h>
__global__ void scale(float *x, float a) {
  x[__builtin_amdgcn_workgroup_id_x() * 256 + __builtin_amdgcn_workitem_id_x()] *= a;
}
extern "C" int run_scale(float *x, int n) {
  hipLaunchKernelGGL(scale, dim3((n + 255) / 256), dim3(256), 0, 0, x, 2.0f);
  return 0;
}
"""
"""Builtins only, so no ROCm device library is needed (Debian 12's has none for gfx11)."""


def _hipcc(d: Path, name: str, archs: tuple[str, ...]) -> Path:
    src = d / "k.hip"
    src.write_text(KERNEL)
    out = d / name
    argv = ["hipcc", *[f"--offload-arch={a}" for a in archs], "-nogpulib", "-fPIC", "-shared", "-o", str(out), str(src)]
    run(argv, cwd=d, capture=True, echo=False, what="hipcc")
    return out


@pytest.fixture(scope="module")
def rocm_leg():
    return load_matrix(ROOT / "bundles").legs["linux-x64-rocm-gfx110x"]


@pytest.fixture(scope="module")
def hip_builds(tmp_path_factory, rocm_leg) -> dict[str, Path]:
    """``good``: libggml-hip.so for exactly the leg's targets; ``short``: without gfx1103;
    ``extra``: with gfx1030 besides; ``runtime``: a librocblas.so stand-in without gfx1102."""
    require_tools("hipcc", "clang")
    d = tmp_path_factory.mktemp("hip")
    want = tuple(rocm_leg.hip.mapped_targets)
    out = {}
    for name, archs, lib in (
        ("good", want, "libggml-hip.so"),
        ("short", want[:-1], "libggml-hip.so"),
        ("extra", (*want, "gfx1030"), "libggml-hip.so"),
        ("runtime", tuple(t for t in want if t != "gfx1102"), "librocblas.so.4"),
    ):
        (d / name).mkdir()
        out[name] = _hipcc(d / name, lib, archs)
    return out


def _hip_lines(tree: Path, policy: VerifyPolicy) -> list[str]:
    rep = verify_path(tree, policy)
    return [f.line() for f in rep.failures if f.check == "hip-code"]


def test_the_rocm_legs_policy_reads_every_offload_bundle(rocm_leg, hip_builds, tmp_path):
    policy = policy_from_spec(rocm_leg)
    assert policy.gfx_targets == ("gfx1100", "gfx1101", "gfx1102", "gfx1103")
    p = VerifyPolicy(os="linux", arch="x64", backend="hip", gfx_targets=policy.gfx_targets)
    good = tmp_path / "good"
    good.mkdir()
    shutil.copy(hip_builds["good"], good)
    rep = verify_path(good, p)
    assert [f for f in rep.failures if f.check == "hip-code"] == []
    assert rep.files["libggml-hip.so"]["offload"]["targets"] == dict.fromkeys(policy.gfx_targets, 1)
    assert rep.bundle["offload"] == {"libggml-hip.so": "gfx1100,gfx1101,gfx1102,gfx1103 in 1 bundles"}

    short = tmp_path / "short"
    short.mkdir()
    shutil.copy(hip_builds["short"], short)
    assert _hip_lines(short, p) == [
        "libggml-hip.so: hip-code: missing gfx1103 (promised gfx1100,gfx1101,gfx1102,gfx1103; "
        "found gfx1100,gfx1101,gfx1102 in 1 bundles)"
    ]
    extra = tmp_path / "extra"
    extra.mkdir()
    shutil.copy(hip_builds["extra"], extra)
    assert _hip_lines(extra, p) == [
        "libggml-hip.so: hip-code: unexpected gfx1030 (promised gfx1100,gfx1101,gfx1102,gfx1103; "
        "found gfx1030,gfx1100,gfx1101,gfx1102,gfx1103 in 1 bundles)"
    ]
    # the shipped runtime must hold every promised target (it may hold more)
    shutil.copy(hip_builds["runtime"], good)
    assert _hip_lines(good, p) == [
        "librocblas.so.4: hip-code: its offload bundles lack gfx1102 (promised gfx1100,gfx1101,gfx1102,gfx1103; "
        "found gfx1100,gfx1101,gfx1103 in 1 bundles): the shipped runtime fails at its first kernel on that GPU"
    ]
    # no ggml-hip at all
    (good / "libggml-hip.so").unlink()
    assert _hip_lines(good, p)[0] == (
        "libggml-hip.so: hip-code: the leg promises gfx targets gfx1100,gfx1101,gfx1102,gfx1103 but the bundle "
        "has no libggml-hip.so"
    )
    # a CPU leg's policy reads no offload bundle (its verify key and report keep their form)
    cpu = verify_path(tmp_path / "extra", VerifyPolicy(os="linux", arch="x64"))
    assert "offload" not in cpu.files["libggml-hip.so"] and "offload" not in cpu.bundle


def _bins(name: str, sub: str) -> Path:
    from conftest import require_input

    return require_input(name, unpack=True) / "package" / "bins" / sub


def _macho_lines(tree: Path, policy: VerifyPolicy) -> list[str]:
    rep = verify_path(tree, policy)
    return [f.line() for f in rep.failures if f.check in ("minos", "signature", "imports", "host-path", "macho")]


def test_the_macos_legs_policy_reads_every_mach_o_file(tmp_path):
    legs = load_matrix(ROOT / "bundles").legs
    arm = policy_from_spec(legs["macos-arm64"])
    assert (arm.os, arm.arch, arm.macos_floor, arm.backend) == ("macos", "arm64", "13.3", "metal")
    arm64 = _bins("npm-mac-arm64-metal", "mac-arm64-metal")
    p = VerifyPolicy(os="macos", arch="arm64", backend="metal", macos_floor=arm.macos_floor)
    lines = _macho_lines(arm64, p)
    # npm's binaries are built for macOS 14: the fork's floor refuses each, one line per file
    assert len(lines) == 10 and all(": minos: minimum macOS 14.0 " in line for line in lines)
    assert (
        "libggml-metal.so: minos: minimum macOS 14.0 (LC_BUILD_VERSION) is above the floor 13.3: it does not "
        "load on macOS 13.3" in lines
    )
    rep = verify_path(arm64, VerifyPolicy(os="macos", arch="arm64", backend="metal", macos_floor="14.0"))
    assert _macho_lines(arm64, VerifyPolicy(os="macos", arch="arm64", macos_floor="14.0")) == []
    assert rep.bundle["minos"] == "14.0" and rep.files["libggml-metal.so"]["macho"]["signature"] == ["linker-signed"]
    # a Mach-O file in another OS's bundle, and an x64 bundle for an arm64 leg
    linux = [f.line() for f in verify_path(arm64, VerifyPolicy(os="linux", arch="x64")).failures]
    assert "libggml-metal.so: machine: a Mach-O file in a Linux bundle" in linux
    x64 = _bins("npm-mac-x64", "mac-x64")
    wrong = [f.line() for f in verify_path(x64, p).failures if f.check == "machine"]
    assert "libggml-base.dylib: machine: Mach-O holds x64, the leg needs arm64" in wrong
    assert _macho_lines(x64, VerifyPolicy(os="macos", arch="x64", macos_floor="14.0")) == []
    # a library the others load through @rpath, removed
    cut = shutil.copytree(arm64, tmp_path / "cut")
    (cut / "libggml-base.dylib").unlink()
    missing = list(_macho_lines(cut, VerifyPolicy(os="macos", arch="arm64", macos_floor="14.0")))
    assert missing and all(": imports: loads @rpath/libggml-base" in line for line in missing)
