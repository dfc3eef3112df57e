"""Read what verification needs from a Linux ELF file, with ``pyelftools``.

Format sources: the System V ABI "gABI" (ELF header ``e_machine``: ``EM_X86_64`` = 62,
``EM_AARCH64`` = 183; the dynamic section's ``DT_NEEDED``, ``DT_SONAME``, ``DT_RPATH``,
``DT_RUNPATH``) and the Linux Standard Base Core specification, "Symbol Versioning"
(``.gnu.version`` / ``.gnu.version_r`` (verneed: versions a file needs from each library) /
``.gnu.version_d`` (verdef: versions a library defines)). CUDA's data section is
``.nv_fatbin`` (``fatbinary_section.h``).
"""

from __future__ import annotations

import io
import struct
from dataclasses import field
from typing import TYPE_CHECKING

from ..core.lightclass import frozen
from . import BytesLike, NotParsable

if TYPE_CHECKING:  # pyelftools is imported where a file is read: planning a graph needs none of it
    from elftools.elf.elffile import ELFFile

MACHINES: dict[str, str] = {"EM_X86_64": "x64", "EM_AARCH64": "arm64", "EM_386": "x86", "EM_ARM": "arm"}
"""pyelftools' ``e_machine`` names -> bundlegraph's arch names."""

MACHINE_NAMES: dict[str, str] = {"x64": "EM_X86_64", "arm64": "EM_AARCH64"}
"""The ``e_machine`` each leg arch requires."""

FATBIN_SECTION = ".nv_fatbin"


@frozen
class ELFInfo:
    """What verification needs from one ELF file.

    - ``machine``: ``e_machine`` as pyelftools names it (``EM_AARCH64``); ``machine_name``:
      ``arm64``/``x64``/... ; ``elf_type``: ``ET_DYN``, ``ET_EXEC``, ``ET_REL``;
    - ``soname``, ``needed`` (DT_NEEDED in order), ``rpath`` / ``runpath`` (entries split on
      ``:``);
    - ``verneed``: library file name -> versions this file needs from it;
      ``verneed_symbols``: ``(library, version)`` -> one symbol that needs it (for messages);
    - ``verdef``: versions this file defines (without the base entry that repeats the soname);
    - ``fatbin``: ``(file offset, size)`` of ``.nv_fatbin``, or None;
    - ``exports``: the names of the global/weak symbols it defines in ``.dynsym``; ``imports``:
      those it leaves undefined there (resolved from another library at load).
    """

    machine: str
    machine_name: str
    elf_type: str
    soname: str | None = None
    needed: tuple[str, ...] = ()
    rpath: tuple[str, ...] = ()
    runpath: tuple[str, ...] = ()
    verneed: dict[str, frozenset[str]] = field(default_factory=dict)
    verneed_symbols: dict[tuple[str, str], str] = field(default_factory=dict)
    verdef: frozenset[str] = frozenset()
    fatbin: tuple[int, int] | None = None
    exports: frozenset[str] = frozenset()
    imports: frozenset[str] = frozenset()


def is_elf(data: BytesLike) -> bool:
    """True when ``data`` starts with the ELF magic ``\\x7fELF``."""
    return bytes(data[:4]) == b"\x7fELF"


def read_elf(data: BytesLike, name: str = "") -> ELFInfo:
    """Parse ``data`` (the whole file) as ELF. Raises :class:`NotParsable` when it is not ELF
    or is damaged/truncated."""
    if not is_elf(data):
        raise NotParsable(f"not an ELF file: magic \\x7fELF not found ({len(data)} bytes)")
    from elftools.common.exceptions import ELFError, ELFParseError
    from elftools.elf.elffile import ELFFile

    stream = data if hasattr(data, "seek") else io.BytesIO(data)
    try:
        return _read(ELFFile(stream), len(data))  # type: ignore[arg-type]  # ELFFile reads any seekable binary stream
    except (ELFError, ELFParseError, struct.error, ValueError, KeyError, IndexError) as e:
        raise NotParsable(f"damaged or truncated ELF file: {e}") from None


