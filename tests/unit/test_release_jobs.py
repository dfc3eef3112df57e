"""The release workflow's jobs from the specs (bundlegraph.release_jobs) and their predicted
timeline (bundlegraph.critical_path), without processes."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from bundlegraph.critical_path import LEG_TIMEOUT_MAX, Assumptions, predict_release, row_seconds, timeout_minutes
from bundlegraph.pipeline.compile.costs import CostRecord
from bundlegraph.release_jobs import JOBS, matrices, rows
from bundlegraph.schemas.loader import load_matrix

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
    # every job has a timeout; the legs' come from their rows and stay below the manifest job's
    assert text.count("timeout-minutes:") == len(JOBS) + 2
    manifest = text.split("\n  manifest:\n", 1)[1]
    assert int(manifest.split("timeout-minutes: ", 1)[1].split()[0]) > LEG_TIMEOUT_MAX


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
    assert "critical path (*): plan -> compile[" in t.text()


def test_row_timeouts_follow_the_prediction_and_are_capped():
    assert timeout_minutes(60) == 23 and timeout_minutes(10 * 3600) == LEG_TIMEOUT_MAX
    m = load_matrix(ROOT / "bundles")
    r = next(x for x in rows(m, ["linux-arm64-cpu"]) if x.job == "base")
    parts = row_seconds(r, m.legs["linux-arm64-cpu"], None, Assumptions())
    assert {"job", "apt", "source", "configure", "compile", "package"} <= set(parts)
