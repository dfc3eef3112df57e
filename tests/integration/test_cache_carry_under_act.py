"""Cost records and compiler caches carry from one release to the next, within GitHub's cache
scoping (a run restores what its own ref or the default branch saved, never another tag's).

The act test is as small as it can be: the stand-in release cut to one leg, ``mini-linux-x64-cpu``
(native GCC, no toolkit), with ``[build] shards = 2``. In a row, on one repository and one cache
store (``tests/act/cache``, scoped by ref):

1. release.yml on tag ``b42``: nothing to restore (cold, its split from the stated estimates);
   it saves nothing;
2. the default branch moves to ``b43`` and warm-caches.yml runs on that push: the leg's whole
   compile fills ``ccache-<leg>-*`` and its measured cost record, saved under ``refs/heads/main``;
3. release.yml on tag ``b43``: restores both from the default branch; its shards' compiles are all
   hits, its split uses the measured seconds, and it saves nothing either.

Without act: the stand-in's scoping itself (a tag cannot read another tag's entries)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import tomllib
import zipfile
from pathlib import Path

import actkit
import pytest
from conftest import linux_only, require_tools
from githubkit import FakeGitHub

pytestmark = linux_only

LEG = "mini-linux-x64-cpu"
TOKEN = "act-t0ken"


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, timeout=120)


def _one_leg_repo(root: Path) -> Path:
    """The stand-in repository with only :data:`LEG`, sharded in two."""
    repo = actkit.standin_repo(root / "repo")
    actkit.keep_only_leg(repo, LEG)
    spec = repo / "bundles" / f"{LEG}.toml"
    assert "[build]" not in spec.read_text()
    spec.write_text(spec.read_text() + "\n[build]\nshards = 2\n")
    _git(repo, "commit", "-qam", f"{LEG} in two shards")
    return repo


def _bump(repo: Path, build: str) -> None:
    """The default branch moves to upstream build ``build`` (as upstream.yml's bump commits)."""
    rel = repo / "bundles" / "release.toml"
    text = re.sub(r'(?m)^(tag|upstream_tag|paired_runtime_tag) = "b\d+"$', rf'\1 = "{build}"', rel.read_text())
    rel.write_text(text)
    _git(repo, "commit", "-qam", f"bump to {build}")


def _artifact(store: Path, name: str) -> dict[str, bytes]:
    z = store / "1" / name / f"{name}.zip"
    assert z.is_file(), (name, sorted(str(p.relative_to(store)) for p in store.rglob("*.zip")))
    with zipfile.ZipFile(z) as f:
        return {i.filename: f.read(i) for i in f.infolist() if not i.is_dir()}


def _act(repo: Path, root: Path, name: str, workflow: str, ref: str, gh: FakeGitHub):
    env = {
        "BUNDLEGRAPH_EXTRA_ACT_PYTHON": actkit.base_python(),
        "BUNDLEGRAPH_EXTRA_ACT_WHEELS": str(actkit.wheelhouse()),
        "BUNDLEGRAPH_GITHUB_API": gh.api,
        "BUNDLEGRAPH_CACHE": str(actkit.shared_cache()),
    }
    ev = {
        "ref": ref,
        "ref_name": ref.rsplit("/", 1)[1],
        "repository": {"full_name": actkit.REPO, "default_branch": "main"},
    }
    store = root / f"artifacts-{name}"
    r, seconds = actkit.run_act(
        repo,
        workflow,
        event="push",
        event_json=ev,
        artifacts=store,
        secrets={"GITHUB_TOKEN": TOKEN},
        env=env,
    )
    out = r.stdout + r.stderr
    (root / f"act-{name}.log").write_text(out)
    assert r.returncode == 0, f"act {name} failed after {seconds:.0f} s (log {root}/act-{name}.log):\n" + out[-8000:]
    print(f"act {name}: {seconds:.0f} s")
    return out, store


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    require_tools("gcc", "g++", "npm", "git", "jq", "flock")
    root = tmp_path_factory.mktemp("act-carry")
    repo = _one_leg_repo(root)
    out: dict[str, tuple[str, Path]] = {}
    with FakeGitHub(actkit.REPO, token=TOKEN) as gh:
        rel = tomllib.loads((repo / "bundles" / "release.toml").read_text())
        for build in ("b42", "b43"):
            gh.publish_upstream(rel["source_repo"], build, {})
        out["b42"] = _act(repo, root, "release-b42", ".github/workflows/release.yml", "refs/tags/b42", gh)
        _bump(repo, "b43")
        out["warm"] = _act(repo, root, "warm", ".github/workflows/warm-caches.yml", "refs/heads/main", gh)
        out["b43"] = _act(repo, root, "release-b43", ".github/workflows/release.yml", "refs/tags/b43", gh)
        published = {t: gh.release(t) for t in ("b42", "b43")}
    return {"repo": repo, "out": out, "published": published}


def _shard(store: Path, i: int) -> dict:
    return json.loads(_artifact(store, f"shard-{LEG}-{i}")["shard.json"])


def test_the_first_release_compiled_cold_from_the_estimates_and_saved_nothing(runs):
    out, store = runs["out"]["b42"]
    assert f"costs: {LEG}: 0 measured step(s)" in out
    assert f"cache stand-in: no entry for ccache-{LEG}-1 or ccache-{LEG}-" in out
    for i in (1, 2):
        s = _shard(store, i)
        assert s["cache"]["misses"] == len(s["objects"]) > 0 and s["cache"]["hits"] == 0, s
    assert actkit.cache_entries(runs["repo"], "refs/tags/b42") == []
    assert runs["published"]["b42"] is not None


def test_the_default_branch_warm_run_saved_the_compiler_cache_and_the_measured_costs(runs):
    out, _ = runs["out"]["warm"]
    assert actkit.cache_entries(runs["repo"], "refs/heads/main") == ["bundlegraph-costs-1", f"ccache-{LEG}-1"]
    record = json.loads(
        (runs["repo"].parent / "actions-cache" / "refs_heads_main" / "bundlegraph-costs-1" / f"{LEG}.json").read_text()
    )
    assert record["leg"] == LEG and len(record["objects"]) > 2, record
    assert re.search(rf"build:{LEG}: ccache 4\.14\.2: \d+ hits \(0 remote, \d+ local\), [1-9]\d* misses", out)


def test_the_second_release_restored_both_from_the_default_branch_and_its_shards_were_hits(runs):
    out, store = runs["out"]["b43"]
    repo = runs["repo"]
    warm = json.loads(
        (repo.parent / "actions-cache" / "refs_heads_main" / "bundlegraph-costs-1" / f"{LEG}.json").read_text()
    )
    # the plan job handed every job the warm run's measured record: the split uses measured seconds
    assert f"costs: {LEG}: {len(warm['objects'])} measured step(s)" in out
    assert "cache stand-in: restored bundlegraph-costs-1 from refs/heads/main" in out
    assert f"cache stand-in: restored ccache-{LEG}-1 from refs/heads/main" in out
    hits = 0
    for i in (1, 2):
        s = _shard(store, i)
        assert s["costs_from"].endswith(f"costs/{LEG}.json"), s["costs_from"]
        keys = [re.sub(r"\.(o|obj)$", "", o) for o in s["objects"]]
        assert keys and set(keys) <= set(warm["objects"]), (keys, sorted(warm["objects"]))
        assert abs(s["predicted_seconds"] - sum(warm["objects"][k] for k in keys)) <= 0.05 * len(keys) + 0.1, s
        assert s["cache"]["misses"] == 0 and s["cache"]["hits"] == len(s["objects"]) > 0, s
        hits += s["cache"]["hits"]
    final = "\n".join(line for line in out.splitlines() if line.startswith("[release/base"))
    assert re.search(rf"build:{LEG}: ccache 4\.14\.2: \d+ hits \(0 remote, \d+ local\), 0 misses", final), final[-3000:]
    assert actkit.cache_entries(repo, "refs/tags/b43") == []
    assert runs["published"]["b43"] is not None
    print(f"second release: its 2 shards took {hits} compiler-cache hits, 0 misses")


def _restore(tmp: Path, store: Path, ref: str, key: str, prefix: str) -> tuple[str, Path]:
    ws = tmp / f"ws-{ref.replace('/', '_')}-{key}"
    ws.mkdir(parents=True)
    (ws / "out").write_text("")
    (ws / "state").write_text("")
    (ws / "event.json").write_text(json.dumps({"repository": {"default_branch": "main"}}))
    env = {
        "PATH": os.environ["PATH"],
        "BUNDLEGRAPH_EXTRA_ACT_CACHE": str(store),
        "GITHUB_WORKSPACE": str(ws),
        "GITHUB_REF": ref,
        "GITHUB_EVENT_PATH": str(ws / "event.json"),
        "GITHUB_OUTPUT": str(ws / "out"),
        "GITHUB_STATE": str(ws / "state"),
        "INPUT_PATH": "c",
        "INPUT_KEY": key,
        "INPUT_RESTORE-KEYS": prefix,
    }
    r = subprocess.run(
        ["node", str(actkit.ACT_DIR / "cache" / "restore.js")], env=env, capture_output=True, text=True, timeout=60
    )
    assert r.returncode == 0, r.stderr
    return r.stdout, ws / "c"


def _save(store: Path, ref: str, key: str, content: str) -> None:
    d = store / ref.replace("/", "_") / key
    d.mkdir(parents=True)
    (d / "f").write_text(content)


def test_the_cache_stand_in_scopes_entries_by_ref_as_github_does(tmp_path):
    """A tag's run restores its own ref's entries, else the default branch's; never another tag's
    or a feature branch's, even with a newer or exact-key entry there."""
    require_tools("node")
    store = tmp_path / "store"
    _save(store, "refs/tags/b42", "ccache-L-7", "tag b42")
    _save(store, "refs/heads/feature", "ccache-L-9", "feature branch")
    out, c = _restore(tmp_path, store, "refs/tags/b43", "ccache-L-9", "ccache-L-")
    assert "no entry" in out and not c.exists(), out
    _save(store, "refs/heads/main", "ccache-L-3", "main")
    out, c = _restore(tmp_path, store, "refs/tags/b43", "ccache-L-7", "ccache-L-")
    assert "restored ccache-L-3 from refs/heads/main" in out and (c / "f").read_text() == "main", out
    out, c = _restore(tmp_path, store, "refs/tags/b42", "ccache-L-1", "ccache-L-")
    assert "restored ccache-L-7 from refs/tags/b42" in out and (c / "f").read_text() == "tag b42", out
