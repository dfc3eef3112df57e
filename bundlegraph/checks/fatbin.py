"""CUDA fatbin inventory: which SASS (machine code) and PTX each SM gets in a GPU backend.

Where the fatbin lives. CUDA's ``fatbinary_section.h`` (shipped in every toolkit's
``include/``) names the data section ``.nv_fatbin`` (ELF; PE cuts it to 8 bytes: ``.nv_fatb``)
and the control section ``.nvFatBinSegment`` (``__fatBinC_Wrapper_t``, magic 0x466243B1);
only the data section is read here.

Layout (little-endian). NVIDIA does not document it; this follows the public reverse-engineered
description in GrigoryEvko/nvopen-tools ``fatbin/FORMAT_SPECIFICATION.md`` (derived from
cuobjdump, CUDA 11-13) and was checked against the real ``ggml-cuda.dll`` of
``@node-llama-cpp/win-x64-cuda@3.21.1`` (143 containers; SASS 86, 89, 120, 121; PTX 75, 80,
90 — see ``shared/FINDINGS.md``):

- The section holds containers back to back, each optionally followed by zero padding.
- Container header, 16 bytes: ``u32 magic`` (0xBA55ED50; 0x466243B1 for relocatable
  fatbins), ``u16 version`` (1), ``u16 header_size`` (16), ``u64 payload_size`` (bytes of
  entries after the header).
- Entries follow until ``header_size + payload_size``. Entry header (64, 80, 104 or 112
  bytes, its own size at byte 4): byte 0 ``u16 kind`` (1 = PTX, 2 = ELF/SASS; 0x10 is also
  ELF), 2 ``u16`` (0x0101), 4 ``u32 header_size``, 8 ``u64 padded_payload_size`` (the
  payload after the header, 8-aligned), 16 ``u32 payload_size``, 24/26 ``u16`` code version
  minor/major, **28 ``u32 sm``** (75, 86, 120, ...), 32/36 ``u32`` relocation offset/size
  (usually 0), 40 ``u64 flags`` (bit 15, 0x8000 = payload compressed with zstd; bit 13, 0x2000 = compressed
  by CUDA 12.4's fatbinary, an LZ4-style block, measured: 427 of 637 bytes), 56 ``u64`` uncompressed size. The next entry starts at
  ``entry + header_size + padded_payload_size``.

A PTX entry's code version (bytes 24/26) is the PTX ISA of its text: the ``.version X.Y`` line the
driver reads before it JIT-compiles it. Measured: all 429 PTX entries of the real ``ggml-cuda.dll``
above (zstd payloads, flag 0x8000) say 9.1, as each decompressed text's ``.version 9.1`` line;
nvcc 13.5 writes 9.5 (zstd), nvcc 12.4 8.4 (flag 0x2000, an LZ4-style block) and fatbinary 12.4
given NVRTC 12.8's ``compute_61`` text 8.7, each as its ``.version`` line
(``tests/data/ptx/README.md``). So the ISA is read from the header, and no payload is decompressed.

Arch-specific targets (``120a``) are recorded with their plain SM (120) — which is why
:func:`bundlegraph.schemas.archs.fatbin_sm` maps ``120a`` to 120 — and a flag in the entry's
``flags``: bit 20 (0x100000) for arch-specific (``sm_100a``), bit 21 (0x200000) for
family-specific (``sm_100f``). Measured here with nvcc 13.0 on one kernel built for
``sm_100``, ``sm_100a``, ``sm_100f`` (flags 0x1000011, 0x1100011, 0x1200011).

Only headers are read: payloads are skipped, never decompressed. On an mmap the section is
advised ``MADV_RANDOM`` while walking it, so a cold 129 MB section costs about one page read
per entry header instead of a read of the whole section.
"""

from __future__ import annotations

import mmap
import struct
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import field
from typing import Any

from ..core.lightclass import mutable
from ..schemas.archs import Arch, fatbin_sm
from . import BytesLike, NotParsable, padding

