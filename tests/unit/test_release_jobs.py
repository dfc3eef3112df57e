"""The release workflow's jobs from the specs (bundlegraph.release.jobs) and their predicted
timeline (bundlegraph.release.critical_path), without processes."""

from __future__ import annotations

import dataclasses
import math
import re
from pathlib import Path

import pytest

from bundlegraph.pipeline.compile.costs import CostRecord
from bundlegraph.release.critical_path import (
    COLD_MARGIN,
    GITHUB_JOB_LIMIT_MIN,
    TIMEOUT_SLACK_MIN,
    Assumptions,
    cover_seconds,
    predict_both,
    predict_release,
    row_seconds,
    row_timeout,
    timeout_problems,
)
from bundlegraph.release.jobs import JOBS, matrices, rows
from bundlegraph.specs.loader import load_matrix

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / ".github" / "workflows" / "release.yml"


def _with(m, leg, **build_or_spec):
    spec = m.legs[leg]
    shards = build_or_spec.pop("shards", None)
    if shards is not None:
        spec = spec.replace(build=spec.build.replace(shards=shards))
    if build_or_spec:
        spec = spec.replace(**build_or_spec)
    return dataclasses.replace(m, legs={**m.legs, leg: spec})


def _by_job(rs):
    out: dict[str, list[str]] = {}
    for r in rs:
        out.setdefault(r.job, []).append(r.name)
    return out


def test_every_compile_is_in_the_first_wave_and_a_backend_imports_or_merges():
    m = load_matrix(ROOT / "bundles")
    m = _with(_with(m, "linux-arm64-cuda13-blackwell", shards=3), "windows-arm64-cuda13-portable", shards=1)
    legs = ["linux-arm64-cpu", "linux-arm64-cuda13-blackwell", "windows-arm64-cpu", "windows-arm64-cuda13-portable"]
    rs = rows(m, legs)
    jobs = _by_job(rs)
    assert jobs["compile"] == [
        "linux-arm64-cuda13-blackwell shard 1/3",
        "linux-arm64-cuda13-blackwell shard 2/3",
        "linux-arm64-cuda13-blackwell shard 3/3",
        "windows-arm64-cuda13-portable",
    ]
    assert jobs["base"] == ["linux-arm64-cpu", "windows-arm64-cpu"]
    assert jobs["backend"] == ["linux-arm64-cuda13-blackwell", "windows-arm64-cuda13-portable"]
    assert "compile-final" not in jobs and "base-imported" not in jobs
    be = {r.id: r for r in rs if r.job == "backend"}
    # the sharded leg does its final compile in its own packaging job; the unsharded one imports
    assert be["linux-arm64-cuda13-blackwell"].merges_shards and not be["linux-arm64-cuda13-blackwell"].imports_build
    assert be["windows-arm64-cuda13-portable"].imports_build and not be["windows-arm64-cuda13-portable"].merges_shards
    sh = [r for r in rs if r.shard]
    assert [r.shard_index for r in sh] == [1, 2, 3] and all(r.uploads_shard and not r.uploads_build for r in sh)
    # the compile job needs only the plan: no compile waits for a base leg
    assert dict(JOBS)["compile"] == ("plan",) and "base" not in dict(JOBS)["compile"]
    assert set(dict(JOBS)["backend"]) >= {"compile", "base"}


def test_compile_runner_legs_and_sharded_base_legs_get_the_jobs_that_import_them():
    m = load_matrix(ROOT / "bundles")
    leg = "linux-arm64-cuda13-blackwell"
    m = _with(m, leg, shards=2, compile_runner="ubuntu-24.04-arm")
    m = _with(m, "linux-arm64-cpu", shards=2)
    rs = rows(m, ["linux-arm64-cpu", leg])
    jobs = _by_job(rs)
    assert jobs["compile-final"] == [leg]  # the final compile on the compile runner, then imported
    final = next(r for r in rs if r.job == "compile-final")
    assert final.runner == "ubuntu-24.04-arm" and final.merges_shards and final.uploads_build
    assert next(r for r in rs if r.job == "backend").imports_build
    assert jobs["base-imported"] == ["linux-arm64-cpu"]  # a sharded base: its final compile after the shards
    base = next(r for r in rs if r.job == "base-imported")
    assert base.merges_shards and not base.imports_build
    assert all(r.runner == "ubuntu-24.04-arm" for r in rs if r.job == "compile" and r.id == leg)


