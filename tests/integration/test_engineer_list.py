"""The release engineer's list (issue 51, item 4): each failure is one line naming the file, key or
artifact and what was expected, with the documented exit status, never a traceback.

- ``rerun-cancelled`` reads every job of a run, page by page: a person's cancel in job 139 stands.
- a spec file that is not UTF-8 (UTF-16, as Windows editors save it) is refused naming the file.
- a read-only work directory is named, also for ``doit clean -a``; ``doit list`` and ``doit info``
  leave the work directory untouched (no ``.bundlegraph/doit.sqlite3``), so they work there too.
- ``BUNDLEGRAPH_CACHE`` naming a file is refused before any task.
- an absurd shard count (``shard=1/99999999999999999999999``, ``plan --shards --count``) is refused.
- ``LLAMA_BUILD_TESTS = "nope"`` (CMake reads it as true) is refused at load naming file and key.
- a shard artifact that did not arrive fails ``shard-merge --leg L`` (and so the release workflow's
  final compile), naming the leg, the shard and the artifact.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import graphrun
import pytest
import yaml
from githubkit import FakeGitHub

REPO = "owner/llama-bundles"
BY_HAND = "The run was canceled by @alice."
TIMEOUT = "The job has exceeded the maximum execution time of 45m0s"


def _release_run(rid: int, last_job_notes: list[str]) -> dict:
    """A cancelled first attempt of 139 jobs (as many as the real release has): 138 passed, and
    job 139 (the last, on the second page of 100) cancelled with ``last_job_notes``."""
    jobs = [{"id": rid * 1000 + i, "name": f"compile (leg {i})", "conclusion": "success"} for i in range(1, 139)]
    last = {"id": rid * 1000 + 139, "name": "backend (leg 139)", "conclusion": "cancelled"}
    jobs.append(last | {"annotations": last_job_notes})
    return {"id": rid, "conclusion": "cancelled", "run_attempt": 1, "jobs": jobs}


def test_rerun_cancelled_reads_every_page_of_jobs_so_a_cancel_in_job_139_stands(tmp_path):
    with FakeGitHub(REPO, token="t0ken") as gh:
        gh.runs[5] = _release_run(5, [BY_HAND, "The operation was canceled."])
        gh.runs[6] = _release_run(6, [TIMEOUT])
        env = {"BUNDLEGRAPH_GITHUB_API": gh.api, "GITHUB_TOKEN": "t0ken"}
        person = graphrun.cli(["rerun-cancelled", "--run-id", "5", "--repo", REPO], workdir=tmp_path, **env)
        timeout = graphrun.cli(["rerun-cancelled", "--run-id", "6", "--repo", REPO], workdir=tmp_path, **env)
    assert person.returncode == 0, person.stdout + person.stderr
    assert (
        "run 5: left as it is: cancelled by @alice (job 'backend (leg 139)'): a person's cancel stands" in person.stdout
    ), person.stdout
    assert timeout.returncode == 0 and "run 6: re-run: cancelled after 138 successful job(s)" in timeout.stdout
    assert gh.reruns == [6]  # the person's cancel was not re-run
    assert gh.calls.count(f"GET /repos/{REPO}/actions/runs/5/jobs") == 2  # two pages: 100 + 39 jobs


def _one_line(r, status: int) -> str:
    """The one stderr line of a refused command ``r`` that exited ``status``, no traceback."""
    assert r.returncode == status and "Traceback" not in r.stderr, (r.returncode, r.stdout[-2000:] + r.stderr[-3000:])
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    return lines[0]


@pytest.mark.parametrize("name", ["mini-linux-x64-cpu.toml", "release.toml"])
def test_a_spec_file_saved_as_utf16_is_refused_in_one_line_by_doit_plan_and_matrix(tmp_path, name):
    bundles, work = graphrun.standin_tree(tmp_path)
    f = bundles / name
    f.write_bytes(f.read_text(encoding="utf-8").encode("utf-16"))  # with its byte-order mark, as Notepad saves it
    want = f"{f}: (encoding): not UTF-8 (byte 0xff at offset 0; it starts with the byte-order mark of UTF-16"
    for r in (
        graphrun.doit(["list"], bundles=bundles, workdir=work),
        graphrun.cli(["plan"], bundles=bundles, workdir=work),
        graphrun.cli(["matrix"], bundles=bundles, workdir=work),
    ):
        line = _one_line(r, 2)
        assert want in line and line.endswith("save it as UTF-8, the encoding TOML requires"), line


def test_doit_list_and_info_leave_the_work_directory_untouched(tmp_path):
    bundles, work = graphrun.standin_tree(tmp_path)
    r = graphrun.doit(["list"], bundles=bundles, workdir=work)
    assert r.returncode == 0 and "source:mini-linux-x64-cpu" in r.stdout, r.stderr[-2000:]
    r = graphrun.doit(["info", "source:mini-linux-x64-cpu"], bundles=bundles, workdir=work)
    assert r.returncode == 1 and "source:mini-linux-x64-cpu" in r.stdout, r.stderr[-2000:]  # would run: doit's 1
    assert sorted(work.iterdir()) == []  # no .bundlegraph/, no doit.sqlite3


def _without_root_override(argv: list[str]) -> list[str]:
    """``argv`` run so that file modes bind: as root, without CAP_DAC_OVERRIDE (util-linux's
    ``setpriv``), which otherwise lets root write into a directory of mode 0555."""
    if os.geteuid() != 0:
        return argv
    from conftest import require_tools

    require_tools("setpriv")
    return ["setpriv", "--bounding-set", "-dac_override", *argv]


@pytest.mark.skipif(sys.platform == "win32", reason="this host is Windows: no POSIX file modes")
def test_a_read_only_work_directory_is_named_in_one_line_and_list_still_works(tmp_path):
    bundles, work = graphrun.standin_tree(tmp_path)
    work.chmod(0o555)
    try:
        env = graphrun.env_for(bundles, work)
        doit = [str(graphrun.BIN / "doit"), "-f", str(graphrun.ROOT / "dodo.py")]
        runs = {}
        for args in (["clean", "-a"], ["source:mini-linux-x64-cpu"], ["list"]):
            runs[args[0]] = subprocess.run(
                _without_root_override([*doit, *args]), capture_output=True, text=True, env=env, timeout=300
            )
    finally:
        work.chmod(0o755)
    for command in ("clean", "source:mini-linux-x64-cpu"):
        line = _one_line(runs[command], 2)
        verb = command if command == "clean" else "run"
        assert line.startswith(f"bundlegraph: {work}: the work directory is not writable (Permission denied"), line
        assert f"doit {verb} keeps its run lock and state in {work / '.bundlegraph'}" in line, line
        assert "BUNDLEGRAPH_WORKDIR" in line, line
    assert runs["list"].returncode == 0 and "source:mini-linux-x64-cpu" in runs["list"].stdout, runs["list"].stderr
    assert sorted(work.iterdir()) == []


def test_a_cache_that_is_a_file_is_refused_before_any_task(tmp_path):
    bundles, work = graphrun.standin_tree(tmp_path)
    f = tmp_path / "cache-file"
    f.write_text("x\n", encoding="utf-8")
    r = graphrun.doit(["configure:mini-linux-x64-cpu"], bundles=bundles, workdir=work, BUNDLEGRAPH_CACHE=str(f))
    line = _one_line(r, 2)
    assert line.startswith(f"bundlegraph: BUNDLEGRAPH_CACHE={str(f)!r}: not a directory ({f} is a file)"), line
    assert not (work / "build").exists()  # no task ran


def test_an_absurd_shard_count_is_refused_in_one_line(tmp_path):
    bundles, work = graphrun.standin_tree(tmp_path)
    huge = "1/99999999999999999999999"
    for r in (
        graphrun.doit(["list", f"shard={huge}"], bundles=bundles, workdir=work),
        graphrun.doit(["build:mini-linux-arm64-cuda"], bundles=bundles, workdir=work, BUNDLEGRAPH_SHARD=huge),
    ):
        line = _one_line(r, 2)
        assert line.endswith(f"={huge}: N must be at most 32 (what a spec's [build] shards allows)"), line
    r = graphrun.cli(["plan", "mini-linux-arm64-cuda", "--shards", "--count", "99999"], bundles=bundles, workdir=work)
    assert (
        _one_line(r, 2)
        == "bundlegraph: mini-linux-arm64-cuda: 99999 shards: expected 1 to 32 (what a spec's [build] shards allows)"
    )


def test_a_shard_artifact_that_did_not_arrive_fails_shard_merge_naming_the_leg_and_the_shard(tmp_path):
    from bundlegraph.schemas.shard_record import SHARD_FORMAT, ShardRecord

    bundles, work = graphrun.standin_tree(tmp_path)
    leg = "mini-linux-arm64-cuda"  # [build] shards = 2
    one = tmp_path / "shards" / f"shard-{leg}-1"
    one.mkdir(parents=True)
    record = ShardRecord(
        format=SHARD_FORMAT,
        leg=leg,
        shard="1/2",
        objects=["ggml/a.cu.o"],
        predicted_seconds=40.0,
        jobs=2,
        seconds=41.5,
        costs_from="the stated estimates",
        split_digest="0" * 64,
        measured={},
        cache=None,
        cache_entries_added=0,
        remote_storage=False,
    )
    (one / "shard.json").write_text(json.dumps(record.dump()), encoding="utf-8")
    merge = ["shard-merge", "--leg", leg, "--cache-dir", str(tmp_path / "ccache")]
    r = graphrun.cli([*merge[:1], str(tmp_path / "shards"), *merge[1:]], bundles=bundles, workdir=work)
    assert _one_line(r, 1) == (
        f"bundlegraph shard-merge: {leg}: shard 2/2 did not arrive: no shard.json of it under {tmp_path / 'shards'} "
        f"(artifact shard-{leg}-2); the final compile refuses to compile its objects itself: re-run the failed "
        f"shard job"
    )
    none = tmp_path / "no-shards"  # actions/download-artifact found nothing: no folder at all
    r = graphrun.cli([*merge[:1], str(none), *merge[1:]], bundles=bundles, workdir=work)
    assert _one_line(r, 1).startswith(f"bundlegraph shard-merge: {leg}: shard 1/2, 2/2 did not arrive: no shard.json")
    assert f"(artifact shard-{leg}-1, shard-{leg}-2)" in r.stderr
    assert (work / "build" / leg / "shards-merged.json").is_file()  # what fails the final compile too


def test_the_release_workflow_lets_no_shard_merge_failure_through():
    jobs = yaml.safe_load((graphrun.ROOT / ".github" / "workflows" / "release.yml").read_text(encoding="utf-8"))
    runs = [st["run"] for job in jobs["jobs"].values() for st in job["steps"] if "shard-merge" in st.get("run", "")]
    assert len(runs) == 3 and all(r == 'bundlegraph shard-merge shards --leg "${{ matrix.id }}"' for r in runs), runs


def test_a_bool_option_that_is_no_boolean_word_is_refused_when_the_specs_load(tmp_path):
    bundles, work = graphrun.standin_tree(tmp_path)
    f = bundles / "mini-linux-x64-cpu.toml"
    text = f.read_text(encoding="utf-8")
    assert "LLAMA_BUILD_TESTS = false" in text
    f.write_text(text.replace("LLAMA_BUILD_TESTS = false", 'LLAMA_BUILD_TESTS = "nope"'), encoding="utf-8")
    for r in (
        graphrun.cli(["plan"], bundles=bundles, workdir=work),
        graphrun.doit(["list"], bundles=bundles, workdir=work),
    ):
        assert _one_line(r, 2) == (
            f"bundlegraph: {f}: cmake.LLAMA_BUILD_TESTS: 'nope' is not a boolean: a BOOL option takes true or false, "
            f"or one of CMake's boolean words (ON/OFF/TRUE/FALSE/YES/NO/Y/N/1/0, any case); CMake reads other text "
            f"as true"
        )
