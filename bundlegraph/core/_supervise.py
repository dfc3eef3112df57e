"""Process supervisor used by :func:`bundlegraph.core.proc.run` on Linux.

``python -m bundlegraph.core._supervise -- PROGRAM ARGS...`` starts PROGRAM as the leader of a new
process group and waits for it. The supervisor is started with ``PR_SET_PDEATHSIG`` (SIGTERM),
so even when bundlegraph/doit is killed with SIGKILL the supervisor is told.

It is also a *child subreaper* (``prctl(PR_SET_CHILD_SUBREAPER)``, Linux >= 3.4): every process
PROGRAM starts, in whatever process group or session (ninja puts each job into a group of its
own), stays its descendant even when its parent exits first. So on SIGTERM/SIGINT/SIGHUP the
supervisor can end the whole tree, not just PROGRAM's group:

1. SIGTERM to PROGRAM's group and to every other descendant;
2. wait until *no* descendant is left (ninja exits as soon as its direct children die, while a
   compiler that traps SIGTERM may linger; it is reparented here and waited for too);
3. after :data:`KILL_AFTER_S` seconds, SIGKILL to whatever is left, and wait for it.

The supervisor exits only when the tree is gone, so its parent (``proc.run``) can wait for the
supervisor and know that nothing it started still runs. A normal exit of PROGRAM returns at once
(a daemon a build started on purpose, e.g. a compiler-cache server, is left alone).
Exit status: PROGRAM's (128+N for a signal).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys

KILL_AFTER_S = 5.0
"""Seconds between SIGTERM to the tree and SIGKILL to what is left of it."""

PR_SET_CHILD_SUBREAPER = 36  # <linux/prctl.h>


def _become_subreaper() -> bool:
    try:
        return bool(ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


def descendants(root: int) -> list[int]:
    """Pids of every live descendant of ``root`` (from the ``ppid`` field of
    ``/proc/<pid>/stat``, see proc(5)); empty where /proc cannot be read."""
    children: dict[int, list[int]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    for e in entries:
        if not e.isdigit():
            continue
        try:
            with open(f"/proc/{e}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        # "pid (comm) state ppid ...": comm may hold spaces and parentheses; split after the last ')'
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) >= 2 and fields[0] != b"Z":
            children.setdefault(int(fields[1]), []).append(int(e))
    out: list[int] = []
    todo = [root]
    while todo:
        for c in children.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


def _signal(pid: int, sig: int, group: bool = False) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        (os.killpg if group else os.kill)(pid, sig)


def _signal_tree(leader: int, sig: int, done: set[int] | None = None) -> None:
    """Send ``sig`` to ``leader``'s group and to every descendant of this process.

    ``done`` (SIGTERM only) holds the pids told already and is updated: a process is sent SIGTERM
    once. A second SIGTERM would re-enter a handler that is still cleaning up (Python restarts
    its handler; a compiler's may restart its clean-up), so the job would need longer than the
    grace period and be killed half-way (seen on a loaded CI machine)."""
    if done is None or leader not in done:
        _signal(leader, sig, group=True)
    for pid in descendants(os.getpid()):
        if done is None or pid not in done:
            _signal(pid, sig)
            if done is not None:
                done.add(pid)
    if done is not None:
        done.add(leader)


def _reap_all() -> None:
    """Wait for every child (PROGRAM's orphans are ours as a subreaper) until none is left."""
    while True:
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            return


def main(argv: list[str]) -> int:
    if argv[:1] == ["--"]:
        argv = argv[1:]
    _become_subreaper()
    child = subprocess.Popen(argv, start_new_session=True)
    stopping = False
    termed: set[int] = set()  # pids sent SIGTERM already

    def on_alarm(_signum: int, _frame: object) -> None:  # the tree outlived the grace period
        _signal_tree(child.pid, signal.SIGKILL)

    def on_signal(_signum: int, _frame: object) -> None:
        nonlocal stopping
        _signal_tree(child.pid, signal.SIGTERM, termed)
        if not stopping:
            stopping = True
            signal.setitimer(signal.ITIMER_REAL, KILL_AFTER_S, 1.0)  # then again every second

    signal.signal(signal.SIGALRM, on_alarm)
    for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(s, on_signal)
    if os.getppid() == 1:  # the parent died between fork and prctl: stop at once
        on_signal(signal.SIGTERM, None)
    # A blocking wait, no polling: the handlers above run while waitpid() waits (PEP 475 retries
    # it), so a build of an hour costs the supervisor no CPU time.
    rc = child.wait()
    if stopping:
        # members left in PROGRAM's group, and descendants in groups of their own (reparented
        # here): signalled already (those started since are told now); wait for each, SIGKILL
        # by the timer after the grace period
        _signal_tree(child.pid, signal.SIGTERM, termed)
        _reap_all()
    return rc if rc >= 0 else 128 - rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
