"""Safe extraction of tar (gz/xz/bz2) and zip archives.

Refused, before anything is written: absolute paths (``/x``, ``C:\\x``), ``..`` components,
backslash traversal (``..\\x`` means traversal on Windows), links whose target leaves the
root, hard links to outside, device files and FIFOs. Extraction goes into a fresh directory
which the caller renames into place (:func:`bundlegraph.core.fsutil.atomic_dir`).
"""

from __future__ import annotations

import os
import shutil
import stat
import tarfile
import zipfile
from pathlib import Path, PurePosixPath

from .errors import UnsafeArchive


def _check_name(archive: Path, name: str) -> PurePosixPath:
    if "\\" in name:
        raise UnsafeArchive(f"{archive}: entry {name!r} contains a backslash (path traversal on Windows)")
    p = PurePosixPath(name)
    if p.is_absolute() or (len(name) > 1 and name[1] == ":"):
        raise UnsafeArchive(f"{archive}: entry {name!r} is an absolute path")
    if ".." in p.parts:
        raise UnsafeArchive(f"{archive}: entry {name!r} climbs out of the extraction root ('..')")
    return p


def _check_link(archive: Path, name: PurePosixPath, target: str) -> None:
    if "\\" in target or PurePosixPath(target).is_absolute():
        raise UnsafeArchive(f"{archive}: link {str(name)!r} -> {target!r} points outside the extraction root")
    depth = 0
    for part in (name.parent / target).parts:
        if part == "..":
            depth -= 1
        elif part not in (".", ""):
            depth += 1
        if depth < 0:
            raise UnsafeArchive(f"{archive}: link {str(name)!r} -> {target!r} points outside the extraction root")


def extract(archive: str | os.PathLike[str], dest: str | os.PathLike[str], *, strip: int = 0) -> list[str]:
    """Extract ``archive`` into the existing directory ``dest``, dropping ``strip`` leading
    path components. Returns the extracted relative paths. Raises :class:`UnsafeArchive`."""
    archive = Path(archive)
    dest = Path(dest)
    if zipfile.is_zipfile(archive):
        return _extract_zip(archive, dest, strip)
    try:
        tf = tarfile.open(archive)
    except tarfile.TarError as e:
        raise UnsafeArchive(f"{archive}: not a readable tar or zip archive ({e})") from e
    with tf:
        return _extract_tar(archive, tf, dest, strip)


def _strip(p: PurePosixPath, strip: int) -> PurePosixPath | None:
    parts = p.parts[strip:]
    return PurePosixPath(*parts) if parts else None


def check_tar_member(archive: Path, m: tarfile.TarInfo) -> PurePosixPath:
    """The member's safe relative path; raises :class:`UnsafeArchive` for an absolute or
    climbing name, a link leaving the root, or a device file / FIFO. Shared by extraction and
    by verify's reading of archives, so both refuse exactly the same entries."""
    p = _check_name(archive, m.name)
    if m.ischr() or m.isblk() or m.isfifo() or not (m.isfile() or m.isdir() or m.issym() or m.islnk()):
        raise UnsafeArchive(f"{archive}: entry {m.name!r} is a device file or FIFO; refused")
    if m.issym():
        _check_link(archive, p, m.linkname)
    if m.islnk():
        _check_name(archive, m.linkname)
    return p


def check_zip_member(archive: Path, zf: zipfile.ZipFile, info: zipfile.ZipInfo) -> tuple[PurePosixPath, int]:
    """:func:`check_tar_member` for a zip entry: its safe relative path and the Unix mode it
    records (0: none; a symlink's target is its content)."""
    p = _check_name(archive, info.filename)
    mode = (info.external_attr >> 16) & 0xFFFF
    if stat.S_ISLNK(mode):
        _check_link(archive, p, zf.read(info).decode("utf-8", "replace"))
    elif mode and not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)) and stat.S_IFMT(mode):
        raise UnsafeArchive(f"{archive}: entry {info.filename!r} is a device file or FIFO; refused")
    return p, mode


def _extract_tar(archive: Path, tf: tarfile.TarFile, dest: Path, strip: int) -> list[str]:
    # every member is checked before anything is written
    plan = [(m, rel) for m in tf.getmembers() if (rel := _strip(check_tar_member(archive, m), strip)) is not None]
    out = []
    for m, rel in plan:
        target = dest / rel
        if m.isdir():
            target.mkdir(parents=True, exist_ok=True)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        if m.issym():
            if os.name == "nt":  # no symlinks on Windows: copy the target's content later
                raise UnsafeArchive(f"{archive}: symlink {m.name!r} cannot be created on Windows")
            os.symlink(m.linkname, target)
        elif m.islnk():
            lrel = _strip(PurePosixPath(m.linkname), strip)
            src = dest / lrel if lrel else None
            if src is None or not src.exists():
                raise UnsafeArchive(f"{archive}: hard link {m.name!r} -> {m.linkname!r} has no target inside")
            os.link(src, target)
        else:
            f = tf.extractfile(m)
            assert f is not None
            with f, open(target, "wb") as o:
                shutil.copyfileobj(f, o, 1 << 20)
            os.chmod(target, 0o755 if m.mode & 0o111 else 0o644)
        out.append(rel.as_posix())
    return out


def _extract_zip(archive: Path, dest: Path, strip: int) -> list[str]:
    out = []
    with zipfile.ZipFile(archive) as zf:
        plan = []
        for info in zf.infolist():
            p, mode = check_zip_member(archive, zf, info)
            if (rel := _strip(p, strip)) is not None:
                plan.append((info, rel, mode))
        for info, rel, mode in plan:
            target = dest / rel
            if info.is_dir():
                target.mkdir(parents=True, exist_ok=True)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            if stat.S_ISLNK(mode) and os.name != "nt":
                os.symlink(zf.read(info).decode(), target)
            else:
                with zf.open(info) as f, open(target, "wb") as o:
                    shutil.copyfileobj(f, o, 1 << 20)
                if mode & 0o111:
                    os.chmod(target, 0o755)
            out.append(rel.as_posix())
    return out
