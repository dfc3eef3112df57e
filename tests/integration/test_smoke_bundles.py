"""The smoke of every bundle this host can start (issue 18), on the stand-in release: a bare
``doit`` runs ``smoke:<leg>`` right after each ``package:<leg>``, the aarch64 bundles under
qemu-user with Debian's aarch64 sysroot and the x64 one natively, before the manifest; the
result travels beside the bundle and into the manifest, the gate refuses a bundle without one.
Deliberately broken copies of the real archives (a backend library removed, a wrong-arch binary
slipped in, a missing runtime, the CUDA runtime absent) fail, naming the file.

Generation and serving need a llama.cpp source (gguf-py, vocab models): the stand-in records
them as not applicable; they run on the real bundles of the main job (README)."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from pathlib import Path

import graphrun
import pytest
import smokekit
from conftest import linux_only, require_input, require_tools

from bundlegraph.toolchains.compiler import compiler_of
from bundlegraph.toolchains.registry import TOOLCHAINS

CPU, CUDA, X64 = "mini-linux-arm64-cpu", "mini-linux-arm64-cuda", "mini-linux-x64-cpu"
QEMU = "qemu-aarch64 -L <{}>/usr/aarch64-linux-gnu".format(
    compiler_of(TOOLCHAINS["gcc-cross-linux-aarch64"]).task  # type: ignore[union-attr]
)
"""How the aarch64 bundles start here: with the arm64 C library they were linked against, the
pinned cross compiler's (issue 50), named by its task, not by a path of this machine."""

pytestmark = linux_only


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    require_tools("aarch64-linux-gnu-gcc", "qemu-aarch64", "gcc")
    require_input("cuda-13.5-sbsa-cross")
    bundles, work = graphrun.standin_tree(tmp_path_factory.mktemp("smoke-release"))
    r = graphrun.doit([], bundles=bundles, workdir=work, timeout=900)
    assert r.returncode == 0, r.stdout[-6000:] + r.stderr[-3000:]
    return {"bundles": bundles, "work": work, "run": r}


def _record(release, leg) -> dict:
    return json.loads((release["work"] / "build" / leg / "smoke.json").read_text())


def _bundle(release, leg) -> Path:
    return next(
        (release["work"] / "dist").glob(
            f"app-b42-*-{'x64' if leg == X64 else 'arm64'}-{'cuda13-blackwell' if leg == CUDA else 'cpu'}.tar.gz"
        )
    )


def test_a_bare_doit_smokes_each_bundle_after_its_package_and_before_the_manifest(release):
    ran = graphrun.executed(release["run"].stdout)
    for leg in (CPU, CUDA, X64):
        assert ran.index(f"smoke:{leg}") > ran.index(f"package:{leg}")
        assert ran.index(f"smoke:{leg}") < ran.index("manifest")
    for leg, how in ((CPU, QEMU), (CUDA, QEMU), (X64, "native")):
        rec = _record(release, leg)
        assert rec["status"] == "passed" and rec["how"] == how, rec
        checks = {c["check"]: c for c in rec["checks"]}
        # version: the release's upstream build and source commit, as llama-cli prints them
        assert checks["version"]["status"] == "passed"
        assert checks["version"]["build"] == 42 and "0123456789abcdef".startswith(checks["version"]["commit"])
        assert checks["libraries"]["status"] == "passed" and checks["libraries"]["files"] >= 10
        assert checks["list-devices"]["loaded"]["CPU"].endswith("/libggml-cpu.so")
        assert {checks[n]["status"] for n in ("model", "generate", "serve")} == {"not applicable"}
        # the result is beside the bundle, for exactly these bytes
        side = json.loads(Path(f"{_bundle(release, leg)}.smoke.json").read_text())
        assert side["bundle_sha256"] == hashlib.sha256(_bundle(release, leg).read_bytes()).hexdigest()
    # the merged CUDA bundle's backend loads with the CUDA runtime of its toolkit (the stand-in
    # needs no driver; a real one lacks only libcuda.so.1: see the main job)
    cuda = {c["check"]: c for c in _record(release, CUDA)["checks"]}
    assert (
        cuda["list-devices"]["loaded"]["CUDA"].endswith("/libggml-cuda.so") and cuda["list-devices"]["cuda"] == "loaded"
    )
    assert "/targets/sbsa-linux/lib" in cuda["version"]["command"] and "stubs" not in cuda["version"]["command"]
    manifest = json.loads((release["work"] / "dist" / "llama-prebuilt-manifest.json").read_text())
    assert {a["asset_name"]: a["smoke"] for a in manifest["artifacts"]} == {
        _bundle(release, CPU).name: f"passed ({QEMU})",
        _bundle(release, CUDA).name: f"passed ({QEMU})",
        _bundle(release, X64).name: "passed (native)",
    }


