"""The no-op memo: a ``doit`` run that found every task it was asked for up to date lets the next
identical run say so without loading the graph (issue 53 item 5; the idea of Gradle's
configuration cache).

The run that writes it loads the graph and checks its tasks under an
:class:`~bundlegraph.graph.observe.Observer`, so it knows every file and directory the load and
the up-to-date checks looked at. When the last task of its selection is found up to date, and
nothing looked at changed meanwhile, it writes ``.bundlegraph/noop/<run key>.json``: those
observations, doit's task dicts (without their callables) and the default tasks.

The next run computes its :func:`run_key` (the command line, the whole environment, the working
directory, the interpreter, bundlegraph's own files and the installed packages' folders; a
different value of any is a different memo) and, when a memo of that key exists and every
observation still holds, hands doit the same tasks with an up-to-date check that says yes:
what doit prints and does is what the full load would have made it print and do. Anything else
(no memo, one observation that changed, a command line with options other than ``-f``/``-d``,
``BUNDLEGRAPH_NOOP_MEMO=0``) loads the graph as before, and a due task then runs as before.

File (JSON, one object): ``version`` (:data:`VERSION`), ``key``, ``observed`` (``[kind, path,
value]`` rows, :func:`bundlegraph.graph.observe.look`), ``creators`` (``{"task_<stage>":
{"doc": the creator's docstring, "tasks": [task dict, ...]}}`` in doit's order, each dict without
``actions``/``uptodate``/``clean``) and
``default_tasks``. A memo that cannot be read, or is of another version, is not used.

Plain standard library and :mod:`bundlegraph.core.paths`: this is what a no-op imports.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from . import observe

VERSION = 1
KEEP = 8
"""Memos kept per work directory (the newest by modification time): one per command line and
environment that was a no-op lately."""

_QUIET_OPTIONS = {"-f", "--file", "-d", "--dir"}
"""doit options a memo may be used with (they take a value); any other option (``-a``, ``-n``,
``--verbosity``, ...) changes what doit does with the tasks: no memo is written or used."""

_LIST_OPTIONS = {"--all", "-q", "--quiet", "-p", "--private", "--deps", "--sort", "--template"}
"""``doit list`` options that only change how the tasks are shown."""


_PACKAGE = Path(__file__).resolve().parents[1]


def eligible(argv: list[str]) -> str | None:
    """The doit command a memo may serve in ``argv``, or None. ``run`` (named or not) with
    ``key=value`` variables, task names without wildcards and only the options
    :data:`_QUIET_OPTIONS`; ``list`` with those and its display options :data:`_LIST_OPTIONS`
    (not ``--status``, which asks every task's check). The command and the task names are
    :mod:`bundlegraph.core.runlock`'s reading of the command line."""
    from ..core.runlock import doit_command, doit_targets

    command = doit_command(argv)
    allowed = _QUIET_OPTIONS | (_LIST_OPTIONS if command == "list" else set())
    opts = [a.split("=", 1)[0] for a in argv if a.startswith("-")]
    if command not in ("run", "list") or any(o not in allowed for o in opts):
        return None
    return None if any(c in t for t in doit_targets(argv) for c in "*?[") else command


def _code_stamp() -> list[Any]:
    """``[relative path, size, mtime_ns]`` of every file of the bundlegraph package (not its
    ``__pycache__``): an edit to the code that loads the graph is a different run."""
    out: list[Any] = []
    stack = [_PACKAGE]
    while stack:
        d = stack.pop()
        with os.scandir(d) as it:
            for e in it:
                if e.is_dir(follow_symlinks=False):
                    if e.name != "__pycache__":
                        stack.append(Path(e.path))
                else:
                    st = e.stat()
                    out.append([e.path, st.st_size, st.st_mtime_ns])
    out.sort()
    return out


def _site_folders() -> list[str]:
    """The site-packages folders of this interpreter (and the user's, where Python reads it):
    installing, upgrading or removing a package changes their listing (dist-info names hold versions)."""
    import site

    out = list(site.getsitepackages())
    if site.ENABLE_USER_SITE:
        out.append(site.getusersitepackages())
    return out


def run_key(argv: list[str], dodo: Path) -> str:
    """The sha256 (hex) of what decides a run besides the files it looks at: ``argv``, the
    environment, the working directory, the interpreter and its platform, bundlegraph's files,
    ``dodo`` (the dodo.py doit loaded), and the site-packages folders (installing or removing a
    package changes them). Costs about a millisecond (a stat per bundlegraph file)."""
    try:
        dodo_st = os.stat(dodo)
        dodo_mark: Any = [dodo_st.st_size, dodo_st.st_mtime_ns]
    except OSError:
        dodo_mark = None
    what = {
        "version": VERSION,
        "argv": argv,
        "env": sorted(os.environ.items()),
        "cwd": os.getcwd(),
        "python": [sys.executable, sys.version, sys.platform, list(getattr(os, "uname", lambda: ())())],
        "dodo": [str(dodo), dodo_mark],
        "code": _code_stamp(),
        # the folders packages are installed in (not sys.path: it starts with the script's own
        # folder, and doit adds the dodo's); PYTHONPATH is in the environment
        "site": [[p, observe.look("list", p)] for p in _site_folders()],
    }
    return hashlib.sha256(json.dumps(what, sort_keys=True, default=str).encode()).hexdigest()


def recall(folder: Path, key: str) -> dict[str, Any] | None:
    """The memo of ``key`` in ``folder`` when it exists, is readable and of this
    :data:`VERSION`, and every observation in it still holds; else None (the caller loads the
    graph)."""
    try:
        with open(folder / f"{key}.json", encoding="utf-8") as f:
            memo = json.load(f)
    except (OSError, ValueError):
        return None
    if not isinstance(memo, dict) or memo.get("version") != VERSION or memo.get("key") != key:
        return None
    try:
        rows = [((k, p), v) for k, p, v in memo["observed"]]
    except (KeyError, TypeError, ValueError):
        return None
    if observe.changed(rows):
        return None
    return memo


class Recorder:
    """The memo a run will write if it turns out a no-op: the observer its graph load and checks
    run under, the tasks it must find up to date (``expected``, full task names), the task
    dicts and default tasks to store. :meth:`checked` is told each check's answer; the memo is
    written when the last expected task was found up to date."""

    def __init__(self, key: str, folder: Path) -> None:
        self.key = key
        self.folder = folder
        self.observer = observe.Observer()
        self.expected: set[str] | None = None
        self.creators: dict[str, dict[str, Any]] = {}
        self.default_tasks: list[str] = []
        self._up: set[str] = set()
        self.done = False

    def checked(self, task: str, up_to_date: bool) -> None:
        """Note ``task``'s check; write the memo once every expected task was up to date."""
        if self.done:
            return
        if not up_to_date:
            self.observer.spoil(f"{task} is due")
            self.done = True
            return
        self._up.add(task)
        if self.expected is not None and self.expected <= self._up:
            self.done = True
            self.write()

    def write(self) -> Path | None:
        """Write the memo (atomically) unless the observations cannot be trusted or changed since
        they were made; returns its path, or None when none was written. Keeps the
        :data:`KEEP` newest memos. A work directory that cannot be written to gets none."""
        if self.observer.blind_spot() or self.observer.changed():
            return None
        from ..core import fsutil  # the writing run only: a recalled no-op does not import it

        if self.observer.freshest_ns() > time.time_ns() - fsutil.RACY_NS:
            return None  # something looked at changed too recently to trust its stat later
        memo = {
            "version": VERSION,
            "key": self.key,
            "observed": [[k, p, v] for (k, p), v in self.observer.seen.items()],
            "creators": self.creators,
            "default_tasks": self.default_tasks,
        }
        d = self.folder
        target = d / f"{self.key}.json"
        tmp = d / f".{self.key}.{os.getpid()}.tmp"
        try:
            d.mkdir(parents=True, exist_ok=True)
            tmp.write_text(json.dumps(memo, separators=(",", ":")), encoding="utf-8")
            os.replace(tmp, target)
            _prune(d)
        except OSError:
            tmp.unlink(missing_ok=True)
            return None
        return target


def _prune(d: Path) -> None:
    memos = sorted(d.glob("*.json"), key=lambda p: p.stat().st_mtime_ns, reverse=True)
    for old in memos[KEEP:]:
        old.unlink(missing_ok=True)


RECORDING: Recorder | None = None
"""The recorder of this process's run, when it is one that may write a memo
(:func:`bundlegraph.graph.context` checks under its observer and reports each answer)."""


def without_callables(task: dict[str, Any]) -> dict[str, Any]:
    """A doit task dict as a memo stores it: what is not a callable."""
    return {k: v for k, v in task.items() if k not in ("actions", "uptodate", "clean")}


class _Yes:
    """A recalled task's up-to-date check: the memo says it is."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __call__(self) -> bool:
        return True

    def __repr__(self) -> str:
        return f"<{self.name} check (up to date: the no-op memo holds); `bundlegraph explain {self.name}` says why>"


class _Late:
    """A recalled task's action or clean: ``act(name, clean)`` loads the graph and does what the
    full load's would (doit runs neither for an up-to-date task; this is for a caller that
    forces one)."""

    __slots__ = ("act", "clean", "name")

    def __init__(self, name: str, act: Callable[[str, bool], object], clean: bool = False) -> None:
        self.name, self.act, self.clean = name, act, clean

    def __call__(self) -> object:
        return self.act(self.name, self.clean)

    def __repr__(self) -> str:
        return f"<{self.name}: loads the graph, then {'cleans' if self.clean else 'runs'} the task>"


def task_creators(
    memo: dict[str, Any], act: Callable[[str, bool], object]
) -> dict[str, Callable[[], Iterable[dict[str, Any]]]]:
    """``{"task_<stage>": generator}`` from a recalled memo, for dodo.py's globals: the stored
    dicts with a yes-check and late actions. ``act(task, clean)`` loads the graph and runs the
    task's action (or its clean); only a forced action calls it."""
    return {name: _creator(c["doc"], c["tasks"], act) for name, c in memo["creators"].items()}


def _creator(
    doc: str, dicts: list[dict[str, Any]], act: Callable[[str, bool], object]
) -> Callable[[], Iterator[dict[str, Any]]]:
    def gen() -> Iterator[dict[str, Any]]:
        for d in dicts:
            if "task_dep" not in d:
                yield dict(d)  # a stage's group task: no check, no action
                continue
            full = f"{d['basename']}:{d['name']}" if d.get("name") else d["basename"]
            yield {
                **d,
                "actions": [_Late(full, act)],
                "uptodate": [_Yes(full)],
                "clean": [_Late(full, act, clean=True)],
            }

    gen.__doc__ = doc
    return gen


__all__ = ["RECORDING", "Recorder", "eligible", "recall", "run_key", "task_creators", "without_callables"]
