"""One executing doit run per work directory.

doit's dbm/json backends lose records when two runs overlap, and two builds writing one build
tree corrupt it. A run that executes tasks holds ``.bundlegraph/run.lock`` (an OS file lock,
released by the OS even when the process is killed). A second run waits up to
``BUNDLEGRAPH_LOCK_WAIT`` seconds (default 0) and otherwise stops with a message naming the
holder. Read-only doit commands (``list``, ``info``, ``help``, ...) take no lock.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import time
from pathlib import Path

from . import paths, settings
from .errors import StateError
from .oslock import FileLock, Timeout

READ_ONLY_COMMANDS = {"list", "info", "help", "dumpdb", "tabcompletion", "strace"}
_COMMANDS = READ_ONLY_COMMANDS | {"run", "clean", "forget", "ignore", "reset-dep", "auto"}
_held: list[FileLock] = []


_VALUED = {
    "-f",
    "--file",
    "-d",
    "--dir",
    "--db-file",
    "--backend",
    "-n",
    "--process",
    "-P",
    "--parallel-type",
    "--reporter",
    "-r",
    "--output-file",
    "-o",
}
"""doit options that take the next argument as their value."""


def _positionals(argv: list[str]) -> list[str]:
    """``argv`` without options and their values: the sub-command, ``key=value`` vars, tasks.
    After ``clean``, ``-n`` is its dry-run flag, not ``run``'s process count."""
    out: list[str] = []
    skip_next = False
    for a in argv:
        if skip_next:
            skip_next = False
        elif a == "-n" and out[:1] == ["clean"]:
            continue
        elif a in _VALUED:
            skip_next = True
        elif not a.startswith("-"):
            out.append(a)
    return out


def doit_command(argv: list[str]) -> str:
    """The doit sub-command in ``argv`` (``run`` when none is named). ``key=value`` variables may
    come before it (``doit only_leg=L list``): doit's ``DoitMain.process_args`` takes every
    argument holding ``=`` out as a variable before it looks for the command."""
    pos = [a for a in _positionals(argv) if "=" not in a]
    return pos[0] if pos and pos[0] in _COMMANDS else "run"


def doit_targets(argv: list[str]) -> list[str]:
    """The task names a ``doit run`` in ``argv`` was asked for (``build:L``; empty: the default
    tasks); ``key=value`` vars (before or after the command) and options are not targets."""
    pos = [a for a in _positionals(argv) if "=" not in a]
    if pos and pos[0] in _COMMANDS:
        pos = pos[1:]
    return pos


OWNER_WAIT_S = 3.0
"""How long a refused run waits for the holder to write its owner record (it writes it just
after taking the lock, so a run that starts at the same moment can look before it is there)."""


def _alive(pid: int) -> bool:
    if os.name == "nt":
        return True  # no cheap probe; the lock itself says a holder exists
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _holder(info: Path) -> str:
    """``pid N, started T`` of the live process named by the owner record ``info``, waiting up
    to :data:`OWNER_WAIT_S` for it (a record left by an earlier, finished run is not it)."""
    deadline = time.monotonic() + OWNER_WAIT_S
    while True:
        try:
            owner = json.loads(info.read_text())
            if _alive(int(owner["pid"])):
                return f"pid {owner['pid']}, started {owner['started']}"
        except (OSError, ValueError, KeyError, TypeError):
            pass
        if time.monotonic() > deadline:
            return "unknown process"
        time.sleep(0.05)


def acquire(command: str) -> None:
    """Take the run lock unless ``command`` is read-only. Raises :class:`StateError`."""
    if command in READ_ONLY_COMMANDS or _held:
        return
    sd = paths.state_dir()
    sd.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(sd / "run.lock"))
    wait = settings.get("LOCK_WAIT")
    info = sd / "run.owner.json"
    try:
        lock.acquire(timeout=wait)
    except Timeout:
        who = _holder(info)
        raise StateError(
            f"another doit run ({who}) is executing tasks in {paths.workdir()}; "
            f"wait for it to finish, or set BUNDLEGRAPH_LOCK_WAIT=SECONDS to wait for it"
        ) from None
    info.write_text(json.dumps({"pid": os.getpid(), "started": _dt.datetime.now().isoformat(timespec="seconds")}))
    _held.append(lock)
