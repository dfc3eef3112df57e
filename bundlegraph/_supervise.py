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

KILL_AFTER_S = 5.0
"""Seconds between SIGTERM to the group and SIGKILL to what is left of it."""


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def main(argv: list[str]) -> int:
    if argv[:1] == ["--"]:
        argv = argv[1:]
    child = subprocess.Popen(argv, start_new_session=True)
    stopping = False

    def on_alarm(_signum, _frame):  # the group outlived the grace period
        _signal_group(child.pid, signal.SIGKILL)

    def on_signal(_signum, _frame):
        nonlocal stopping
        _signal_group(child.pid, signal.SIGTERM)
        if not stopping:
            stopping = True
            signal.setitimer(signal.ITIMER_REAL, KILL_AFTER_S)

    signal.signal(signal.SIGALRM, on_alarm)
    for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(s, on_signal)
    if os.getppid() == 1:  # the parent died between fork and prctl: stop at once
        on_signal(signal.SIGTERM, None)
    # A blocking wait, no polling: the handlers above run while waitpid() waits (PEP 475 retries
    # it), so a build of an hour costs the supervisor no CPU time.
    rc = child.wait()
    if stopping:  # members left in the group after the leader exited
        _signal_group(child.pid, signal.SIGKILL)
    return rc if rc >= 0 else 128 - rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
