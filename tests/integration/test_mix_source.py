"""Mix releases (issue 31): an upstream build plus pinned pull requests, fetched from a real git
server (``git daemon`` on 127.0.0.1, serving ``refs/pull/<n>/head`` as GitHub does) and merged
with real git. The stand-in's pull request adds a program; it reaches the bundle, the manifest
and index headers name the base, the pins and the merged commit, and the installer parses
those headers. A conflict, a moved head, a base whose bytes differ and a stated tag that is not
the pins' are each refused, naming the culprit."""

from __future__ import annotations

import json
import re
import shutil
import tarfile
from pathlib import Path

import graphrun
import pytest
from conftest import linux_only, require_input, require_tools
from gitkit import GitServer, archive_sha256, mix_release_text, standin_repository

from bundlegraph.schemas.records import MixPin, PullPin, mix_tag

ROOT = Path(__file__).resolve().parents[2]
X64 = "mini-linux-x64-cpu"
PROGRAM = "llama-diffusion-gemma-visual-server"

pytestmark = linux_only


def _release_toml(url: str, shas: dict[str, str], sha256: str, prs: list[int], tag: str | None = None) -> str:
    legs = ["mini-linux-arm64-cpu", "mini-linux-arm64-cuda", "mini-linux-x64-cpu"]
    return mix_release_text(
        url, ("b42", shas["base"], sha256), [(n, shas[str(n)]) for n in prs], default_legs=legs, tag=tag
    )


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    require_tools("git", "gcc", "g++")
    root = tmp_path_factory.mktemp("git")
    with GitServer(root / "srv") as srv:
        shas = standin_repository(srv, (1, 2))
        yield srv, shas, archive_sha256(root / "srv" / "minillama", shas["base"])


def _tree(tmp_path: Path, text: str) -> tuple[Path, Path]:
    bundles, work = graphrun.standin_tree(tmp_path)
    (bundles / "release.toml").write_text(text, encoding="utf-8")
    return bundles, work


def test_a_mix_release_builds_the_merged_tree_and_says_so(server, tmp_path):
    require_tools("aarch64-linux-gnu-gcc", "aarch64-linux-gnu-g++")
    require_input("cuda-13.5-sbsa-cross")
    srv, shas, sha256 = server
    bundles, work = _tree(tmp_path, _release_toml(srv.url("minillama"), shas, sha256, [1]))
    tag = mix_tag("b42", [PullPin(repo="example/minillama", number=1, sha=shas["1"])])
    assert re.fullmatch(r"b42-mix-[0-9a-f]{7}", tag)

    plan = graphrun.cli(["plan"], bundles=bundles, workdir=work)
    assert plan.returncode == 0, plan.stderr
    assert f"release {tag}: mix of upstream build b42" in plan.stdout, plan.stdout[:2000]
    assert f"+ example/minillama#1 at {shas['1']}" in plan.stdout

    r = graphrun.doit([], bundles=bundles, workdir=work)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-3000:]
    src = json.loads((work / "build" / X64 / "source.json").read_text())
    merged = src["commit"]
    assert merged not in (shas["base"], shas["1"]) and src["kind"] == "mix"

    bundle = work / "dist" / f"app-{tag}-linux-x64-cpu.tar.gz"
    with tarfile.open(bundle) as t:
        names = {Path(m.name).name for m in t.getmembers()}
    assert PROGRAM in names  # the pull request's program reached the bundle

    index = json.loads((work / "dist" / "llama-prebuilt-sha256.json").read_text())
    manifest = json.loads((work / "dist" / "llama-prebuilt-manifest.json").read_text())
    for head in (index, manifest):
        assert head["release_tag"] == tag and head["upstream_tag"] == "b42"
        assert head["source_commit"] == merged and head["source_ref_kind"] == "mix"
        assert head["merged_prs"] == [
            {
                "repo": "example/minillama",
                "number": 1,
                "sha": shas["1"],
                "url": "https://github.com/example/minillama/pull/1",
                "title": None,
            }
        ]
    assert f"llama.cpp-source-commit-{merged}.tar.gz" in index["artifacts"]

    # the installer the manifest serves parses those headers (unsloth 2026.10.9)
    import installerkit

    inst = installerkit.installer()
    parsed = inst.parse_approved_release_checksums("example/fork", tag, index)
    assert parsed.release_tag == tag and parsed.upstream_tag == "b42" and parsed.source_commit == merged
    # the installer knows the source kinds tag/branch/pull/commit/custom, not the fork's "mix":
    # it keeps None for it (docs/installer-contract.md)
    assert parsed.source_ref_kind is None

    # the second-run check: with the pull request's program in every bundle, an installed bundle
    # needs no backfill, so the installer's next run downloads nothing (without it, every run
    # re-downloads: test_installer_contract.py)
    cov = graphrun.cli(["coverage", "--json", str(work / "dist")], bundles=bundles, workdir=work)
    assert cov.returncode == 0, cov.stderr
    rows = json.loads(cov.stdout)["rows"]
    assert not any(json.loads(cov.stdout)["redownloaded_every_run"].values())
    with installerkit.released(inst, work / "dist") as served:
        got = installerkit.backfill_after_install(inst, rows, served, tmp_path / "installs")
    assert len(got) == 3 and not any(got.values()), got

    # a consumer's check from an empty folder: the pull request and the merge commit the
    # provenance states are the index's, field by field (verify-release reads no spec file)
    empty = tmp_path / "consumer"
    empty.mkdir()
    r = graphrun.cli(
        ["verify-release", str(work / "dist"), "--no-authenticate"], bundles=empty / "no-bundles", workdir=empty
    )
    assert r.returncode == 0, r.stdout + r.stderr


