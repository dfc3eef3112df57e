"""Byte-deterministic bundle archives: ``.zip`` (Windows bundles) and ``.tar.gz`` (Linux).

Two runs over the same inputs give byte-identical files, on any host:

- entries sorted by their POSIX path (byte order of the UTF-8 name);
- every timestamp is one epoch (:func:`archive_epoch`: ``SOURCE_DATE_EPOCH``, else the source
  commit time) — never the build time or a file's mtime;
- modes normalised (``0644`` files, ``0755`` executables, ``0777`` symlinks), owner/group
  ``0/0`` with empty names, no extra fields (zip), no PAX time records (tar);
- gzip header mtime 0, no file name in the header, OS byte 255 (Python's gzip writes it);
- directories are implied (no directory entries), so an empty directory never differs.

Executable bits: a ``.zip`` entry is ``0755`` when its name ends in ``.exe``/``.dll``/
``.node`` (the host's bits mean nothing on Windows); a ``.tar.gz`` entry is ``0755`` when
the file has a user-x bit (POSIX hosts) or, on Windows hosts, starts with the ELF magic.
Symlinks are kept as link entries in ``.tar.gz`` (Linux ``.so`` chains) and refused in
``.zip``. The archive is written to a temp file beside ``dest`` and renamed into place; a
failure or interruption leaves no archive (and no temp file).

Formats: PKWARE APPNOTE (zip, DEFLATE), POSIX.1-2001 pax/ustar (tar), RFC 1952 (gzip).
"""

from __future__ import annotations

import datetime as _dt
import gzip
import io
import os
import tarfile
import zipfile
import zlib
from collections.abc import Callable, Iterable
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from ...checks import claims_pe
from ...core.errors import BundleGraphError
from ...core.fsutil import atomic_writer
from ...core.lightclass import frozen

if TYPE_CHECKING:
    from ...schemas.manifest import BundleInfo

ZIP_MIN_EPOCH = 315532800  # 1980-01-01T00:00:00Z: the earliest time a zip entry can hold


class ArchiveError(BundleGraphError):
    """An archive cannot be written from these entries (bad name, link in a zip, no epoch)."""


@frozen
class Entry:
    """One archive member: ``name`` (POSIX relative path), and exactly one of ``path`` (a file
    on disk, copied), ``data`` (bytes, e.g. a generated JSON) or ``link`` (symlink target,
    tar only). ``executable`` overrides the mode rule above when not None."""

    name: str
    path: Path | None = None
    data: bytes | None = None
    link: str | None = None
    executable: bool | None = None

    def __post_init__(self) -> None:
        p = PurePosixPath(self.name)
        if not self.name or "\\" in self.name or p.is_absolute() or ".." in p.parts or self.name.endswith("/"):
            raise ArchiveError(f"archive entry {self.name!r}: not a clean relative POSIX path")
        if sum(x is not None for x in (self.path, self.data, self.link)) != 1:
            raise ArchiveError(f"archive entry {self.name!r}: give exactly one of path, data, link")


def archive_epoch(commit_epoch: int | None) -> int:
    """The archive timestamp (seconds since 1970, UTC): ``SOURCE_DATE_EPOCH`` when set (see
    reproducible-builds.org/specs/source-date-epoch), else the source ``commit_epoch``.
    Raises :class:`ArchiveError` when neither is known or the variable is not an integer."""
    env = os.environ.get("SOURCE_DATE_EPOCH")
    if env is not None and env.strip():
        try:
            v = int(env.strip())
        except ValueError:
            raise ArchiveError(f"SOURCE_DATE_EPOCH={env!r} is not an integer number of seconds") from None
        if v < 0:
            raise ArchiveError(f"SOURCE_DATE_EPOCH={env!r} is negative")
        return v
    if commit_epoch is None:
        raise ArchiveError(
            "no archive timestamp: the source record has no commit date; set SOURCE_DATE_EPOCH "
            "or declare commit_date in bundles/release.toml [source]"
        )
    return int(commit_epoch)


def entries_from_tree(
    root: Path,
    *,
    prefix: str = "",
    keep: Callable[[str], bool] | None = None,
) -> list[Entry]:
    """Entries for every file and symlink under ``root`` (``.git`` directories left out;
    ``prefix/`` prepended to names; ``keep(relpath)`` filters). Symlinks become link entries
    (never followed)."""
    out: list[Entry] = []
    for dirpath, dirnames, filenames in os.walk(root):
        d = Path(dirpath)
        links = [n for n in dirnames if (d / n).is_symlink()]
        dirnames[:] = sorted(n for n in dirnames if n != ".git" and n not in links)
        for name in sorted(filenames + links):
            p = d / name
            rel = p.relative_to(root).as_posix()
            if keep is not None and not keep(rel):
                continue
            arc = f"{prefix}/{rel}" if prefix else rel
            out.append(Entry(arc, link=os.readlink(p)) if p.is_symlink() else Entry(arc, path=p))
    return out


def _sorted_unique(entries: Iterable[Entry], dest: Path) -> list[Entry]:
    seen: dict[str, Entry] = {}
    for e in entries:
        if e.name in seen:
            raise ArchiveError(f"{dest.name}: two entries named {e.name!r}")
        seen[e.name] = e
    return [seen[k] for k in sorted(seen, key=lambda s: s.encode("utf-8"))]


def _tar_exec(e: Entry) -> bool:
    if e.executable is not None:
        return e.executable
    if e.path is None:
        return False
    if os.name == "nt":
        with open(e.path, "rb") as f:
            return f.read(4) == b"\x7fELF"
    return bool(e.path.stat().st_mode & 0o100)


