"""Verify a packed bundle archive and reduce the result to :class:`VerifyFindings`.

:func:`archive_verifier` returns the ``Verifier`` that ``package`` and ``merge`` call. Checks:

- fallback: every PE (``MZ``) and ELF member's machine must be the leg's arch (PE machine
  ``0xAA64``/``0x8664``; ELF ``EM_AARCH64``/``EM_X86_64``);
- when the verify stage is present (``bundlegraph.pipeline.verify`` with ``policy_from_spec``
  and ``verify_path``), its full report on the archive itself (machine, closure, glibc floors,
  fatbin vs promised archs, signatures, required files, the info JSON): failures fail the
  package; machines and fatbin SMs become the findings. Without it, the machine check alone
  runs on a safe extraction.

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


def _verify_module():
    try:
        mod = importlib.import_module("bundlegraph.pipeline.verify")
    except ModuleNotFoundError:
        return None
    return mod if hasattr(mod, "policy_from_spec") and hasattr(mod, "verify_path") else None


def findings_of(report, arch: str) -> VerifyFindings:
    """Reduce a verify ``Report`` to :class:`VerifyFindings`: the machines of its binaries
    (``arch`` when all agree) and the SMs with SASS in any fatbin (sorted)."""
    machines = {f.get("machine") for f in report.files.values() if f.get("machine")}
    sms = sorted({int(k) for f in report.files.values() for k in (f.get("fatbin") or {}).get("sass", {})})
    sass = sorted({a for f in report.files.values() for a in (f.get("fatbin") or {}).get("sass_archs", [])},
                  key=lambda a: (int(a.rstrip("af")), a))
    machine = arch if machines == {arch} else (",".join(sorted(machines)) or None)
    return VerifyFindings(machine=machine, fatbin_sms=sms, fatbin_sass=sass, passed=report.ok)


def basic_tree_check(tree: Path, spec: BundleSpec, subject: str) -> VerifyFindings:
    """The fallback when the verify stage is absent: every PE/ELF file's machine is the leg's
    arch. Raises :class:`VerifyError` naming each file that is not."""
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
    if failures:
        raise VerifyError(failures, subject=subject)
    machine = spec.arch if seen == {spec.arch} else (",".join(sorted(seen)) or None)
    return VerifyFindings(machine=machine, fatbin_sms=[], passed=True)


def archive_verifier(spec: BundleSpec, release: Release, *, base: BundleSpec | None = None,
                     trust_roots: tuple[str, ...] = ()):
    """``verifier(archive) -> VerifyFindings`` for ``spec``'s finished bundles: verify's
    :func:`verify_path` on the archive itself with ``policy_from_spec(spec, release, base=base)``
    (``base``: the merge base's spec for a merged leg; ``trust_roots``: extra PEM roots for the
    signature check). Raises :class:`VerifyError` listing every failure."""

    def verify(archive: Path) -> VerifyFindings:
        mod = _verify_module()
        if mod is None:
            with tempfile.TemporaryDirectory(prefix="bg-verify-") as d:
                extract(archive, d)
                return basic_tree_check(Path(d), spec, archive.name)
        report = mod.verify_path(archive, mod.policy_from_spec(spec, release, base=base, trust_roots=trust_roots))
        if not report.ok:
            raise VerifyError(report.lines(), subject=archive.name)
        return findings_of(report, spec.arch)

    return verify
