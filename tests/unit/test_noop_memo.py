"""The no-op memo's own rules (bundlegraph.graph.noop_memo): which command lines may use one,
what makes two runs the same run, when one is written, and that a memo whose observations no
longer hold, or that is not one, is never used. The real graph's recall is proven in
tests/integration/test_incremental.py."""

from __future__ import annotations

import json
import os

import pytest

from bundlegraph.core import fsutil
from bundlegraph.graph import noop_memo, observe

OLD = 1_600_000_000


@pytest.fixture(autouse=True)
def _sighted(monkeypatch):
    """This test process imports httpx elsewhere (a blind spot for a real run: no memo)."""
    monkeypatch.setattr(observe, "BLIND", ())


@pytest.mark.parametrize(
    ("argv", "ok"),
    [
        ([], "run"),
        (["-f", "dodo.py"], "run"),
        (["--file=dodo.py", "run", "only_leg=x"], "run"),
        (["-d", "/w", "build:leg", "manifest"], "run"),
        (["run", "package"], "run"),
        (["-a"], None),
        (["-n", "4"], None),
        (["--verbosity", "0"], None),
        (["list"], "list"),
        (["-f", "dodo.py", "list", "--all", "--sort", "name"], "list"),
        (["list", "--status"], None),
        (["list", "--all", "--deps"], "list"),
        (["run", "--all"], None),
        (["clean", "build:leg"], None),
        (["info", "build:leg"], None),
        (["build:*"], None),
        (["run", "-s", "build:leg"], None),
    ],
)
def test_which_command_lines_may_use_a_memo(argv, ok):
    assert noop_memo.eligible(argv) == ok


def test_the_run_key_follows_the_command_line_environment_and_directory(tmp_path, monkeypatch):
    dodo = tmp_path / "dodo.py"
    dodo.write_text("")
    monkeypatch.chdir(tmp_path)
    k = noop_memo.run_key([], dodo)
    assert noop_memo.run_key([], dodo) == k
    assert noop_memo.run_key(["only_leg=x"], dodo) != k
    monkeypatch.setenv("BUNDLEGRAPH_EXTRA_PROBE", "1")
    assert noop_memo.run_key([], dodo) != k
    monkeypatch.delenv("BUNDLEGRAPH_EXTRA_PROBE")
    assert noop_memo.run_key([], dodo) == k
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    assert noop_memo.run_key([], dodo) != k
    monkeypatch.chdir(tmp_path)
    dodo.write_text("# edited\n")
    assert noop_memo.run_key([], dodo) != k


def _recorder(tmp_path, watched):
    rec = noop_memo.Recorder("k" * 64, tmp_path / "state" / "noop")
    with rec.observer:
        watched.read_text()
    rec.creators = {
        "task_build": {
            "doc": "build stage",
            "tasks": [
                {"basename": "build", "name": None, "doc": "build: every selected leg"},
                {"basename": "build", "name": "leg", "doc": "compile", "task_dep": ["configure:leg"], "verbosity": 2},
            ],
        }
    }
    rec.default_tasks = ["build:leg"]
    rec.expected = {"build:leg", "configure:leg"}
    return rec


@pytest.fixture
def watched(tmp_path):
    f = tmp_path / "input.txt"
    f.write_text("v1")
    os.utime(f, (OLD, OLD))
    return f


def test_written_when_the_last_expected_task_is_up_to_date_and_recalled_while_nothing_changed(
    tmp_path, watched, monkeypatch
):
    monkeypatch.setattr(fsutil, "RACY_NS", 0)  # the input's change time is now: trust it here
    rec = _recorder(tmp_path, watched)
    rec.checked("configure:leg", True)
    assert not (tmp_path / "state" / "noop").exists()
    rec.checked("build:leg", True)
    memo = noop_memo.recall(tmp_path / "state" / "noop", "k" * 64)
    assert memo is not None and memo["default_tasks"] == ["build:leg"]
    tasks = [t for gen in noop_memo.task_creators(memo, lambda task, clean: None).values() for t in gen()]
    assert [t.get("name") for t in tasks] == [None, "leg"]
    assert "uptodate" not in tasks[0] and [c() for c in tasks[1]["uptodate"]] == [True]
    watched.write_text("v2")
    assert noop_memo.recall(tmp_path / "state" / "noop", "k" * 64) is None
    assert noop_memo.recall(tmp_path / "state" / "noop", "0" * 64) is None  # another run's key


