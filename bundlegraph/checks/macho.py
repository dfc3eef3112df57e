"""Read what verification needs from a macOS Mach-O file, with LIEF, and check a macOS bundle.

Why LIEF (``lief``, Quarkslab) and not macholib: LIEF parses from bytes (a bundle's files come
from archives as bytes), reads thin and universal (fat) files, and names every load command
this module needs (``LC_BUILD_VERSION``, ``LC_VERSION_MIN_MACOSX``, ``LC_RPATH``,
``LC_CODE_SIGNATURE`` with its bytes); it ships wheels for every runner (Linux, Windows, macOS;
x64 and arm64) and is released often (1.0 in 2026). macholib reads only a path and is released
rarely. The project reads PE and ELF with pefile and pyelftools; LIEF is used here for Mach-O only.

Format sources: Apple's ``<mach-o/loader.h>`` (load commands, ``LC_LOAD_WEAK_DYLIB``, ``@rpath``
/ ``@loader_path`` / ``@executable_path`` as dyld(1) describes them: ``man dyld``, "DYNAMIC
LIBRARY LOADING"), and xnu ``osfmk/kern/cs_blobs.h`` for the code signature (big-endian: the
embedded-signature SuperBlob ``0xfade0cc0`` indexes a CodeDirectory ``0xfade0c02`` whose
``flags`` carry ``CS_ADHOC`` 0x2 and ``CS_LINKER_SIGNED`` 0x20000, its ``identOffset`` at byte
20 and, from version 0x20200, ``teamOffset`` at byte 48; a CMS blob ``0xfade0b01`` in slot
0x10000 holds the PKCS#7 signature whose leaf certificate names the signer, e.g.
``Developer ID Application: <name> (<team>)``). Apple Silicon runs no unsigned arm64 code, so
``ld`` signs every arm64 output ad hoc ("linker-signed"); x86_64 files may carry no signature.

The floor on the minimum OS: a file built on a newer macOS without a deployment target gets
that macOS as its ``minos`` and does not load on older ones (ggml-org/llama.cpp#26370: the
macos-26 runner stamped minos 26); the fork builds with ``CMAKE_OSX_DEPLOYMENT_TARGET=13.3``.
"""

from __future__ import annotations

import posixpath
import struct
from collections.abc import Iterable, Mapping
from typing import Any

from ..core.lightclass import frozen
from . import BytesLike, Failure, NotParsable

ARCHS: dict[str, str] = {"ARM64": "arm64", "x86_64": "x64", "X86_64": "x64", "x86": "x86", "X86": "x86"}
"""LIEF's ``CPU_TYPE`` names -> bundlegraph's arch names."""

SYSTEM_PREFIXES = ("/usr/lib/", "/System/Library/")
"""Where a macOS bundle may load libraries from without shipping them (the OS provides them;
``/usr/local`` and ``/opt/homebrew`` are a build machine's, not the user's)."""

_MAGICS = {0xFEEDFACE, 0xFEEDFACF, 0xCEFAEDFE, 0xCFFAEDFE}
_FAT_MAGICS = {0xCAFEBABE, 0xCAFEBABF}
CS_ADHOC = 0x2
CS_LINKER_SIGNED = 0x20000


@frozen
class CodeSignature:
    """What ``LC_CODE_SIGNATURE`` says: ``kind`` (``adhoc``, ``linker-signed``: ad hoc by ``ld``,
    or ``certificate``), the CodeDirectory's ``identifier`` and ``team`` (None without one),
    ``flags`` and ``signer``: the leaf certificate's common name (``Developer ID Application:
    ...``), None for ad-hoc signatures."""

    kind: str
    identifier: str
    team: str | None
    flags: int
    signer: str | None = None

    @property
    def developer_id(self) -> bool:
        """True when a Developer ID Application certificate signed it (what Gatekeeper accepts)."""
        return self.signer is not None and self.signer.startswith("Developer ID Application:")


