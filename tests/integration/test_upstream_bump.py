"""Tracking upstream (issue 31): ``bundlegraph upstream`` reads the release list the way upstream
publishes since 2026-08 (every bNNNN a prerelease, a v* pointer whose nightly-tag.txt names a
build, drafts, an age floor), from a GitHub releases API on 127.0.0.1 (tests/githubkit.py, replies
shaped as GitHub's REST docs give them); ``bundlegraph bump`` moves a mix release's base to a
newer build from a real git server, keeping the pins, and stops naming a pull request that no
longer merges."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import graphrun
import pytest
from conftest import linux_only, require_tools
from githubkit import Asset, FakeGitHub, Release
from gitkit import PRS, GitServer, archive_sha256, mix_release_text, standin_repository

from bundlegraph.schemas.records import PullPin, mix_tag

ROOT = Path(__file__).resolve().parents[2]

pytestmark = linux_only


def _ago(hours: float) -> str:
    return (dt.datetime.now(dt.UTC) - dt.timedelta(hours=hours)).strftime("%Y-%m-%dT%H:%M:%SZ")


def _seed(gh: FakeGitHub) -> None:
    def rel(tag: str, hours: float | None, *, pre: bool = True, draft: bool = False, assets=()) -> None:
        r = Release(gh.new_id(), tag, draft, tag, prerelease=pre, published_at=None if hours is None else _ago(hours))
        r.assets = [Asset(gh.new_id(), n, d) for n, d in assets]
        gh.releases.append(r)

    rel("b11710", None, draft=True)  # a draft: never a candidate
    rel("v1.2.0", 1.0, pre=False, assets=[("nightly-tag.txt", b"b11700\n")])  # /releases/latest's pointer
    rel("b11700", 2.0)
    rel("b11690", 30.0)
    rel("b11600", 100.0, pre=False)
    gh.commits.update({"b11700": "7" * 40, "b11690": "6" * 40, "b11600": "5" * 40})


def test_upstream_names_the_newest_build_past_the_age_floor(tmp_path):
    with FakeGitHub("ggml-org/llama.cpp") as gh:
        _seed(gh)
        env = {"BUNDLEGRAPH_GITHUB_API": gh.api}
        r = graphrun.cli(["upstream", "--json"], workdir=tmp_path, **env)
        assert r.returncode == 0, r.stderr
        got = json.loads(r.stdout)
        assert got["build"]["tag"] == "b11700" and got["build"]["commit"] == "7" * 40
        assert got["build"]["via"] == "v1.2.0" and 1.5 < got["build"]["age_hours"] < 2.5
        assert "b11710: a draft" in got["skipped"]

        r = graphrun.cli(["upstream", "--min-age-hours", "24"], workdir=tmp_path, **env)
        assert r.returncode == 0, r.stderr
        assert "ggml-org/llama.cpp: newest build b11690, commit " + "6" * 40 in r.stdout
        assert "skipped b11700: published 2.0 h ago, younger than the 24 h floor" in r.stdout

        r = graphrun.cli(["upstream", "--min-age-hours", "1000"], workdir=tmp_path, **env)
        assert r.returncode == 1 and "no bNNNN build at least 1000 h old" in r.stderr
        # /releases/latest was never asked: it is the v* pointer, not a build
        assert not any(c.endswith("/releases/latest") for c in gh.calls)


def test_a_pointer_never_makes_a_draft_deleted_or_young_build_eligible(tmp_path):
    # issue 39: the rules apply to the build a v* pointer names, never to the pointer; before,
    # a draft or deleted build reached through v1.0.0 was taken as v1.0.0's 960 h
    with FakeGitHub("ggml-org/llama.cpp") as gh:

        def rel(tag: str, hours: float, *, draft: bool = False, names: str | None = None) -> None:
            r = Release(gh.new_id(), tag, draft, tag, prerelease=names is None, published_at=_ago(hours))
            r.assets = [Asset(gh.new_id(), "nightly-tag.txt", f"{names}\n".encode())] if names else []
            gh.releases.append(r)

        rel("v1.2.0", 960.0, names="b11740")  # names a build 1 h old
        rel("v1.1.0", 950.0, names="b11730")  # names a build whose release was deleted
        rel("v1.0.0", 940.0, names="b11720")  # names a draft, listed after it
        rel("b11740", 1.0)
        rel("b11720", 500.0, draft=True)
        rel("b11690", 30.0)
        gh.commits.update({"b11740": "4" * 40, "b11730": "3" * 40, "b11720": "2" * 40, "b11690": "6" * 40})
        r = graphrun.cli(
            ["upstream", "--json", "--min-age-hours", "24"], workdir=tmp_path, BUNDLEGRAPH_GITHUB_API=gh.api
        )
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    assert got["build"]["tag"] == "b11690" and got["build"]["via"] is None, got
    assert "v1.0.0: names b11720, a draft: not a build to release" in got["skipped"]
    assert "v1.1.0: names b11730, which has no published release (deleted, or a draft)" in got["skipped"]
    assert "b11740: published 1.0 h ago, younger than the 24 h floor" in got["skipped"], got["skipped"]


@pytest.fixture
def mix(tmp_path):
    require_tools("git")
    with GitServer(tmp_path / "srv") as srv:
        shas = standin_repository(srv)
        bundles, work = graphrun.standin_tree(tmp_path / "tree")
        pins = [PullPin(repo="example/minillama", number=1, sha=shas["1"])]
        sha256 = archive_sha256(srv.root / "minillama", shas["base"])
        (bundles / "release.toml").write_text(
            mix_release_text(
                srv.url("minillama"),
                ("b42", shas["base"], sha256),
                [(1, shas["1"])],
                default_legs=["mini-linux-x64-cpu"],
                title="DiffusionGemma visual server",
                comments=True,
            ),
            encoding="utf-8",
        )
        yield srv, shas, bundles, work, pins


def test_bump_moves_the_base_and_keeps_the_pins(mix):
    srv, shas, bundles, work, pins = mix
    b43 = srv.add_build("minillama", "b43")
    with FakeGitHub("example/minillama") as gh:
        gh.releases.append(Release(gh.new_id(), "b43", False, "b43", prerelease=True, published_at=_ago(48)))
        gh.releases.append(Release(gh.new_id(), "b42", False, "b42", prerelease=True, published_at=_ago(96)))
        gh.commits.update({"b43": b43, "b42": shas["base"]})
        r = graphrun.cli(
            ["bump", "--min-age-hours", "24"], bundles=bundles, workdir=work, BUNDLEGRAPH_GITHUB_API=gh.api
        )
    assert r.returncode == 0, r.stdout + r.stderr
    text = (bundles / "release.toml").read_text(encoding="utf-8")
    want = mix_tag("b43", pins)
    assert f'tag = "{want}"' in text and f'commit = "{b43}"' in text
    assert f'sha256 = "{archive_sha256(srv.root / "minillama", b43)}"' in text
    assert f'sha = "{shas["1"]}"' in text and 'title = "DiffusionGemma visual server"' in text  # pins kept
    assert "# the stand-in as a mix release" in text and "# moved by bundlegraph bump" in text  # comments kept
    plan = graphrun.cli(["plan"], bundles=bundles, workdir=work)
    assert plan.returncode == 0 and f"release {want}: mix of upstream build b43" in plan.stdout, plan.stderr


def test_bump_stops_naming_a_pull_request_that_no_longer_merges(mix):
    srv, _shas, bundles, work, _pins = mix
    b44 = srv.add_build("minillama", "b44", PRS / "2-conflicts-with-1.patch")
    before = (bundles / "release.toml").read_bytes()
    with FakeGitHub("example/minillama") as gh:
        gh.releases.append(Release(gh.new_id(), "b44", False, "b44", prerelease=True, published_at=_ago(30)))
        gh.commits.update({"b44": b44})
        r = graphrun.cli(["bump", "b44"], bundles=bundles, workdir=work, BUNDLEGRAPH_GITHUB_API=gh.api)
    assert r.returncode != 0
    out = r.stdout + r.stderr
    assert "example/minillama#1" in out and "conflicts in CMakeLists.txt" in out, out
    assert (bundles / "release.toml").read_bytes() == before  # nothing written


def test_bump_never_moves_the_base_back_unless_asked(mix):
    # issue 39: the release is at b42; b43 is 1 h old, so the newest past a 24 h floor is b41
    srv, _shas, bundles, work, pins = mix
    b41 = srv.add_build("minillama", "b41")
    b43 = srv.add_build("minillama", "b43")
    before = (bundles / "release.toml").read_bytes()
    with FakeGitHub("example/minillama") as gh:
        gh.releases.append(Release(gh.new_id(), "b43", False, "b43", prerelease=True, published_at=_ago(1)))
        gh.releases.append(Release(gh.new_id(), "b41", False, "b41", prerelease=True, published_at=_ago(96)))
        gh.commits.update({"b43": b43, "b41": b41})
        summary = work / "summary.md"
        env = {"BUNDLEGRAPH_GITHUB_API": gh.api, "GITHUB_STEP_SUMMARY": str(summary)}
        r = graphrun.cli(["bump", "--min-age-hours", "24"], bundles=bundles, workdir=work, **env)
        assert r.returncode == 0, r.stdout + r.stderr  # the schedule stays green: nothing is broken
        line = (
            "the newest upstream build at least 24 h old is b41, older than the base b42: the base is never "
            "moved back (name a build with --allow-older to do so): nothing to bump"
        )
        assert line in r.stdout and line in summary.read_text(encoding="utf-8"), r.stdout
        assert "skipped b43: published 1.0 h ago, younger than the 24 h floor" in r.stdout
        assert (bundles / "release.toml").read_bytes() == before

        r = graphrun.cli(["bump", "b41"], bundles=bundles, workdir=work, **env)  # named: refused, naming both
        assert r.returncode == 2, r.stdout + r.stderr
        assert (
            f"{bundles / 'release.toml'}: [source.base] tag is b42; bump refuses to move it back to the older b41 "
            "(pass --allow-older to do so on purpose)"
        ) in r.stderr, r.stderr
        assert (bundles / "release.toml").read_bytes() == before

        r = graphrun.cli(["bump", "b42"], bundles=bundles, workdir=work, **env)
        assert r.returncode == 0 and "the base is already b42: nothing to bump" in r.stdout, r.stdout + r.stderr

        r = graphrun.cli(["bump", "b41", "--allow-older"], bundles=bundles, workdir=work, **env)
        assert r.returncode == 0, r.stdout + r.stderr
    text = (bundles / "release.toml").read_text(encoding="utf-8")
    assert f'tag = "{mix_tag("b41", pins)}"' in text and f'commit = "{b41}"' in text
    assert "base b42 -> b41" in r.stdout


def test_bump_refuses_a_named_build_without_a_published_release(mix):
    srv, _shas, bundles, work, _pins = mix
    b43 = srv.add_build("minillama", "b43")
    before = (bundles / "release.toml").read_bytes()
    with FakeGitHub("example/minillama") as gh:
        gh.releases.append(Release(gh.new_id(), "b43", True, "b43", prerelease=True))  # a draft
        gh.commits.update({"b43": b43})
        r = graphrun.cli(["bump", "b43"], bundles=bundles, workdir=work, BUNDLEGRAPH_GITHUB_API=gh.api)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "bump: example/minillama has no published release b43 (deleted, or a draft)" in r.stderr
    assert (bundles / "release.toml").read_bytes() == before


def test_bump_on_a_release_that_is_not_a_mix(tmp_path):
    # issue 39: the scheduled workflow is green on such a release and says why; by hand it is an error
    bundles, work = graphrun.standin_tree(tmp_path)
    summary = work / "summary.md"
    r = graphrun.cli(["bump", "--only-if-mix"], bundles=bundles, workdir=work, GITHUB_STEP_SUMMARY=str(summary))
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"bump: {bundles / 'release.toml'}: not a mix release (its source is kind 'path'" in r.stdout, r.stdout
    assert "nothing to bump" in r.stdout and "nothing to bump" in summary.read_text(encoding="utf-8")
    r = graphrun.cli(["bump"], bundles=bundles, workdir=work)
    assert r.returncode == 2 and "bump moves a mix source's base" in r.stderr, r.stdout + r.stderr
