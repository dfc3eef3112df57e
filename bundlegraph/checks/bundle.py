"""Read a bundle — a directory, a ``.zip`` or a ``.tar[.gz|.xz|.bz2]`` — one file at a time.

Each regular file is read once: a directory's files are memory-mapped read-only (only the
pages a check touches are read), an archive's members are decompressed once into memory and
dropped after the caller's step. Archives are inspected in place, never extracted; their
entry names are checked with :mod:`bundlegraph.core.extract`'s rules (absolute paths, ``..``,
backslashes, links leaving the root, device files), and every unsafe entry becomes a failure
naming it. Links (archive symlinks, directory symlinks) count as names but are not read.
"""

from __future__ import annotations

import mmap
import os
import stat
import tarfile
import zipfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import field
from pathlib import Path, PurePosixPath

from ..core.errors import BundleGraphError, UnsafeArchive
from ..core.extract import check_tar_member, check_zip_member  # the same rules extraction enforces
from ..core.lightclass import mutable
from . import BytesLike, Failure


@mutable
class Bundle:
    """A bundle's listing: ``root`` (what was opened), ``kind`` (``directory``/``zip``/``tar``),
    ``names`` (every file path inside, POSIX, links included), ``links`` (link path -> target)
    and ``failures`` (unsafe archive entries)."""

    root: Path
    kind: str
    names: list[str] = field(default_factory=list)
    links: dict[str, str] = field(default_factory=dict)
    failures: list[Failure] = field(default_factory=list)


def read_bundle(path: str | os.PathLike[str]) -> tuple[Bundle, Iterator[tuple[str, BytesLike]]]:
    """Open ``path`` and return its listing plus an iterator of ``(bundle path, content)`` for
    every regular file, in name order for directories and stored order for archives. The
    content is valid only until the iterator advances; the listing (``names``, ``links``,
    ``failures``) is complete once the iterator is exhausted (a tar is read in one pass). Raises :class:`BundleGraphError` when
    ``path`` is neither a directory nor a readable archive."""
    root = Path(path)
    if root.is_dir():
        b = Bundle(root, "directory")
        files = []
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames.sort()
            for n in sorted(filenames):
                p = Path(dirpath) / n
                rel = p.relative_to(root).as_posix()
                b.names.append(rel)
                if p.is_symlink():
                    b.links[rel] = os.readlink(p)
                elif p.is_file():
                    files.append((rel, p))
        return b, _dir_files(files)
    if not root.is_file():
        raise BundleGraphError(f"{root}: no such directory or archive")
    if zipfile.is_zipfile(root):
        return _zip(root)
    try:
        tf = tarfile.open(root, "r:*")
    except (tarfile.TarError, OSError) as e:
        raise BundleGraphError(f"{root}: neither a directory nor a readable .zip/.tar archive ({e})") from None
    return _tar(root, tf)


@contextmanager
def mapped(path: Path) -> Iterator[BytesLike]:
    """A read-only mmap of ``path`` (``b""`` for an empty file), closed on exit."""
    with open(path, "rb") as f:
        if os.fstat(f.fileno()).st_size == 0:
            yield b""
            return
        m = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        try:
            yield m
        finally:
            m.close()


def _dir_files(files: list[tuple[str, Path]]) -> Iterator[tuple[str, BytesLike]]:
    for rel, p in files:
        with mapped(p) as data:
            yield rel, data


def _unsafe(b: Bundle, e: UnsafeArchive) -> None:
    b.failures.append(Failure(b.root.name, "archive", str(e).removeprefix(f"{b.root}: ")))


def _zip(root: Path) -> tuple[Bundle, Iterator[tuple[str, BytesLike]]]:
    b = Bundle(root, "zip")
    zf = zipfile.ZipFile(root)
    keep = []
    for info in zf.infolist():
        try:
            p, mode = check_zip_member(root, zf, info)
        except UnsafeArchive as e:
            _unsafe(b, e)
            continue
        if stat.S_ISLNK(mode):
            b.names.append(p.as_posix())
            b.links[p.as_posix()] = zf.read(info).decode("utf-8", "replace")
        elif not info.is_dir():
            b.names.append(p.as_posix())
            keep.append((p.as_posix(), info))

    def gen() -> Iterator[tuple[str, BytesLike]]:
        with zf:
            for rel, info in keep:
                try:
                    data = zf.read(info)
                except (zipfile.BadZipFile, EOFError, OSError, zlib.error) as e:  # a damaged member: CRC, inflate
                    b.failures.append(Failure(root.name, "archive", f"{rel}: unreadable ({e})"))
                    continue
                yield rel, data

    return b, gen()


def _tar(root: Path, tf: tarfile.TarFile) -> tuple[Bundle, Iterator[tuple[str, BytesLike]]]:
    tf.close()
    b = Bundle(root, "tar")

    def gen() -> Iterator[tuple[str, BytesLike]]:
        try:
            yield from members()
        except (tarfile.TarError, EOFError, OSError, zlib.error) as e:  # truncated or corrupt past its header
            b.failures.append(Failure(root.name, "archive", f"truncated or corrupt after {len(b.names)} members ({e})"))

    def members() -> Iterator[tuple[str, BytesLike]]:
        with tarfile.open(root, "r|*") as stream:  # one sequential pass over the compressed data
            for m in stream:
                try:
                    p: PurePosixPath = check_tar_member(root, m)
                except UnsafeArchive as e:
                    _unsafe(b, e)
                    continue
                if m.isdir():
                    continue
                b.names.append(p.as_posix())
                if m.issym() or m.islnk():
                    b.links[p.as_posix()] = m.linkname
                    continue
                f = stream.extractfile(m)
                if f is not None:
                    yield p.as_posix(), f.read()

    return b, gen()
