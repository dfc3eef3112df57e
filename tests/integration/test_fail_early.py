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
    r = graphrun.cli(["check-tag"], bundles=bundles, workdir=work, GITHUB_REF="refs/heads/main")
    assert r.returncode == 0 and "refs/heads/main is not a tag: this run publishes nothing" in r.stdout, r.stdout
    r = graphrun.cli(["check-tag"], bundles=bundles, workdir=work, GITHUB_REF="")
    assert r.returncode == 2 and "check-tag: no ref" in r.stderr


def test_the_plan_job_checks_the_tag_before_the_matrix_is_made():
    plan = yaml.safe_load((ROOT / ".github" / "workflows" / "release.yml").read_text(encoding="utf-8"))["jobs"]["plan"]
    runs = [s.get("run", "") for s in plan["steps"]]
    check = next(i for i, r in enumerate(runs) if r.strip() == "bundlegraph check-tag")
    assert check < next(i for i, r in enumerate(runs) if "bundlegraph matrix" in r)  # every compile needs the matrix
