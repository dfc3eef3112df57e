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
UNTOUCHED_COMMANDS = {"list", "info", "help", "tabcompletion"}
"""doit commands that leave the work directory untouched: they create no ``.bundlegraph/`` and no
doit database (:attr:`bundlegraph.graph.context.Graph.doit_config` gives them doit's database only where
it already exists, else an in-memory one), so they also work in a read-only work directory."""
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
    "--sort",
    "--template",
}
"""doit options that take the next argument as their value (``--sort``/``--template``: ``list``'s)."""


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
    """Take the run lock unless ``command`` is read-only. Raises :class:`StateError`: another run
    holds it, or the work directory is not writable (one line naming it)."""
    if command in READ_ONLY_COMMANDS or _held:
        return
    sd = paths.state_dir()
    lock = FileLock(str(sd / "run.lock"))
    wait = settings.get("LOCK_WAIT")
    info = sd / "run.owner.json"
    try:
        sd.mkdir(parents=True, exist_ok=True)
        lock.acquire(timeout=wait)
    except OSError as e:
        raise StateError(not_writable(command, e)) from None
    except Timeout:
        who = _holder(info)
        raise StateError(
            f"another doit run ({who}) is executing tasks in {paths.workdir()}; "
            f"wait for it to finish, or set BUNDLEGRAPH_LOCK_WAIT=SECONDS to wait for it"
        ) from None
    try:
        info.write_text(json.dumps({"pid": os.getpid(), "started": _dt.datetime.now().isoformat(timespec="seconds")}))
    except OSError as e:
        lock.release()
        raise StateError(not_writable(command, e)) from None
    _held.append(lock)


def not_writable(command: str, e: OSError) -> str:
    """The one line refusing ``doit <command>`` in a work directory it cannot write (``e``: what
    creating its lock or state failed with), naming the directory and how to choose another."""
    wd = paths.workdir()
    return (
        f"{wd}: the work directory is not writable ({e.strerror or e} for {e.filename or paths.state_dir()}): "
        f"doit {command} keeps its run lock and state in {paths.state_dir()}; make it writable, or set "
        f"BUNDLEGRAPH_WORKDIR to a directory you can write (`doit list` and `doit info` need none)"
    )