@frozen
class MachOSlice:
    """One architecture of a Mach-O file.

    - ``arch``: ``arm64``/``x64``/... ; ``filetype``: ``DYLIB``, ``BUNDLE``, ``EXECUTE``, ...;
    - ``install_name``: ``LC_ID_DYLIB`` (``@rpath/libllama.dylib``), None for other file types;
    - ``dylibs``: ``(name, weak)`` per ``LC_LOAD_DYLIB`` / ``LC_LOAD_WEAK_DYLIB`` /
      ``LC_REEXPORT_DYLIB`` / ``LC_LAZY_LOAD_DYLIB`` / ``LC_LOAD_UPWARD_DYLIB``, in order;
    - ``rpaths``: the ``LC_RPATH`` entries in order;
    - ``minos``: the minimum macOS as ``(major, minor, patch)`` from ``LC_BUILD_VERSION`` (or
      ``LC_VERSION_MIN_MACOSX``; ``minos_from`` names which), None when neither is present;
      ``sdk``: the SDK it was built with;
    - ``signature``: the parsed code signature, None without ``LC_CODE_SIGNATURE``.
    """

    arch: str
    filetype: str
    install_name: str | None
    dylibs: tuple[tuple[str, bool], ...]
    rpaths: tuple[str, ...]
    minos: tuple[int, int, int] | None
    minos_from: str | None
    sdk: tuple[int, int, int] | None
    signature: CodeSignature | None


@frozen
class MachOInfo:
    """A Mach-O file: its ``slices`` (one for a thin file) and ``fat`` (a universal file)."""

    slices: tuple[MachOSlice, ...]
    fat: bool

    @property
    def archs(self) -> tuple[str, ...]:
        return tuple(s.arch for s in self.slices)


def is_macho(data: BytesLike) -> bool:
    """True when ``data`` starts with a Mach-O or universal magic. ``0xcafebabe`` is also a Java
    class file's: a universal file is taken only with 1-15 architectures."""
    if len(data) < 8:
        return False
    (be,) = struct.unpack_from(">I", data, 0)
    (le,) = struct.unpack_from("<I", data, 0)
    if be in _FAT_MAGICS:
        (n,) = struct.unpack_from(">I", data, 4)
        return 0 < int(n) < 16
    return le in _MAGICS or be in _MAGICS


def version_text(v: tuple[int, int, int] | None) -> str:
    """``13.3`` / ``14.0`` / ``10.15.4`` (``none`` for None)."""
    if v is None:
        return "none"
    return ".".join(str(x) for x in (v if v[2] else v[:2]))


def parse_version(text: str) -> tuple[int, int, int]:
    """``"13.3"`` -> ``(13, 3, 0)``. Raises ValueError naming the text when it is not N[.N[.N]]."""
    parts = text.split(".")
    if not 1 <= len(parts) <= 3 or not all(p.isdigit() for p in parts):
        raise ValueError(f"{text!r} is not a macOS version (13.3, 14)")
    n = [int(p) for p in parts] + [0] * (3 - len(parts))
    return n[0], n[1], n[2]


def read_macho(data: BytesLike, name: str = "") -> MachOInfo:
    """Parse ``data`` (the whole file) as Mach-O. Raises :class:`NotParsable` when it is not one,
    or when its load commands or segments reach past the end of the data (a truncated file)."""
    if not is_macho(data):
        raise NotParsable(f"not a Mach-O file: no Mach-O magic ({len(data)} bytes)")
    import lief

    lief.logging.disable()  # LIEF logs parse trouble to stderr itself; problems become NotParsable here
    raw = bytes(data)  # LIEF reads bytes or a file object, not an mmap
    fat = lief.MachO.parse(raw, lief.MachO.ParserConfig.quick)
    if fat is None or fat.size == 0:
        raise NotParsable("damaged Mach-O file: LIEF could not read its headers")
    slices = []
    for i in range(fat.size):
        b = fat.at(i)
        _check_extent(b, len(raw), raw)
        try:
            slices.append(_slice(b, raw))
        except (SystemError, ValueError, RuntimeError) as e:
            # LIEF's bindings raise these for a header they parsed but cannot name (an unknown
            # cpu type or file type: a zeroed header reads that way); a bad file, not a bug
            raise NotParsable(f"damaged Mach-O file: its header names no known CPU or file type ({e})") from None
    return MachOInfo(tuple(slices), fat=struct.unpack_from(">I", raw, 0)[0] in _FAT_MAGICS)


