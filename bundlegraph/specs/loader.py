"""Load a whole ``bundles/`` directory: the release and every leg spec, validated, as their
records (:mod:`.records`).

Validation (pydantic models and cross-field rules, :mod:`.validation`) runs when the directory
is new or has changed. Its result is kept in the spec cache, one file per bundles directory
(``<cache>/spec-cache/<digest of the directory's path>.pickle``, the path as given and resolved), and an unchanged directory is
loaded from there without importing pydantic (issue 20: the no-op run pays neither pydantic's
import nor validation). An entry is used only when all of these equal what it was written for:

- the bytes of every ``*.toml`` in the directory (names and contents: a new, removed or
  edited spec or release file misses);
- the bytes of every other file validation read (the wheels locks the legs name);
- bundlegraph's version, the size and mtime of every module of :mod:`bundlegraph.schemas`, :mod:`bundlegraph.schemas.backend` (each backend's package too) and
  :mod:`bundlegraph.toolchains` and of every toolchain machine file (the rules and the
  toolchains), and Python's version.

An entry is a magic line, the sha256 of its payload and the payload (a pickle of the
:class:`~.records.Matrix` of records). A truncated, altered or unreadable entry, or one of
another shape, is ignored and written again after validation: the cache can only save time,
never change what loads. Entries are written by atomic rename; at most :data:`KEEP` are kept.
The payload is a pickle, so the cache directory is trusted like the toolkits and downloads
beside it (whoever can write it can already replace the nvcc a build runs).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import pickle
import sys
from pathlib import Path

from .. import __version__
from ..core.fsutil import atomic_write_bytes, sha256_file
from ..schemas.records import Matrix

_BACKEND_DIRS = tuple(
    f"backends/{e.name}"
    for e in sorted(os.scandir(Path(__file__).resolve().parents[1] / "backends"), key=lambda e: e.name)
    if e.is_dir() and not e.name.startswith("_")
)
"""Each backend's package folder (``backends/cuda``), whose modules :data:`_CODE_DIRS` keys."""

MAGIC = b"bundlegraph-spec-cache 1\n"
"""First line of an entry; a new layout changes it."""
KEEP = 256
"""Entries kept (one per bundles directory); the least recently written go first."""

_CODE_DIRS = ("schemas", "specs", "backends", "core", "toolchains", "toolchains/machines", *_BACKEND_DIRS)
"""Packages of bundlegraph whose code decides what a spec directory validates to: a backend's
package among them (its spec table, ``spec.py``, and its rules, ``rules.py``, decide too)."""


def load_matrix(root: str | Path) -> Matrix:
    """The validated matrix of ``root``: from the spec cache when its entry matches, else
    validated (:func:`.validation.validate_matrix`) and stored.

    Raises :class:`~bundlegraph.core.errors.SpecError` listing every problem found, exactly as
    validation does (an invalid directory is never cached)."""
    root = Path(root)
    key = _key(root) if root.is_dir() else None  # (a missing directory: validation says so)
    entry = _entry_path(root)
    hit = _read(entry, key) if key is not None and entry is not None else None
    if hit is not None:
        return hit
    from .validation import validate_matrix

    matrix, read = validate_matrix(root)
    if key is not None and entry is not None:
        _write(entry, key, read, matrix)
    return matrix


def _entry_path(root: Path) -> Path | None:
    """The entry file of ``root``; None when no cache directory can be named."""
    try:
        from ..core.paths import cache_root

        digest = hashlib.sha256(os.fsencode(f"{root}\0{root.resolve()}")).hexdigest()[:24]
        return cache_root() / "spec-cache" / f"{digest}.pickle"
    except (OSError, RuntimeError):
        return None


def _key(root: Path) -> str | None:
    """sha256 over the directory's path (as given: the matrix holds it), its ``*.toml`` files
    (names and bytes), the validation code's module stats, bundlegraph's and Python's versions; None when a file cannot be read (then
    nothing is cached and validation reports it)."""
    h = hashlib.sha256()
    h.update(f"{__version__}\0{sys.version}\0{root}\0{root.resolve()}\0".encode())
    pkg = Path(__file__).resolve().parents[1]
    try:
        for sub in _CODE_DIRS:
            for e in sorted(os.scandir(pkg / sub), key=lambda e: e.name):
                if e.name.endswith((".py", ".toml")):
                    st = e.stat()
                    h.update(f"{sub}/{e.name}\0{st.st_size}\0{st.st_mtime_ns}\0".encode())
        for p in sorted(root.glob("*.toml")):
            h.update(f"{p.name}\0{sha256_file(p)}\0".encode())
    except OSError:
        return None
    return h.hexdigest()


def _file_digest(p: Path) -> str | None:
    try:
        return sha256_file(p)
    except OSError:
        return None


def _read(entry: Path, key: str) -> Matrix | None:
    """The entry's matrix when it is whole, written for ``key`` and every other file it read
    is unchanged; else None (any fault: the entry is ignored)."""
    try:
        raw = entry.read_bytes()
        if not raw.startswith(MAGIC):
            return None
        digest, _, payload = raw[len(MAGIC) :].partition(b"\n")
        if hashlib.sha256(payload).hexdigest().encode() != digest:
            return None
        data = pickle.loads(payload)
        if not isinstance(data, dict) or data.get("key") != key:
            return None
        if any(_file_digest(Path(name)) != sha for name, sha in data["read"]):
            return None
        matrix = data["matrix"]
        return matrix if isinstance(matrix, Matrix) else None
    except Exception:
        return None


def _write(entry: Path, key: str, read: list[Path], matrix: Matrix) -> None:
    """Store ``matrix`` for ``key`` (atomic rename); a cache that cannot be written is skipped
    (the next load validates again)."""
    read_digests = [(str(p), _file_digest(p)) for p in read]
    if any(sha is None for _, sha in read_digests):
        return
    payload = pickle.dumps({"key": key, "read": read_digests, "matrix": matrix}, protocol=pickle.HIGHEST_PROTOCOL)
    data = MAGIC + hashlib.sha256(payload).hexdigest().encode() + b"\n" + payload
    with contextlib.suppress(OSError):
        atomic_write_bytes(entry, data)  # (makes the cache directory)
        _prune(entry.parent)


def _prune(d: Path) -> None:
    """Keep the :data:`KEEP` most recently written entries of ``d``."""
    entries = sorted(d.glob("*.pickle"), key=lambda p: p.stat().st_mtime_ns, reverse=True)
    for p in entries[KEEP:]:
        with contextlib.suppress(OSError):
            p.unlink()
