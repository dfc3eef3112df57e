"""``rerun-cancelled``'s verdict (issue 39): a cancelled first attempt with a passed job and no
failure is re-run once, unless a person cancelled it (GitHub's annotation on the cancelled job)
or a newer run of its concurrency group replaced it; a timeout or a lost runner is re-run."""

from __future__ import annotations

from bundlegraph.release.ops import rerun_verdict

RUN = {"id": 5, "conclusion": "cancelled", "run_attempt": 1}
JOBS = [{"id": 1, "name": "plan", "conclusion": "success"}, {"id": 2, "name": "compile (a)", "conclusion": "cancelled"}]


def test_a_person_cancel_stands():
    again, why = rerun_verdict(RUN, JOBS, {2: ["The run was canceled by @octo-cat.", "The operation was canceled."]})
    assert not again and why == "cancelled by @octo-cat (job 'compile (a)'): a person's cancel stands"


def test_a_timeout_or_a_lost_runner_is_rerun_once():
    for note in (
        "The job has exceeded the maximum execution time of 45m0s",
        "The job running on runner GitHub Actions 2 has exceeded the maximum execution time of 45 minutes.",
        "The runner has received a shutdown signal. This can happen when the runner service is stopped.",
    ):
        again, why = rerun_verdict(RUN, JOBS, {2: [note]})
        assert again and why.startswith("cancelled after 1 successful job(s)"), (note, why)
    assert rerun_verdict(RUN | {"run_attempt": 2}, JOBS, {2: []}) == (
        False,
        "attempt 2: a cancelled run is re-run once only",
    )


def test_a_run_replaced_by_a_newer_one_stays_cancelled():
    again, why = rerun_verdict(
        RUN, JOBS, {2: ["Canceling since a higher priority waiting request for 'release-b1' exists"]}
    )
    assert not again and "a newer run of the same tag replaced it" in why


def test_the_person_annotation_on_a_job_that_did_not_stop_is_not_read():
    # only cancelled jobs are asked about; a passed job's text never decides
    jobs = [{"id": 1, "name": "plan", "conclusion": "success"}, {"id": 2, "name": "b", "conclusion": "cancelled"}]
    assert rerun_verdict(RUN, jobs, {1: ["The run was canceled by @x."], 2: []})[0]
