"""HIP device code: the gfx targets in the clang offload bundles of an ELF or PE file.

Where the bundles live. clang's HIP toolchain embeds one offload bundle per translation unit
into the host object's ``.hip_fatbin`` section (clang ``CGCUDANV.cpp``); the linker
concatenates them, each aligned (4096 bytes, measured), with zero padding between. PE section
names are cut to 8 bytes, so a Windows DLL holds ``.hip_fat`` (as CUDA's ``.nv_fatbin`` becomes
``.nv_fatb``): measured on the DLLs of a Windows ROCm 7.2.1 build (hip-quant 2.2.4: 1 and 32
bundles, gfx110X, gfx120X, gfx90a, gfx942). A file that starts with a bundle's magic (a ``.hipfb``
written by ``clang-offload-bundler``) is read whole.

Layout of an uncompressed bundle (clang ``OffloadBundler.cpp``; little-endian), checked on
shared libraries Debian 12's hipcc 5.2 compiles for several ``--offload-arch``:

- magic ``__CLANG_OFFLOAD_BUNDLE__`` (24 bytes), ``u64`` number of entries;
- per entry: ``u64 offset`` (from the bundle's start), ``u64 size``, ``u64 triple length``,
  the triple (``hipv4-amdgcn-amd-amdhsa--gfx1030``, ``hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-``;
  older ROCm writes ``hip-amdgcn-amd-amdhsa-gfx906``; the host entry ``host-x86_64-unknown-linux``
  is empty);
- the bundle ends at the furthest ``offset + size``.

A device entry's payload is an AMDGPU ELF code object (``e_machine`` 224, ``EM_AMDGPU``); its
``e_flags`` bits 0-7 name the processor (:data:`.gfx.AMDGPU_MACH`), which must agree with the
triple.

Compressed bundles (``clang-offload-bundler -compress``, ``--offload-compress``) start with
``CCOB``; their header (clang ``OffloadBundler.cpp``, ``CompressedOffloadBundle``): ``u16
version``, ``u16 method`` (0 zlib, 1 zstd: ``llvm::compression::Format``), then version 1: ``u32
uncompressed size``; version 2: ``u32 total size``, ``u32 uncompressed size``; version 3: ``u64
total size``, ``u64 uncompressed size``; then a ``u64`` hash and the compressed bundle. Measured on
the ROCm libraries of bitsandbytes 0.50.2 (ROCm 6.4 and 7.0: version 2; 7.1-7.2: version 3; all
zstd, two bundles each): the total size spans the header and the compressed bytes. zlib is read
with the standard library, zstd with the ``zstandard`` module.
"""

from __future__ import annotations

import re
import struct
import zlib
from collections import Counter
from dataclasses import field
from typing import Any

from ..core.lightclass import frozen, mutable
from . import BytesLike, Failure, NotParsable, padding
from .gfx import AMDGPU_MACH

MAGIC = b"__CLANG_OFFLOAD_BUNDLE__"
COMPRESSED_MAGIC = b"CCOB"
ELF_SECTION = ".hip_fatbin"
PE_SECTION = ".hip_fat"
"""``.hip_fatbin`` cut to PE's 8-byte section names."""
EM_AMDGPU = 224
_ENTRY = struct.Struct("<QQQ")
_METHODS = {0: "zlib", 1: "zstd"}
_DEVICE = re.compile(r"[a-z0-9]+-amdgcn-amd-amdhsa-+(?P<processor>gfx[0-9a-z]+)(?P<features>(?::[a-z]+[+-])*)")
"""A device entry's triple: ``<kind>-amdgcn-amd-amdhsa-[-]<target id>``; the target id's
features (``:xnack-``) end in ``+``/``-``, so the triple is not split on ``-``."""


@frozen
class CodeObject:
    """One device entry of a bundle: its ``triple`` as written, the gfx ``processor``, the
    target ``features`` (``:xnack-``, empty for none), ``size`` in bytes, and ``mach``: the
    processor its AMDGPU ELF header names (None when the payload is not an AMDGPU ELF)."""

    triple: str
    processor: str
    features: str
    size: int
    mach: str | None