def test_not_written_when_a_task_is_due_or_the_input_changed_meanwhile_or_too_recently(tmp_path, watched, monkeypatch):
    rec = _recorder(tmp_path, watched)
    rec.checked("configure:leg", False)
    rec.checked("build:leg", True)
    assert not (tmp_path / "state" / "noop").exists()
    rec = _recorder(tmp_path, watched)
    assert rec.write() is None  # written a moment ago (its change time is now): racy
    monkeypatch.setattr(fsutil, "RACY_NS", 0)
    watched.write_text("changed while the run was checking")
    assert rec.write() is None
    rec = _recorder(tmp_path, watched)
    assert rec.write() is not None


@pytest.mark.parametrize("bad", ["not json", '{"version": 999}', '{"version": 1, "key": "other"}', '{"version": 1}'])
def test_a_memo_that_is_not_one_is_not_used(tmp_path, bad):
    d = tmp_path / "state" / "noop"
    d.mkdir(parents=True)
    key = "a" * 64
    (d / f"{key}.json").write_text(bad if "other" not in bad else bad.replace("other", "b" * 64))
    assert noop_memo.recall(tmp_path / "state" / "noop", key) is None
    if bad == '{"version": 1}':
        (d / f"{key}.json").write_text(json.dumps({"version": 1, "key": key, "observed": 3}))
        assert noop_memo.recall(tmp_path / "state" / "noop", key) is None


def test_only_the_newest_memos_are_kept(tmp_path, watched, monkeypatch):
    monkeypatch.setattr(fsutil, "RACY_NS", 0)
    for i in range(noop_memo.KEEP + 3):
        rec = _recorder(tmp_path, watched)
        rec.key = f"{i:064d}"
        assert rec.write() is not None
        os.utime(rec.write(), (OLD + i, OLD + i))
    kept = sorted(p.stem for p in (tmp_path / "state" / "noop").glob("*.json"))
    assert len(kept) == noop_memo.KEEP and kept[0] == f"{3:064d}"


def test_a_recalled_tasks_forced_action_and_clean_run_that_task_through_the_loaded_graph():
    """doit runs no action of an up-to-date task, so a recalled one never loads the graph; a caller
    that forces it (or cleans it) gets the full load's action for that task by name, not a no-op."""
    calls: list[tuple[str, bool]] = []
    memo = {
        "creators": {
            "task_build": {
                "doc": "Build each leg.",
                "tasks": [
                    {"basename": "build", "name": None, "doc": "the stage's group"},  # no check, no action
                    {"basename": "build", "name": "leg-a", "task_dep": ["configure:leg-a"], "file_dep": []},
                ],
            }
        }
    }
    creators = noop_memo.task_creators(memo, lambda task, clean: calls.append((task, clean)) or "done")
    assert creators["task_build"].__doc__ == "Build each leg."
    group, task = list(creators["task_build"]())
    assert "actions" not in group and "uptodate" not in group
    assert task["task_dep"] == ["configure:leg-a"] and task["uptodate"][0]() is True
    assert calls == []  # listing and checking the recalled tasks load nothing
    assert task["actions"][0]() == "done" and task["clean"][0]() == "done"
    assert calls == [("build:leg-a", False), ("build:leg-a", True)]
    assert "build:leg-a" in repr(task["actions"][0]) and "cleans" in repr(task["clean"][0])
