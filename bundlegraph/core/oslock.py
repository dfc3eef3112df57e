"""An exclusive inter-process lock on a file, from the OS: ``fcntl.flock`` on POSIX,
``msvcrt.locking`` (one byte at offset 0) on Windows. The lock belongs to the open file: it goes
with the process, also when the process is killed. No third-party module (importing ``filelock``
cost a no-op run time it does not need, issue 20).

Two :class:`FileLock` objects on one path conflict also inside one process (each opens the file),
as ``filelock``'s did; bundlegraph never nests a lock on the same path.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

if sys.platform == "win32":  # pragma: no cover - Windows only
    import msvcrt

    def _try(fd: int) -> bool:
        try:
            os.lseek(fd, 0, os.SEEK_SET)
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
            return True
        except OSError:
            return False

    def _unlock(fd: int) -> None:
        os.lseek(fd, 0, os.SEEK_SET)
        msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)
else:
    import fcntl

    def _try(fd: int) -> bool:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            return False

    def _unlock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_UN)


class Timeout(Exception):
    """The lock was not free within the time asked for."""


class FileLock:
    """``FileLock(path)``: :meth:`acquire` (``timeout`` seconds; -1 waits forever, 0 tries once;
    raises :class:`Timeout`), :meth:`release`, or ``with`` (waits forever). The file is created
    if missing and never removed (removing it would let two processes lock two files)."""

    POLL = 0.05

    def __init__(self, path: str | os.PathLike[str]):
        self.path = Path(path)
        self._fd: int | None = None

    @property
    def is_locked(self) -> bool:
        return self._fd is not None

    def acquire(self, timeout: float = -1) -> None:
        if self._fd is not None:
            return
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        deadline = None if timeout < 0 else time.monotonic() + timeout
        while not _try(fd):
            if deadline is not None and time.monotonic() >= deadline:
                os.close(fd)
                raise Timeout(str(self.path))
            time.sleep(self.POLL)
        self._fd = fd

    def release(self) -> None:
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        try:
            _unlock(fd)
        finally:
            os.close(fd)

    def __enter__(self) -> FileLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
