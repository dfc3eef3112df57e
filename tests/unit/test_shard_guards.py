"""The guards of a sharded leg (issue 39, item 1), for what cannot run here (cl.exe and nvcc on
Windows): a shard or final compile without a compiler cache is refused before anything compiles,
naming the leg and configure's reason; a final compile that misses objects its merged shards
wrote fails, and ``compiler-cache.json``, the log and the step summary name the leg and each
missed object. No process starts (the unit tests' fixture forbids it)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bundlegraph.core import paths
from bundlegraph.core.errors import BundleGraphError
from bundlegraph.pipeline import build, shard_build
from bundlegraph.pipeline.compile import shard_guard
from bundlegraph.pipeline.compile.build_measure import Measured
from bundlegraph.pipeline.compile.shards import ShardRef

LEG = "windows-arm64-cuda13-portable"
OBJS = [
    "ggml/src/ggml-cuda/CMakeFiles/ggml-cuda.dir/argmax.cu.obj",
    "ggml/src/ggml-cuda/CMakeFiles/ggml-cuda.dir/mmq.cu.obj",
    "ggml/src/ggml-cuda/CMakeFiles/ggml-cuda.dir/fattn.cu.obj",
]


def _plan(workdir: Path, launcher: dict | None, *, shards: int = 3) -> build.BuildPlan:
    """A configured sharded leg's build plan: ``CMakeCache.txt`` there and a ``configure.json``
    whose launcher entry is ``launcher``."""
    bdir = paths.build_dir(LEG)
    cmake_dir = bdir / "cmake"
    cmake_dir.mkdir(parents=True)
    (cmake_dir / "CMakeCache.txt").write_text("", encoding="utf-8")
    rec = {
        "leg": LEG,
        "argv": ["cmake"],
        "command": "cmake",
        "toolchain": "msvc-amd64_arm64-cuda",
        "toolchain_file": "t",
        "toolchain_sha": "x",
        "cmake_dir": cmake_dir.as_posix(),
        "source_tree": "s",
        "cache": {},
        "launcher": launcher,
    }
    (bdir / "configure.json").write_text(json.dumps(rec), encoding="utf-8")
    return build.BuildPlan(
        LEG,
        ["cmake", "--build", cmake_dir.as_posix(), "--target", "ggml-cuda"],
        ["ggml-cuda"],
        False,
        cmake_dir,
        cmake_dir / "bin",
        bdir / "build.json",
        bdir / "logs" / "build.log",
        2,
        True,
        shards,
    )


NONE = {"name": None, "path": None, "version": "", "refused": "ccache not installed; sccache not installed"}


def test_a_shard_without_a_compiler_cache_is_refused_before_it_compiles(workdir):
    bp = _plan(workdir, NONE)
    plan = shard_build.ShardPlan(bp, ShardRef(2, 3), paths.build_dir(LEG) / "shard")
    with pytest.raises(BundleGraphError) as e:
        shard_build.run_shard(plan)
    msg = str(e.value)
    assert "\n" not in msg
    assert msg.startswith(f"build:{LEG}: shard 2/3 of a leg of 3 shards without a compiler cache ")
    assert "(ccache not installed; sccache not installed)" in msg and f"configure:{LEG} again" in msg
    assert not plan.out_dir.exists() and not bp.log.exists()  # nothing half-written, nothing compiled


def test_a_final_compile_of_merged_shards_without_a_compiler_cache_is_refused(workdir):
    bp = _plan(workdir, {"name": None, "refused": "BUNDLEGRAPH_LAUNCHER=none"})
    shard_guard.write_merged(paths.build_dir(LEG), LEG, ["1/3", "2/3", "3/3"], 3, OBJS, remote=False)
    with pytest.raises(BundleGraphError, match=r"the final compile of a leg of 3 shards without a compiler cache "):
        build.run_build(bp)
    assert not bp.record.exists()


def test_a_final_compile_whose_shard_never_arrived_fails_before_it_compiles(workdir, tmp_path):
    """shard-merge --leg found shard 1 of 3 only (issue 51: the workflow swallowed its exit 1 and the
    final compile recompiled everything): the final compile fails naming the leg, the missing
    shards and their artifacts, before any process starts."""
    ccache = {"name": "ccache", "path": "/nonexistent/ccache", "version": "ccache version 4.14.2"}
    bp = _plan(workdir, ccache)
    root = tmp_path / "shards"
    (root / f"shard-{LEG}-1").mkdir(parents=True)
    (root / f"shard-{LEG}-1" / "shard.json").write_text(json.dumps(_shard_json(1, 3, OBJS[:1])), encoding="utf-8")
    res = shard_build.merge_shards(root, None, None, {LEG: 3})
    assert res.problems == [
        f"{LEG}: shard 2/3, 3/3 did not arrive: no shard.json of them under {root} (artifact shard-{LEG}-2, "
        f"shard-{LEG}-3); the final compile refuses to compile their objects itself: re-run the failed shard job"
    ]
    with pytest.raises(BundleGraphError) as e:
        build.run_build(bp)
    record = paths.build_dir(LEG) / shard_guard.MERGED
    assert str(e.value) == (
        f"build:{LEG}: the final compile of a leg of 3 shards: shard 2/3, 3/3 did not arrive (artifact "
        f"shard-{LEG}-2, shard-{LEG}-3; {record}): its objects would be compiled here, slower and maybe past the "
        f"job's limit; re-run the failed shard job (or delete {shard_guard.MERGED} to build the leg as a local build)"
    )
    assert not bp.record.exists()


def test_shard_merge_records_a_leg_of_which_no_shard_arrived(workdir, tmp_path):
    res = shard_build.merge_shards(tmp_path / "absent", None, None, {LEG: 2})
    assert res.problems == [
        f"{LEG}: shard 1/2, 2/2 did not arrive: no shard.json of them under {tmp_path / 'absent'} (artifact "
        f"shard-{LEG}-1, shard-{LEG}-2); the final compile refuses to compile their objects itself: re-run the "
        f"failed shard job"
    ]
    merged = shard_guard.read_merged(paths.build_dir(LEG))
    assert merged is not None and merged["shards"] == [] and merged["of"] == 2
    assert shard_guard.absent_shards(merged) == ["1/2", "2/2"]


def test_a_local_build_of_a_sharded_leg_is_no_final_compile():
    """Without shard-merge's record nothing is judged: a local build may miss (a warning)."""
    assert shard_guard.read_merged(Path("/nonexistent")) is None