def _check_extent(b: Any, size: int, raw: bytes) -> None:
    off = int(b.fat_offset)
    (magic,) = struct.unpack_from("<I", raw, off) if off + 4 <= size else (0,)
    header = 32 if magic in (0xFEEDFACF, 0xCFFAEDFE) else 28  # mach_header_64 / mach_header
    end_cmds = off + header + int(b.header.sizeof_cmds)
    if end_cmds > size:
        raise NotParsable(f"truncated: load commands end at byte {end_cmds}, the file has {size} bytes")
    for seg in b.segments:
        end = off + int(seg.file_offset) + int(seg.file_size)
        if seg.file_size and end > size:
            raise NotParsable(f"truncated: segment {seg.name} ends at byte {end}, the file has {size} bytes")


_DYLIB_KINDS = {"LOAD_DYLIB": False, "LOAD_WEAK_DYLIB": True, "REEXPORT_DYLIB": False,
                "LAZY_LOAD_DYLIB": True, "LOAD_UPWARD_DYLIB": False}  # fmt: skip
"""Load commands that name a library to load -> whether dyld tolerates its absence (weak, lazy)."""


def _slice(b: Any, raw: bytes) -> MachOSlice:
    import lief

    T = lief.MachO.LoadCommand.TYPE
    install_name = None
    dylibs: list[tuple[str, bool]] = []
    for c in b.commands:
        kind = c.command.name
        if c.command == T.ID_DYLIB:
            install_name = str(c.name)
        elif kind in _DYLIB_KINDS:
            dylibs.append((str(c.name), _DYLIB_KINDS[kind]))
    minos = sdk = None
    minos_from = None
    if b.has_build_version:
        minos, sdk, minos_from = _v(b.build_version.minos), _v(b.build_version.sdk), "LC_BUILD_VERSION"
    elif b.has_version_min:
        minos, sdk, minos_from = _v(b.version_min.version), _v(b.version_min.sdk), "LC_VERSION_MIN_MACOSX"
    sig = None
    if b.has_code_signature:
        cs = b.code_signature
        start = int(b.fat_offset) + int(cs.data_offset)
        sig = parse_signature(raw[start : start + int(cs.data_size)])
    cpu = b.header.cpu_type.name
    return MachOSlice(
        arch=ARCHS.get(cpu, cpu),
        filetype=b.header.file_type.name,
        install_name=install_name,
        dylibs=tuple(dylibs),
        rpaths=tuple(str(r.path) for r in b.rpaths),
        minos=minos,
        minos_from=minos_from,
        sdk=sdk,
        signature=sig,
    )


def _v(v: Iterable[int]) -> tuple[int, int, int]:
    a = [int(x) for x in v] + [0, 0, 0]
    return a[0], a[1], a[2]


def parse_signature(blob: bytes) -> CodeSignature:
    """Read an embedded code signature (the bytes ``LC_CODE_SIGNATURE`` points at). Raises
    :class:`NotParsable` when it is not a SuperBlob holding a CodeDirectory."""
    if len(blob) < 12 or struct.unpack_from(">I", blob, 0)[0] != 0xFADE0CC0:
        raise NotParsable("code signature: not an embedded-signature SuperBlob (magic 0xfade0cc0)")
    (count,) = struct.unpack_from(">I", blob, 8)
    slots = {}
    for i in range(min(count, 64)):
        if 12 + 8 * i + 8 > len(blob):
            raise NotParsable("code signature: its index is cut off")
        typ, off = struct.unpack_from(">II", blob, 12 + 8 * i)
        slots[typ] = off
    cd = slots.get(0)
    if cd is None or cd + 52 > len(blob) or struct.unpack_from(">I", blob, cd)[0] != 0xFADE0C02:
        raise NotParsable("code signature: no CodeDirectory (magic 0xfade0c02) in slot 0")
    version, flags = struct.unpack_from(">II", blob, cd + 8)
    (ident_off,) = struct.unpack_from(">I", blob, cd + 20)
    identifier = _cstr(blob, cd + ident_off)
    team = None
    if version >= 0x20200 and cd + 52 <= len(blob):
        (team_off,) = struct.unpack_from(">I", blob, cd + 48)
        team = _cstr(blob, cd + team_off) if team_off else None
    cms = slots.get(0x10000)
    signer = None
    if cms is not None and cms + 8 <= len(blob):
        magic, length = struct.unpack_from(">II", blob, cms)
        if magic == 0xFADE0B01 and length > 8:
            signer = _signer(blob[cms + 8 : cms + length])
    if signer is not None:
        kind = "certificate"
    elif flags & CS_LINKER_SIGNED:
        kind = "linker-signed"
    else:
        kind = "adhoc"
    return CodeSignature(kind, identifier, team, flags, signer)


