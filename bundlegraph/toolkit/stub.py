"""A link-only ``libcuda.so`` stub for toolkits built from NVIDIA's wheels (they carry none).

The stub is a minimal ELF64 shared object for the target machine (x86_64 or AArch64) with
soname ``libcuda.so.1`` (what the driver installs, so a binary linked against the stub records
``NEEDED libcuda.so.1`` and never the stub's path) and one defined function symbol for every
driver API name declared in the target's ``cuda.h`` (``cuInit``, ``cuMemCreate``,
``cuDeviceTotalMem_v2``, ...). Every symbol points at a single ``ret`` instruction: it is for
the linker only, is recorded in the receipt as generated, and must never ship.

Format source: the System V ABI / ELF-64 object file format (ELF header, program headers
``PT_LOAD``+``PT_DYNAMIC``, ``.hash``/``.dynsym``/``.dynstr``/``.text``/``.dynamic``/``.shstrtab``
sections). Written in Python so no cross compiler is needed and the bytes are reproducible.
"""

from __future__ import annotations

import re
import struct
from pathlib import Path

from ..schemas.backend import backend

SONAME = backend("cuda").DRIVERS["linux"]
"""The driver's soname the stub carries (:data:`bundlegraph.backends.cuda.DRIVERS`)."""
_MACHINES = {
    "linux-x86_64": (62, b"\xc3\x90\x90\x90"),  # EM_X86_64: ret; nop x3
    "linux-sbsa": (183, b"\xc0\x03\x5f\xd6"),  # EM_AARCH64: ret
    "linux-aarch64": (183, b"\xc0\x03\x5f\xd6"),
}


