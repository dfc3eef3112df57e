"""Per-file checks: read one file of a bundle once and check what can be checked alone.

A file is a binary when its name says so (``.dll``/``.exe``/``.node``/``.pyd`` -> PE;
``*.so``/``*.so.N`` -> ELF) or its content starts with the ELF magic (executables have no
suffix). A file that claims to be a binary by name but does not parse is a ``parse`` failure,
never skipped. For each binary: the machine, the CUDA fatbin inventory (when the file has a
fatbin section), and — when asked — the Authenticode status.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import field
from typing import Any

from ..core.lightclass import mutable
from ..core.platforms import PLATFORMS
from . import BytesLike, Failure, NotParsable, claims_elf_library, claims_pe
from . import fatbin as fb
from .elf import MACHINE_NAMES, ELFInfo, is_elf, read_elf
from .macho import MachOInfo, is_macho, read_macho, version_text
from .offload import Offload, inventory
from .pe import MACHINE_CODES, PEInfo, machine_label, read_pe
from .signatures import SignatureStatus, check_signature


@mutable
class FileResult:
    """What one file yielded: ``format`` (``pe``/``elf``/None for non-binaries), ``machine``
    (``arm64``/``x64``/...), the parsed ``pe``/``elf`` record, the ``fatbin`` inventory (None
    when the file has no fatbin section), the ``signature`` status (when checked) and the
    per-file ``failures``."""

    path: str
    format: str | None = None
    machine: str | None = None
    pe: PEInfo | None = None
    elf: ELFInfo | None = None
    fatbin: fb.Inventory | None = None
    offload: Offload | None = None
    """the HIP offload bundles (gfx code objects) of the file, when asked for and it has some"""
    macho: MachOInfo | None = None
    """the parsed Mach-O file (load commands, minimum macOS, code signature)"""
    signature: SignatureStatus | None = None
    failures: list[Failure] = field(default_factory=list)
    marks: frozenset[bytes] = frozenset()
    """Which of the byte strings the reader was asked to look for (``marks``) the binary holds."""

    def finding(self) -> dict[str, Any]:
        """The JSON finding for the report: format, machine, fatbin summary, signature."""
        out: dict[str, Any] = {"format": self.format, "machine": self.machine}
        if self.fatbin is not None:
            out["fatbin"] = self.fatbin.to_json()
        if self.offload is not None:
            out["offload"] = self.offload.to_json()
        if self.macho is not None:
            out["macho"] = {
                "archs": list(self.macho.archs),
                "minos": [version_text(s.minos) for s in self.macho.slices],
                "signature": [s.signature.kind if s.signature else None for s in self.macho.slices],
            }
        if self.signature is not None:
            out["signature"] = self.signature.status
        return out


def inspect_file(
    path: str,
    data: BytesLike,
    *,
    os_name: str | None = None,
    arch: str | None = None,
    signatures: bool = False,
    trust_roots: Sequence[str | os.PathLike[str]] = (),
    marks: Sequence[bytes] = (),
    offload: bool = False,
) -> FileResult:
    """Check one file (bundle path ``path``, whole content ``data``).

    ``os_name``/``arch``: the leg's (``windows``/``linux``, ``x64``/``arm64``; None skips the
    check); ``signatures``: verify Authenticode on PE files; ``marks``: byte strings whose
    presence in a binary is recorded (:attr:`FileResult.marks`); ``offload``: read the HIP
    offload bundles of each ELF and PE file (:mod:`.offload`: a ROCm leg's). A Mach-O file (by its
    magic, whatever its name: ggml's macOS backends are ``.so``) is read with :mod:`.macho`. Never
    raises for a bad file."""
    r = FileResult(path)
    if is_macho(data):
        _macho(r, data, os_name, arch)
        return r
    as_pe = claims_pe(path)
    as_elf = not as_pe and (claims_elf_library(path) or is_elf(data))
    if not (as_pe or as_elf):
        if os_name is not None and PLATFORMS[os_name].binary == "Mach-O" and path.lower().endswith(".dylib"):
            r.format = "macho"
            r.failures.append(Failure(path, "parse", "named like a Mach-O library but not a Mach-O file"))
        return r
    r.format = "pe" if as_pe else "elf"
    r.marks = frozenset(m for m in marks if data.find(m) != -1)
    try:
        if as_pe:
            r.pe = read_pe(data, path)
            r.machine = r.pe.machine_name
        else:
            r.elf = read_elf(data, path)
            r.machine = r.elf.machine_name
    except NotParsable as e:
        r.failures.append(Failure(path, "parse", f"named like a {'Windows PE' if as_pe else 'ELF'} binary but {e}"))
        return r
    _machine(r, os_name, arch)
    loc = r.pe.fatbin if r.pe else r.elf.fatbin if r.elf else None
    if loc is not None:
        try:
            r.fatbin = fb.parse(data, *loc)
        except NotParsable as e:
            r.failures.append(Failure(path, "gpu-code", str(e)))
    if offload:
        try:
            inv = inventory(data)
        except NotParsable as e:
            r.failures.append(Failure(path, "gpu-code", f"HIP offload bundles: {e}"))
        else:
            r.offload = inv if inv is not None and inv.bundles else None
    if signatures and r.pe is not None:
        r.signature = check_signature(data, trust_roots=trust_roots)
        if r.signature.status != "ok":
            r.failures.append(Failure(path, "signature", r.signature.reason()))
    return r


def _macho(r: FileResult, data: BytesLike, os_name: str | None, arch: str | None) -> None:
    """A Mach-O file: refused in a bundle of another OS; else parsed (:func:`.macho.read_macho`)
    and its architectures checked against ``arch``. Its minimum macOS, signature and load-command
    closure are bundle rows (the floor is the leg's: :mod:`bundlegraph.verification.macos`)."""
    r.format = "macho"
    p = PLATFORMS.get(os_name) if os_name is not None else None
    if p is not None and p.binary != "Mach-O":
        r.failures.append(Failure(r.path, "machine", f"a Mach-O file in a {p.title} bundle"))
        return
    try:
        r.macho = read_macho(data, r.path)
    except NotParsable as e:
        r.failures.append(Failure(r.path, "parse", str(e)))
        return
    r.machine = ",".join(r.macho.archs)
    if arch is not None and arch not in r.macho.archs:
        r.failures.append(Failure(r.path, "machine", f"Mach-O holds {r.machine}, the leg needs {arch}"))


def _machine(r: FileResult, os_name: str | None, arch: str | None) -> None:
    # r.pe and r.elf are never both set, so at most one of these applies
    p = PLATFORMS.get(os_name) if os_name is not None else None
    if p is not None and r.pe is not None and p.binary != "PE":
        why = f"a Windows PE file ({r.machine}) in a {p.title} bundle"
    elif p is not None and r.elf is not None and p.binary != "ELF":
        why = f"an ELF file ({r.machine}) in a {p.title} bundle"
    elif arch is not None and r.pe is not None and r.pe.machine != MACHINE_CODES[arch]:
        why = f"PE machine is {machine_label(r.pe.machine)}, the leg needs {machine_label(MACHINE_CODES[arch])}"
    elif arch is not None and r.elf is not None and r.elf.machine != MACHINE_NAMES[arch]:
        why = f"ELF e_machine is {r.elf.machine} ({r.machine}), the leg needs {MACHINE_NAMES[arch]} ({arch})"
    else:
        return
    r.failures.append(Failure(r.path, "machine", why))
