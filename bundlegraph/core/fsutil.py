"""Small filesystem helpers: hashing, atomic writes, JSON records read back, tree digests, file locks.

Outputs appear by atomic rename or not at all: :func:`atomic_write_bytes` and
:func:`atomic_dir` build beside the destination and ``os.replace`` into place.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import stat
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from . import memo
from .errors import StateError
from .oslock import FileLock, Timeout

T = TypeVar("T")

CHUNK = 1 << 20
_UMASK = os.umask(0)
os.umask(_UMASK)


def sha256_file(path: str | os.PathLike[str]) -> str:
    """Hex sha256 of a file, read in 1 MiB chunks."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(CHUNK):
            h.update(chunk)
    return h.hexdigest()


@contextlib.contextmanager
def atomic_writer(path: str | os.PathLike[str]) -> Iterator[Any]:
    """Yield a binary file in ``path``'s directory; on success it is fsynced and renamed onto
    ``path``, on any error it is removed and ``path`` is untouched."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o666 & ~_UMASK)  # mkstemp makes 0600; outputs get the usual mode
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` to ``path`` through a temp file in the same directory + rename."""
    with atomic_writer(path) as f:
        f.write(data)


def atomic_write_json(path: str | os.PathLike[str], obj: object) -> None:
    """Pretty JSON (sorted keys, trailing newline) written atomically."""
    atomic_write_bytes(path, (json.dumps(obj, indent=2, sort_keys=True) + "\n").encode())


def read_json_object(path: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The JSON object (a receipt, a record) in ``path``, or None when the file is missing,
    unreadable, not JSON, or holds something other than an object: a caller treats all of
    these as "not there" (reinstall, rebuild), never as an error."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def rmtree(path: str | os.PathLike[str]) -> None:
    """Remove a tree, clearing read-only bits (Windows refuses to delete read-only files)."""

    def onerror(func: Callable[[str], object], p: str, exc: object) -> None:  # pragma: no cover - Windows path
        os.chmod(p, stat.S_IWRITE)
        func(p)

    if Path(path).exists() or Path(path).is_symlink():
        shutil.rmtree(path, onerror=onerror)


@contextlib.contextmanager
def atomic_dir(dest: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a fresh temp directory beside ``dest``; on success it replaces ``dest``
    (an existing ``dest`` is moved aside first and removed after). On error the temp
    directory is removed and ``dest`` is untouched."""
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", suffix=".tmp", dir=dest.parent))
    try:
        yield tmp
    except BaseException:
        rmtree(tmp)
        raise
    old = None
    if dest.exists():
        old = dest.with_name(f".{dest.name}.old-{os.getpid()}")
        rmtree(old)
        os.replace(dest, old)
    os.replace(tmp, dest)
    if old is not None:
        rmtree(old)


RACY_NS = 2_000_000_000
"""A file changed less than this long ago (ns) is never remembered by its stat: file times tick
coarsely (a few ms), so a same-size rewrite within one tick would look unchanged (git's "racily
clean" rule)."""


def settled(st: os.stat_result) -> bool:
    """Whether a file with this stat may be remembered by it (:data:`RACY_NS`)."""
    return time.time_ns() - max(st.st_mtime_ns, st.st_ctime_ns) > RACY_NS


_PARSED: dict[tuple[str, object], tuple[tuple[int, int, int], object]] = memo.table("fsutil.parsed")


def parsed_once(path: str | os.PathLike[str], parse: Callable[[Path], T]) -> T:
    """``parse(path)``, computed once per process while the file is unchanged (same size,
    mtime and inode, and :func:`settled`): the stamps, records and locks every task's key reads
    (issue 20). ``parse`` must return a value nobody modifies (a frozen record). Whatever
    ``parse`` raises propagates, and nothing is remembered then; a file that cannot be stat'ed
    is parsed every time."""
    name = os.fspath(path)  # no Path object on a hit: a no-op run asks this some 300 times
    try:
        st = os.stat(name)
    except OSError:
        return parse(Path(name))
    key = (name, parse)
    sig = (st.st_mtime_ns, st.st_size, st.st_ino)
    hit = _PARSED.get(key)
    if hit is not None and hit[0] == sig:
        return hit[1]  # type: ignore[return-value]
    value = parse(Path(name))
    if settled(st):
        _PARSED[key] = (sig, value)
    return value


_TREES: dict[tuple[Any, ...], tuple[str, int]] = memo.table("fsutil.trees")
"""Tree digests of this process by the tree's listing and every file's (size, mtime_ns, inode,
mode): legs that share a source tree each key on its digest (issue 20: hashed once per run)."""


def tree_digest(root: str | os.PathLike[str], exclude_dirs: tuple[str, ...] = (".git",)) -> tuple[str, int]:
    """Content digest of a directory tree: sha256 over sorted ``relpath, mode-x-bit, sha256``
    lines (symlinks contribute their target text). Returns ``(hex digest, file count)``.
    Independent of mtimes, owners and the host's path separator. The files are read again only
    when one's size, mtime, inode or mode differs from an earlier call in this process."""
    root = Path(root)
    # strings, not Path objects: every leg's source key walks its tree on every run (a no-op too)
    entries: list[tuple[str, str, os.stat_result]] = []
    top = os.fspath(root)
    for dirpath, dirnames, filenames in os.walk(top):
        dirnames[:] = sorted(d for d in dirnames if d not in exclude_dirs)
        rel_dir = os.path.relpath(dirpath, top).replace(os.sep, "/")
        for name in sorted(filenames):
            full = os.path.join(dirpath, name)
            entries.append((name if rel_dir == "." else f"{rel_dir}/{name}", full, os.lstat(full)))
    sig = (
        str(root),
        exclude_dirs,
        tuple((rel, st.st_size, st.st_mtime_ns, st.st_ino, st.st_mode) for rel, _, st in entries),
    )
    if sig in _TREES:
        return _TREES[sig]
    lines: list[str] = []
    for rel, p, st in entries:
        if stat.S_ISLNK(st.st_mode):
            lines.append(f"{rel}\tlink\t{os.readlink(p)}")
        else:
            x = "x" if os.access(p, os.X_OK) else "-"
            lines.append(f"{rel}\t{x}\t{sha256_file(p)}")
    out = (hashlib.sha256("\n".join(lines).encode()).hexdigest(), len(lines))
    if all(settled(st) for _, _, st in entries):
        _TREES[sig] = out
    return out


@contextlib.contextmanager
def locked(path: str | os.PathLike[str], *, what: str, timeout: float = -1) -> Iterator[None]:
    """Hold an exclusive inter-process lock on ``path`` (a ``.lock`` file). ``timeout``
    seconds (-1: wait forever); on timeout raise :class:`StateError` naming ``what``."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    lock = FileLock(os.fspath(path))
    try:
        lock.acquire(timeout=timeout)
    except Timeout:
        raise StateError(f"{what} is locked by another bundlegraph run ({path}); wait for it or stop it") from None
    try:
        yield
    finally:
        lock.release()
