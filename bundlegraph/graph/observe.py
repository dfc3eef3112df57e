"""What a stretch of Python code looked at on disk: every path it stat'ed, opened to read, listed
or tested, with what it found there, so a later process can tell in a few milliseconds whether
any of it changed (:mod:`bundlegraph.graph.noop_memo` uses it to skip loading the graph).

While an :class:`Observer` is on, the ``os`` functions every file access in Python goes through
are wrapped (``os.stat``, ``os.lstat``, ``os.listdir``, ``os.scandir``, ``os.access``,
``os.readlink``, ``os.open``, ``io.open`` / ``builtins.open``, ``os.path``'s ``exists``,
``isfile``, ``isdir``, ``islink``, ``lexists`` and ``realpath``, which Windows' Python 3.12+
answers in C without ``os.stat``). ``pathlib``, ``glob``, ``shutil.which`` and ``os.walk`` call
these by attribute, so they are seen too. Each access becomes one observation ``(kind, path)``
whose value :func:`look` computes:

- ``stat`` / ``lstat``: ``[mode, size, mtime_ns, ctime_ns, inode]`` of the path (following
  links, or not), ``None`` when it does not exist, ``["error", errno]`` otherwise. A file opened
  to read is a ``stat`` observation: its content is trusted to change only with these.
- ``list``: the sorted names in a directory; ``scan``: the same with each entry's ``lstat`` value
  (``os.scandir`` entries answer ``stat()`` from their own cache, not through ``os.stat``).
- ``access:<mode>``: ``os.access``'s answer; ``real``: ``os.path.realpath``'s.

Some things cannot be observed this way; each one *spoils* the observer (``Observer.spoiled``
names it, and nothing may be concluded from the observations): a file opened to write, a process
started (``subprocess.Popen``), an access relative to a directory descriptor, a read under
``/proc``, ``/sys`` or ``/dev`` (their stat does not follow their content). What runs in C
without these functions (a library that opens files itself) is not seen: the code observed must
not use one (:data:`bundlegraph.graph.context.NOT_ON_THE_LOAD_PATH`, and :data:`BLIND` below is
checked).

Observing is for one thread at a time: the wrappers are installed on :meth:`Observer.__enter__`
and removed on exit.
"""

from __future__ import annotations

import builtins
import io
import os
import stat as _stat
import subprocess
import sys
from collections.abc import Callable, Iterator
from typing import Any

Value = Any
"""An observation's value: JSON-shaped (lists, strings, ints, bools, None), compared with ``==``."""

BLIND = ("lief", "httpx")
"""Modules that read files or the network outside the wrapped functions (LIEF's C++ parser,
HTTP): when one is imported in the process, the observations are not the whole story."""

_VOLATILE = ("/proc/", "/sys/", "/dev/")
"""Where a file's stat does not change with its content (Linux' pseudo-filesystems)."""

_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND

# the functions as they are before any wrapping: looking must not observe itself
_os_stat, _os_listdir, _os_access, _os_readlink, _realpath = (
    os.stat,
    os.listdir,
    os.access,
    os.readlink,
    os.path.realpath,
)


def _stat_value(path: str, follow: bool) -> Value:
    try:
        st = _os_stat(path, follow_symlinks=follow)
    except FileNotFoundError:
        return None
    except NotADirectoryError:
        return None
    except OSError as e:
        return ["error", e.errno]
    if _stat.S_ISDIR(st.st_mode):
        return [st.st_mode]  # a directory's times move with any entry; a listing observes those
    return [st.st_mode, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]


def look(kind: str, path: str) -> Value:
    """The value of observation ``(kind, path)`` now (kinds: the module docstring). Never raises
    for a missing or unreadable path: that is a value too."""
    if kind == "stat":
        return _stat_value(path, True)
    if kind == "lstat":
        return _stat_value(path, False)
    if kind in ("list", "scan"):
        try:
            names = sorted(_os_listdir(path))
        except OSError as e:
            return ["error", e.errno]
        if kind == "list":
            return names
        out = []
        for n in names:
            entry = os.path.join(path, n)
            v = _stat_value(entry, False)
            # an entry's stat() follows a link: what the link points at is observed too
            out.append([n, v, _stat_value(entry, True)] if v and _stat.S_ISLNK(v[0]) else [n, v])
        return out
    if kind.startswith("access:"):
        return _os_access(path, int(kind[7:]))
    if kind == "real":
        return _realpath(path)
    if kind == "readlink":
        try:
            return _os_readlink(path)
        except OSError as e:
            return ["error", e.errno]
    raise ValueError(f"unknown observation kind {kind!r}")