def _cstr(blob: bytes, at: int) -> str:
    end = blob.find(b"\0", at)
    return blob[at : end if end >= 0 else len(blob)].decode("utf-8", "replace")


def _signer(der: bytes) -> str | None:
    """The common name of the leaf (signing) certificate of a PKCS#7 SignedData, or None."""
    from asn1crypto import cms

    try:
        signed = cms.ContentInfo.load(der)["content"]
        info = signed["signer_infos"][0]
        sid = info["sid"]
        for cert in signed["certificates"]:
            c = cert.chosen
            if sid.name == "issuer_and_serial_number" and c.serial_number == sid.chosen["serial_number"].native:
                return str(c.subject.native.get("common_name"))
        return None
    except (ValueError, KeyError, IndexError, TypeError):
        return None


# -- checks: pure functions returning Failure records ---------------------------------------------


def check_file(
    path: str,
    info: MachOInfo,
    *,
    arch: str | None = None,
    minos_floor: tuple[int, int, int] | None = None,
    developer_id: bool = False,
) -> list[Failure]:
    """The per-file checks of one Mach-O file in a macOS bundle, one line each:

    - ``machine``: no slice for the leg's ``arch`` (``arm64``/``x64``);
    - ``minos``: a slice whose minimum macOS is above ``minos_floor`` (it would not load on the
      floor), or that states none;
    - ``signature``: an arm64 slice without ``LC_CODE_SIGNATURE`` (Apple Silicon kills unsigned
      code), a signature that cannot be read, or, when ``developer_id``, one not made with a
      Developer ID Application certificate.
    """
    out: list[Failure] = []
    if arch is not None and arch not in info.archs:
        out.append(Failure(path, "machine", f"Mach-O holds {', '.join(info.archs)}, the leg needs {arch}"))
    for s in info.slices:
        tag = f" ({s.arch} slice)" if info.fat else ""
        if minos_floor is not None:
            floor = version_text(minos_floor)
            if s.minos is None:
                out.append(Failure(path, "minos", f"no LC_BUILD_VERSION or LC_VERSION_MIN_MACOSX{tag}; floor {floor}"))
            elif s.minos > minos_floor:
                out.append(
                    Failure(
                        path,
                        "minos",
                        f"minimum macOS {version_text(s.minos)} ({s.minos_from}){tag} is above the floor {floor}: "
                        f"it does not load on macOS {floor}",
                    )
                )
        out += _signature(path, s, tag, developer_id)
    return out


def _signature(path: str, s: MachOSlice, tag: str, developer_id: bool) -> list[Failure]:
    if s.signature is None:
        if s.arch == "arm64" or developer_id:
            why = "Apple Silicon runs no unsigned arm64 code" if s.arch == "arm64" else "a Developer ID is required"
            return [Failure(path, "signature", f"no LC_CODE_SIGNATURE{tag}: {why}")]
        return []
    if developer_id and not s.signature.developer_id:
        sig = s.signature
        who = f"signed by {sig.signer}" if sig.signer else f"signed ad hoc ({sig.kind})"
        return [Failure(path, "signature", f"{who}{tag}, a Developer ID Application certificate is required")]
    return []


def _search_dirs(entry: str, where: str, exe_dirs: Iterable[str]) -> list[str]:
    """Directories (bundle paths) a ``@loader_path``/``@executable_path`` prefixed ``entry`` of
    the file in directory ``where`` stands for; empty for an absolute path."""
    if entry.startswith("@loader_path"):
        return [posixpath.normpath(posixpath.join(where, entry[len("@loader_path") :].lstrip("/")))]
    if entry.startswith("@executable_path"):
        rest = entry[len("@executable_path") :].lstrip("/")
        return [posixpath.normpath(posixpath.join(d, rest)) for d in exe_dirs]
    return []


