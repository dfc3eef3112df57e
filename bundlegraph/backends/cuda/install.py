"""How the installer picks among a CUDA kind's bundles for a host (:class:`bundlegraph.schemas.host.InstallSide`),
as the installer our manifest serves does (``docs/installer-contract.md``): per runtime line, newest
first (on Linux only the lines whose runtime libraries are on disk; on a Blackwell host, sm >= 100,
the lines with a fitting bundle first), the fitting non-portable bundle with the narrowest SM span
wins (then the lower ``rank``, then the lower ``max_sm``), followed by the line's portable bundle.
A bundle fits when its ``supported_sms`` list every host SM inside ``[min_sm, max_sm]``
(:func:`why_unfit`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...schemas.archs import fatbin_sm, known_sms
from ...schemas.host import Host, Selection
from ...schemas.installer import PORTABLE_CLASS
from ...schemas.manifest import ManifestArtifact
from . import BLACKWELL_LINES_FIRST, BLACKWELL_NEEDS_MAX_SM_100, MIN_DRIVER, RUNTIME_LINES_ON_DISK_ONLY, oldest_driver
from .spec import CUDA


def attempts(sel: Selection, kind: str, arts: list[ManifestArtifact], host: Host) -> list[str]:
    """The installer's per-line choice for a CUDA host (module docstring)."""
    allowed = allowed_lines(host)
    present = allowed if host.runtime_lines is None else [l for l in allowed if l in host.runtime_lines]
    # Linux: only lines whose runtime libraries are on disk; Windows: those first, then the rest
    lines = present if host.os in RUNTIME_LINES_ON_DISK_ONLY else present + [l for l in allowed if l not in present]
    cands = [a for a in arts if a.install_kind == kind]
    drv = f"{host.driver_cuda[0]}.{host.driver_cuda[1]}" if host.driver_cuda else "none"
    for a in cands:
        if a.runtime_line not in allowed:
            sel.rejected.append((a.asset_name, f"runtime line {a.runtime_line} is not allowed by driver CUDA {drv}"))
        elif a.runtime_line not in lines:
            sel.rejected.append((a.asset_name, f"the host has no {a.runtime_line} runtime libraries"))
    blackwell = bool(host.sms) and max(host.sms) >= 100
    if blackwell and host.os in BLACKWELL_LINES_FIRST:
        fits = [l for l in lines if any(a.runtime_line == l and why_unfit(a, host) is None for a in cands)]
        lines = fits + [l for l in lines if l not in fits]
    attempts: list[str] = []
    for line in lines:
        targeted, portable = [], []
        for a in (a for a in cands if a.runtime_line == line):
            why = why_unfit(a, host)
            if (
                host.os in BLACKWELL_NEEDS_MAX_SM_100
                and blackwell
                and a.max_sm is not None
                and a.max_sm < 100
                and why is None
            ):
                why = f"max_sm {a.max_sm} < 100 on a Blackwell host"
            if why:
                sel.rejected.append((a.asset_name, why))
            elif a.coverage_class == PORTABLE_CLASS:
                portable.append(a)
            else:
                targeted.append(a)
        targeted.sort(key=lambda a: ((a.max_sm or 0) - (a.min_sm or 0), a.rank, a.max_sm or 0))
        for a in targeted[1:]:
            sel.rejected.append((a.asset_name, f"a narrower or lower-rank bundle fits: {targeted[0].asset_name}"))
        for a in portable[:-1]:
            sel.rejected.append((a.asset_name, f"another portable bundle is listed later: {portable[-1].asset_name}"))
        attempts += [a.asset_name for a in targeted[:1] + portable[-1:]]
    return attempts


def allowed_lines(host: Host) -> list[str]:
    """The runtime lines ``host``'s NVIDIA driver allows, newest first (``["cuda13", "cuda12"]``;
    none below :data:`~bundlegraph.backends.cuda.MIN_DRIVER` or without a driver)."""
    if host.driver_cuda is None or host.driver_cuda < MIN_DRIVER:
        return []
    return [f"cuda{m}" for m in range(host.driver_cuda[0], 11, -1)]


def why_unfit(a: ManifestArtifact, host: Host) -> str | None:
    """None when ``a`` runs on every GPU of ``host``, else why not."""
    portable = a.coverage_class == PORTABLE_CLASS
    if not host.sms:
        return None if portable else "the host's SMs are unknown and the bundle is not portable"
    if not a.supported_sms or a.min_sm is None or a.max_sm is None:
        return "the bundle lists no supported SMs"
    out = [s for s in host.sms if s not in a.supported_sms or not a.min_sm <= s <= a.max_sm]
    if out:
        return f"sm {','.join(map(str, out))} not in supported_sms {a.supported_sms}"
    return None


def host_classes(os_name: str, arch: str, drivers: list[tuple[int, int]]) -> list[Host]:
    """Every SM of NVIDIA's arch table (:func:`~bundlegraph.schemas.archs.known_sms`, every
    toolkit: a Maxwell GPU is a host class even where CUDA 13 cannot build for it) with each of
    ``drivers`` (those below the 12.4 floor included: Windows x64 asks for Vulkan, then CPU there,
    every other kind gets nothing)."""
    return [Host(os_name, arch, (sm,), d) for d in drivers for sm in known_sms()]


def claims(spec: BundleSpec) -> list[Host]:
    """A host of each SM the leg's archs name (``120a`` -> 120), or a PTX-only leg each SM it
    states (``cuda.supported_sms``), with the oldest driver of its runtime line."""
    cuda = CUDA.of(spec)
    drv = oldest_driver(spec.profile.line, cuda.version.major)
    sms = cuda.supported_sms or sorted({fatbin_sm(a) for a in cuda.archs if a.sass})
    return [Host(spec.os, spec.arch, (sm,), drv) for sm in sms]


if TYPE_CHECKING:
    from ...schemas.records import BundleSpec


if TYPE_CHECKING:  # mypy holds this module to the protocol selection asks it by
    from ...schemas.host import InstallSide
    from . import install as _this

    _AS_SIDE: InstallSide = _this
