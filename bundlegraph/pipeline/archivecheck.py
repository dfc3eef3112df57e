"""Verify a packed bundle archive and reduce the result to :class:`VerifyFindings`.

:func:`archive_verifier` returns the ``Verifier`` that ``package`` and ``merge`` call. The
archive is extracted (safely) into a temp directory and checked there:

- always: every PE (``MZ``) and ELF member's machine must be the leg's arch (PE machine
  ``0xAA64``/``0x8664``; ELF ``EM_AARCH64``/``EM_X86_64``) — the minimum a bundle must pass,
  and the ``machine`` the info JSON records;
- when the verify stage is present (``bundlegraph.pipeline.verify`` with ``policy_from_spec``
  and ``verify_path``), its full report on the extracted tree: failures fail the package and
  its fatbin SMs are recorded.

Failures raise :class:`VerifyError` naming the archive and member; on CI each becomes an
``::error file=<archive>::`` annotation (:mod:`bundlegraph.ci`).
"""

from __future__ import annotations

import importlib
import tempfile
from pathlib import Path

from ..errors import VerifyError
from ..extract import extract
from ..schemas.manifest import VerifyFindings
from ..schemas.release import Release
from ..schemas.spec import BundleSpec

PE_MACHINES = {0xAA64: "arm64", 0x8664: "x64", 0x14C: "x86", 0x1C4: "arm"}
ELF_MACHINES = {183: "arm64", 62: "x64", 3: "x86", 40: "arm"}


def machine_of(path: Path) -> str | None:
    """``arm64``/``x64``/... for a PE or ELF file (``0x<hex>`` when unknown); None otherwise."""
    with open(path, "rb") as f:
        head = f.read(64)
        if head[:4] == b"\x7fELF":
            little = head[5] == 1
            em = int.from_bytes(head[18:20], "little" if little else "big")
            return ELF_MACHINES.get(em, f"0x{em:x}")
        if head[:2] == b"MZ" and len(head) >= 64:
            off = int.from_bytes(head[60:64], "little")
            f.seek(off)
            sig = f.read(6)
            if sig[:4] == b"PE\0\0":
                m = int.from_bytes(sig[4:6], "little")
                return PE_MACHINES.get(m, f"0x{m:x}")
    return None


def _full_verify(tree: Path, spec: BundleSpec, release: Release) -> tuple[list[str], list[int]] | None:
    try:
        mod = importlib.import_module("bundlegraph.pipeline.verify")
    except ModuleNotFoundError:
        return None
    if not (hasattr(mod, "policy_from_spec") and hasattr(mod, "verify_path")):
        return None
    report = mod.verify_path(tree, mod.policy_from_spec(spec, release))
    failures = [str(f) for f in (getattr(report, "failures", None) or [])]
    sms: set[int] = set()
    for attr in ("fatbin_sms", "sms"):
        v = getattr(report, attr, None)
        if v:
            sms |= {int(x) for x in v}
    return failures, sorted(sms)


def verify_tree(tree: Path, spec: BundleSpec, release: Release, subject: str) -> VerifyFindings:
    """Check an extracted bundle ``tree`` (see module docstring); raises :class:`VerifyError`."""
    failures: list[str] = []
    seen: set[str] = set()
    for p in sorted(tree.rglob("*")):
        if p.is_symlink() or not p.is_file():
            continue
        m = machine_of(p)
        if m is None:
            continue
        seen.add(m)
        if m != spec.arch:
            failures.append(f"{p.relative_to(tree).as_posix()}: machine {m}, the leg targets {spec.arch}")
    sms: list[int] = []
    full = _full_verify(tree, spec, release)
    if full is not None:
        failures += full[0]
        sms = full[1]
    if failures:
        raise VerifyError(failures, subject=subject)
    machine = spec.arch if seen == {spec.arch} else (",".join(sorted(seen)) or None)
    return VerifyFindings(machine=machine, fatbin_sms=sms, passed=True)


def archive_verifier(spec: BundleSpec, release: Release):
    """``verifier(archive) -> VerifyFindings`` for ``spec``'s bundles (see module docstring)."""

    def verify(archive: Path) -> VerifyFindings:
        with tempfile.TemporaryDirectory(prefix="bg-verify-") as d:
            extract(archive, d)
            return verify_tree(Path(d), spec, release, subject=archive.name)

    return verify