def driver_symbols(cuda_h: str) -> list[str]:
    """Driver API function names in ``cuda.h``: declared ``cuXxx(`` names plus the versioned
    names ``#define``'d for them (``cuMemAlloc`` -> ``cuMemAlloc_v2``)."""
    text = re.sub(r"/\*.*?\*/", "", cuda_h, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    names = set(re.findall(r"\b(cu[A-Z]\w*)\s*\(", text))
    names |= set(re.findall(r"#\s*define\s+cu[A-Z]\w*\s+(cu[A-Z]\w*)\b", text))
    return sorted(names)


def _elf_hash(name: bytes) -> int:
    h = 0
    for c in name:
        h = ((h << 4) + c) & 0xFFFFFFFF
        g = h & 0xF0000000
        if g:
            h ^= g >> 24
        h &= ~g & 0xFFFFFFFF
    return h


def _align(n: int, a: int) -> int:
    return (n + a - 1) // a * a


def build_stub(symbols: list[str], platform: str) -> bytes:
    """The bytes of the stub for ``platform`` (``linux-x86_64``/``linux-sbsa``). Raises KeyError
    for another platform."""
    machine, ret = _MACHINES[platform]
    dynstr = bytearray(b"\0")

    def s(x: str) -> int:
        off = len(dynstr)
        dynstr.extend(x.encode() + b"\0")
        return off

    soname_off = s(SONAME)
    name_offs = [s(n) for n in symbols]
    nsym = len(symbols) + 1
    nbucket = max(1, nsym // 2) | 1
    buckets, chains = [0] * nbucket, [0] * nsym
    for i, n in enumerate(symbols, start=1):
        b = _elf_hash(n.encode()) % nbucket
        chains[i] = buckets[b]
        buckets[b] = i
    hash_bytes = struct.pack(f"<{2 + nbucket + nsym}I", nbucket, nsym, *buckets, *chains)

    ehsize, phentsize, phnum = 64, 56, 2
    off_hash = ehsize + phentsize * phnum
    off_dynsym = _align(off_hash + len(hash_bytes), 8)
    off_dynstr = off_dynsym + 24 * nsym
    off_text = _align(off_dynstr + len(dynstr), 16)
    off_dynamic = _align(off_text + len(ret), 8)
    dyn = [
        (14, soname_off),
        (4, off_hash),
        (5, off_dynstr),
        (6, off_dynsym),
        (10, len(dynstr)),
        (11, 24),
        (0, 0),
    ]  # DT_SONAME, DT_HASH, DT_STRTAB, DT_SYMTAB, DT_STRSZ, DT_SYMENT, DT_NULL
    dyn_bytes = b"".join(struct.pack("<qQ", t, v) for t, v in dyn)
    shstr = b"\0.hash\0.dynsym\0.dynstr\0.text\0.dynamic\0.shstrtab\0"
    off_shstr = off_dynamic + len(dyn_bytes)
    off_sh = _align(off_shstr + len(shstr), 8)
    end_load = off_dynamic + len(dyn_bytes)

    syms = [struct.pack("<IBBHQQ", 0, 0, 0, 0, 0, 0)]
    for off in name_offs:  # STB_GLOBAL<<4 | STT_FUNC, defined in section 4 (.text)
        syms.append(struct.pack("<IBBHQQ", off, 0x12, 0, 4, off_text, len(ret)))
    sym_bytes = b"".join(syms)

    out = bytearray(off_sh + 64 * 7)
    ident = b"\x7fELF" + bytes([2, 1, 1, 0]) + bytes(8)  # ELFCLASS64, little endian, SysV
    out[0:64] = ident + struct.pack(
        "<HHIQQQIHHHHHH", 3, machine, 1, 0, ehsize, off_sh, 0, ehsize, phentsize, phnum, 64, 7, 6
    )
    out[64:120] = struct.pack("<IIQQQQQQ", 1, 5, 0, 0, 0, end_load, end_load, 0x10000)  # PT_LOAD R+X
    out[120:176] = struct.pack(
        "<IIQQQQQQ", 2, 6, off_dynamic, off_dynamic, off_dynamic, len(dyn_bytes), len(dyn_bytes), 8
    )  # PT_DYNAMIC RW
    for off, data in (
        (off_hash, hash_bytes),
        (off_dynsym, sym_bytes),
        (off_dynstr, bytes(dynstr)),
        (off_text, ret),
        (off_dynamic, dyn_bytes),
        (off_shstr, shstr),
    ):
        out[off : off + len(data)] = data
    names = {
        n: shstr.index(n.encode() + b"\0") for n in (".hash", ".dynsym", ".dynstr", ".text", ".dynamic", ".shstrtab")
    }
    sh = [
        bytes(64),
        struct.pack("<IIQQQQIIQQ", names[".hash"], 5, 2, off_hash, off_hash, len(hash_bytes), 2, 0, 8, 4),
        struct.pack("<IIQQQQIIQQ", names[".dynsym"], 11, 2, off_dynsym, off_dynsym, len(sym_bytes), 3, 1, 8, 24),
        struct.pack("<IIQQQQIIQQ", names[".dynstr"], 3, 2, off_dynstr, off_dynstr, len(dynstr), 0, 0, 1, 0),
        struct.pack("<IIQQQQIIQQ", names[".text"], 1, 6, off_text, off_text, len(ret), 0, 0, 16, 0),
        struct.pack("<IIQQQQIIQQ", names[".dynamic"], 6, 3, off_dynamic, off_dynamic, len(dyn_bytes), 3, 0, 8, 16),
        struct.pack("<IIQQQQIIQQ", names[".shstrtab"], 3, 0, 0, off_shstr, len(shstr), 0, 0, 1, 0),
    ]
    out[off_sh : off_sh + 64 * 7] = b"".join(sh)
    return bytes(out)


def write_stub(lib_dir: Path, platform: str) -> Path | None:
    """Write ``<lib_dir>/stubs/libcuda.so`` from ``<lib_dir>/../include/cuda.h``; None when the
    platform has no ELF form or cuda.h is absent (validation then names the missing file)."""
    cuda_h = lib_dir.parent / "include" / "cuda.h"
    if platform not in _MACHINES or not cuda_h.is_file():
        return None
    syms = driver_symbols(cuda_h.read_text(encoding="utf-8", errors="replace"))
    out = lib_dir / "stubs" / "libcuda.so"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(build_stub(syms, platform))
    return out