def test_every_job_the_workflow_runs_is_one_the_matrix_writes():
    text = WORKFLOW.read_text(encoding="utf-8")
    m = matrices([])
    for job in m:
        assert f"\n  {job}:\n" in text, job
        assert f"needs.plan.outputs.{job.replace('-', '_')}" in text, job
    for job, needs in JOBS:
        block = text.split(f"\n  {job}:\n", 1)[1].split("\n  ", 1)[0]
        want = needs[0] if len(needs) == 1 else "[" + ", ".join(needs) + "]"
        assert f"needs: {want}" in block, (job, block)
    assert "concurrency:" in text and "group: release-${{ github.ref_name }}" in text
    # every job has a timeout (the legs', plan, sign, manifest, attest and publish); the legs' come
    # from their rows and stay below the manifest job's
    assert len(re.findall(r"^    timeout-minutes: ", text, re.M)) == len(JOBS) + 5
    manifest = text.split("\n  manifest:\n", 1)[1]
    assert int(manifest.split("timeout-minutes: ", 1)[1].split()[0]) <= GITHUB_JOB_LIMIT_MIN


def test_the_timeline_waits_per_job_and_marks_the_critical_path():
    m = load_matrix(ROOT / "bundles")
    leg = "linux-arm64-cuda13-blackwell"
    m = _with(m, leg, shards=2)
    rec = CostRecord(leg, {f"d/heavy{i}.cu": 60.0 for i in range(40)}, {"bin/libggml-cuda.so": 5.0})
    cpu = CostRecord("linux-arm64-cpu", {f"d/c{i}.cpp": 3.0 for i in range(100)}, {})
    a = Assumptions(jobs=3)
    t = predict_release(m, ["linux-arm64-cpu", leg], a, {leg: rec, "linux-arm64-cpu": cpu})
    slots = {(s.job, s.name): s for s in t.slots}
    shard = slots[("compile", f"{leg} shard 1/2")]
    assert shard.start == slots[("plan", "plan")].end  # in the first wave
    assert shard.parts["compile"] == 7 * 60.0  # 20 objects of 60 s on 3 slots: 7, 7 and 6 of them
    backend = slots[("backend", leg)]
    assert backend.start == max(s.end for s in t.slots if s.job in ("compile", "base"))
    assert backend.parts["compile"] < 30  # only hits and the link
    assert [s.job for s in t.path] == ["plan", "compile", "backend", "manifest"]
    assert t.total == slots[("manifest", "manifest")].end
    mm = t.mermaid()
    assert mm.startswith("```mermaid\ngantt") and ":crit, compile" in mm and mm.count(":crit") == 4
    # minutes from the start, whatever the reader's time zone: never a clock format
    assert "    dateFormat x\n    axisFormat %s\n" in mm and "%H" not in mm
    assert f":crit, compile0, {round(shard.start * 1000 / 60)}, {round(shard.end * 1000 / 60)}" in mm
    assert shard.start == 60 and ":crit, compile0, 1000, " in mm  # the plan's minute, as 1000 "ms"
    assert "critical path (*): plan -> compile[" in t.text()


def _sharded():
    m = load_matrix(ROOT / "bundles")
    leg = "linux-arm64-cuda13-blackwell"
    m = _with(m, leg, shards=2)
    rec = CostRecord(leg, {f"d/heavy{i}.cu": 60.0 for i in range(40)}, {"bin/libggml-cuda.so": 5.0})
    cpu = CostRecord("linux-arm64-cpu", {f"d/c{i}.cpp": 3.0 for i in range(100)}, {})
    return m, leg, {leg: rec, "linux-arm64-cpu": cpu}