@mutable
class Offload:
    """The offload bundles of one file: ``bundles`` (one list of :class:`CodeObject` per bundle,
    i.e. per compiled translation unit), ``compressed`` (how many were ``CCOB``), ``other``
    (entry triples that are neither host nor AMDGPU device -> count)."""

    bundles: list[list[CodeObject]] = field(default_factory=list)
    compressed: int = 0
    other: Counter[str] = field(default_factory=Counter)

    def targets(self) -> Counter[str]:
        """gfx processor -> number of bundles holding code for it."""
        c: Counter[str] = Counter()
        for b in self.bundles:
            c.update({o.processor for o in b})
        return c

    def target_ids(self) -> list[str]:
        """Every distinct target id (``gfx90a:xnack-``, ``gfx1100``), sorted."""
        return sorted({o.processor + o.features for b in self.bundles for o in b})

    def summary(self) -> str:
        """``gfx1030,gfx908,gfx90a in 3 bundles`` (for findings and messages)."""
        return f"{','.join(sorted(self.targets())) or 'no gfx code'} in {len(self.bundles)} bundles"

    def to_json(self) -> dict[str, Any]:
        """``{"bundles": n, "compressed": n, "targets": {"gfx1030": n, ...}, "target_ids": [...]}``."""
        return {
            "bundles": len(self.bundles),
            "compressed": self.compressed,
            "targets": dict(sorted(self.targets().items())),
            "target_ids": self.target_ids(),
        }


def locate(data: BytesLike) -> tuple[int, int] | None:
    """``(file offset, size)`` of the bytes holding offload bundles: the ``.hip_fatbin`` section
    of an ELF file, the ``.hip_fat`` section of a PE file, or the whole of a file that is itself
    a bundle; None when there is none. Raises :class:`NotParsable` for a damaged ELF/PE."""
    head = bytes(data[:24])
    if head.startswith((MAGIC, COMPRESSED_MAGIC)):
        return 0, len(data)
    if head.startswith(b"\x7fELF"):
        return _elf_section(data)
    if head.startswith(b"MZ"):
        return _pe_section(data)
    return None


def _elf_section(data: BytesLike) -> tuple[int, int] | None:
    import io

    from elftools.common.exceptions import ELFError, ELFParseError
    from elftools.elf.elffile import ELFFile

    stream = data if hasattr(data, "seek") else io.BytesIO(data)
    try:
        sec = ELFFile(stream).get_section_by_name(ELF_SECTION)  # type: ignore[arg-type]  # any seekable binary stream
    except (ELFError, ELFParseError, struct.error, ValueError) as e:
        raise NotParsable(f"damaged or truncated ELF file: {e}") from None
    if sec is None or sec["sh_type"] == "SHT_NOBITS":
        return None
    return _fits(int(sec["sh_offset"]), int(sec["sh_size"]), len(data), ELF_SECTION)


def _pe_section(data: BytesLike) -> tuple[int, int] | None:
    import pefile

    try:
        pe = pefile.PE(data=data, fast_load=True)
    except pefile.PEFormatError as e:
        raise NotParsable(f"not a valid PE file: {e}") from None
    for s in pe.sections:
        if s.Name.rstrip(b"\0") == PE_SECTION.encode():
            size = min(s.SizeOfRawData, s.Misc_VirtualSize or s.SizeOfRawData)
            return _fits(int(s.PointerToRawData), int(size), len(data), PE_SECTION)
    return None


def _fits(start: int, size: int, total: int, name: str) -> tuple[int, int]:
    if start + size > total:
        raise NotParsable(f"truncated: section {name} ends at byte {start + size}, the file has {total} bytes")
    return start, size


