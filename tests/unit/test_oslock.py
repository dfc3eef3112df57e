"""bundlegraph.core.oslock: the OS's exclusive file lock (fcntl/msvcrt), without a process: two
FileLock objects on one path conflict as two processes' would (each holds its own open file)."""

from __future__ import annotations

import time

import pytest

from bundlegraph.core.oslock import FileLock, Timeout


def test_a_second_holder_times_out_until_the_first_releases(tmp_path):
    p = tmp_path / "run.lock"
    first, second = FileLock(p), FileLock(p)
    first.acquire()
    assert first.is_locked and p.is_file()
    t0 = time.monotonic()
    with pytest.raises(Timeout, match="run.lock"):
        second.acquire(timeout=0.2)
    assert time.monotonic() - t0 >= 0.2 and not second.is_locked
    with pytest.raises(Timeout):
        second.acquire(timeout=0)  # one try
    first.release()
    second.acquire(timeout=0)
    assert second.is_locked and p.is_file()  # the file stays: removing it would split the lock
    second.release()
    second.release()  # twice is harmless


def test_with_waits_and_releases(tmp_path):
    p = tmp_path / "x.lock"
    with FileLock(p) as lk:
        assert lk.is_locked
    with FileLock(p) as again:
        assert again.is_locked