def test_a_conflicting_pull_request_is_refused_naming_it_and_its_files(server, tmp_path):
    srv, shas, sha256 = server
    bundles, work = _tree(tmp_path, _release_toml(srv.url("minillama"), shas, sha256, [1, 2]))
    r = graphrun.doit([f"source:{X64}"], bundles=bundles, workdir=work)
    assert r.returncode != 0
    out = r.stdout + r.stderr
    assert "example/minillama#2" in out and "conflicts in CMakeLists.txt" in out, out[-3000:]


def test_a_pull_request_whose_head_moved_is_refused_naming_both_commits(server, tmp_path):
    srv, shas, sha256 = server
    bundles, work = _tree(tmp_path, _release_toml(srv.url("minillama"), shas, sha256, [1]))
    moved = srv.move_head("minillama", 1, "tools/extra.txt")
    try:
        # a cache of its own: the merged tree of these very pins is cached already (a cached tree is
        # what the pins make, whatever the server says now; the head is checked when fetching)
        r = graphrun.doit([f"source:{X64}"], bundles=bundles, workdir=work, BUNDLEGRAPH_CACHE=str(tmp_path / "cache"))
        assert r.returncode != 0
        out = r.stdout + r.stderr
        assert f"example/minillama#1: its head is {moved}, the pin says {shas['1']}" in out, out[-3000:]
    finally:  # put the pull request back for the other tests
        from gitkit import git

        git("update-ref", "refs/pull/1/head", shas["1"], cwd=srv.root / "minillama")


def test_a_base_whose_bytes_differ_from_the_pin_is_refused(server, tmp_path):
    srv, shas, _sha256 = server
    bundles, work = _tree(tmp_path, _release_toml(srv.url("minillama"), shas, "0" * 64, []))
    r = graphrun.doit([f"source:{X64}"], bundles=bundles, workdir=work)
    assert r.returncode != 0
    out = r.stdout + r.stderr
    assert f"the pin ([source.base] sha256) says {'0' * 64}" in out, out[-3000:]


def test_a_stated_tag_that_is_not_the_pins_is_refused_when_the_specs_load(server, tmp_path):
    srv, shas, sha256 = server
    text = _release_toml(srv.url("minillama"), shas, sha256, [1], tag="b42-mix-0000000")
    bundles, work = _tree(tmp_path, text)
    want = mix_tag("b42", [PullPin(repo="example/minillama", number=1, sha=shas["1"])])
    r = graphrun.cli(["matrix"], bundles=bundles, workdir=work)
    assert r.returncode == 2
    assert f"tag: 'b42-mix-0000000', but the base b42 with 1 pinned pull request is '{want}'" in r.stderr, r.stderr
    shutil.rmtree(work)


def test_the_same_pins_merge_to_the_same_commit_and_a_title_changes_nothing(server, tmp_path, monkeypatch):
    """The merge commit is made from the pins alone (issue 40, item 6): fixed identity, the pinned
    head's time, ``Merge <repo>#<number> at <sha>``, no user configuration. Two merges of the same
    pins, one with a cosmetic title and a user configuration that would sign the commit, give one
    commit id."""
    from gitkit import git

    from bundlegraph.pipeline.mix import fetch_and_merge
    from bundlegraph.schemas.records import BaseBuild

    srv, shas, sha256 = server
    base = BaseBuild(tag="b42", commit=shas["base"], sha256=sha256)

    def merged(name: str, title: str | None) -> str:
        pin = MixPin(
            kind="mix",
            url=srv.url("minillama"),
            base=base,
            prs=[PullPin(repo="example/minillama", number=1, sha=shas["1"], title=title)],
        )
        tree = tmp_path / name
        tree.mkdir()
        commit, got = fetch_and_merge(pin, tree, tmp_path / f"{name}.log")
        assert got == sha256
        return commit

    plain = merged("plain", None)
    user = tmp_path / "gitconfig"
    user.write_text("[user]\n\tname = someone else\n[commit]\n\tgpgsign = true\n")  # no key: would fail
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(user))
    monkeypatch.setenv("GIT_AUTHOR_DATE", "2030-01-01T00:00:00Z")
    titled = merged("titled", "a cosmetic title")
    assert plain == titled
    show = git("show", "-s", "--format=%an <%ae>|%cn <%ce>|%cI|%B", plain, cwd=tmp_path / "plain")
    assert show.strip() == (
        "bundlegraph <bundlegraph@localhost>|bundlegraph <bundlegraph@localhost>|2026-10-02T00:00:00+00:00|"
        f"Merge example/minillama#1 at {shas['1']}"
    ), show