def parse(data: BytesLike, start: int, size: int) -> Offload:
    """Walk the bundles in ``data[start:start+size]`` (zero padding between them is skipped).
    Raises :class:`NotParsable` naming the section offset of bytes that are neither padding nor
    a bundle, of a bundle or entry that runs past the section, or of a compressed bundle that
    cannot be decompressed."""
    inv = Offload()
    end = start + size
    pos = start
    while pos < end:
        head = bytes(data[pos : pos + len(MAGIC)])
        if head.startswith(COMPRESSED_MAGIC):
            raw, used = _decompress(data, pos, end, start)
            inv.compressed += 1
            inv.bundles.append(_bundle(raw, 0, len(raw), pos - start, inv))
            pos += used
        elif head == MAGIC:
            bundle_end = _extent(data, pos, end, start)
            inv.bundles.append(_bundle(data, pos, bundle_end, pos - start, inv))
            pos = bundle_end
        else:
            pos += padding(data, pos, end, start, "offload bundle", "bundle header")
    return inv


def _entries(data: BytesLike, pos: int, end: int, where: int) -> tuple[list[tuple[int, int, str]], int]:
    """``(offset from the bundle, size, triple)`` of each entry of the bundle at ``pos``, and
    where its header ends."""
    if end - pos < len(MAGIC) + 8:
        raise NotParsable(f"offload bundle at section offset 0x{where:x} is cut off")
    (n,) = struct.unpack_from("<Q", data, pos + len(MAGIC))
    p = pos + len(MAGIC) + 8
    out = []
    for i in range(n):
        if end - p < _ENTRY.size:
            raise NotParsable(f"offload bundle at section offset 0x{where:x}: entry {i} of {n} is cut off")
        off, size, tlen = _ENTRY.unpack_from(data, p)
        p += _ENTRY.size
        if tlen > 4096 or p + tlen > end:
            raise NotParsable(f"offload bundle at section offset 0x{where:x}: entry {i} has a bad triple length")
        triple = bytes(data[p : p + tlen]).decode("ascii", "replace")
        p += tlen
        if pos + off + size > end:
            raise NotParsable(f"offload bundle at section offset 0x{where:x}: entry {triple} runs past the section end")
        out.append((off, size, triple))
    return out, p


def _extent(data: BytesLike, pos: int, end: int, start: int) -> int:
    """Where the bundle at ``pos`` ends (its furthest entry's end, at least its header's)."""
    entries, header_end = _entries(data, pos, end, pos - start)
    return max([header_end] + [pos + o + s for o, s, _t in entries])


def _bundle(data: BytesLike, pos: int, end: int, where: int, inv: Offload) -> list[CodeObject]:
    objects = []
    for off, size, triple in _entries(data, pos, end, where)[0]:
        if triple.startswith("host-"):
            continue
        m = _DEVICE.fullmatch(triple)
        if m is None:
            inv.other[triple] += 1
            continue
        objects.append(CodeObject(triple, m["processor"], m["features"], size, _mach(data, pos + off, size)))
    return objects


def _mach(data: BytesLike, pos: int, size: int) -> str | None:
    """The processor an AMDGPU ELF header at ``pos`` names (``e_flags`` & 0xff), or None."""
    if size < 52 or bytes(data[pos : pos + 4]) != b"\x7fELF":
        return None
    (machine,) = struct.unpack_from("<H", data, pos + 18)
    if machine != EM_AMDGPU:
        return None
    (flags,) = struct.unpack_from("<I", data, pos + 48)
    return AMDGPU_MACH.get(flags & 0xFF, f"mach 0x{flags & 0xFF:02x}")