def test_shortfall_names_the_leg_and_each_object_the_shards_wrote_and_the_final_compile_missed(workdir):
    f = shard_guard.write_merged(paths.build_dir(LEG), LEG, ["2/3", "1/3", "3/3"], 3, OBJS + OBJS[:1], remote=True)
    merged = shard_guard.read_merged(f.parent)
    assert merged is not None
    assert merged["shards"] == ["1/3", "2/3", "3/3"] and merged["objects"] == sorted(OBJS) and merged["remote_storage"]
    assert shard_guard.shortfall(merged, list(OBJS), list(OBJS), hits=3) == ([], "")
    # an object no shard wrote (a missing shard's) is not the shards' loss
    assert shard_guard.shortfall(merged, [*OBJS, "other.obj"], list(OBJS), hits=3) == ([], "")
    # missed or uncacheable alike: compiled here and not a hit (Windows separators too)
    lost, line = shard_guard.shortfall(merged, [o.replace("/", "\\") for o in OBJS], [OBJS[0], OBJS[2]], hits=2)
    assert lost == [OBJS[1]]
    assert line == (
        f"build:{LEG}: the final compile got 2 cache hit(s) but its 3 of 3 shards wrote 3 object(s); "
        f"it missed 1: {OBJS[1]}"
    )
    # no ninja log to tell which: fewer hits than objects fails, saying the objects are unknown
    lost, line = shard_guard.shortfall(merged, None, None, hits=1)
    assert lost == [] and line.endswith("it missed 2: (objects unknown: no ninja log)")
    assert shard_guard.shortfall(merged, None, None, hits=3) == ([], "")
    (f.parent / shard_guard.MERGED).write_text("{not json", encoding="utf-8")
    assert shard_guard.read_merged(f.parent) is None


