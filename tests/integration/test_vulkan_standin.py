"""The stand-in Vulkan leg (``tests/data/vulkan-legs/mini-linux-x64-vulkan.toml``: minillama's own
``ggml-vulkan``, one GLSL shader compiled by Debian's glslc, the host's Vulkan headers and loader)
through the real graph: plan, configure, build, verify, merge into the x64 CPU bundle, package,
and its smoke with the GPU steps on Mesa's lavapipe (a Vulkan driver on the CPU): the backend's
own device listing names ``Vulkan0``, and ``test-backend-ops`` (the stand-in's, built by
``smoke:tools-<leg>``) runs MUL_MAT on it against the CPU. A bundle whose Vulkan backend sees no
device (a driver without a GPU: the programs would fall back to the CPU), or that lacks the
backend, fails its smoke in one line naming why.

Needs Debian's ``glslc``, ``libvulkan-dev`` and ``mesa-vulkan-drivers`` (``./dev.sh test`` installs
them). About 15 s here."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import graphrun
import pytest
import smokekit
from conftest import linux_only, require_tools

ROOT = Path(__file__).resolve().parents[2]
LEG, BASE = "mini-linux-x64-vulkan", "mini-linux-x64-cpu"
LAVAPIPE = Path("/usr/share/vulkan/icd.d/lvp_icd.x86_64.json")
HEADER = Path("/usr/include/vulkan/vulkan.h")

pytestmark = linux_only


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    require_tools("gcc", "glslc")
    missing = [str(p) for p in (HEADER, LAVAPIPE) if not p.is_file()]
    if missing:
        pytest.fail(
            f"{', '.join(missing)} not installed: `apt-get install libvulkan-dev mesa-vulkan-drivers` "
            "(./dev.sh test does it)",
            pytrace=False,
        )
    bundles, work = graphrun.standin_tree(tmp_path_factory.mktemp("vulkan-standin"))
    shutil.copy2(ROOT / "tests" / "data" / "vulkan-legs" / f"{LEG}.toml", bundles / f"{LEG}.toml")
    # the driver the smoke picks by default: lavapipe, whatever the caller's environment says
    r = graphrun.doit([f"smoke:{LEG}"], bundles=bundles, workdir=work, BUNDLEGRAPH_VULKAN_ICD="")
    assert r.returncode == 0, r.stdout[-6000:] + r.stderr[-3000:]
    return {"bundles": bundles, "work": work, "run": r}


def _record(tree) -> dict:
    return json.loads((tree["work"] / "build" / LEG / "smoke.json").read_text())


def _bundle(tree) -> Path:
    return tree["work"] / "dist" / "app-b42-linux-x64-vulkan.tar.gz"


def test_the_vulkan_leg_builds_through_every_stage_and_runs_on_lavapipe(tree):
    ran = graphrun.executed(tree["run"].stdout)
    for stage in ("source", "configure", "build", "verify", "merge", "package"):
        assert f"{stage}:{LEG}" in ran and f"{stage}:{BASE}" in ran, (stage, ran)
    assert ran.index(f"package:{BASE}") < ran.index(f"merge:{LEG}") < ran.index(f"smoke:{LEG}")
    assert ran.index(f"smoke:tools-{LEG}") < ran.index(f"smoke:{LEG}")
    # the shader was compiled at build time by glslc, and the backend links the host's loader
    assert "glslc mul_mat_vec.comp" in tree["run"].stdout
    members = smokekit.members(_bundle(tree))
    assert {"libggml-vulkan.so", "libggml-cpu.so", "llama-cli"} <= {Path(m).name for m in members}
    from bundlegraph.checks.elf import read_elf

    needed = read_elf(smokekit.member_bytes(_bundle(tree), "libggml-vulkan.so")).needed
    assert "libvulkan.so.1" in needed, needed
    assert json.loads((tree["work"] / "build" / LEG / "verify.json").read_text())["ok"] is True

    rec = _record(tree)
    assert rec["status"] == "passed" and rec["how"] == "native", rec
    assert rec["probe"]["icd"] == LAVAPIPE.as_posix() and rec["coverage"] == f"ICD {LAVAPIPE.as_posix()}"
    checks = {c["check"]: c for c in rec["checks"]}
    assert checks["list-devices"]["vulkan"] == "loaded"
    assert checks["list-devices"]["loaded"]["Vulkan"].endswith("/libggml-vulkan.so")
    # the backend's own device listing, on lavapipe (a CPU-type device ggml uses only when named)
    assert checks["devices"]["status"] == "passed"
    assert [d.split(" (")[0] for d in checks["devices"]["devices"]] == ["Vulkan0: llvmpipe"], checks["devices"]
    op = checks["op:MUL_MAT"]
    # the real bundle's case filter (plain layouts, m=16, k=256) picks one of the stand-in's f32 cases
    assert op["status"] == "passed" and op["passed"] == op["total"] == 1, op
    from bundlegraph.backends.vulkan import smoke as vulkan
    from bundlegraph.core.proc import quote

    assert vulkan.OPS[0][0] == "MUL_MAT" and vulkan.OPS[0][1] is not None
    assert op["command"].endswith(quote(["-b", "Vulkan0", "-o", "MUL_MAT", "-p", vulkan.OPS[0][1]])), op["command"]
    # generation needs a llama.cpp source (the real bundle's smoke): not applicable here
    assert checks["generate-gpu"]["status"] == "not applicable"
    side = json.loads(Path(f"{_bundle(tree)}.smoke.json").read_text())
    assert side["status"] == "passed"


def test_a_second_run_executes_nothing(tree):
    r = graphrun.doit([f"smoke:{LEG}"], bundles=tree["bundles"], workdir=tree["work"], BUNDLEGRAPH_VULKAN_ICD="")
    assert r.returncode == 0 and graphrun.executed(r.stdout) == [], r.stdout[-3000:]


def _smoke_copy(tree, archive: Path, tmp: Path, monkeypatch, icd: str = "") -> tuple[str, dict]:
    """smoke's own run on ``archive`` (a copy of the leg's bundle), the leg's plan otherwise,
    with ``BUNDLEGRAPH_VULKAN_ICD=icd``; it must fail."""
    from bundlegraph.graph.context import Filters, load_graph
    from bundlegraph.pipeline import smoke

    monkeypatch.setenv("BUNDLEGRAPH_WORKDIR", str(tree["work"]))
    monkeypatch.setenv("BUNDLEGRAPH_VULKAN_ICD", icd)
    plan = smoke.plan_smoke(load_graph(tree["bundles"], Filters(only_leg=LEG)).ctx, LEG)
    plan = dataclasses.replace(plan, bundle=archive, record=tmp / "smoke.json", log=tmp / "smoke.log", work_dir=tmp)
    with pytest.raises(Exception) as e:
        smoke.run_smoke(plan)
    rec = json.loads((tmp / "smoke.json").read_text())
    assert rec["status"] == "failed" and (tmp / "smoke-failed" / archive.name).is_file()
    assert "\n" not in str(e.value)
    return str(e.value), {c["check"]: c for c in rec["checks"]}


def test_a_vulkan_backend_that_sees_no_device_fails_the_smoke(tree, tmp_path, monkeypatch):
    """A Vulkan driver whose library is not there (as on a host whose driver finds no GPU): the
    backend loads and lists no device, so a model would run on the CPU. That fails, in one line."""
    icd = tmp_path / "nogpu_icd.json"
    icd.write_text(json.dumps({"file_format_version": "1.0.0", "ICD": {"library_path": "/nonexistent/libvk_none.so"}}))
    copy = tmp_path / "dist" / _bundle(tree).name
    copy.parent.mkdir()
    shutil.copy2(_bundle(tree), copy)
    msg, checks = _smoke_copy(tree, copy, tmp_path, monkeypatch, icd=str(icd))
    assert checks["list-devices"]["status"] == "passed"  # it loads: ggml's load messages say so
    assert (
        "devices: no Vulkan<n> device listed: the Vulkan backend did not load or sees no GPU (a fallback to the CPU)"
        in msg
    ), msg
    assert "op:MUL_MAT: no 'Backend Vulkan0: OK'" in msg, msg


def test_a_bundle_without_its_vulkan_backend_fails_naming_it(tree, tmp_path, monkeypatch):
    broken = smokekit.mutate(_bundle(tree), tmp_path / "dist" / _bundle(tree).name, remove=("libggml-vulkan.so",))
    msg, _ = _smoke_copy(tree, broken, tmp_path, monkeypatch)
    assert "list-devices: libggml-vulkan.so: ggml neither loaded it nor reported why" in msg, msg
    assert "devices: no Vulkan<n> device listed" in msg, msg
