"""Shards without processes: the I/N parser, the longest-first split, cost records, ninja's query
and log formats, ccache's stats log, what a build measured."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bundlegraph.core.errors import BundleGraphError
from bundlegraph.pipeline.compile import costs
from bundlegraph.pipeline.compile.build_measure import measure
from bundlegraph.pipeline.compile.compiler_cache import results_by_source
from bundlegraph.pipeline.compile.ninja_graph import CompileStep, object_key, parse_query, read_ninja_log
from bundlegraph.pipeline.compile.shards import ESTIMATE_SECONDS, costed, estimate, makespan, parse_shard, split


@pytest.mark.parametrize(
    "raw, says",
    [
        ("3/2", "shard=3/2: I must be between 1 and 2"),
        ("0/2", "shard=0/2: I must be between 1 and 2"),
        ("a/b", "shard='a/b': expected I/N, two whole numbers with 1 <= I <= N (e.g. 1/3)"),
        ("1/1", "shard=1/1: N must be at least 2"),
        ("", "shard='': expected I/N"),
        ("2", "shard='2': expected I/N"),
    ],
)
def test_a_bad_shard_is_one_line_naming_the_value(raw, says):
    with pytest.raises(BundleGraphError) as e:
        parse_shard(raw)
    assert says in str(e.value) and "\n" not in str(e.value)


def test_a_good_shard_parses_and_prints_as_written():
    s = parse_shard(" 2 / 3 ")
    assert (s.index, s.count, str(s)) == (2, 3, "2/3")
    with pytest.raises(BundleGraphError) as e:
        parse_shard("x", "BUNDLEGRAPH_SHARD")
    assert "BUNDLEGRAPH_SHARD='x'" in str(e.value)


def _steps(costs_by_name: dict[str, float]) -> list:
    return costed(
        [CompileStep(f"d/{n}.o", f"/src/{n}", "CUDA") for n in costs_by_name],
        {f"d/{n}": c for n, c in costs_by_name.items()},
        2,
    )


def test_split_is_longest_first_balanced_complete_and_deterministic():
    c = {"fattn-a.cu": 60, "fattn-b.cu": 58, "mmq-a.cu": 55, "mmq-b.cu": 50, **{f"small{i}.cu": 5 for i in range(20)}}
    steps = _steps(c)
    a = split(steps, 3)
    b = split(list(reversed(steps)), 3)
    assert [s.outputs for s in a] == [s.outputs for s in b]  # the order given does not matter
    outs = [o for s in a for o in s.outputs]
    assert sorted(outs) == sorted(x.step.output for x in steps) and len(outs) == len(set(outs))
    loads = [s.seconds for s in a]
    assert max(loads) - min(loads) <= 5, loads  # within the smallest step of each other
    # the four heavy ones spread: no shard holds more than two of them
    assert all(sum(1 for o in s.outputs if "fattn" in o or "mmq" in o) <= 2 for s in a)


def test_split_beats_round_robin_on_real_shaped_costs():
    c = {f"heavy{i}.cu": 60 for i in range(6)} | {f"light{i}.cu": 5 for i in range(30)}
    steps = _steps(c)
    lpt = max(s.seconds for s in split(steps, 3))
    rr = max(sum(x.seconds for x in sorted(steps, key=lambda x: x.step.output)[i::3]) for i in range(3))
    assert lpt <= rr and lpt == pytest.approx(sum(c.values()) / 3, abs=5)


def test_more_shards_than_steps_leaves_empty_shards():
    s = split(_steps({"a.cu": 1}), 3)
    assert [len(x.steps) for x in s] == [1, 0, 0] and s[2].wall(3) == 0


def test_estimates_are_the_stated_ones():
    assert estimate(CompileStep("x.cu.o", "x.cu", "CUDA"), 7) == 7 * ESTIMATE_SECONDS["CUDA_PER_ARCH"]
    assert estimate(CompileStep("x.c.o", "x.c", "C"), 2) == ESTIMATE_SECONDS["C"]
    c = costed([CompileStep("d/x.cu.o", "x.cu", "CUDA")], {}, 2)[0]
    assert not c.measured and c.seconds == 30.0


def test_makespan_is_the_longest_first_list_schedule():
    assert makespan([10, 10, 10], 3) == 10
    assert makespan([10, 10, 10, 10], 3) == 20
    assert makespan([62, 5, 5, 5], 3) == 62  # one template instance bounds a shard
    assert makespan([], 3) == 0


def test_object_key_names_linux_and_windows_objects_alike():
    assert (
        object_key("ggml/src/ggml-cuda/CMakeFiles/ggml-cuda.dir/argmax.cu.o")
        == object_key("ggml\\src\\ggml-cuda\\CMakeFiles\\ggml-cuda.dir\\argmax.cu.obj")
        == "ggml/src/ggml-cuda/CMakeFiles/ggml-cuda.dir/argmax.cu"
    )


QUERY = """\
ggml-cuda:
  input: phony
    bin/libggml-cuda.so
  outputs:
bin/libggml-cuda.so:
  input: CUDA_SHARED_LIBRARY_LINKER__ggml-cuda_Release
    ggml/src/ggml-cuda/CMakeFiles/ggml-cuda.dir/argmax.cu.o
    | bin/libggml-base.so
    || cmake_object_order_depends_target_ggml-cuda
  outputs:
    ggml-cuda
ggml/src/ggml-cuda/CMakeFiles/ggml-cuda.dir/argmax.cu.o:
  input: CUDA_COMPILER__ggml-cuda_unscanned_Release
    /src/ggml/src/ggml-cuda/argmax.cu
    || cmake_object_order_depends_target_ggml-cuda
  outputs:
    bin/libggml-cuda.so
/src/ggml/src/ggml-cuda/argmax.cu:
  outputs:
    ggml/src/ggml-cuda/CMakeFiles/ggml-cuda.dir/argmax.cu.o
"""


def test_ninja_query_output_parses_into_rules_and_built_inputs():
    q = parse_query(QUERY)
    assert q["ggml-cuda"].rule == "phony" and q["ggml-cuda"].inputs == ["bin/libggml-cuda.so"]
    link = q["bin/libggml-cuda.so"]
    assert link.inputs == ["ggml/src/ggml-cuda/CMakeFiles/ggml-cuda.dir/argmax.cu.o", "bin/libggml-base.so"]
    obj = q["ggml/src/ggml-cuda/CMakeFiles/ggml-cuda.dir/argmax.cu.o"]
    assert obj.rule.startswith("CUDA_COMPILER__") and obj.inputs == ["/src/ggml/src/ggml-cuda/argmax.cu"]
    assert q["/src/ggml/src/ggml-cuda/argmax.cu"].rule is None


def test_ninja_log_gives_the_last_seconds_of_each_output(tmp_path):
    log = tmp_path / ".ninja_log"
    log.write_text("# ninja log v7\n0\t5200\t1\ta.cu.o\tff\n10\t20\t2\tb.c.o\tee\nbad line\n0\t61000\t3\ta.cu.o\tdd\n")
    assert read_ninja_log(log) == {"a.cu.o": 61.0, "b.c.o": 0.01}
    assert read_ninja_log(tmp_path / "none") == {}
    log.write_text("not a log\n")
    with pytest.raises(BundleGraphError, match="not a ninja log"):
        read_ninja_log(log)


def test_ccache_stats_log_tells_hits_from_misses(tmp_path):
    f = tmp_path / "stats.log"
    f.write_text(
        "# /src/a.cu\ncache_miss\ndirect_cache_miss\nlocal_storage_write\n"
        "# /src/b.cu\ndirect_cache_hit\nlocal_storage_hit\n# /src/c.c\ncalled_for_link\n"
    )
    assert results_by_source(f) == {"/src/a.cu": "miss", "/src/b.cu": "hit", "/src/c.c": "uncacheable"}
    assert results_by_source(tmp_path / "none") == {}


def test_a_build_measures_real_compiles_only(tmp_path):
    steps = [CompileStep("d/a.cu.o", "/src/a.cu", "CUDA"), CompileStep("d/b.cu.o", "/src/b.cu", "CUDA")]
    ran = {"d/a.cu.o": 40.0, "d/b.cu.o": 0.1, "bin/lib.so": 3.0}
    m = measure(steps, ran, {"/src/a.cu": "miss", "/src/b.cu": "hit"}, tmp_path)
    assert m.objects == {"d/a.cu": 40.0} and m.missed == ["d/a.cu.o"] and m.hit == ["d/b.cu.o"]
    assert m.other == {"bin/lib.so": 3.0}
    nocache = measure(steps, ran, None, tmp_path)  # no compiler cache: every compile was real, none "missed"
    assert nocache.objects == {"d/a.cu": 40.0, "d/b.cu": 0.1} and nocache.missed == []
    # a custom command logged under its absolute name (ggml-opencl's kernel headers) is keyed
    # inside the build folder, once: a committed record names no machine's folder
    gen = {f"{tmp_path.as_posix()}/gen/add.cl.h": 0.2, "gen/add.cl.h": 0.2, "/elsewhere/x.h": 1.0}
    assert measure(steps, gen, None, tmp_path).other == {"gen/add.cl.h": 0.2, "/elsewhere/x.h": 1.0}


@pytest.mark.parametrize(
    "body, says",
    [
        (b"{not json", "not JSON"),
        (b'{"format": "other/1", "leg": "L"}', "format 'other/1'"),
        (b"[]", "format 'list'"),
        (
            b'{"format": "bundlegraph-costs/1", "leg": "L", "objects": {"a": -1}}',
            "objects.a: -1 is not a number of seconds",
        ),
        (b'{"format": "bundlegraph-costs/1", "leg": "L", "objects": {"a": "5"}}', "objects.a: '5' is not a number"),
        (b'{"format": "bundlegraph-costs/1", "leg": "M", "objects": {}}', "the record is of 'M', expected 'L'"),
        (b'{"format": "bundlegraph-costs/1", "leg": "L", "extra": 1}', "unknown key 'extra'"),
        (b'{"format": "bundlegraph-costs/1", "objects": {}}', "leg: missing"),
        (b'{"format": "bundlegraph-costs/1", "leg": 7}', "leg: 7 is not text"),
        (b'{"format": "bundlegraph-costs/1", "leg": "L", "objects": [1]}', "objects: expected an object of seconds"),
        (b'{"format": "bundlegraph-costs/1", "leg": "L", "other": {"x": true}}', "other.x: True is not a number"),
    ],
)
def test_a_cost_record_that_is_not_one_is_refused_in_one_line_naming_the_file(tmp_path, body, says):
    f = tmp_path / "L.json"
    f.write_bytes(body)
    with pytest.raises(costs.CostRecordError) as e:
        costs.load(f, "L")
    msg = str(e.value)
    assert msg.startswith(str(f)) and says in msg and "\n" not in msg


def test_a_cost_record_round_trips_and_merges(tmp_path, monkeypatch):
    monkeypatch.setenv("BUNDLEGRAPH_COSTS", str(tmp_path / "costs"))
    r = costs.CostRecord("L", {"b": 2.04, "a": 1.0}, {"bin/x": 3.0}, "cold")
    p = costs.save(r)
    assert p == tmp_path / "costs" / "L.json"
    back = costs.find("L", None)
    assert back is not None and dict(back.objects) == {"a": 1.0, "b": 2.0} and back.note == "cold"
    assert back.to_json() == p.read_bytes()  # sorted, rounded, stable
    assert json.loads(p.read_text())["format"] == "bundlegraph-costs/1"
    merged = back.merged({"b": 9.0, "c": 1.0})
    assert dict(merged.objects) == {"a": 1.0, "b": 9.0, "c": 1.0}


def test_cost_records_are_found_in_order(tmp_path, monkeypatch):
    bundles = tmp_path / "bundles"
    (bundles / "costs").mkdir(parents=True)
    costs.save(costs.CostRecord("L", {"seed": 1.0}), bundles / "costs")
    monkeypatch.setenv("BUNDLEGRAPH_WORKDIR", str(tmp_path / "work"))
    monkeypatch.delenv("BUNDLEGRAPH_COSTS", raising=False)
    assert dict(costs.find("L", bundles).objects) == {"seed": 1.0}  # the committed seed
    costs.save(costs.CostRecord("L", {"work": 1.0}), Path(tmp_path / "work" / ".bundlegraph" / "costs"))
    assert dict(costs.find("L", bundles).objects) == {"work": 1.0}  # this work directory's own
    monkeypatch.setenv("BUNDLEGRAPH_COSTS", str(tmp_path / "handed"))
    costs.save(costs.CostRecord("L", {"handed": 1.0}))
    assert dict(costs.find("L", bundles).objects) == {"handed": 1.0}  # the run's handed-out set
    assert costs.find("other", bundles) is None


def test_a_shard_record_as_written_reads_back_typed(tmp_path):
    # the shard build writes ShardRecord(...).dump(); shard-merge reads it through the same type
    from bundlegraph.schemas.shard_record import SHARD_FORMAT, ShardRecord, read_shard

    rec = ShardRecord(
        format=SHARD_FORMAT,
        leg="linux-arm64-cuda13-blackwell",
        shard="3/3",
        objects=["ggml/src/ggml-cuda/CMakeFiles/ggml-cuda.dir/argmax.cu.o"],
        predicted_seconds=5.2,
        jobs=3,
        seconds=6,  # an int of seconds is a number too
        costs_from="bundles/costs/linux-arm64-cuda13-blackwell.json",
        split_digest="a" * 64,
        measured={"ggml/src/ggml-cuda/CMakeFiles/ggml-cuda.dir/argmax.cu": 5.0},
        cache={"launcher": "ccache", "version": "4.14.2", "hits": 0, "misses": 1, "remote": None},
        cache_entries_added=2,
        remote_storage=False,
    )
    f = tmp_path / "shard.json"
    f.write_text(json.dumps(rec.dump()), encoding="utf-8")
    back = read_shard(f)
    assert back == rec and (back.index, back.count) == (3, 3)


def test_an_absurd_shard_count_is_refused_in_one_line():
    """``shard=1/99999999999999999999999`` was accepted (issue 51): N is at most a spec's
    ``[build] shards`` bound, and a number of thousands of digits is one line, not int()'s error."""
    from bundlegraph.pipeline.compile.shards import ShardRef, count_problem
    from bundlegraph.schemas.records import MAX_SHARDS

    for text, says in (
        ("1/99999999999999999999999", f"shard=1/99999999999999999999999: N must be at most {MAX_SHARDS} "),
        (f"1/{MAX_SHARDS + 1}", f"shard=1/{MAX_SHARDS + 1}: N must be at most {MAX_SHARDS} "),
        ("99999999999999/3", "shard=99999999999999/3: I must be between 1 and 3"),
        ("2/" + "9" * 5000, f"N must be at most {MAX_SHARDS}"),
    ):
        with pytest.raises(BundleGraphError) as e:
            parse_shard(text)
        assert says in str(e.value) and "\n" not in str(e.value), str(e.value)[:300]
    assert parse_shard(f"0002/{MAX_SHARDS}") == ShardRef(2, MAX_SHARDS)
    assert count_problem("L", 4, 3, ["ggml-cuda"]) == (
        "build:L: 4 shards, but its targets (ggml-cuda) have 3 compile step(s): a shard would compile nothing; "
        "set [build] shards to at most 3"
    )
    assert count_problem("L", 99, 500, []).startswith(f"L: 99 shards: expected 1 to {MAX_SHARDS}")
    assert count_problem("L", 3, 3, []) == ""
