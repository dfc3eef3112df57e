"""Fail early, respect people (issue 39, item 5): what is wrong is said in one line before work
starts, never as a traceback and never hours later.

- ``bundlegraph check-tag`` (the release workflow's plan job, before any compile): a run on a tag
  other than release.toml's is refused naming both; a branch run publishes nothing and passes;
- a damaged ``shard.json`` or cost record reaching ``shard-merge`` is refused naming the file,
  the key and the value (before: a traceback, exit 70), and nothing is merged."""

from __future__ import annotations

import json
from pathlib import Path

import graphrun
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]


def test_a_run_on_another_tag_is_refused_before_any_compile(tmp_path):
    bundles, work = graphrun.standin_tree(tmp_path)
    tag = graphrun.cli(["plan", "--json"], bundles=bundles, workdir=work)
    release_tag = json.loads(tag.stdout)["release"]["tag"]
    f = bundles / "release.toml"

    r = graphrun.cli(["check-tag"], bundles=bundles, workdir=work, GITHUB_REF="refs/tags/b1-other")
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stdout + r.stderr
    want = f"check-tag: the run's tag is b1-other, but {f} has tag {release_tag}: refused before any compile"
    assert want in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr

    r = graphrun.cli(["check-tag", "--ref", f"refs/tags/{release_tag}"], bundles=bundles, workdir=work)
    assert r.returncode == 0 and f"refs/tags/{release_tag} is {f}'s tag" in r.stdout, r.stdout + r.stderr
    # a dispatch on a branch (issue 51): refused, one line, exit 2
    r = graphrun.cli(["check-tag"], bundles=bundles, workdir=work, GITHUB_REF="refs/heads/main")
    want = f"check-tag: refs/heads/main is not a tag: a release runs only for {f}'s tag {release_tag}, refused"
    assert r.returncode == 2 and want in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stdout + r.stderr
    r = graphrun.cli(["check-tag", "--ref", "refs/pull/7/merge"], bundles=bundles, workdir=work)
    assert r.returncode == 2 and "refs/pull/7/merge is not a tag" in r.stderr, r.stdout + r.stderr
    r = graphrun.cli(["check-tag"], bundles=bundles, workdir=work, GITHUB_REF="")
    assert r.returncode == 2 and "check-tag: no ref" in r.stderr


def test_the_plan_job_checks_the_tag_before_the_matrix_is_made():
    plan = yaml.safe_load((ROOT / ".github" / "workflows" / "release.yml").read_text(encoding="utf-8"))["jobs"]["plan"]
    runs = [s.get("run", "") for s in plan["steps"]]
    check = next(i for i, r in enumerate(runs) if r.strip() == "bundlegraph check-tag")
    assert check < next(i for i, r in enumerate(runs) if "bundlegraph matrix" in r)  # every compile needs the matrix


def _shard(**changes) -> dict:
    """A good shard.json of the stand-in's CUDA leg (as a shard build writes it), with ``changes``."""
    from bundlegraph.schemas.shard_record import SHARD_FORMAT, ShardRecord

    good = ShardRecord(
        format=SHARD_FORMAT,
        leg="mini-linux-arm64-cuda",
        shard="2/3",
        objects=["ggml/a.cu.o"],
        predicted_seconds=40.0,
        jobs=2,
        seconds=41.5,
        costs_from="the stated estimates",
        split_digest="0" * 64,
        measured={"ggml/a.cu": 40.2},
        cache=None,
        cache_entries_added=0,
        remote_storage=False,
    ).dump()
    for k, v in changes.items():
        if v is None:
            del good[k]
        else:
            good[k] = v
    return good


@pytest.mark.parametrize(
    "changes, says",
    [
        ({"shard": "2/x"}, 'shard: "2/x": expected I/N, two whole numbers with 1 <= I <= N (e.g. 2/3)'),
        ({"shard": "4/3"}, 'shard: "4/3": I must be between 1 and 3'),
        ({"measured": {"ggml/a.cu": "fast"}}, 'measured.ggml/a.cu: "fast": Input should be a valid number'),
        ({"measured": 12}, "measured: 12: Input should be a valid dictionary"),
        ({"seconds": None}, "seconds: missing"),
        ({"format": "bundlegraph-shard/0"}, 'format: "bundlegraph-shard/0": not a shard record'),
    ],
)
def test_a_damaged_shard_json_is_refused_in_one_line_and_nothing_is_merged(tmp_path, changes, says):
    bundles, work = graphrun.standin_tree(tmp_path)
    good, bad = tmp_path / "shards" / "shard-1", tmp_path / "shards" / "shard-2"
    for d in (good, bad):
        (d / "ccache" / "a").mkdir(parents=True)
        (d / "ccache" / "a" / "entryR").write_bytes(b"an entry")
    (good / "shard.json").write_text(json.dumps(_shard(shard="1/3")), encoding="utf-8")
    (bad / "shard.json").write_text(json.dumps(_shard(**changes)), encoding="utf-8")
    cache = tmp_path / "cache"
    r = graphrun.cli(
        ["shard-merge", str(tmp_path / "shards"), "--cache-dir", str(cache)], bundles=bundles, workdir=work
    )
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stdout + r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and f"{bad / 'shard.json'}: {says}" in lines[0], r.stderr
    assert not any(p.is_file() for p in cache.rglob("*")) and not (work / ".bundlegraph" / "costs").exists()


def test_a_damaged_cost_record_is_refused_in_one_line_by_shard_merge(tmp_path):
    bundles, work = graphrun.standin_tree(tmp_path)
    (tmp_path / "shards" / "s1").mkdir(parents=True)
    (tmp_path / "shards" / "s1" / "shard.json").write_text(json.dumps(_shard()), encoding="utf-8")
    record = work / ".bundlegraph" / "costs" / "mini-linux-arm64-cuda.json"
    record.parent.mkdir(parents=True)
    body = {"format": "bundlegraph-costs/1", "leg": "mini-linux-arm64-cuda", "objects": {"ggml/b.cu": "12s"}}
    record.write_text(json.dumps(body), encoding="utf-8")
    r = graphrun.cli(
        ["shard-merge", str(tmp_path / "shards"), "--cache-dir", str(tmp_path / "c")], bundles=bundles, workdir=work
    )
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stdout + r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and f"{record}: objects.ggml/b.cu: '12s' is not a number of seconds >= 0" in lines[0], (
        r.stderr
    )
    assert json.loads(record.read_text(encoding="utf-8")) == body  # left as it was
