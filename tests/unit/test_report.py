"""The one output path (bundlegraph.core.report): a task's lines folded in a ::group:: on GitHub
Actions with its outcome and time, errors annotated there, and the verbosity setting."""

from __future__ import annotations

from bundlegraph.core import report


def test_task_folds_and_times_on_github_actions(monkeypatch, capsys):
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    with report.task("build:leg") as t:
        report.say("[build:leg] 50% [1/2]")
        t["outcome"] = "done"
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "::group::build:leg" and out[1] == "[build:leg] 50% [1/2]" and out[2] == "::endgroup::"
    assert out[3].startswith("[build:leg] done in ")


def test_a_failed_task_is_an_annotated_error(monkeypatch, capsys):
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    with report.task("configure:leg"):
        pass  # no outcome set: it failed
    cap = capsys.readouterr()
    assert cap.err.startswith("[configure:leg] FAILED after ")
    assert "::error::[configure:leg] FAILED after " in cap.out


def test_no_workflow_commands_off_github_and_quiet_hides_progress(monkeypatch, capsys):
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    monkeypatch.setenv("BUNDLEGRAPH_VERBOSITY", "quiet")
    with report.task("source:leg") as t:
        report.say("source: commit 0c1e570")
        report.warn("no compiler cache")
        t["outcome"] = "skipped"
        t["why"] = "nothing to do"
    cap = capsys.readouterr()
    assert cap.out == "" and cap.err == "warning: no compiler cache\n"
    monkeypatch.setenv("BUNDLEGRAPH_VERBOSITY", "verbose")
    report.detail("details")
    assert capsys.readouterr().out == "details\n"
