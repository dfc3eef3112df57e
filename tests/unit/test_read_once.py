"""What a no-op reads once per process (issue 20) is read again whenever the file changed: the
stamps, the wheels locks and the source tree digests. A file written within the last
``RACY_NS`` is never remembered (a same-size rewrite inside one tick of the file clock)."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

from bundlegraph.core import state
from bundlegraph.core.fsutil import RACY_NS, tree_digest
from bundlegraph.toolkit.lockfile import load_lock

ROOT = Path(__file__).resolve().parents[2]


def _age(p: Path, seconds: float = 60) -> None:
    t = time.time_ns() - int(seconds * 1e9)
    os.utime(p, ns=(t, t))


def test_a_recent_lock_is_read_again_and_an_old_one_once(tmp_path, monkeypatch):
    lock = tmp_path / "lock.toml"
    text = (ROOT / "bundles/locks/cuda-13.5-wheels.toml").read_text()
    lock.write_text(text)
    assert load_lock(lock).cuda == "13.5"
    lock.write_text(text.replace('cuda = "13.5"', 'cuda = "13.4"'))  # same size, same tick: still seen
    assert load_lock(lock).cuda == "13.4"
    monkeypatch.setattr("bundlegraph.core.fsutil.RACY_NS", 0)  # every file counts as settled now
    first = load_lock(lock)
    assert load_lock(lock) is first  # remembered
    lock.write_text(text + "\n")  # another size (and a new mtime): read again
    assert load_lock(lock) is not first and load_lock(lock).cuda == "13.5"


def test_a_stamp_is_read_again_after_record_and_forget(workdir):
    task = "source:x"
    assert state.load(task) is None
    out = workdir / "o.txt"
    out.write_text("a")
    s1 = state.record(task, {"k": 1}, [out])
    assert state.load(task) == s1
    s2 = state.record(task, {"k": 2}, [out])
    assert state.load(task).key == s2.key != s1.key
    state.forget(task)
    assert state.load(task) is None


def test_a_tree_digest_follows_its_files(tmp_path):
    t = tmp_path / "tree"
    t.mkdir()
    (t / "a.c").write_text("int a;\n")
    d1 = tree_digest(t)
    (t / "a.c").write_text("int b;\n")  # same size, within one tick
    d2 = tree_digest(t)
    assert d2 != d1
    _age(t / "a.c")
    assert tree_digest(t) == d2 == tree_digest(t)
    (t / "b.c").write_text("")
    assert tree_digest(t)[1] == 2
    assert RACY_NS > 0 and re.fullmatch(r"[0-9a-f]{64}", d2[0])


def test_parsed_once_remembers_only_settled_files_and_never_a_failure(tmp_path, monkeypatch):
    from bundlegraph.core.fsutil import parsed_once

    calls = []

    def parse(p: Path) -> str:
        calls.append(p)
        text = p.read_text()
        if text == "bad":
            raise ValueError("bad")
        return text

    f = tmp_path / "r.json"
    f.write_text("bad")
    monkeypatch.setattr("bundlegraph.core.fsutil.RACY_NS", 0)  # every file counts as settled
    for _ in range(2):
        try:
            parsed_once(f, parse)
        except ValueError:
            pass
    assert len(calls) == 2  # a failure is never remembered
    f.write_text("good")
    assert parsed_once(f, parse) == "good" and parsed_once(f, parse) == "good" and len(calls) == 3  # remembered
    monkeypatch.setattr("bundlegraph.core.fsutil.RACY_NS", 10**12)  # now every file is recent
    g = tmp_path / "g.json"
    g.write_text("good")
    assert parsed_once(g, parse) == "good" and parsed_once(g, parse) == "good" and len(calls) == 5  # read each time


def test_which_looks_again_for_a_program_that_is_gone(tmp_path):
    from bundlegraph.core import proc

    exe = tmp_path / "bg-which-probe"
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    env = {"PATH": str(tmp_path)}
    assert proc.which("bg-which-probe", env) == str(exe)
    exe.unlink()
    assert proc.which("bg-which-probe", env) is None
