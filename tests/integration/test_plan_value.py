"""One plan value per task: what ``bundlegraph plan --json --keys`` shows as a task's key is exactly
what its stamp records (for every task of the stand-in graph), and a task's run receives the very
value whose key the up-to-date check compared and the stamp records (configure and build keep
their resolved plan instead of planning again)."""

from __future__ import annotations

import json
from pathlib import Path

import graphrun
import pytest
from conftest import linux_only, require_input, require_tools

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
X64 = "mini-linux-x64-cpu"

pytestmark = linux_only


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    require_tools("aarch64-linux-gnu-gcc", "aarch64-linux-gnu-g++", "gcc", "g++")
    require_input("cuda-13.5-sbsa-cross")
    root = tmp_path_factory.mktemp("plan-value")
    graphrun.standin_tree(root)
    r = graphrun.doit([], bundles=root / "bundles", workdir=root / "work")
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-3000:]
    return root


def _stamp(work: Path, task: str) -> dict | None:
    f = work / ".bundlegraph" / "stamps" / (task.replace(":", "__") + ".json")
    return json.loads(f.read_text()) if f.is_file() else None


def test_the_key_plan_shows_is_the_key_each_stamp_records(built):
    r = graphrun.cli(["plan", "--json", "--keys"], bundles=built / "bundles", workdir=built / "work")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    tasks = [st for leg in doc["legs"].values() for st in leg["stages"]] + doc["shared"]
    checked = []
    for st in tasks:
        stamp = _stamp(built / "work", st["task"])
        if stamp is None:  # publish: never run by a bare doit
            assert st["task"] == "publish", st["task"]
            continue
        assert st["key_digest"] == stamp["key"], st["task"]
        assert st["key"] == stamp["inputs"], st["task"]
        checked.append(st["task"])
    # 20 stage tasks + a smoke per leg (3) + the CUDA leg's smoke tools and throughput reference
    # + the pinned compilers of the x64 and arm64 legs (issue 50)
    assert len([t for t in checked if t.startswith("toolkit:gcc-")]) == 2, checked
    assert len(checked) == 27 and "configure:mini-linux-arm64-cuda" in checked and "manifest" in checked
    assert {
        "smoke:mini-linux-arm64-cpu",
        "smoke:tools-mini-linux-arm64-cuda",
        "smoke:reference-mini-linux-arm64-cuda",
    } <= set(checked)


def test_every_run_receives_the_frozen_plan_its_key_came_from(built, monkeypatch):
    """In-process, as doit drives it, for every task of the stand-in graph in stage order: the
    up-to-date check prepares the task once; its run gets that very object, whose ``plan`` is
    the stage's frozen ``<Stage>Plan`` and whose key is that plan's own ``key()``; the stamp
    records it; afterwards it is up to date."""
    import dataclasses

    from bundlegraph.core import state
    from bundlegraph.graph import context as graph

    monkeypatch.setenv("BUNDLEGRAPH_WORKDIR", str(built / "work"))
    g = graph.load_graph(built / "bundles")
    seen: dict[str, str] = {}
    for plan in g.plans:
        name = plan.full_name
        had_stamp = state.load(name) is not None
        state.forget(name)  # make it due
        got = []
        real = plan.apply

        def spy(p, real=real, got=got):
            got.append(p)
            return real(p)

        monkeypatch.setattr(plan, "apply", spy)
        assert graph._uptodate(plan) is False, name
        prepared = graph._PREPARED[name]
        res = graph._execute(plan)
        assert got and got[0] is prepared, name  # the very object the key came from
        value = prepared.plan
        assert dataclasses.is_dataclass(value), name
        with pytest.raises(dataclasses.FrozenInstanceError):  # read-only
            setattr(value, dataclasses.fields(value)[0].name, None)
        assert type(value).__name__.endswith("Plan"), (name, type(value))
        # the key is the plan's own (StagePlan.key): computed from its fields, nothing beside it
        assert state.canonical(value.key()) == state.canonical(prepared.key), name
        assert isinstance(value.describe(), dict), name
        seen[name] = type(value).__name__
        if name == "publish":
            continue  # refused (the stand-in promises legs it lacks): no stamp
        assert res is None and had_stamp, name
        assert state.load(name).inputs == json.loads(state.canonical(prepared.key)), name
        assert graph._uptodate(plan) is True, name
    stages = {n.split(":")[0]: t for n, t in seen.items()}
    assert stages == {
        "source": "SourceTaskPlan",
        "toolkit": "ToolkitPlan",
        "configure": "ConfigurePlan",
        "build": "BuildPlan",
        "verify": "VerifyTreePlan",
        "merge": "MergePlan",
        "package": "PackagePlan",
        "smoke": stages.get("smoke"),
        "manifest": "ManifestPlan",
        "publish": "PublishPlan",
    }, stages
    # smoke:<leg>, smoke-tools (test-backend-ops) and the GPU leg's throughput reference build
    assert {seen[n] for n in seen if n.startswith("smoke:")} == {
        "SmokePlan",
        "SmokeToolsPlan",
        "ReferencePlan",
    }


def test_a_run_receives_the_value_its_key_came_from(built, monkeypatch):
    """In-process, as doit drives it: the up-to-date check prepares configure:<leg> once; the run
    gets that same object; the stamp records its key."""
    from bundlegraph.core import state
    from bundlegraph.graph import context as graph

    monkeypatch.setenv("BUNDLEGRAPH_WORKDIR", str(built / "work"))
    g = graph.load_graph(built / "bundles")
    for name in (f"configure:{X64}", f"build:{X64}"):
        plan = g.find(name)
        state.forget(name)  # make it due
        got = []
        real = plan.apply
        assert state.load(name) is None, name  # due: its stamp is gone
        monkeypatch.setattr(plan, "apply", lambda p, real=real: got.append(p) or real(p))
        assert graph._uptodate(plan) is False
        prepared = graph._PREPARED[name]
        assert graph._execute(plan) is None, name
        assert got == [prepared] and got[0] is prepared, name  # the very object
        assert type(prepared.plan).__name__ in ("ConfigurePlan", "BuildPlan")
        assert state.load(name).inputs == json.loads(state.canonical(prepared.key))
        assert graph._uptodate(plan) is True
