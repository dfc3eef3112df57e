"""Download progress: a rich progress bar on a terminal, plain lines in CI or in a log.

:func:`reporter` picks one: rich when stderr is a terminal and ``CI`` is unset, else plain
lines (``download: <name> (<MB>)`` at the start, ``download: <name> done|FAILED in <s>s
(<MB/s>)`` at the end, and one line per retry). Both are thread-safe.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from typing import Any, TextIO


class Reporter:
    """Plain-line reporter (also the interface): ``start`` returns a handle for ``advance``,
    ``update``, ``finish``; ``note`` prints a message; ``close`` ends the display."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self._s = stream or sys.stderr
        self._lock = threading.Lock()
        self._t: dict[int, tuple[str, float, int]] = {}
        self._n = 0

    def _print(self, msg: str) -> None:
        with self._lock:
            print(msg, file=self._s, flush=True)

    def start(self, name: str, total: int | None) -> Any:
        with self._lock:
            self._n += 1
            h = self._n
            self._t[h] = (name, time.monotonic(), 0)
        size = f"{total / 1e6:.1f} MB" if total else "size unknown"
        self._print(f"download: {name} ({size})")
        return h

    def advance(self, h: Any, n: int) -> None:
        with self._lock:
            name, t0, done = self._t[h]
            self._t[h] = (name, t0, done + n)

    def update(self, h: Any, completed: int) -> None:
        with self._lock:
            name, t0, _ = self._t[h]
            self._t[h] = (name, t0, completed)

    def finish(self, h: Any, ok: bool) -> None:
        with self._lock:
            name, t0, done = self._t.pop(h)
        dt = max(time.monotonic() - t0, 1e-6)
        self._print(f"download: {name} {'done' if ok else 'FAILED'} in {dt:.1f}s ({done / dt / 1e6:.1f} MB/s)")

    def note(self, msg: str) -> None:
        self._print(f"download: {msg}")

    def close(self) -> None:
        pass


class RichReporter(Reporter):
    """A rich progress bar per download (terminal only)."""

    def __init__(self) -> None:
        super().__init__()
        from rich.progress import (
            BarColumn,
            DownloadColumn,
            Progress,
            TextColumn,
            TimeRemainingColumn,
            TransferSpeedColumn,
        )

        self._p = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            DownloadColumn(),
            TransferSpeedColumn(),
            TimeRemainingColumn(),
            transient=False,
        )
        self._p.start()

    def start(self, name: str, total: int | None) -> Any:
        return self._p.add_task(name, total=total)

    def advance(self, h: Any, n: int) -> None:
        self._p.advance(h, n)

    def update(self, h: Any, completed: int) -> None:
        self._p.update(h, completed=completed)

    def finish(self, h: Any, ok: bool) -> None:
        t = self._p.tasks[h] if h < len(self._p.tasks) else None
        self._p.update(h, description=f"{t.description if t else ''} {'ok' if ok else 'FAILED'}")

    def note(self, msg: str) -> None:
        self._p.console.print(f"download: {msg}")

    def close(self) -> None:
        self._p.stop()


def reporter() -> Reporter:
    """A rich bar on an interactive terminal without ``CI``; plain lines otherwise."""
    if sys.stderr.isatty() and not os.environ.get("CI"):
        return RichReporter()
    return Reporter()
