"""Static checks of built bundles: one small module per job.

- :mod:`.pe` / :mod:`.elf`: read a Windows PE or Linux ELF file into a small typed record
  (machine, imports, exports, DT_NEEDED, RUNPATH, symbol versions, fatbin location).
- :mod:`.fatbin`: the CUDA fatbin inventory (SASS / PTX per SM) of a GPU backend.
- :mod:`.systemdlls`: the curated list of DLLs Windows itself provides.
- :mod:`.closure`: file- and symbol-level import closure of a bundle.
- :mod:`.glibc`: glibc / libstdc++ version floors of Linux files.
- :mod:`.signatures`: Authenticode status of PE files (through ``signify``).
- :mod:`.content`: required files and the bundle's info JSON.
- :mod:`.bundle`: read a bundle from a directory or an archive (each file once).

Checks never raise for a problem with the bundle: they return :class:`Failure` records, which
:func:`bundlegraph.verification.run.verify_path` collects into a report (one row of its table
each: :mod:`bundlegraph.verification.rows`). A file that claims to
be a binary (by name) but cannot be read as one raises :class:`NotParsable` from the readers;
the caller turns that into a failure naming the file.
"""

from __future__ import annotations

import mmap
from typing import Any

from ..core.errors import BundleGraphError
from ..core.lightclass import frozen_ordered


class NotParsable(BundleGraphError):
    """A file that must be a PE/ELF binary (by its name) cannot be parsed as one; the
    message says why (``not a PE file: DOS header magic 'MZ' not found``, ``truncated: ...``)."""


@frozen_ordered
class Failure:
    """One verification failure.

    - ``file``: the file's path inside the bundle (POSIX separators), or the bundle/archive
      itself for bundle-level problems;
    - ``check``: which check failed (``machine``, ``parse``, ``gpu-code``, ``imports``,
      ``symbols``, ``elf-paths``, ``glibc``, ``signature``, ``content``, ``archive``, ``backend``,
      ``host-path``);
    - ``reason``: one sentence saying what was found and what was expected.
    """

    file: str
    check: str
    reason: str

    def line(self) -> str:
        """``<file>: <check>: <reason>`` on one line (what the CLI prints)."""
        return f"{self.file}: {self.check}: {self.reason}"

    def to_json(self) -> dict[str, Any]:
        return {"file": self.file, "check": self.check, "reason": self.reason}


BytesLike = bytes | bytearray | mmap.mmap
"""A whole file's content: bytes read from an archive or a read-only mmap of a file."""


PADDING_WINDOW = 4096
"""Bytes :func:`padding` looks at in one step (a longer run of zeros is skipped in several)."""


def padding(data: BytesLike, pos: int, end: int, start: int, what: str, header: str) -> int:
    """The number of zero bytes at ``pos`` (at most :data:`PADDING_WINDOW`, none past ``end``):
    the alignment between the containers of a GPU-code section (CUDA fatbins, clang offload
    bundles). ``start`` is the section's first byte. Raises :class:`NotParsable` ``<what>: bytes
    at section offset 0x<pos - start> are neither padding nor a <header>`` when there are none,
    so a section walk never loops on garbage."""
    chunk = bytes(data[pos : min(end, pos + PADDING_WINDOW)])
    skipped = len(chunk) - len(chunk.lstrip(b"\0"))
    if skipped == 0:
        raise NotParsable(f"{what}: bytes at section offset 0x{pos - start:x} are neither padding nor a {header}")
    return skipped


PE_SUFFIXES = (".dll", ".exe", ".node", ".pyd")
"""File names that claim to be Windows PE images (compared case-insensitively)."""


def claims_pe(name: str) -> bool:
    """True when ``name`` ends with a PE suffix (``.dll``, ``.exe``, ``.node``, ``.pyd``)."""
    return name.lower().endswith(PE_SUFFIXES)


def claims_elf_library(name: str) -> bool:
    """True for ``*.so`` and versioned ``*.so.N[.M...]`` names (shared objects by name)."""
    base = name.rsplit("/", 1)[-1]
    if base.endswith(".so"):
        return True
    head, sep, tail = base.partition(".so.")
    return bool(sep and head and tail and all(p.isdigit() for p in tail.split(".")))