def closure(files: Mapping[str, MachOInfo]) -> list[Failure]:
    """The load-command closure of a macOS bundle (bundle path -> parsed Mach-O file): every
    library a file loads must be a system library (:data:`SYSTEM_PREFIXES`) or resolve to a file
    of the bundle, through the file's own ``LC_RPATH`` entries for ``@rpath/``, its directory for
    ``@loader_path/`` and the bundle's executables' directories for ``@executable_path/``. Weak
    and lazy loads may be absent. An ``LC_RPATH`` that is an absolute path outside the system is a
    build machine's path (``host-path``). One failure per problem, naming the file and library."""
    names = {posixpath.normpath(p) for p in files}
    exe_dirs = sorted({posixpath.dirname(p) or "." for p, i in files.items() if i.slices[0].filetype == "EXECUTE"})
    out: list[Failure] = []
    for path, info in sorted(files.items()):
        where = posixpath.dirname(path) or "."
        for s in info.slices[:1]:  # the slices of a universal file load the same libraries
            for r in s.rpaths:
                if r.startswith("/") and not r.startswith(SYSTEM_PREFIXES):
                    out.append(Failure(path, "host-path", f"LC_RPATH {r} is a build machine's path"))
            for lib, weak in s.dylibs:
                if lib.startswith(SYSTEM_PREFIXES) or weak:
                    continue
                tried = _candidates(lib, s.rpaths, where, exe_dirs)
                if not any(c in names for c in tried):
                    out.append(Failure(path, "imports", _missing(lib, s.rpaths, tried)))
    return out


def _candidates(lib: str, rpaths: tuple[str, ...], where: str, exe_dirs: list[str]) -> list[str]:
    """The bundle paths dyld would try for ``lib``."""
    if lib.startswith("@rpath/"):
        leaf = lib[len("@rpath/") :]
        dirs = [d for r in rpaths for d in _search_dirs(r, where, exe_dirs)]
        return [posixpath.normpath(posixpath.join(d, leaf)) for d in dirs]
    if lib.startswith(("@loader_path", "@executable_path")):
        head, _, leaf = lib.rpartition("/")
        return [posixpath.normpath(posixpath.join(d, leaf)) for d in _search_dirs(head, where, exe_dirs)]
    return []  # an absolute path outside the system: never in the bundle


def _missing(lib: str, rpaths: tuple[str, ...], tried: list[str]) -> str:
    if lib.startswith("@rpath/") and not rpaths:
        return f"loads {lib} but has no LC_RPATH to find it"
    if not tried:
        return f"loads {lib}, which is neither in the bundle nor a system library ({', '.join(SYSTEM_PREFIXES)})"
    return f"loads {lib}, not in the bundle (looked for {', '.join(tried)})"


MACHO_SUFFIXES = (".dylib", ".so", ".node", ".bundle")
"""File names that claim to be Mach-O in a macOS bundle (ggml's backends are ``.so`` there too)."""


def check_bundle(
    files: Iterable[tuple[str, BytesLike]],
    *,
    arch: str | None = None,
    minos_floor: tuple[int, int, int] | None = None,
    developer_id: bool = False,
) -> tuple[dict[str, MachOInfo], list[Failure]]:
    """Read every Mach-O file of a macOS bundle (``(bundle path, content)`` pairs, as
    :func:`bundlegraph.checks.bundle.read_bundle` yields them) and run :func:`check_file` on each
    and :func:`closure` on all. A file is Mach-O by its magic; one named like a library
    (:data:`MACHO_SUFFIXES`) that does not parse is a ``parse`` failure. Returns the parsed
    files and the failures; never raises for a bad file."""
    infos: dict[str, MachOInfo] = {}
    out: list[Failure] = []
    for path, data in files:
        named = path.lower().endswith(MACHO_SUFFIXES)
        if not (named or is_macho(data)):
            continue
        try:
            infos[path] = read_macho(data, path)
        except NotParsable as e:
            out.append(Failure(path, "parse", f"named like a Mach-O library but {e}" if named else str(e)))
            continue
        out += check_file(path, infos[path], arch=arch, minos_floor=minos_floor, developer_id=developer_id)
    return infos, out + closure(infos)