def test_the_cold_picture_compiles_every_final_compile_whole_and_the_warm_one_keeps_the_hits():
    m, leg, recs = _sharded()
    warm, cold = predict_both(m, ["linux-arm64-cpu", leg], Assumptions(jobs=3), recs, title="t")
    w = {(s.job, s.name): s for s in warm.slots}
    c = {(s.job, s.name): s for s in cold.slots}
    # 40 objects of 60 s on 3 slots: 14 rounds = 840 s, plus the 5-s link, again in the final compile
    assert c[("backend", leg)].parts["compile"] == 14 * 60.0 + 5.0
    assert w[("backend", leg)].parts["compile"] < 30
    assert c[("compile", f"{leg} shard 1/2")].parts == w[("compile", f"{leg} shard 1/2")].parts  # a shard: its slice
    assert cold.total - warm.total > 13 * 60
    assert "warm" in warm.title and "cold" in cold.title and "modeled" in warm.title
    text = warm.text(cold)
    assert "critical path, cold (every final compile a full compile): plan ->" in text
    assert f"{c[('backend', leg)].minutes:6.1f} {w[('backend', leg)].timeout:7d}" in text
    assert f"{c[('plan', 'plan')].minutes:6.1f}       -  *" in text  # the plan job: no row timeout
    md = warm.markdown(cold)
    assert md.count("```mermaid") == 2 and "| cold minutes | timeout |" in md and "not measured" in md
    # a leg whose final compile cannot take hits is modeled as a full compile even warm
    uncached, _ = predict_both(m, ["linux-arm64-cpu", leg], Assumptions(jobs=3, uncached=frozenset({leg})), recs)
    u = {(s.job, s.name): s for s in uncached.slots}
    assert u[("backend", leg)].parts == c[("backend", leg)].parts


def test_every_compile_rows_timeout_covers_the_legs_whole_cold_compile_with_the_margin():
    m, leg, recs = _sharded()
    a = Assumptions(jobs=3)
    rs = rows(m, ["linux-arm64-cpu", leg])
    whole = (14 * 60.0 + 5.0) / 60  # the leg's cold compile at -j3, minutes
    for r in rs:
        cover = cover_seconds(r, m.legs[r.id], recs[r.id], a)
        if r.id == leg:  # a shard, and the final compile: the whole leg, not the slice or the hits
            assert cover["compile"] == whole * 60, r.name
        timeout = row_timeout(sum(cover.values()))
        assert timeout >= COLD_MARGIN * sum(cover.values()) / 60 + TIMEOUT_SLACK_MIN - 1e-9, r.name
        assert timeout >= COLD_MARGIN * whole or r.id != leg
    assert row_timeout(10 * 3600) == GITHUB_JOB_LIMIT_MIN
    assert row_timeout(60) == math.ceil(COLD_MARGIN + TIMEOUT_SLACK_MIN)
    assert timeout_problems(rs, m.legs, recs, a) == ([], [])


def test_a_leg_that_cannot_fit_even_sharded_is_refused_and_a_final_compile_over_the_limit_is_flagged():
    m, leg, _ = _sharded()
    # 400 objects of 600 s: 80,000 s at -j3 ~ 1,333 min cold; two shards of ~667 min each cannot fit
    huge = {leg: CostRecord(leg, {f"d/h{i}.cu": 600.0 for i in range(400)}, {}), "linux-arm64-cpu": None}
    rs = rows(m, ["linux-arm64-cpu", leg])
    refusals, flags = timeout_problems(rs, m.legs, huge, Assumptions(jobs=3))
    assert len(refusals) == 2 and all(
        x.startswith(f"bundles/{leg}.toml: build.shards: compile row '{leg} shard ") for x in refusals
    )
    assert "over GitHub's 360-min job limit: expected more shards than 2" in refusals[0]
    assert flags == [] or all("capped" in f for f in flags)
    # 24 shards: each slice fits; the final compile cannot fit cold and is flagged, not refused
    m24 = _with(m, leg, shards=24)
    refusals, flags = timeout_problems(rows(m24, ["linux-arm64-cpu", leg]), m24.legs, huge, Assumptions(jobs=3))
    assert refusals == [], refusals
    final = [f for f in flags if f"backend row '{leg}'" in f]
    assert len(final) == 1 and final[0].endswith("capped at 360 min, enough only with its shards' cache hits")


