"""What Authenticode signing may change in a PE file, and a check that it changed nothing else.

An Authenticode signer (signtool, osslsigncode, Azure Trusted Signing) changes exactly three
things in a PE image (Microsoft, "Windows Authenticode Portable Executable Signature Format",
the parts left out of the image digest):

- the optional header's ``CheckSum`` (4 bytes at optional header + 64);
- the ``Certificate Table`` data directory entry (index 4: file offset and size, 8 bytes);
- the attribute certificate table itself, appended at the end of the file after zero padding
  to an 8-byte boundary.

:func:`content_outside_signature` removes those from a file's bytes; two files whose results
are equal up to that padding (:func:`same_outside_signature`) hold the same code and data: a
smoke that judged the unsigned file judged what the signed one runs. Layout: PE/COFF
specification, "Optional Header Data Directories" (PE32 magic 0x10b: directories at optional
header + 96; PE32+ 0x20b: + 112).
"""

from __future__ import annotations

import struct

from . import NotParsable

_SECURITY = 4
"""Index of the Certificate Table among the optional header's data directories."""


def _layout(data: bytes) -> tuple[int, int, int, int]:
    """``(checksum offset, security directory offset, table offset, table size)`` of a PE
    file. Raises :class:`NotParsable` for anything that is not one."""
    if len(data) < 64 or data[:2] != b"MZ":
        raise NotParsable("not a PE file: DOS header magic 'MZ' not found")
    (pe,) = struct.unpack_from("<I", data, 0x3C)
    if pe + 24 + 2 > len(data) or data[pe : pe + 4] != b"PE\0\0":
        raise NotParsable("not a PE file: no 'PE\\0\\0' signature at e_lfanew")
    opt = pe + 24
    (magic,) = struct.unpack_from("<H", data, opt)
    dirs = {0x10B: opt + 96, 0x20B: opt + 112}.get(magic)
    if dirs is None:
        raise NotParsable(f"not a PE file: optional header magic {magic:#x}")
    (count,) = struct.unpack_from("<I", data, dirs - 4)
    sec = dirs + 8 * _SECURITY
    if count <= _SECURITY or sec + 8 > len(data):
        return opt + 64, sec, 0, 0
    off, size = struct.unpack_from("<II", data, sec)
    if size and (off + size > len(data) or off < sec + 8):
        raise NotParsable(f"certificate table at {off} (+{size}) lies outside the file")
    return opt + 64, sec, off, size


def content_outside_signature(data: bytes) -> bytes:
    """``data`` with the checksum and the certificate-table entry zeroed and the certificate
    table cut out: what no signer may change. Raises :class:`NotParsable` for a file that is not PE."""
    checksum, sec, off, size = _layout(data)
    out = bytearray(data)
    out[checksum : checksum + 4] = bytes(4)
    if sec + 8 <= len(out):
        out[sec : sec + 8] = bytes(8)
    if size:
        del out[off : off + size]
    return bytes(out)


def same_outside_signature(unsigned: bytes, signed: bytes) -> str | None:
    """None when ``signed`` is ``unsigned`` with an Authenticode signature added (the same bytes
    outside the signature, up to the zero padding before the table); else the reason, one
    sentence. Never raises: a file that is not PE gives a reason."""
    try:
        a, b = content_outside_signature(unsigned), content_outside_signature(signed)
    except NotParsable as e:
        return str(e)
    if len(b) < len(a) or len(b) - len(a) >= 8 or b[: len(a)] != a or any(b[len(a) :]):
        first = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
        return f"its bytes outside the Authenticode signature changed (first at offset {first})"
    return None


__all__ = ["content_outside_signature", "same_outside_signature"]
