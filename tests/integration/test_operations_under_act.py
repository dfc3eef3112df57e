"""The operations workflows (issue 31), run for real under act against a GitHub API on 127.0.0.1
(tests/githubkit.py) and a real git server (tests/gitkit.py):

- ``upstream.yml`` (scheduled): bumps the stand-in mix release to the newest upstream build past
  its age floor, pushes the commit and the tag, and dispatches ``release.yml`` on the tag;
- ``release-age.yml`` (daily): passes on a recent release, fails naming the tag when the newest
  published release is older than the limit;
- ``rerun-cancelled.yml`` (on a finished release run): re-runs a cancelled first attempt with a
  succeeded job and no failure, once; leaves a run with a failure alone."""

from __future__ import annotations

import datetime as dt
import subprocess
import tomllib
from pathlib import Path

import actkit
import pytest
from conftest import linux_only, require_tools
from githubkit import FakeGitHub, Release
from gitkit import GitServer, archive_sha256, git, mix_release_text, standin_repository

from bundlegraph.schemas.records import PullPin, mix_tag

ROOT = Path(__file__).resolve().parents[2]

pytestmark = linux_only


def _ago(hours: float) -> str:
    return (dt.datetime.now(dt.UTC) - dt.timedelta(hours=hours)).strftime("%Y-%m-%dT%H:%M:%SZ")


def _env(gh: FakeGitHub) -> dict[str, str]:
    return {
        "BUNDLEGRAPH_EXTRA_ACT_PYTHON": actkit.base_python(),
        "BUNDLEGRAPH_EXTRA_ACT_WHEELS": str(actkit.wheelhouse()),
        "BUNDLEGRAPH_GITHUB_API": gh.api,
        "BUNDLEGRAPH_CACHE": str(actkit.shared_cache()),
    }


def _act(repo: Path, workflow: str, event: str, event_json: dict, gh: FakeGitHub, **env: str):
    r, _s = actkit.run_act(
        repo,
        f".github/workflows/{workflow}",
        event=event,
        event_json={"repository": {"full_name": actkit.REPO}, **event_json},
        artifacts=repo.parent / f"artifacts-{workflow}-{len(gh.calls)}",
        secrets={"GITHUB_TOKEN": "act-t0ken"},
        env=_env(gh) | env,
        timeout=900,
    )
    return r.returncode, r.stdout + r.stderr


@pytest.fixture(scope="module")
def plain_repo(tmp_path_factory):
    require_tools("git")
    return actkit.standin_repo(tmp_path_factory.mktemp("ops") / "repo")


def test_release_age_passes_on_a_recent_release_and_fails_loudly_on_an_old_one(plain_repo):
    with FakeGitHub(actkit.REPO, token="act-t0ken") as gh:
        gh.releases.append(Release(gh.new_id(), "b42", False, "b42", published_at=_ago(24)))
        gh.releases.append(Release(gh.new_id(), "b43", True, "b43"))  # a draft is not a release yet
        rc, out = _act(plain_repo, "release-age.yml", "workflow_dispatch", {}, gh)
        assert rc == 0, out[-4000:]
        assert f"{actkit.REPO}: newest published release b42" in out
        gh.releases[0].published_at = _ago(24 * 5)
        rc, out = _act(plain_repo, "release-age.yml", "schedule", {"schedule": "41 7 * * *"}, gh)
        assert rc != 0
        assert "newest published release b42" in out and "older than 3 days; releases have stopped" in out, out[-4000:]


def _run(run_id: int, conclusion: str, attempt: int, jobs: list[tuple]) -> dict:
    """A run's JSON; each job ``(name, conclusion)`` or ``(name, conclusion, [annotation messages])``."""
    return {
        "id": run_id,
        "name": "release",
        "conclusion": conclusion,
        "run_attempt": attempt,
        "jobs": [
            {"id": run_id * 100 + i, "name": j[0], "conclusion": j[1], "annotations": list(j[2]) if len(j) > 2 else []}
            for i, j in enumerate(jobs)
        ],
    }