class _Listing:
    """What the wrapped ``os.scandir`` returns: the entries already read, iterable once, usable
    as a context manager like ``os.scandir``'s iterator."""

    def __init__(self, entries: list[os.DirEntry[Any]]) -> None:
        self._it = iter(entries)

    def __iter__(self) -> Iterator[os.DirEntry[Any]]:
        return self._it

    def __next__(self) -> os.DirEntry[Any]:
        return next(self._it)

    def __enter__(self) -> _Listing:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def close(self) -> None:
        return None


class Observer:
    """Records observations while entered (re-entering is a no-op). ``seen`` maps
    ``(kind, path)`` to the value found at the first access; ``spoiled`` is None or why the
    observations cannot be trusted."""

    def __init__(self) -> None:
        self.seen: dict[tuple[str, str], Value] = {}
        self.spoiled: str | None = None
        self._saved: list[tuple[Any, str, Any]] = []
        self._depth = 0
        self._inside = 0

    # -- recording ------------------------------------------------------------------------
    def _note(self, kind: str, path: Any) -> None:
        if self._inside:
            return  # a wrapped function's own calls (realpath's lstat of every parent): its answer is the observation
        if isinstance(path, int):
            return  # a file descriptor: the file was observed when it was opened
        try:
            p = os.fsdecode(os.fspath(path))
        except TypeError:
            return
        if p.startswith(_VOLATILE):
            self.spoil(f"read {p}")
            return
        key = (kind, p)
        if key not in self.seen:
            self.seen[key] = look(kind, p)

    def spoil(self, why: str) -> None:
        """Mark the observations untrustworthy (the first reason is kept)."""
        if self.spoiled is None:
            self.spoiled = why

    # -- wrapping ---------------------------------------------------------------------------
    def _wrap(self, owner: Any, name: str, make: Callable[[Callable[..., Any]], Callable[..., Any]]) -> None:
        orig = getattr(owner, name)
        self._saved.append((owner, name, orig))
        setattr(owner, name, make(orig))

    def _call(self, orig: Callable[..., Any], *a: Any, **k: Any) -> Any:
        self._inside += 1
        try:
            return orig(*a, **k)
        finally:
            self._inside -= 1

    def _path_call(self, kind: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        def make(orig: Callable[..., Any]) -> Callable[..., Any]:
            def wrapped(path: Any = ".", *a: Any, **k: Any) -> Any:
                if k.get("dir_fd") is not None:
                    self.spoil(f"{orig.__name__} relative to a directory descriptor")
                elif kind == "stat" and k.get("follow_symlinks") is False:
                    self._note("lstat", path)
                else:
                    self._note(kind, path)
                return self._call(orig, path, *a, **k)

            return wrapped

        return make

    def _open_call(self, orig: Callable[..., Any]) -> Callable[..., Any]:
        def wrapped(file: Any, mode: str = "r", *a: Any, **k: Any) -> Any:
            if isinstance(mode, str) and any(c in mode for c in "wax+"):
                self.spoil(f"opened {file!r} to write")
            else:
                self._note("stat", file)
            return self._call(orig, file, mode, *a, **k)

        return wrapped

    def _os_open(self, orig: Callable[..., Any]) -> Callable[..., Any]:
        def wrapped(path: Any, flags: int, *a: Any, **k: Any) -> Any:
            if flags & _WRITE_FLAGS:
                self.spoil(f"opened {path!r} to write")
            elif k.get("dir_fd") is not None:
                self.spoil("os.open relative to a directory descriptor")
            else:
                self._note("stat", path)
            return self._call(orig, path, flags, *a, **k)

        return wrapped

    def _scandir(self, orig: Callable[..., Any]) -> Callable[..., Any]:
        def wrapped(path: Any = ".") -> Any:
            if isinstance(path, int):
                self.spoil("os.scandir of a directory descriptor")
                return orig(path)
            self._note("scan", path)
            return _Listing(self._call(lambda p: list(orig(p)), path))

        return wrapped

    def _access(self, orig: Callable[..., Any]) -> Callable[..., Any]:
        def wrapped(path: Any, mode: int, *a: Any, **k: Any) -> Any:
            if k.get("dir_fd") is not None:
                self.spoil("os.access relative to a directory descriptor")
            else:
                self._note(f"access:{mode}", path)
            return self._call(orig, path, mode, *a, **k)

        return wrapped

    def _popen_init(self, orig: Callable[..., Any]) -> Callable[..., Any]:
        def wrapped(popen: Any, args: Any, *a: Any, **k: Any) -> Any:
            self.spoil(f"started a process ({args!r:.80})")
            return orig(popen, args, *a, **k)

        return wrapped

    def __enter__(self) -> Observer:
        self._depth += 1
        if self._depth > 1:
            return self
        path_kinds = {"stat": "stat", "lstat": "lstat", "listdir": "list", "readlink": "readlink"}
        for name, kind in path_kinds.items():
            self._wrap(os, name, self._path_call(kind))
        for name, kind in {
            "exists": "stat",
            "isfile": "stat",
            "isdir": "stat",
            "islink": "lstat",
            "lexists": "lstat",
            "realpath": "real",
        }.items():
            self._wrap(os.path, name, self._path_call(kind))
        self._wrap(os, "scandir", self._scandir)
        self._wrap(os, "access", self._access)
        self._wrap(os, "open", self._os_open)
        self._wrap(io, "open", self._open_call)
        self._wrap(builtins, "open", self._open_call)
        self._wrap(subprocess.Popen, "__init__", self._popen_init)
        return self

    def __exit__(self, *exc: object) -> None:
        self._depth -= 1
        if self._depth:
            return
        while self._saved:
            owner, name, orig = self._saved.pop()
            setattr(owner, name, orig)

    # -- judging ----------------------------------------------------------------------------
    def blind_spot(self) -> str | None:
        """Why the observations are not the whole story (``spoiled``, or a :data:`BLIND`
        module imported in this process), or None."""
        if self.spoiled:
            return self.spoiled
        blind = [m for m in BLIND if m in sys.modules]
        return f"{', '.join(blind)} imported (reads files unobserved)" if blind else None

    def freshest_ns(self) -> int:
        """The newest modification or change time (ns since the epoch) among the things seen;
        0 when none exists. A memo is not written while this is within
        :data:`bundlegraph.core.fsutil.RACY_NS` of now."""
        return freshest_ns(self.seen.values())

    def changed(self) -> list[str]:
        """The observations whose value differs now from what was first seen (one line each)."""
        return changed(self.seen.items())


def freshest_ns(values: Any) -> int:
    """The newest ``mtime_ns``/``ctime_ns`` in observation ``values`` (stat values, and the
    entries of ``scan`` values); 0 when there is none."""
    newest = 0
    for v in values:
        if isinstance(v, list) and len(v) == 5 and all(isinstance(x, int) for x in v):
            newest = max(newest, v[2], v[3])
        elif isinstance(v, list) and v and isinstance(v[0], list):
            newest = max(newest, freshest_ns(x for e in v if isinstance(e, list) for x in e[1:]))
    return newest


def changed(observations: Any) -> list[str]:
    """Of ``observations`` (``((kind, path), value)`` pairs), the ones :func:`look` now answers
    differently, as ``"<kind> <path>"`` lines; empty when all still hold."""
    out = []
    for (kind, path), value in observations:
        now = look(kind, path)
        if now != value:  # values are lists, numbers, strings and None: JSON gives them back equal
            out.append(f"{kind} {path}")
    return out


__all__ = ["BLIND", "Observer", "changed", "freshest_ns", "look"]