def _read(elf: ELFFile, size: int) -> ELFInfo:
    from elftools.elf.dynamic import DynamicSection
    from elftools.elf.gnuversions import GNUVerDefSection, GNUVerNeedSection, GNUVerSymSection

    for sec in elf.iter_sections():
        if sec["sh_type"] != "SHT_NOBITS" and sec["sh_offset"] + sec["sh_size"] > size:
            raise NotParsable(
                f"truncated: section {sec.name} ends at byte {sec['sh_offset'] + sec['sh_size']}, the file has {size} bytes"
            )
    machine = elf["e_machine"]
    soname, needed, rpath, runpath = None, [], [], []
    verneed: dict[str, set[str]] = {}
    idx_to_need: dict[int, tuple[str, str]] = {}
    verdef: set[str] = set()
    versym = None
    fat = None
    for sec in elf.iter_sections():
        if isinstance(sec, DynamicSection):
            for tag in sec.iter_tags():
                t = tag.entry.d_tag
                if t == "DT_NEEDED":
                    needed.append(tag.needed)  # type: ignore[attr-defined]  # pyelftools sets these per d_tag
                elif t == "DT_SONAME":
                    soname = tag.soname  # type: ignore[attr-defined]  # pyelftools sets these per d_tag
                elif t == "DT_RPATH":
                    rpath += [p for p in tag.rpath.split(":") if p]  # type: ignore[attr-defined]  # pyelftools sets these per d_tag
                elif t == "DT_RUNPATH":
                    runpath += [p for p in tag.runpath.split(":") if p]  # type: ignore[attr-defined]  # pyelftools sets these per d_tag
        elif isinstance(sec, GNUVerNeedSection):
            for vn, auxes in sec.iter_versions():
                for aux in auxes:
                    verneed.setdefault(str(vn.name), set()).add(aux.name)
                    idx_to_need[aux["vna_other"]] = (str(vn.name), aux.name)
        elif isinstance(sec, GNUVerDefSection):
            for vd, auxes in sec.iter_versions():
                if vd["vd_flags"] & 0x1:  # VER_FLG_BASE: the file's own name
                    continue
                first = next(iter(auxes), None)
                if first is not None:
                    verdef.add(first.name)
        elif isinstance(sec, GNUVerSymSection):
            versym = sec
        elif sec.name == FATBIN_SECTION and sec["sh_type"] != "SHT_NOBITS":
            fat = (int(sec["sh_offset"]), int(sec["sh_size"]))
    symbols: dict[tuple[str, str], str] = {}
    dynsym = elf.get_section_by_name(".dynsym")
    exports = frozenset(
        sym.name
        for sym in (dynsym.iter_symbols() if dynsym is not None else ())  # type: ignore[attr-defined]  # a SymbolTableSection
        if sym.name and sym["st_shndx"] != "SHN_UNDEF" and sym["st_info"]["bind"] in ("STB_GLOBAL", "STB_WEAK")
    )
    imports = frozenset(
        sym.name
        for sym in (dynsym.iter_symbols() if dynsym is not None else ())  # type: ignore[attr-defined]  # a SymbolTableSection
        if sym.name and sym["st_shndx"] == "SHN_UNDEF" and sym["st_info"]["bind"] in ("STB_GLOBAL", "STB_WEAK")
    )
    if versym is not None and dynsym is not None and idx_to_need:
        for i, sym in enumerate(dynsym.iter_symbols()):  # type: ignore[attr-defined]  # a SymbolTableSection
            if sym["st_shndx"] != "SHN_UNDEF" or not sym.name:
                continue
            ndx = versym.get_symbol(i)["ndx"]
            ndx = ndx if isinstance(ndx, int) else 0
            key = idx_to_need.get(ndx & 0x7FFF)
            if key and key not in symbols:
                symbols[key] = sym.name
    return ELFInfo(
        machine=machine,
        machine_name=MACHINES.get(machine, machine),
        elf_type=elf["e_type"],
        soname=soname,
        needed=tuple(needed),
        rpath=tuple(rpath),
        runpath=tuple(runpath),
        verneed={k: frozenset(v) for k, v in verneed.items()},
        exports=exports,
        imports=imports,
        verneed_symbols=symbols,
        verdef=frozenset(verdef),
        fatbin=fat,
    )
