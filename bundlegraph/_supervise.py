"""Process supervisor used by :func:`bundlegraph.proc.run` on Linux.

``python -m bundlegraph._supervise -- PROGRAM ARGS...`` starts PROGRAM as the leader of a new
process group and waits for it. The supervisor itself is started with ``PR_SET_PDEATHSIG``
(SIGTERM), so even when bundlegraph/doit is killed with SIGKILL the supervisor is told, and on
SIGTERM/SIGINT/SIGHUP it ends PROGRAM's whole group (SIGTERM, then SIGKILL after 5 s). ninja,
which puts each job into a group of its own, ends its jobs itself when it receives SIGTERM,
so no compiler outlives an interrupted build. Exit status: PROGRAM's (128+N for a signal).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def main(argv: list[str]) -> int:
    if argv[:1] == ["--"]:
        argv = argv[1:]
    child = subprocess.Popen(argv, start_new_session=True)
    stop = {"at": 0.0}

    def on_signal(signum, _frame):
        if not stop["at"]:
            stop["at"] = time.monotonic()
        _signal_group(child.pid, signal.SIGTERM)

    for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(s, on_signal)
    if os.getppid() == 1:  # the parent died between fork and prctl: stop at once
        on_signal(signal.SIGTERM, None)
    while True:
        try:
            rc = child.wait(timeout=0.1)
            break
        except subprocess.TimeoutExpired:
            if stop["at"] and time.monotonic() - stop["at"] > 5:
                _signal_group(child.pid, signal.SIGKILL)
    if stop["at"]:  # members left in the group after the leader exited
        _signal_group(child.pid, signal.SIGKILL)
    return rc if rc >= 0 else 128 - rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
