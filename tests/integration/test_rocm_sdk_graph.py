"""The Linux ROCm leg's plan and SDK resolution through the real graph (issue 44, item 5).

No TheRock tarball can be fetched on this project's machines, and no ROCm SDK new enough for
ggml-hip (HIP >= 6.1) is packaged for Debian 12 or on PyPI, so nothing of ggml-hip compiles here.
What runs: the real ``bundles/`` with its lock pointed at a stand-in tarball of TheRock's layout
(its file names, a few bytes each; pinned by its own sha256 in a copy of the lock), handed over
through ``BUNDLEGRAPH_THEROCK_DIR`` as a machine that cannot reach AMD's servers would:

- ``bundlegraph plan linux-x64-rocm-gfx110x``: configure waits for ``toolkit:therock-...`` and
  points ``CMAKE_HIP_COMPILER`` and ``CMAKE_PREFIX_PATH`` into its prefix; the Windows leg's
  toolchain file takes C and C++ from TheRock's clang there too;
- ``doit toolkit:therock-...`` adopts the tarball by sha256, extracts it, checks it for the
  family's four targets and writes its receipt; a second run is up to date; the machine file's
  ``[binaries] hip`` then resolves to the prefix's ``lib/llvm/bin/clang++`` (before PATH);
- the same tarball with other bytes (the hash moved) is refused in one line, and so is a tarball
  the lock does not pin (the real lock's Windows rows), before anything is fetched;
- verify on the stand-in: the runtime the merge ships from the installed prefix
  (:func:`bundlegraph.backends.hip.sdk.runtime_files`) beside a ``libggml-hip.so`` Debian 12's hipcc
  compiles here for the family's targets, judged with the leg's own verify policy: its ``required``
  list (runtime and a rocBLAS kernel file per target) and its code objects (the ``hip-code`` row)
  hold; a copy without the rocBLAS kernels of gfx1102 and a ggml-hip without gfx1103 are named.
  The stand-in's runtime files are a few bytes each, so only those two rows are judged.

Time: ~15 s.
"""

from __future__ import annotations

import hashlib
import io
import re
import shutil
import tarfile
from pathlib import Path

import graphrun
from conftest import linux_only, require_tools

from bundlegraph.backends import hip
from bundlegraph.backends.hip.sdk import runtime_files
from bundlegraph.core.proc import run
from bundlegraph.specs.loader import load_matrix
from bundlegraph.verification.policy import policy_from_spec
from bundlegraph.verification.run import verify_path

ROOT = Path(__file__).resolve().parents[2]
NAME = "therock-dist-linux-gfx110X-all-7.14.0.tar.gz"

pytestmark = linux_only


