"""The stages are listed once (bundlegraph.pipeline.stages.STAGES): the order, the opt-in and
compile stages, the graph's planners and every task's stage name all come from that table."""

from __future__ import annotations

import shutil
from pathlib import Path

from bundlegraph.graph.context import load_graph
from bundlegraph.pipeline import stages
from bundlegraph.pipeline.base import Filters

ROOT = Path(__file__).resolve().parents[2]


def test_every_registered_stage_is_a_module_with_a_name_and_a_planner():
    assert [s.NAME for s in stages.STAGES] == stages.STAGE_ORDER
    assert stages.STAGE_ORDER[0] == "source" and stages.STAGE_ORDER[-1] == "publish"
    assert stages.OPT_IN_STAGES == ("smoke",)
    assert stages.COMPILE_STAGES == ("source", "toolkit", "configure", "build")
    for s in stages.STAGES:
        assert callable(s.plans) and s.__name__.startswith("bundlegraph.pipeline."), s


def test_every_task_of_the_graph_belongs_to_a_registered_stage(tmp_path, monkeypatch):
    bundles = tmp_path / "bundles"
    shutil.copytree(ROOT / "tests/data/bundles", bundles)
    shutil.copytree(ROOT / "bundles/locks", bundles / "locks", dirs_exist_ok=True)
    monkeypatch.chdir(tmp_path)
    for root in (ROOT / "bundles", bundles):
        g = load_graph(root, Filters())
        seen = {p.stage for p in g.plans}
        assert seen <= set(stages.STAGE_ORDER), seen - set(stages.STAGE_ORDER)
        assert {"source", "configure", "build", "package", "manifest"} <= seen


def test_a_legs_facts_are_resolved_once_per_graph_load():
    """The per-leg context (pipeline.base.LegContext): one per leg, its toolchain and SDK made
    on first use and kept; the stages' toolkit_for_leg reads it."""
    from bundlegraph.backends.cuda.sdk import toolkit_for_leg

    g = load_graph(ROOT / "bundles", Filters())
    cuda = next(l for l in g.ctx.legs if g.ctx.spec(l).cuda is not None)
    cpu = next(l for l in g.ctx.legs if g.ctx.spec(l).cuda is None)
    lc = g.ctx.leg(cuda)
    assert g.ctx.leg(cuda) is lc and lc.toolchain is lc.toolchain and lc.sdk is toolkit_for_leg(g.ctx, cuda)
    assert lc.sdk is not None and lc.sdk.task.startswith("toolkit:cuda13")
    assert g.ctx.leg(cpu).sdk is None and g.ctx.bundle_name(cpu) == g.ctx.leg(cpu).bundle_name
    assert g.ctx.log(cuda, "build") == lc.build_dir / "logs" / "build.log"