TIMEOUT = "The job has exceeded the maximum execution time of 45m0s"
BY_HAND = "The run was canceled by @alice."


def test_a_cancelled_release_run_is_rerun_once_and_a_failed_one_never(plain_repo):
    with FakeGitHub(actkit.REPO, token="act-t0ken") as gh:
        gh.runs[77] = _run(77, "cancelled", 1, [("plan", "success"), ("compile (linux-arm64-cpu)", "cancelled")])
        gh.runs[78] = _run(78, "cancelled", 1, [("plan", "success"), ("compile (a)", "failure")])
        gh.runs[79] = _run(79, "cancelled", 2, [("plan", "success")])
        # issue 39: a person's cancel stands; a timeout's does not
        gh.runs[80] = _run(
            80,
            "cancelled",
            1,
            [("plan", "success"), ("compile (a)", "cancelled", [BY_HAND, "The operation was canceled."])],
        )
        gh.runs[81] = _run(81, "cancelled", 1, [("plan", "success"), ("compile (a)", "cancelled", [TIMEOUT])])
        for rid in (77, 78, 79, 80, 81):
            r = gh.runs[rid]
            ev = {"workflow_run": {"id": rid, "conclusion": r["conclusion"], "run_attempt": r["run_attempt"]}}
            rc, out = _act(plain_repo, "rerun-cancelled.yml", "workflow_run", ev, gh)
            assert rc == 0, out[-4000:]
            if rid == 77:
                assert "run 77: re-run: cancelled after 1 successful job(s) and no failure" in out
            if rid == 78:
                assert "run 78: left as it is: job(s) failed: compile (a)" in out
            if rid == 80:
                assert "run 80: left as it is: cancelled by @alice (job 'compile (a)'): a person's cancel stands" in out
            if rid == 81:
                assert "run 81: re-run: cancelled after 1 successful job(s) and no failure" in out
        assert gh.reruns == [77, 81]  # 79 (a second attempt) never reached the job: its `if` said no
        assert not any("/actions/runs/79" in c for c in gh.calls)
        assert "GET /repos/" + actkit.REPO + "/check-runs/8001/annotations" in gh.calls  # why 80's job stopped


def _mix_repo(tmp_path: Path, srv: GitServer, shas: dict[str, str]) -> tuple[Path, Path]:
    """The stand-in repository as a mix release at b42, and a bare ``origin`` its pushes go to."""
    repo = actkit.standin_repo(tmp_path / "repo")
    sha256 = archive_sha256(srv.root / "minillama", shas["base"])
    (repo / "bundles" / "release.toml").write_text(
        mix_release_text(
            srv.url("minillama"),
            ("b42", shas["base"], sha256),
            [(1, shas["1"])],
            default_legs=["mini-linux-x64-cpu"],
        ),
        encoding="utf-8",
    )
    git("commit", "-q", "-am", "the stand-in as a mix release at b42", cwd=repo)
    origin = tmp_path / "origin.git"
    git("clone", "-q", "--bare", str(repo), str(origin))
    # origin stays github.com/<REPO> for act (it names the repository after its URL); pushes go here
    git("remote", "set-url", "--push", "origin", str(origin), cwd=repo)
    return repo, origin


def _tags(origin: Path) -> list[str]:
    return subprocess.run(["git", "-C", str(origin), "tag"], capture_output=True, text=True).stdout.split()


