"""Read what verification needs from a Windows PE image, with ``pefile``.

Format source: Microsoft, "PE Format" (learn.microsoft.com, Windows / Win32 / Debug / PE
Format): COFF header ``Machine`` values (``IMAGE_FILE_MACHINE_AMD64`` = 0x8664,
``IMAGE_FILE_MACHINE_ARM64`` = 0xAA64, ``I386`` = 0x14C, ``ARMNT`` = 0x1C4), the import
directory (data directory 1), the delay-load import directory (13), the export directory (0)
with forwarders (an export whose RVA points inside the export directory names
``DLL.Function`` or ``DLL.#ordinal``), the certificate table (data directory 4) and section
names truncated to 8 bytes (so CUDA's ``.nv_fatbin`` appears as ``.nv_fatb``).

The caller passes the file's bytes (normally a read-only ``mmap``); nothing is copied and
only the headers and tables are touched.
"""

from __future__ import annotations

from dataclasses import field
from typing import Any

from ..core.lightclass import frozen
from . import BytesLike, NotParsable

MACHINES: dict[int, str] = {0x8664: "x64", 0xAA64: "arm64", 0x14C: "x86", 0x1C4: "arm"}
"""COFF ``Machine`` -> bundlegraph's arch name (PE Format, "Machine Types")."""

MACHINE_CODES: dict[str, int] = {"x64": 0x8664, "arm64": 0xAA64}
"""The machine each leg arch requires."""

FATBIN_SECTION = ".nv_fatb"
"""CUDA's ``.nv_fatbin`` section name (``fatbinary_section.h``) cut to PE's 8 bytes."""

_DIRS = ("IMAGE_DIRECTORY_ENTRY_IMPORT", "IMAGE_DIRECTORY_ENTRY_DELAY_IMPORT", "IMAGE_DIRECTORY_ENTRY_EXPORT")
"""The data directories read (pefile is imported where a file is read, not when the graph loads)."""


@frozen
class PEImport:
    """The imports from one DLL: ``dll`` as written in the file (case kept), ``names`` the
    imported function names, ``ordinals`` the functions imported by ordinal only, ``delay``
    True for the delay-load table."""

    dll: str
    names: tuple[str, ...]
    ordinals: tuple[int, ...]
    delay: bool = False


@frozen
class PEInfo:
    """What verification needs from one PE file.

    - ``machine``: the COFF machine value; ``machine_name``: ``x64``/``arm64``/... or ``0x....``;
    - ``imports``: ordinary then delay-load imports, one :class:`PEImport` per DLL;
    - ``exports``: exported names; ``export_ordinals``: every exported ordinal;
      ``forwarders``: export name (or ``#ordinal``) -> ``DLL.Function`` / ``DLL.#N``;
    - ``fatbin``: ``(file offset, size)`` of the ``.nv_fatb`` section, or None;
    - ``has_certificate``: the certificate table is non-empty (says nothing about validity).
    """

    machine: int
    machine_name: str
    imports: tuple[PEImport, ...]
    exports: frozenset[str] = frozenset()
    export_ordinals: frozenset[int] = frozenset()
    forwarders: dict[str, str] = field(default_factory=dict)
    fatbin: tuple[int, int] | None = None
    has_certificate: bool = False


def _text(b: bytes | None) -> str:
    return (b or b"").decode("latin-1")


def _imports(entries: list[Any] | None, delay: bool) -> list[PEImport]:
    return [
        PEImport(
            _text(e.dll),
            tuple(_text(i.name) for i in e.imports if i.name is not None),
            tuple(int(i.ordinal) for i in e.imports if i.name is None and i.ordinal is not None),
            delay,
        )
        for e in entries or []
    ]


def read_pe(data: BytesLike, name: str = "") -> PEInfo:
    """Parse ``data`` (the whole file: bytes or a read-only mmap) as a PE image.

    Raises :class:`NotParsable` when it is not a PE file, when a section or table lies beyond
    the end of the data (a truncated file) or when pefile could only parse it partially."""
    import pefile

    size = len(data)
    if size < 2 or bytes(data[:2]) != b"MZ":
        raise NotParsable(f"not a PE file: DOS header magic 'MZ' not found ({size} bytes)")
    try:
        pe = pefile.PE(data=data, fast_load=True, max_symbol_exports=1 << 20, max_repeated_symbol=1 << 20)
    except pefile.PEFormatError as e:
        raise NotParsable(f"not a valid PE file: {e.value if hasattr(e, 'value') else e}") from None
    for s in pe.sections:
        end = s.PointerToRawData + s.SizeOfRawData
        if s.SizeOfRawData and end > size:
            sname = s.Name.rstrip(b"\0").decode("latin-1")
            raise NotParsable(f"truncated: section {sname} ends at byte {end}, the file has {size} bytes")
    try:
        pe.parse_data_directories(directories=[pefile.DIRECTORY_ENTRY[d] for d in _DIRS])
    except pefile.PEFormatError as e:
        raise NotParsable(f"damaged import/export tables: {e}") from None
    bad = [w for w in pe.get_warnings() if "too many" in w.lower() or "assuming corrupt" in w.lower()]
    if bad:
        raise NotParsable(f"import/export tables could not be read completely: {bad[0]}")
    machine = int(pe.FILE_HEADER.Machine)
    imports = _imports(getattr(pe, "DIRECTORY_ENTRY_IMPORT", None), False)
    imports += _imports(getattr(pe, "DIRECTORY_ENTRY_DELAY_IMPORT", None), True)
    names: set[str] = set()
    ordinals: set[int] = set()
    fwd: dict[str, str] = {}
    exp = getattr(pe, "DIRECTORY_ENTRY_EXPORT", None)
    for sym in exp.symbols if exp else []:
        ordinals.add(int(sym.ordinal))
        key = _text(sym.name) if sym.name else f"#{sym.ordinal}"
        if sym.name:
            names.add(key)
        if sym.forwarder:
            fwd[key] = _text(sym.forwarder)
    fat = None
    for s in pe.sections:
        if s.Name.rstrip(b"\0") == FATBIN_SECTION.encode():
            fat = (int(s.PointerToRawData), int(min(s.SizeOfRawData, s.Misc_VirtualSize or s.SizeOfRawData)))
    sec = pe.OPTIONAL_HEADER.DATA_DIRECTORY[pefile.DIRECTORY_ENTRY["IMAGE_DIRECTORY_ENTRY_SECURITY"]]
    return PEInfo(
        machine=machine,
        machine_name=MACHINES.get(machine, f"0x{machine:04X}"),
        imports=tuple(imports),
        exports=frozenset(names),
        export_ordinals=frozenset(ordinals),
        forwarders=fwd,
        fatbin=fat,
        has_certificate=bool(sec.Size and sec.VirtualAddress),
    )


def machine_label(code: int) -> str:
    """``x64 (0x8664)``-style label for messages."""
    return f"{MACHINES.get(code, 'unknown')} (0x{code:04X})"