MAGIC = 0xBA55ED50
MAGIC_RELOCATABLE = 0x466243B1
KIND_PTX = 1
KIND_ELF = 2
KIND_ELF_ALT = 0x10
_HDR = struct.Struct("<IHHQ")
_ENTRY = struct.Struct("<HHIQI4xHHI8xQ")  # kind, ver, hsize, padded, size, minor, major, sm, flags
_MAGICS = (struct.pack("<I", MAGIC), struct.pack("<I", MAGIC_RELOCATABLE))


@mutable
class Inventory:
    """The fatbin of one file.

    - ``sass`` / ``ptx``: SM -> number of entries (one per container, i.e. per compiled
      translation unit); ``sass_features``: SM -> {"", "a", "f"} seen for its SASS;
    - ``containers``: number of fatbin containers; ``compressed``: entries with a compressed
      payload; ``other``: entry kinds other than PTX/ELF -> count.
    """

    sass: Counter[int] = field(default_factory=Counter)
    ptx: Counter[int] = field(default_factory=Counter)
    sass_features: dict[int, set[str]] = field(default_factory=dict)
    """SM -> the feature suffixes its SASS entries carry: ``""`` plain, ``"a"``, ``"f"``."""
    ptx_isa: dict[int, set[tuple[int, int]]] = field(default_factory=dict)
    """SM -> the PTX ISA versions (``(8, 4)``) of its PTX entries, from their headers."""
    containers: int = 0
    compressed: int = 0
    other: Counter[str] = field(default_factory=Counter)

    def sass_archs(self) -> list[str]:
        """Each SASS target as its arch spelling (``120a``, ``100f``, ``86``), sorted by SM."""
        return [f"{sm}{f}" for sm in sorted(self.sass) for f in sorted(self.sass_features.get(sm, {""}))]

    def ptx_only(self) -> list[int]:
        """The SMs with PTX and no SASS of their own: code a driver must JIT-compile."""
        return sorted(set(self.ptx) - set(self.sass))

    def to_json(self) -> dict[str, Any]:
        """``{"sass": {"86": n, ...}, "sass_archs": ["86", "120a"], "ptx": {...}, "ptx_isa":
        {"61": ["8.4"]}, "containers": n, "compressed": n}``."""
        return {
            "sass": {str(k): v for k, v in sorted(self.sass.items())},
            "sass_archs": self.sass_archs(),
            "ptx": {str(k): v for k, v in sorted(self.ptx.items())},
            "ptx_isa": {str(k): [f"{a}.{b}" for a, b in sorted(v)] for k, v in sorted(self.ptx_isa.items())},
            "containers": self.containers,
            "compressed": self.compressed,
        }

    def summary(self) -> str:
        """``SASS 86,89,120,121; PTX 75,80,90`` (for findings and messages)."""
        s = ",".join(str(k) for k in sorted(self.sass)) or "none"
        p = ",".join(str(k) for k in sorted(self.ptx)) or "none"
        return f"SASS {s}; PTX {p}"


FLAG_COMPRESSED = 0x8000 | 0x2000
"""An entry's payload is compressed: zstd (CUDA 13's fatbinary) or an LZ4-style block (CUDA 12.4's)."""
FLAG_ARCH_SPECIFIC = 0x100000
FLAG_FAMILY_SPECIFIC = 0x200000


def feature_of(flags: int) -> str:
    """The arch feature suffix an entry's flags encode: ``"a"``, ``"f"`` or ``""``."""
    if flags & FLAG_ARCH_SPECIFIC:
        return "a"
    if flags & FLAG_FAMILY_SPECIFIC:
        return "f"
    return ""


def parse(data: BytesLike, start: int, size: int) -> Inventory:
    """Walk the fatbin containers in ``data[start:start+size]`` (a section's bytes, located
    by :mod:`.pe` or :mod:`.elf`). Raises :class:`NotParsable` naming the section offset of a
    container or entry that does not fit, or of bytes that are neither padding nor a header."""
    with _random_access(data, start, size):
        return _walk(data, start, size)


