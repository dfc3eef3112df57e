"""Broken copies of real bundle archives, for the smoke's refusal cases (tests, and
``bench/smoke_broken.py`` on the main job's real bundles).

:func:`mutate` writes a copy of a ``.tar.gz`` bundle with members removed or replaced, every
other member byte-identical (names, modes, order), so exactly one thing is wrong with it."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path


def members(archive: Path) -> list[str]:
    """The file names of a ``.tar.gz`` bundle (paths inside it)."""
    with tarfile.open(archive) as t:
        return [m.name for m in t.getmembers() if m.isfile()]


def mutate(archive: Path, out: Path, *, remove: tuple[str, ...] = (), replace: dict[str, bytes] | None = None) -> Path:
    """Copy ``archive`` (``.tar.gz``) to ``out`` without the members named (by file name; files
    or links) in ``remove``, and with the members named in ``replace`` holding other bytes. Raises
    AssertionError when a named member is not in the archive (the mutation would be a no-op)."""
    replace = replace or {}
    seen: set[str] = set()
    out.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(archive) as src, tarfile.open(out, "w:gz") as dst:
        for m in src.getmembers():
            base = Path(m.name).name
            if (m.isfile() or m.issym()) and base in remove:  # (a soname link is one too)
                seen.add(base)
                continue
            if m.isfile() and base in replace:
                seen.add(base)
                data = replace[base]
                m.size = len(data)
                dst.addfile(m, io.BytesIO(data))
                continue
            f = src.extractfile(m) if m.isfile() else None
            dst.addfile(m, f)
    missing = (set(remove) | set(replace)) - seen
    assert not missing, f"{archive.name} has no {', '.join(sorted(missing))}"
    return out


def member_bytes(archive: Path, name: str) -> bytes:
    """The bytes of the member whose file name is ``name``."""
    with tarfile.open(archive) as t:
        m = next(m for m in t.getmembers() if m.isfile() and Path(m.name).name == name)
        f = t.extractfile(m)
        assert f is not None
        return f.read()


__all__ = ["member_bytes", "members", "mutate"]