def write_zip(dest: str | os.PathLike[str], entries: Iterable[Entry], epoch: int) -> Path:
    """Write a deterministic ``.zip`` of ``entries`` to ``dest`` (DEFLATE level 6; times
    clamped to 1980 at the earliest, written in UTC). Returns ``dest``."""
    dest = Path(dest)
    items = _sorted_unique(entries, dest)
    when = _dt.datetime.fromtimestamp(max(epoch, ZIP_MIN_EPOCH), _dt.UTC)
    date_time = (when.year, when.month, when.day, when.hour, when.minute, when.second - when.second % 2)
    with atomic_writer(dest) as f, zipfile.ZipFile(f, "w", zipfile.ZIP_DEFLATED, compresslevel=6) as zf:
        for e in items:
            if e.link is not None:
                raise ArchiveError(f"{dest.name}: {e.name} is a symlink; a .zip bundle cannot hold links")
            info = zipfile.ZipInfo(e.name, date_time=date_time)
            info.create_system = 3  # "Unix": mode bits in external_attr mean the same on every host
            info.compress_type = zipfile.ZIP_DEFLATED
            exe = e.executable if e.executable is not None else claims_pe(e.name)
            info.external_attr = (0o100755 if exe else 0o100644) << 16
            if e.path is not None:
                with open(e.path, "rb") as src, zf.open(info, "w", force_zip64=e.path.stat().st_size > 2**31) as out:
                    while chunk := src.read(1 << 20):
                        out.write(chunk)
            else:
                zf.writestr(info, e.data or b"")  # (exactly one of path, data, link)
    return dest


def write_tar_gz(dest: str | os.PathLike[str], entries: Iterable[Entry], epoch: int) -> Path:
    """Write a deterministic ``.tar.gz`` (pax format, gzip level 6, header mtime 0) of
    ``entries`` to ``dest``. Returns ``dest``."""
    dest = Path(dest)
    items = _sorted_unique(entries, dest)
    with atomic_writer(dest) as f:
        with gzip.GzipFile(filename="", mode="wb", fileobj=f, mtime=0, compresslevel=6) as gz:
            with tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT, encoding="utf-8") as tf:
                for e in items:
                    ti = tarfile.TarInfo(e.name)
                    ti.mtime = int(epoch)
                    ti.uid = ti.gid = 0
                    ti.uname = ti.gname = ""
                    if e.link is not None:
                        ti.type = tarfile.SYMTYPE
                        ti.linkname = e.link
                        ti.mode = 0o777
                        tf.addfile(ti)
                        continue
                    ti.mode = 0o755 if _tar_exec(e) else 0o644
                    if e.path is not None:
                        ti.size = e.path.stat().st_size
                        with open(e.path, "rb") as src:
                            tf.addfile(ti, src)
                    else:
                        data = e.data or b""
                        ti.size = len(data)
                        tf.addfile(ti, io.BytesIO(data))
    return dest


def write_archive(dest: str | os.PathLike[str], entries: Iterable[Entry], epoch: int) -> Path:
    """:func:`write_zip` for ``*.zip``, :func:`write_tar_gz` for ``*.tar.gz``; anything else
    is an :class:`ArchiveError`."""
    name = Path(dest).name
    if name.endswith(".zip"):
        return write_zip(dest, entries, epoch)
    if name.endswith(".tar.gz"):
        return write_tar_gz(dest, entries, epoch)
    raise ArchiveError(f"{name}: unknown archive type (expected .zip or .tar.gz)")


def member_names(archive: str | os.PathLike[str]) -> list[str]:
    """The file/link member names of a ``.zip`` or ``.tar.gz`` (directories left out)."""
    archive = Path(archive)
    if archive.name.endswith(".zip"):
        with zipfile.ZipFile(archive) as zf:
            return [i.filename for i in zf.infolist() if not i.is_dir()]
    with tarfile.open(archive, "r:gz") as tf:
        return [m.name for m in tf.getmembers() if not m.isdir()]


def read_member(archive: str | os.PathLike[str], name: str) -> bytes | None:
    """The bytes of member ``name`` (None when absent). Raises :class:`ArchiveError` when the
    archive cannot be read."""
    archive = Path(archive)
    try:
        if archive.name.endswith(".zip"):
            with zipfile.ZipFile(archive) as zf:
                try:
                    return zf.read(name)
                except KeyError:
                    return None
        with tarfile.open(archive, "r:gz") as tf:
            try:
                f = tf.extractfile(name)
            except KeyError:
                return None
            return f.read() if f is not None else None
    except (OSError, zipfile.BadZipFile, tarfile.TarError, EOFError, zlib.error) as e:  # a truncated one: EOF
        raise ArchiveError(f"{archive}: not a readable bundle archive ({e})") from e


def read_bundle_info(archive: Path, info_file: str) -> BundleInfo:
    """The info JSON ``info_file`` inside bundle ``archive``, parsed: the one reader for every
    stage. Raises :class:`BundleGraphError` naming the archive and file when it is missing or
    invalid."""
    from ...schemas.manifest import BundleInfo

    raw = read_member(archive, info_file)
    if raw is None:
        raise BundleGraphError(f"{archive.name}: has no {info_file}; not a bundle packaged by bundlegraph")
    try:
        return BundleInfo.model_validate_json(raw)
    except ValueError as e:
        raise BundleGraphError(f"{archive.name}: {info_file} is invalid: {e}") from None