def _decompress(data: BytesLike, pos: int, end: int, start: int) -> tuple[bytes, int]:
    """The bundle inside the ``CCOB`` at ``pos`` and the bytes the ``CCOB`` occupies."""
    where = pos - start
    if end - pos < 8:
        raise NotParsable(f"compressed offload bundle at section offset 0x{where:x} is cut off")
    version, method = struct.unpack_from("<HH", data, pos + 4)
    if version == 1:
        fmt = "<I"
    elif version in (2, 3):
        fmt = "<II" if version == 2 else "<QQ"
    else:
        raise NotParsable(f"compressed offload bundle at section offset 0x{where:x} has unknown version {version}")
    head = 8 + struct.calcsize(fmt) + 8  # + the u64 hash
    if end - pos < head:
        raise NotParsable(f"compressed offload bundle at section offset 0x{where:x} is cut off")
    values = struct.unpack_from(fmt, data, pos + 8)
    total = values[0] if version > 1 else None
    body = bytes(data[pos + head : pos + total if total else end])
    name = _METHODS.get(method, f"method {method}")
    try:
        if name == "zlib":
            d = zlib.decompressobj()
            raw = d.decompress(body)
            used = head + len(body) - len(d.unused_data)
        elif name == "zstd":
            raw, used = _zstd(body, where), head + len(body)
        else:
            raise NotParsable(f"compressed offload bundle at section offset 0x{where:x} uses unknown {name}")
    except zlib.error as e:
        raise NotParsable(f"compressed offload bundle at section offset 0x{where:x}: {name}: {e}") from None
    if not raw.startswith(MAGIC):
        raise NotParsable(f"compressed offload bundle at section offset 0x{where:x} does not hold a bundle")
    return raw, total or used


def _zstd(body: bytes, where: int) -> bytes:
    try:
        import zstandard
    except ImportError:
        raise NotParsable(
            f"compressed offload bundle at section offset 0x{where:x} is zstd-compressed and the zstandard "
            "module is not installed (pip install zstandard)"
        ) from None
    try:
        return bytes(zstandard.ZstdDecompressor().decompressobj().decompress(body))
    except zstandard.ZstdError as e:
        raise NotParsable(f"compressed offload bundle at section offset 0x{where:x}: zstd: {e}") from None


def inventory(data: BytesLike) -> Offload | None:
    """The offload bundles of one whole file, or None when it has no place for them (see
    :func:`locate`). Raises :class:`NotParsable`."""
    loc = locate(data)
    return parse(data, *loc) if loc is not None else None


def check_targets(inv: Offload | None, promised: tuple[str, ...]) -> list[str]:
    """Compare a file's bundles with the gfx processors a backend promises (already expanded:
    :func:`bundlegraph.backends.hip.gfx.expand`). Returns one sentence per problem, empty when they agree:

    - a promised processor no bundle holds (``missing gfx1101``), or that only some bundles hold
      (a kernel of the others fails at its first launch: ``gfx1101 in 3 of 40 bundles``);
    - a processor nobody promised (``unexpected gfx1030``);
    - an entry whose ELF header names another processor than its triple.
    """
    inv = inv or Offload()
    have = inv.targets()
    n = len(inv.bundles)
    out = [f"missing {t}" for t in promised if t not in have]
    out += [f"{t} in only {have[t]} of {n} bundles" for t in promised if 0 < have[t] < n]
    out += [f"unexpected {t}" for t in sorted(set(have) - set(promised))]
    bad = sorted(
        {f"{o.triple} holds a {o.mach} code object" for b in inv.bundles for o in b if o.mach and o.mach != o.processor}
    )
    return out + bad + [f"unexpected offload entry {t}" for t in sorted(inv.other)]


def check_file(path: str, data: BytesLike, promised: tuple[str, ...]) -> list[Failure]:
    """The ``gpu-code`` failures of one GPU backend file (bundle path ``path``, whole content
    ``data``) against the promised gfx processors; one line each, naming the file, the problem,
    what was promised and what was found. Never raises for a bad file."""
    want = ",".join(promised)
    try:
        inv = inventory(data)
    except NotParsable as e:
        return [Failure(path, "gpu-code", f"{e} (promised {want})")]
    if inv is None or not inv.bundles:
        return [Failure(path, "gpu-code", f"no HIP offload bundle ({ELF_SECTION}/{PE_SECTION}), promised {want}")]
    return [
        Failure(path, "gpu-code", f"{problem} (promised {want}; found {inv.summary()})")
        for problem in check_targets(inv, promised)
    ]
