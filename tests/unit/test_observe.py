"""The observer the no-op memo trusts (bundlegraph.graph.observe): what it sees through the ways
Python code looks at files, that it notices every kind of change to what it saw, and that
whatever it cannot see spoils it."""

from __future__ import annotations

import builtins
import glob
import io
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bundlegraph.core import fsutil
from bundlegraph.graph import observe
from bundlegraph.graph.observe import Observer, changed

OLD = 1_600_000_000  # a time far outside the racy window, for os.utime


def _kinds(o: Observer, path: Path) -> set[str]:
    return {k for (k, p) in o.seen if p == str(path)}


def test_what_pathlib_open_listdir_scandir_glob_and_which_look_at_is_seen(tmp_path):
    f = tmp_path / "a.txt"
    f.write_text("one")
    (tmp_path / "sub").mkdir()
    tool = tmp_path / "bin" / "mytool"
    tool.parent.mkdir()
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)
    with Observer() as o:
        assert f.is_file() and f.exists() and f.read_text() == "one"
        assert not (tmp_path / "missing").exists()
        with open(f) as h:
            h.read()
        assert sorted(os.listdir(tmp_path)) == ["a.txt", "bin", "sub"]
        with os.scandir(tmp_path) as it:
            assert sorted(e.name for e in it) == ["a.txt", "bin", "sub"]
        assert [Path(p).name for p in glob.glob(str(tmp_path / "*.txt"))] == ["a.txt"]
        assert shutil.which("mytool", path=str(tool.parent)) == str(tool)
        assert (tmp_path / "sub").resolve() == (tmp_path / "sub")
    assert "stat" in _kinds(o, f)
    assert o.seen[("stat", str(tmp_path / "missing"))] is None
    assert "list" in _kinds(o, tmp_path) and "scan" in _kinds(o, tmp_path)
    assert any(k.startswith("access:") for k in _kinds(o, tool))
    assert o.seen[("real", str(tmp_path / "sub"))] == str(tmp_path / "sub")
    assert o.spoiled is None and o.changed() == []


def test_the_wrappers_are_on_only_while_observing():
    before = (os.stat, os.scandir, io.open, builtins.open, os.path.exists, subprocess.Popen.__init__)
    with Observer():
        assert os.stat is not before[0] and builtins.open is not before[3]
        with Observer():  # re-entered: still one layer of wrappers
            pass
        assert os.stat is not before[0]
    assert (os.stat, os.scandir, io.open, builtins.open, os.path.exists, subprocess.Popen.__init__) == before


@pytest.mark.parametrize(
    "change",
    ["other size", "same size and mtime", "deleted", "created", "chmod", "new entry", "entry grew", "link retargeted"],
)
def test_every_kind_of_change_to_what_was_seen_shows(tmp_path, change):
    f, listed, absent = tmp_path / "f", tmp_path / "dir", tmp_path / "absent"
    f.write_bytes(b"12345678")
    listed.mkdir()
    (listed / "e").write_bytes(b"x")
    (tmp_path / "t1").write_bytes(b"one")
    (tmp_path / "t2").write_bytes(b"two!")
    (listed / "link").symlink_to(tmp_path / "t1")
    os.utime(f, (OLD, OLD))
    with Observer() as o:
        f.read_bytes()
        assert not absent.exists()
        assert os.access(f, os.W_OK)
        with os.scandir(listed) as it:
            [e.stat().st_size for e in it]
    assert o.changed() == []
    if change == "other size":
        f.write_bytes(b"123")
    elif change == "same size and mtime":
        f.write_bytes(b"87654321")
        os.utime(f, (OLD, OLD))  # what a stat-only check would miss: the change time moved
    elif change == "deleted":
        f.unlink()
    elif change == "created":
        absent.write_text("now here")
    elif change == "chmod":
        f.chmod(0o444)
    elif change == "new entry":
        (listed / "e2").write_bytes(b"")
    elif change == "entry grew":
        (listed / "e").write_bytes(b"xy")
    elif change == "link retargeted":
        (listed / "link").unlink()
        (listed / "link").symlink_to(tmp_path / "t2")
    if change == "chmod" and os.geteuid() == 0:
        assert o.changed() == [f"stat {f}"]  # root may write anyway: the mode is in the stat value
    else:
        assert o.changed(), change


def test_a_directory_stat_is_its_kind_not_its_times(tmp_path):
    d = tmp_path / "d"
    d.mkdir()
    with Observer() as o:
        assert d.is_dir()
    (d / "new").write_text("x")  # moves the directory's mtime: nothing looked inside it
    assert o.changed() == []
    (d / "new").unlink()
    d.rmdir()
    d.write_text("now a file")
    assert o.changed() == [f"stat {d}"]


@pytest.mark.parametrize("how", ["open w", "pathlib write", "os.open O_CREAT", "process", "/proc"])
def test_what_cannot_be_observed_spoils_it(tmp_path, how):
    with Observer() as o:
        if how == "open w":
            with open(tmp_path / "x", "w") as h:
                h.write("x")
        elif how == "pathlib write":
            (tmp_path / "x").write_text("x")
        elif how == "os.open O_CREAT":
            os.close(os.open(tmp_path / "x", os.O_CREAT | os.O_WRONLY))
        elif how == "process":  # a unit test may not start one: the observer sees the attempt first
            with pytest.raises(AssertionError, match="may not start a process"):
                subprocess.run([sys.executable, "-c", "pass"], check=True)
        elif how == "/proc":
            if not Path("/proc/self/status").exists():
                pytest.skip("no /proc on this OS")
            Path("/proc/self/status").read_text()
    assert o.spoiled and o.blind_spot() == o.spoiled


def test_a_blind_module_imported_is_a_blind_spot(monkeypatch):
    for m in observe.BLIND:  # other tests of this process may have imported them
        monkeypatch.delitem(sys.modules, m, raising=False)
    o = Observer()
    assert o.blind_spot() is None
    monkeypatch.setitem(sys.modules, "lief", sys)
    assert "lief" in o.blind_spot()


def test_freshest_is_the_newest_time_of_files_and_scanned_entries(tmp_path):
    f = tmp_path / "f"
    f.write_text("x")
    os.utime(f, (OLD, OLD))
    with Observer() as o:
        f.read_text()
        assert f.parent.is_dir()
    # the write set ctime to now; the directory's value has no times
    assert abs(o.freshest_ns() - f.stat().st_ctime_ns) == 0
    assert time.time_ns() - o.freshest_ns() < fsutil.RACY_NS
    assert observe.freshest_ns([None, [0o40755], ["error", 13]]) == 0


def test_changed_reads_values_back_from_json_shape(tmp_path):
    f = tmp_path / "f"
    f.write_text("x")
    rows = [
        (("stat", str(f)), observe.look("stat", str(f))),
        (("scan", str(tmp_path)), observe.look("scan", str(tmp_path))),
    ]
    import json

    back = [((k, p), v) for (k, p), v in json.loads(json.dumps(rows))]
    assert changed(back) == []