def test_the_record_summary_and_log_of_a_short_final_compile_name_the_leg_and_the_misses(
    workdir, tmp_path, monkeypatch, capsys
):
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    ccache = {"name": "ccache", "path": "/nonexistent/ccache", "version": "ccache version 4.14.2"}
    bp = _plan(workdir, ccache)
    merged = {"format": shard_guard.FORMAT, "leg": LEG, "shards": ["1/3", "2/3", "3/3"], "of": 3, "objects": OBJS}
    measured = Measured(missed=[OBJS[0], OBJS[2]], hit=[OBJS[1]], compiled=list(OBJS))
    stats_log = tmp_path / "absent.log"  # no stats log: counters empty, no process
    stats = build.record_cache_stats(bp, ccache, {}, stats_log, 12.0, ok=True, measured=measured, merged=merged)
    assert stats is not None
    rec = json.loads((paths.build_dir(LEG) / "compiler-cache.json").read_text(encoding="utf-8"))
    assert rec["shards_wrote"] == 3 and rec["shard_missed"] == sorted([OBJS[0], OBJS[2]])
    assert rec["shard_shortfall"].startswith(f"build:{LEG}: the final compile got 0 cache hit(s) but its 3 of 3 shards")
    assert rec["missed_objects"] == sorted([OBJS[0], OBJS[2]])
    text = summary.read_text(encoding="utf-8")
    assert f"### build:{LEG}: the final compile missed 2 object(s) (FAILED)" in text
    assert f"- `{OBJS[0]}`" in text and f"- `{OBJS[2]}`" in text and "the compile step fails" in text
    err = capsys.readouterr().err
    assert rec["shard_shortfall"] in err
    # every object a hit: no shortfall, no failure
    measured = Measured(hit=list(OBJS), compiled=list(OBJS))
    stats = build.record_cache_stats(bp, ccache, {}, stats_log, 1.0, ok=True, measured=measured, merged=merged)
    assert stats is not None and "shard_shortfall" not in stats and stats["shards_wrote"] == 3


def _shard_json(i: int, n: int, objs: list[str]) -> dict:
    """A shard build's ``shard.json`` of shard ``i/n`` of :data:`LEG` that compiled ``objs``."""
    return {
        "format": shard_build.SHARD_FORMAT,
        "leg": LEG,
        "shard": f"{i}/{n}",
        "objects": objs,
        "predicted_seconds": 1.0,
        "jobs": 1,
        "seconds": 1.0,
        "costs_from": "the stated estimates",
        "split_digest": "0" * 64,
        "measured": {},
        "cache": None,
        "cache_entries_added": 0,
        "remote_storage": False,
    }


def test_shard_merge_leaves_what_the_shards_compiled_for_the_final_compile(workdir, tmp_path):
    root = tmp_path / "shards"
    for i, objs in ((1, OBJS[:2]), (2, OBJS[2:])):
        d = root / f"shard-{LEG}-{i}"
        d.mkdir(parents=True)
        (d / "shard.json").write_text(json.dumps(_shard_json(i, 2, objs)), encoding="utf-8")
    res = shard_build.merge_shards(root, None, None)
    assert res.problems == [] and res.legs[LEG] == {"shards": 2, "of": 2, "measured": 0, "objects": 3}
    merged = shard_guard.read_merged(paths.build_dir(LEG))
    assert merged is not None and merged["objects"] == sorted(OBJS) and merged["shards"] == ["1/2", "2/2"]
    assert merged["leg"] == LEG and merged["remote_storage"] is False


def test_a_shard_whose_compiles_were_uncacheable_fails_naming_ccaches_reasons():
    stats = {"uncacheable": 4, "counters": {"unsupported_compiler_option": 4, "cache_miss": 0, "direct_cache_miss": 4}}
    line = shard_guard.uncacheable_problem(LEG, "1/3", stats)
    assert line.startswith(f"build:{LEG}: shard 1/3: 4 compile(s) could not be cached (unsupported_compiler_option: 4)")
    assert "CCACHE_DEBUG=1" in line and "\n" not in line
    assert shard_guard.uncacheable_problem(LEG, "1/3", {"uncacheable": 0, "counters": {"cache_miss": 4}}) == ""


def test_an_uncacheable_final_compile_fails_like_a_missing_one(workdir, tmp_path):
    """Every compile uncacheable (0 hits, 0 misses): the shards' work was lost all the same."""
    ccache = {"name": "ccache", "path": "/nonexistent/ccache", "version": "ccache version 4.14.2"}
    bp = _plan(workdir, ccache)
    merged = {"format": shard_guard.FORMAT, "leg": LEG, "shards": ["1/3", "2/3", "3/3"], "of": 3, "objects": OBJS}
    measured = Measured(compiled=list(OBJS))  # ccache said "uncacheable" for each: neither hit nor missed
    stats = build.record_cache_stats(
        bp, ccache, {}, tmp_path / "absent.log", 1.0, ok=True, measured=measured, merged=merged
    )
    assert stats is not None and stats["shard_missed"] == sorted(OBJS) and stats["missed_objects"] == []