def test_a_second_run_executes_nothing_and_publish_wants_the_smoke(release):
    b, w = release["bundles"], release["work"]
    r = graphrun.doit([], bundles=b, workdir=w)
    assert r.returncode == 0 and graphrun.executed(r.stdout) == [], r.stdout[-3000:]
    r = graphrun.doit(["publish"], bundles=b, workdir=w)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    side = Path(f"{_bundle(release, X64)}.smoke.json")
    kept = side.read_bytes()
    side.unlink()
    try:
        r = graphrun.doit(["manifest", "publish"], bundles=b, workdir=w)
        out = r.stdout + r.stderr
        assert r.returncode != 0
        assert (
            f"{_bundle(release, X64).name}: bundle of promised leg {X64} has no passed smoke for these bytes "
            f"({side.name} missing): run smoke:{X64}"
        ) in out, out[-3000:]
    finally:
        side.write_bytes(kept)


def _smoke_copy(release, leg: str, archive: Path, tmp: Path, **changes):
    """smoke's own run on ``archive`` (a broken copy), the leg's plan otherwise."""
    from bundlegraph.graph.context import Filters, load_graph
    from bundlegraph.pipeline import smoke

    old = os.environ.get("BUNDLEGRAPH_WORKDIR")
    os.environ["BUNDLEGRAPH_WORKDIR"] = str(release["work"])
    try:
        plan = smoke.plan_smoke(load_graph(release["bundles"], Filters(only_leg=leg)).ctx, leg)
    finally:
        if old is None:
            del os.environ["BUNDLEGRAPH_WORKDIR"]
        else:
            os.environ["BUNDLEGRAPH_WORKDIR"] = old
    plan = dataclasses.replace(
        plan, bundle=archive, record=tmp / "smoke.json", log=tmp / "smoke.log", work_dir=tmp, **changes
    )
    with pytest.raises(Exception) as e:
        smoke.run_smoke(plan)
    rec = json.loads((tmp / "smoke.json").read_text())
    assert rec["status"] == "failed"
    # the broken bundle leaves dist/ (here: its folder) and gets no smoke result beside it
    assert not archive.exists() and (tmp / "smoke-failed" / archive.name).is_file()
    assert not Path(f"{archive}.smoke.json").exists()
    return str(e.value), {c["check"]: c for c in rec["checks"]}


def test_a_removed_backend_library_fails_naming_it(release, tmp_path):
    src = _bundle(release, CPU)
    broken = smokekit.mutate(src, tmp_path / "dist" / src.name, remove=("libggml-cpu.so",))
    msg, checks = _smoke_copy(release, CPU, broken, tmp_path)
    assert "list-devices: libggml-cpu*.so: no CPU backend was loaded" in msg, msg
    assert checks["version"]["status"] == "passed"


def test_a_wrong_arch_binary_slipped_in_fails_naming_it(release, tmp_path):
    src = _bundle(release, CPU)
    x64_cpu = smokekit.member_bytes(_bundle(release, X64), "libggml-cpu.so")
    broken = smokekit.mutate(src, tmp_path / "dist" / src.name, replace={"libggml-cpu.so": x64_cpu})
    msg, checks = _smoke_copy(release, CPU, broken, tmp_path)
    assert checks["list-devices"]["status"] == "failed" and "libggml-cpu.so" in checks["list-devices"]["problem"], (
        checks
    )
    assert "libggml-cpu.so: the loader cannot list it" in checks["libraries"]["problem"], checks["libraries"]
    assert "libggml-cpu.so" in msg


def test_a_missing_runtime_library_fails_naming_it(release, tmp_path):
    src = _bundle(release, CPU)
    broken = smokekit.mutate(src, tmp_path / "dist" / src.name, remove=("libggml-base.so",))
    msg, checks = _smoke_copy(release, CPU, broken, tmp_path)
    assert "libggml-base.so" in checks["version"]["problem"], checks["version"]  # llama-cli cannot start
    assert "llama-cli: libggml-base.so not found" in checks["libraries"]["problem"], checks["libraries"]
    assert "libggml-base.so" in msg


def test_the_cuda_backend_without_its_cuda_runtime_fails_naming_the_runtime(release, tmp_path):
    src = _bundle(release, CUDA)
    copy = tmp_path / "dist" / src.name
    copy.parent.mkdir(parents=True)
    copy.write_bytes(src.read_bytes())
    msg, checks = _smoke_copy(release, CUDA, copy, tmp_path, runtime_dir=None)
    assert "libggml-cuda.so: libcudart.so.13: cannot open shared object file" in checks["list-devices"]["problem"], (
        checks
    )
    assert "libggml-cuda.so: libcudart.so.13 not found" in checks["libraries"]["problem"], checks["libraries"]
    assert "libcudart.so.13" in msg