@pytest.mark.parametrize(
    "mode", [["--github-output"], ["--job", "compile"], [], ["--compact"], ["--warm"]], ids=" ".join
)
def test_the_matrix_refuses_a_leg_that_cannot_fit_in_every_mode(tmp_path, monkeypatch, capsys, mode):
    """Plain ``matrix`` and ``--warm`` refuse what the release jobs' matrices refuse (issue 51: they
    printed a matrix whose shard could never finish in GitHub's 360-min limit)."""
    import shutil

    from bundlegraph import cli

    bundles = tmp_path / "bundles"
    shutil.copytree(ROOT / "bundles", bundles)
    leg = "linux-arm64-cuda13-blackwell"
    rec = CostRecord(leg, {f"d/h{i}.cu": 600.0 for i in range(400)}, {})
    (bundles / "costs" / f"{leg}.json").write_bytes(rec.to_json())
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("BUNDLEGRAPH_COSTS", raising=False)
    rc = cli.main(["--bundles", str(bundles), "matrix", *mode])
    out, err = capsys.readouterr()
    assert rc == 2 and out == "", err
    assert f"bundles/{leg}.toml: build.shards: compile row '{leg} shard 1/3' models" in err
    assert "over GitHub's 360-min job limit: expected more shards than 3" in err
    assert "Traceback" not in err


def test_the_real_releases_rows_cover_a_cold_compile():
    """The committed specs and records: the 7-arch backend rows (a final compile after 6 shards)
    get a timeout above twice their ~106-min cold compile, below GitHub's limit."""
    m = load_matrix(ROOT / "bundles")
    from bundlegraph.pipeline.compile import costs

    legs = list(m.legs)
    recs = {leg: costs.load(ROOT / "bundles" / "costs" / f"{leg}.json", leg) for leg in legs}
    a = Assumptions()
    timed = {(s.job, s.name): s.timeout for s in predict_release(m, legs, a, recs).slots}
    final = timed[("backend", "windows-x64-cuda13-portable")]
    assert 2 * 106 < final <= GITHUB_JOB_LIMIT_MIN
    assert 2 * 106 < timed[("compile", "windows-x64-cuda13-portable shard 1/6")] <= GITHUB_JOB_LIMIT_MIN
    assert timeout_problems(rows(m, legs), m.legs, recs, a) == ([], [])


def test_row_timeouts_follow_the_prediction_and_are_capped():
    m = load_matrix(ROOT / "bundles")
    r = next(x for x in rows(m, ["linux-arm64-cpu"]) if x.job == "base")
    parts = row_seconds(r, m.legs["linux-arm64-cpu"], None, Assumptions())
    assert {"job", "apt", "source", "configure", "compile", "package"} <= set(parts)


def test_the_warm_workflow_compiles_every_leg_whole_on_its_compile_runner(capsys):
    import json

    from bundlegraph import cli
    from bundlegraph.release.jobs import warm_rows

    m = load_matrix(ROOT / "bundles")
    m = _with(m, "linux-arm64-cuda13-blackwell", compile_runner="ubuntu-24.04-arm")
    rs = warm_rows(m, list(m.legs))
    assert [r.id for r in rs] == list(m.legs) and all(r.job == "warm" and not r.shard for r in rs)
    assert next(r for r in rs if r.id == "linux-arm64-cuda13-blackwell").runner == "ubuntu-24.04-arm"
    assert cli.main(["--bundles", str(ROOT / "bundles"), "matrix", "--warm"]) == 0
    line = capsys.readouterr().out.strip()
    assert line.startswith("warm=")
    rows_ = {r["id"]: r for r in json.loads(line.removeprefix("warm="))["include"]}
    assert set(rows_) == set(load_matrix(ROOT / "bundles").legs)
    # a 7-arch leg compiled whole and cold: ~106 min modeled, twice that with the margin
    assert 2 * 106 < rows_["windows-x64-cuda13-portable"]["timeout"] <= GITHUB_JOB_LIMIT_MIN