@contextmanager
def _random_access(data: BytesLike, start: int, size: int) -> Iterator[None]:
    """Tell the kernel that the section is read at scattered headers (``MADV_RANDOM``) so a
    cold read fetches the pages holding headers instead of reading the whole section ahead;
    restored to ``MADV_NORMAL`` afterwards (a later full hash reads sequentially)."""
    advise = getattr(data, "madvise", None)
    if advise is None or not hasattr(mmap, "MADV_RANDOM") or size <= 0:
        yield
        return
    lo = start - start % mmap.PAGESIZE
    advise(mmap.MADV_RANDOM, lo, start + size - lo)
    try:
        yield
    finally:
        advise(mmap.MADV_NORMAL, lo, start + size - lo)


def _walk(data: BytesLike, start: int, size: int) -> Inventory:
    end = start + size
    inv = Inventory()
    pos = start
    while pos < end:
        if bytes(data[pos : pos + 4]) not in _MAGICS:
            pos += padding(data, pos, end, start, "fatbin", "fatbin header")
            continue
        if end - pos < _HDR.size:
            raise NotParsable(f"fatbin: container header at section offset 0x{pos - start:x} is cut off")
        _magic, _ver, hsize, payload = _HDR.unpack_from(data, pos)
        cend = pos + hsize + payload
        if hsize < _HDR.size or cend > end:
            raise NotParsable(f"fatbin: container at section offset 0x{pos - start:x} runs past the section end")
        inv.containers += 1
        e = pos + hsize
        while e < cend:
            if cend - e < _ENTRY.size + 8:
                raise NotParsable(f"fatbin: entry at section offset 0x{e - start:x} is cut off")
            kind, _v, ehsize, padded, _size, minor, major, sm, flags = _ENTRY.unpack_from(data, e)
            if ehsize < 64 or e + ehsize + padded > cend:
                raise NotParsable(f"fatbin: entry at section offset 0x{e - start:x} has a bad size")
            if kind == KIND_PTX:
                inv.ptx[sm] += 1
                inv.ptx_isa.setdefault(sm, set()).add((major, minor))
            elif kind in (KIND_ELF, KIND_ELF_ALT):
                inv.sass[sm] += 1
                inv.sass_features.setdefault(sm, set()).add(feature_of(flags))
            else:
                inv.other[kind] += 1
            if flags & FLAG_COMPRESSED:
                inv.compressed += 1
            e += ehsize + padded
        pos = cend
    return inv


def check_archs(inv: Inventory | None, archs: list[Arch]) -> list[str]:
    """Compare an inventory with the archs a leg promises (CMake forms, parsed).

    An arch with SASS (``120``, ``120a``, ``86-real``) needs a SASS entry for
    :func:`fatbin_sm` of it; a ``-virtual`` arch needs PTX. SMs the spec does not name at all
    are unexpected, as is PTX for an arch the spec marks ``-real``. Returns one sentence per
    problem (``missing SASS for sm_121``, ``unexpected SASS for sm_86``); empty when it agrees."""
    inv = inv or Inventory()
    want_sass = {fatbin_sm(a) for a in archs if a.sass}
    want_ptx = {fatbin_sm(a) for a in archs if a.ptx and not a.sass}
    allow_ptx = {fatbin_sm(a) for a in archs if a.ptx}
    named = {fatbin_sm(a) for a in archs}
    out = [f"missing SASS for sm_{sm}" for sm in sorted(want_sass - set(inv.sass))]
    out += [f"missing PTX for compute_{sm}" for sm in sorted(want_ptx - set(inv.ptx))]
    out += [f"unexpected SASS for sm_{sm}" for sm in sorted(set(inv.sass) - named)]
    out += [
        f"unexpected SASS for sm_{sm} (the spec asks for PTX only)"
        for sm in sorted((set(inv.sass) & named) - want_sass)
    ]
    out += [f"unexpected PTX for compute_{sm}" for sm in sorted(set(inv.ptx) - allow_ptx)]
    return out