def _tarball(extra: bytes = b"") -> bytes:
    files = ["lib/llvm/bin/clang++", "bin/hipcc"]
    files += [f"lib/{n}" for n in ("libamdhip64.so.7", "libhsa-runtime64.so.1", "libhipblas.so.3", "librocblas.so.5")]
    files += ["lib/libamd_comgr.so.3", "lib/rocm_sysdeps/lib/librocm_sysdeps_numa.so.1"]
    files += [f"lib/rocblas/library/TensileLibrary_lazy_{t}.dat" for t in hip.FAMILIES["gfx110X"]]
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as t:
        for n in files:
            # the compiler answers --version as TheRock's clang does (configure records it)
            data = (b"#!/bin/sh\necho 'AMD clang version 20.0.0'\n" if n.endswith("clang++") else n.encode()) + extra
            info = tarfile.TarInfo(n)
            info.size, info.mode = len(data), 0o755 if n.endswith("clang++") else 0o644
            t.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def test_the_linux_rocm_legs_plan_and_sdk_resolve_through_the_graph(tmp_path, monkeypatch):
    bundles = tmp_path / "bundles"
    shutil.copytree(ROOT / "bundles", bundles)
    blob = _tarball()
    sha = hashlib.sha256(blob).hexdigest()
    lock = bundles / "locks/therock-7.14.0.toml"
    text = re.sub(r'sha256 = "[0-9a-f]{64}"', f'sha256 = "{sha}"', lock.read_text())
    lock.write_text(re.sub(r"size = \d+", f"size = {len(blob)}", text))
    hand = tmp_path / "hand"
    hand.mkdir()
    (hand / NAME).write_bytes(blob)
    work = tmp_path / "work"
    work.mkdir()
    env = {"BUNDLEGRAPH_CACHE": str(tmp_path / "cache"), "BUNDLEGRAPH_THEROCK_DIR": str(hand)}
    task = f"toolkit:therock-7.14.0-linux-gfx110X-all-{sha[:6]}"

    plan = graphrun.cli(["plan", "linux-x64-rocm-gfx110x"], bundles=bundles, workdir=work, **env)
    assert plan.returncode == 0, plan.stderr
    # after its source, its pinned host compiler (issue 50) and its SDK
    assert re.search(
        rf"after: source:linux-x64-rocm-gfx110x, toolkit:gcc-12\.2\.0-linux-x64-[0-9a-f]{{6}}, {task}\n", plan.stdout
    )
    prefix = tmp_path / "cache" / "toolkits" / task.removeprefix("toolkit:")
    # the toolchain file points CMake's HIP language and ggml-hip's find_package at the SDK's prefix
    assert f'set( CMAKE_HIP_COMPILER "{prefix.as_posix()}/lib/llvm/bin/clang++" CACHE FILEPATH "" )' in plan.stdout
    assert f'set( CMAKE_PREFIX_PATH "{prefix.as_posix()}" CACHE PATH "" )' in plan.stdout
    assert "'-DGPU_TARGETS=gfx1100;gfx1101;gfx1102;gfx1103'" in plan.stdout

    # the Windows leg compiles host and device code with TheRock's clang, from the same kind of prefix
    win = graphrun.cli(["plan", "windows-x64-rocm-gfx110x"], bundles=bundles, workdir=work, **env)
    assert win.returncode == 0, win.stderr
    wprefix = (tmp_path / "cache" / "toolkits" / "therock-7.14.0-windows-gfx110X-all-unpinned").as_posix()
    assert f'set( CMAKE_CXX_COMPILER  "{wprefix}/lib/llvm/bin/clang++.exe" CACHE FILEPATH "" )' in win.stdout

    r = graphrun.doit([task], bundles=bundles, workdir=work, **env)
    assert r.returncode == 0, r.stdout + r.stderr
    receipt = (prefix / "therock-receipt.json").read_text()
    assert f'"sha256": "{sha}"' in receipt and '"gfx1103"' in receipt
    again = graphrun.doit([task], bundles=bundles, workdir=work, **env)
    assert again.returncode == 0 and graphrun.executed(again.stdout) == [], again.stdout
    # the machine file's [binaries] hip resolves under the installed prefix, before PATH
    from bundlegraph.backends.hip import sdk as therock
    from bundlegraph.toolchains import get

    monkeypatch.setenv("BUNDLEGRAPH_CACHE", env["BUNDLEGRAPH_CACHE"])
    # in-process: the tool-version probe cache goes to the work directory's state, never the checkout
    monkeypatch.setenv("BUNDLEGRAPH_WORKDIR", str(work))
    spec = load_matrix(bundles).legs["linux-x64-rocm-gfx110x"]
    sdk = therock.ref(spec, bundles, "linux-x64-rocm-gfx110x.toml")
    assert sdk.prefix == prefix and sdk.info()["sha256"] == sha
    bins, key = get(spec.toolchain).gpu_binaries(sdk, {"PATH": "/usr/bin:/bin"})
    assert bins == {"hip": f"{prefix.as_posix()}/lib/llvm/bin/clang++"} and key == {"hip": "20.0.0"}
    _verify_on_the_stand_in(prefix, bundles, tmp_path)

    # the hash moved: refused in one line (a fresh cache and work directory: nothing installed yet)
    (hand / NAME).write_bytes(_tarball(b" moved"))
    env2 = {**env, "BUNDLEGRAPH_CACHE": str(tmp_path / "cache2")}
    work2 = tmp_path / "work2"
    work2.mkdir()
    moved = graphrun.doit([task], bundles=bundles, workdir=work2, **env2)
    assert moved.returncode != 0
    lines = [l for l in (moved.stdout + moved.stderr).splitlines() if "the tarball moved; refused" in l]
    assert len(lines) == 1 and f"is not the pin {sha}" in lines[0], moved.stdout + moved.stderr

    # a tarball the lock does not pin: refused before any download
    unpinned = graphrun.doit(["toolkit:therock-7.14.0-windows-gfx90a-unpinned"], bundles=bundles, workdir=work, **env)
    assert unpinned.returncode != 0
    assert (
        "therock-dist-windows-gfx90a-7.14.0.tar.gz is not pinned (no [[tarball]] row)"
        in unpinned.stdout + unpinned.stderr
    )
    assert "download:" not in unpinned.stdout + unpinned.stderr


KERNEL = """#include <hip/hip_runtime.h>
__global__ void scale(float *x, float a) { x[__builtin_amdgcn_workitem_id_x()] *= a; }
extern "C" int run_scale(float *x) { hipLaunchKernelGGL(scale, dim3(1), dim3(64), 0, 0, x, 2.0f); return 0; }
"""


def _ggml_hip(d: Path, targets: tuple[str, ...]) -> Path:
    """A ``libggml-hip.so`` stand-in with real code objects for ``targets`` (Debian 12's hipcc)."""
    d.mkdir(parents=True)
    (d / "k.hip").write_text(KERNEL)
    argv = ["hipcc", *[f"--offload-arch={t}" for t in targets], "-nogpulib", "-fPIC", "-shared"]
    run([*argv, "-o", str(d / "libggml-hip.so"), str(d / "k.hip")], cwd=d, capture=True, echo=False, what="hipcc")
    return d / "libggml-hip.so"


def _verify_on_the_stand_in(prefix: Path, bundles: Path, tmp_path: Path) -> None:
    require_tools("hipcc", "clang")
    spec = load_matrix(bundles).legs["linux-x64-rocm-gfx110x"]
    policy = policy_from_spec(spec)
    want = tuple(spec.hip.mapped_targets)
    tree = tmp_path / "bundle"
    for name, src in runtime_files(prefix, "linux"):
        (tree / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, tree / name)
    shutil.copy(_ggml_hip(tmp_path / "good", want), tree)

    def judged(path: Path) -> list[str]:
        return [f.line() for f in verify_path(path, policy).failures if f.check in ("content", "hip-code")]

    assert judged(tree) == []
    (tree / "rocblas/library/TensileLibrary_lazy_gfx1102.dat").unlink()
    shutil.copy(_ggml_hip(tmp_path / "short", want[:-1]), tree)
    assert judged(tree) == [
        "libggml-hip.so: hip-code: missing gfx1103 (promised gfx1100,gfx1101,gfx1102,gfx1103; "
        "found gfx1100,gfx1101,gfx1102 in 1 bundles)",
        "rocblas/library/*gfx1102*: content: required file is missing from the bundle",
    ]