def test_the_scheduled_upstream_bump_releases_the_newest_build(tmp_path):
    require_tools("git")
    with GitServer(tmp_path / "srv") as srv:
        shas = standin_repository(srv)
        b43 = srv.add_build("minillama", "b43")
        pins = [PullPin(repo="example/minillama", number=1, sha=shas["1"])]
        repo, origin = _mix_repo(tmp_path, srv, shas)
        with FakeGitHub(actkit.REPO, token="act-t0ken") as gh:
            gh.publish_upstream("example/minillama", "b42", {}, prerelease=True, published_at=_ago(96))
            gh.publish_upstream("example/minillama", "b43", {}, prerelease=True, published_at=_ago(30))
            gh.upstream_commits["example/minillama"] = {"b42": shas["base"], "b43": b43}
            rc, out = _act(repo, "upstream.yml", "schedule", {"schedule": "23 */6 * * *", "ref": "refs/heads/main"}, gh)
            assert rc == 0, out[-6000:]
            want = mix_tag("b43", pins)
            assert gh.dispatches == [("release.yml", f"refs/tags/{want}")]
        assert want in _tags(origin)
        text = subprocess.run(
            ["git", "-C", str(origin), "show", f"{want}:bundles/release.toml"], capture_output=True, text=True
        ).stdout
        released = tomllib.loads(text)
        assert released["tag"] == want and released["source"]["base"]["commit"] == b43
        assert released["source"]["prs"][0]["sha"] == shas["1"]  # the pin kept


def test_the_scheduled_upstream_bump_is_green_on_a_release_that_is_not_a_mix(plain_repo):
    # issue 39: the stand-in's release is a path source, as today's bundles/release.toml is no mix
    with FakeGitHub(actkit.REPO, token="act-t0ken") as gh:
        rc, out = _act(plain_repo, "upstream.yml", "schedule", {"schedule": "23 */6 * * *"}, gh)
        assert rc == 0, out[-6000:]
        assert "not a mix release (its source is kind 'path'" in out and "nothing to bump" in out, out[-6000:]
        assert "nothing to release" in out
        assert gh.dispatches == [] and not any("/releases" in c for c in gh.calls)  # asked GitHub nothing


def test_a_rejected_branch_push_leaves_no_orphan_tag(tmp_path):
    # issue 39: branch and tag go in one `git push --atomic`; before, the tag landed alone and every
    # later run failed at `git tag`
    require_tools("git")
    with GitServer(tmp_path / "srv") as srv:
        shas = standin_repository(srv)
        b43 = srv.add_build("minillama", "b43")
        repo, origin = _mix_repo(tmp_path, srv, shas)
        other = tmp_path / "other"  # someone else pushed to main meanwhile: the runner's push is not a fast-forward
        git("clone", "-q", str(origin), str(other))
        git("commit", "-q", "--allow-empty", "-m", "a commit the runner has not seen", cwd=other)
        git("push", "-q", "origin", "HEAD:main", cwd=other)
        with FakeGitHub(actkit.REPO, token="act-t0ken") as gh:
            gh.publish_upstream("example/minillama", "b43", {}, prerelease=True, published_at=_ago(30))
            gh.upstream_commits["example/minillama"] = {"b43": b43}
            rc, out = _act(repo, "upstream.yml", "schedule", {"schedule": "23 */6 * * *", "ref": "refs/heads/main"}, gh)
            assert rc != 0, out[-6000:]
            assert gh.dispatches == []
        pins = [PullPin(repo="example/minillama", number=1, sha=shas["1"])]
        assert mix_tag("b43", pins) not in _tags(origin)
        # main at origin is still the other commit: the runner's commit did not land either
        head = subprocess.run(["git", "-C", str(origin), "rev-parse", "main"], capture_output=True, text=True)
        theirs = subprocess.run(["git", "-C", str(other), "rev-parse", "HEAD"], capture_output=True, text=True)
        assert head.stdout.strip() == theirs.stdout.strip() != "", (head, theirs)
        assert "Failure - Main commit and tag the new release" in out, out[-6000:]
        # the push is what failed: git says so wherever act shows the step's own lines (act can drop
        # the lines of a step that ends within a few hundred ms on a loaded machine: seen once with
        # two test workers, the step's failure line alone)
        step = out.split("Run Main commit and tag the new release", 1)[1].split("Failure - Main commit and tag", 1)[0]
        assert "|" not in step or "atomic push failed" in out or "rejected" in out, out[-6000:]
