"""Which bundle a host gets from a release, by the installer's rules, and which hosts a release
covers.

The rules are those of the installer our manifest serves (:data:`~bundlegraph.schemas.installer.CHECKED_AGAINST`;
``docs/installer-contract.md``), restated here and checked against its own code by
``tests/integration/test_installer_contract.py``:

- A host is ``os``/``arch``, the SMs of its NVIDIA GPUs (``sms``; empty when unknown), its
  driver's CUDA version (``driver_cuda``; None: no NVIDIA driver), the CUDA runtime lines
  whose libraries it has (``runtime_lines``; None: every line the driver allows) and the vendor
  of a GPU it has besides (``gpu``: ``intel``, or ``amd`` for an AMD GPU without ROCm; None:
  none).
- The driver allows lines ``cuda12`` .. ``cuda<major>`` when it is >= 12.4, none below.
- CUDA hosts ask for their CUDA kind. A bundle fits when its ``supported_sms`` lists every host
  SM inside ``[min_sm, max_sm]`` (a host of unknown SMs fits portable bundles only). Per line,
  newest first (on Linux only lines present on disk; on a Blackwell host, sm >= 100, lines with
  a fitting bundle first), the fitting non-portable bundle with the narrowest SM span wins
  (then the lower ``rank``, then the lower ``max_sm``), followed by the line's portable bundle.
- Linux CUDA hosts and Windows x64 CUDA hosts get no CPU fallback; a Windows ARM64 CUDA host
  falls back to the ``windows-arm64`` CPU bundle; a Windows x64 host with a driver below 12.4
  asks for ``windows-vulkan`` then ``windows-cpu``; every other host without an NVIDIA driver
  asks for its CPU kind (lowest ``rank`` wins).
- A host without an NVIDIA driver but with an Intel GPU or an AMD GPU without ROCm
  (:data:`bundlegraph.backends.vulkan.HOST_GPUS`) on Linux x64, Linux arm64 or Windows x64
  (:data:`~bundlegraph.backends.vulkan.ROUTED_BY_VENDOR`) asks for its Vulkan kind, then its CPU
  kind. Such a chain tries one bundle of each kind in turn (the Vulkan one first: both are
  attempts); elsewhere the first kind with a bundle wins. A Vulkan bundle is offered to a host
  only when its ``bundle_profile`` or asset name names the host's arch
  (:data:`~bundlegraph.backends.vulkan.ARCH_TOKENS`: ``linux-vulkan`` serves both Linux arches);
  the lowest ``rank`` of those wins.
- An AMD host with ROCm (``gfx``: the gfx target ``rocminfo``/``hipinfo`` reports; Linux and
  Windows x64) asks for its ROCm kind only: the first bundle in manifest order whose
  ``mapped_targets`` holds its gfx, or whose ``gfx_target`` label is it, wins
  (``published_rocm_choice_for_host``); none: no bundle (the installer builds HIP from source,
  never the CPU kind).
- A Mac asks for its kind (``macos-arm64``, ``macos-x64``): the lowest ``rank`` wins.
- Only bundles hashed in the SHA index are candidates.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Protocol, cast

from ..schemas.archs import parse_version
from ..schemas.backend import backend, plug_in
from ..schemas.host import GPU_WORDS, Host, InstallSide, Selection, vendor_hosts
from ..schemas.installer import INSTALL_KINDS, kind_for
from ..schemas.manifest import Manifest, ManifestArtifact, ShaIndex
from ..schemas.records import BundleSpec, Matrix


class _CudaRouting(Protocol):
    """The CUDA facts the installer's order of kinds reads (:mod:`bundlegraph.backends.cuda`)."""

    NAME: str
    MIN_DRIVER: tuple[int, int]
    CPU_FALLBACK: frozenset[tuple[str, str]]
    BELOW_FLOOR_TO_CPU: frozenset[tuple[str, str]]

    def driver_for(self, line: str) -> tuple[int, int]: ...


class _VulkanRouting(Protocol):
    """The Vulkan facts the installer's order of kinds reads (:mod:`bundlegraph.backends.vulkan`)."""

    NAME: str
    CPU_FALLBACK: frozenset[tuple[str, str]]
    HOST_GPUS: tuple[str, ...]
    ROUTED_BY_VENDOR: frozenset[tuple[str, str]]
    CUDA_BELOW_FLOOR: frozenset[tuple[str, str]]


# The installer's own code routes these three by name (ROCm, then CUDA, then Vulkan by GPU vendor,
# then CPU: docs/installer-contract.md), so its model here names them too; their facts come through
# the registry, typed by what this module reads of them.
cuda = cast(_CudaRouting, backend("cuda"))
vulkan = cast(_VulkanRouting, backend("vulkan"))
hip = backend("hip")

MIN_DRIVER = cuda.MIN_DRIVER
"""Drivers below this get no CUDA bundle (:data:`bundlegraph.backends.cuda.MIN_DRIVER`)."""


def _kind_of(os_name: str, arch: str, backend_name: str) -> str | None:
    try:
        return kind_for(os_name, arch, backend_name)
    except KeyError:
        return None


def asks(host: Host) -> tuple[list[str], bool]:
    """The install kinds ``host`` asks for, in order, and whether it tries a bundle of each in
    turn (True: a Vulkan chain, every kind's bundle an attempt) or takes the first kind with one
    (False)."""
    rocm_kind = _kind_of(host.os, host.arch, hip.NAME) if host.gfx and not host.nvidia else None
    if rocm_kind:  # ROCm: its kind only (no match: the installer builds HIP from source)
        return [rocm_kind], False
    # a GPU whose backend the installer has no kind for here (an AMD GPU on a Mac or on arm64, an
    # NVIDIA GPU on a Mac) asks as a host without that GPU: the installer's macOS and arm64 branches
    cuda_kind = _kind_of(host.os, host.arch, "cuda") if host.nvidia else None
    cpu_kind = _plain_kind(host)
    vk_kind = _kind_of(host.os, host.arch, vulkan.NAME)
    where = (host.os, host.arch)
    then_cpu = [cpu_kind] if where in vulkan.CPU_FALLBACK else []
    if cuda_kind is None:
        if vk_kind and host.gpu in vulkan.HOST_GPUS and where in vulkan.ROUTED_BY_VENDOR:
            return [vk_kind, *then_cpu], True
        return [cpu_kind], False
    if where in cuda.BELOW_FLOOR_TO_CPU and host.driver_cuda is not None and host.driver_cuda < MIN_DRIVER:
        if vk_kind and where in vulkan.CUDA_BELOW_FLOOR:
            return [vk_kind, *then_cpu], True
        return [cpu_kind], False
    if where in cuda.CPU_FALLBACK:
        return [cuda_kind, cpu_kind], False
    return [cuda_kind], False


def lowest_rank(sel: Selection, kind: str, arts: list[ManifestArtifact], host: Host) -> list[str]:
    """The installer's choice where nothing but rank tells bundles apart (a CPU or Mac host): the
    lowest ``rank`` of ``kind`` (then the asset name) wins."""
    cands = sorted((a for a in arts if a.install_kind == kind), key=lambda a: (a.rank, a.asset_name))
    for a in cands[1:]:
        sel.rejected.append((a.asset_name, f"higher rank than {cands[0].asset_name}"))
    return [a.asset_name for a in cands[:1]]


class _ByFacts:
    """The :class:`InstallSide` of a backend whose package has no ``install`` module: the lowest
    rank wins; its hosts are one of each GPU vendor it serves (:attr:`~bundlegraph.schemas.backend.Backend.HOST_GPUS`:
    Vulkan's), else a plain host of the os and arch (CPU; Metal: a Mac needs no driver of ours)."""

    def __init__(self, host_gpus: tuple[str, ...]) -> None:
        self.host_gpus = host_gpus

    attempts = staticmethod(lowest_rank)

    def host_classes(self, os_name: str, arch: str, drivers: list[tuple[int, int]]) -> list[Host]:
        return vendor_hosts(os_name, arch, self.host_gpus)

    def claims(self, spec: BundleSpec) -> list[Host]:
        return self.host_classes(spec.os, spec.arch, [])


@functools.cache
def install_side(backend_name: str) -> InstallSide:
    """The :class:`InstallSide` of backend ``backend_name`` (its spec name)."""
    b = backend(backend_name)
    mod = plug_in(b, "install")
    return cast(InstallSide, mod) if mod is not None else _ByFacts(b.HOST_GPUS)


def _plain_kind(host: Host) -> str:
    """The kind a host without a CUDA or ROCm GPU asks for: its CPU kind, else (Apple silicon,
    where every bundle carries Metal) the Metal kind."""
    try:
        return kind_for(host.os, host.arch, "cpu")
    except KeyError:
        return kind_for(host.os, host.arch, "metal")


def sizes_of(
    index: ShaIndex | None, planned: Mapping[str, tuple[float, str]] | None = None
) -> dict[str, tuple[float, str]]:
    """Asset name -> (MB, where from) for every bundle whose size is known: ``measured`` from the
    SHA index's ``size`` (the built bundle's bytes), else ``planned`` (estimates, by asset name)."""
    out = dict(planned or {})
    if index is not None:
        for name, e in index.artifacts.items():
            if e.kind == "bundle" and e.size is not None:
                out[name] = (round(e.size / 1e6, 1), "measured")
    return out


def select(
    host: Host,
    manifest: Manifest,
    index: ShaIndex | None = None,
    sizes: Mapping[str, tuple[float, str]] | None = None,
) -> Selection:
    """The bundles ``host`` gets from a release (``manifest``; only assets hashed in ``index``
    when given), in the order an installer tries them, with the reason for each rejection, and
    the choice's download size from ``sizes`` (:func:`sizes_of`; default: the index's)."""
    hashed = index.artifacts if index is not None else None
    arts = [a for a in manifest.artifacts if hashed is None or a.asset_name in hashed]
    unhashed = [a for a in manifest.artifacts if hashed is not None and a.asset_name not in hashed]
    asked, chain = asks(host)
    sel = Selection(host, asked)
    sel.rejected += [(a.asset_name, "not hashed in the SHA index") for a in unhashed]
    for kind in asked:
        got = install_side(INSTALL_KINDS[kind].backend).attempts(sel, kind, arts, host)
        if got and sel.install_kind is None:
            sel.install_kind = kind
        sel.attempts += got
        if got and not chain:
            break
    kinds = set(asked)
    sel.rejected += [
        (a.asset_name, f"install_kind {a.install_kind} is not asked for") for a in arts if a.install_kind not in kinds
    ]
    known = sizes if sizes is not None else sizes_of(index)
    if sel.choice is not None and sel.choice in known:
        sel.download_mb, sel.size_from = known[sel.choice]
    return sel


# -- coverage -----------------------------------------------------------------------------------


DRIVERS: tuple[tuple[int, int], ...] = (
    (12, 0), (12, 1), (12, 2), (12, 3), (12, 4), (12, 5), (12, 6), (12, 8), (12, 9), (13, 0),
)  # fmt: skip
"""The CUDA versions NVIDIA's drivers report from 12.0 on (CUDA toolkit release notes, "CUDA
Driver" table: there was no 12.7); :func:`driver_lines` adds 13.1 up to the newest toolkit a
release builds with."""


driver_for = cuda.driver_for


def driver_lines(manifest: Manifest) -> list[tuple[int, int]]:
    """Every driver a host class is asked about, oldest first: :data:`DRIVERS`, every minor of the
    newest toolkit's major among the release's bundles up to it (13.0-13.5 for a 13.5 bundle),
    and the oldest driver of each runtime line shipped (:func:`driver_for`)."""
    versions = [parse_version(a.toolkit_version) for a in manifest.artifacts if a.toolkit_version]
    newest = max(versions, default=DRIVERS[-1])
    later = {(newest[0], minor) for minor in range(newest[1] + 1)}
    lines = {driver_for(a.runtime_line) for a in manifest.artifacts if a.runtime_line}
    return sorted(set(DRIVERS) | later | lines)


def host_classes(manifest: Manifest) -> list[Host]:
    """The host classes a release is asked about: for every CPU install kind a host without an
    NVIDIA driver (a Mac: its CPU or Metal kind); for every ROCm kind, an AMD host of each gfx
    target of the fork's families (:data:`bundlegraph.backends.hip.FAMILIES`); for every kind of a
    backend that serves GPU vendors
    (:data:`bundlegraph.backends.vulkan.HOST_GPUS`), a host of each arch it serves with a GPU
    of each such vendor and no NVIDIA driver; for every CUDA kind, every SM of NVIDIA's arch table
    (:func:`known_sms`, every toolkit: a Maxwell GPU is a host class even where CUDA 13 cannot build
    for it) with each driver of :func:`driver_lines` (those below the 12.4 floor included: Windows
    x64 asks for Vulkan, then CPU there, every other kind gets nothing)."""
    drivers = driver_lines(manifest)
    out: list[Host] = []
    for k in INSTALL_KINDS.values():
        side = install_side(k.backend)
        for arch in k.archs:
            hosts = side.host_classes(k.os, arch, drivers)
            out += [h for h in hosts if h not in out]  # two kinds of one os/arch describe the same hosts once
    return out


def coverage(
    manifest: Manifest, index: ShaIndex | None, sizes: Mapping[str, tuple[float, str]] | None = None
) -> list[Selection]:
    """:func:`select` for every host class of :func:`host_classes` (download sizes from ``sizes``,
    default :func:`sizes_of` the index)."""
    known = sizes if sizes is not None else sizes_of(index)
    return [select(h, manifest, index, known) for h in host_classes(manifest)]


def claimed(matrix: Matrix) -> list[tuple[Host, str, str]]:
    """``(host, install_kind, leg)`` for every host class a promised leg claims: a CPU or Metal leg, a
    host of its os/arch without an NVIDIA GPU; a ROCm leg, an AMD host of each of its ``mapped_targets``; a leg of a backend that serves GPU vendors
    (Vulkan), a host of its os/arch with a GPU of each such vendor
    (:data:`bundlegraph.backends.vulkan.HOST_GPUS`); a CUDA leg, a host of each SM its spec's
    archs name (``120a`` -> 120), or a PTX-only leg each SM it states (``cuda.supported_sms``),
    with a driver of its runtime line."""
    out = []
    for leg in matrix.promised:
        s = matrix.legs[leg]
        out += [(h, s.install_kind, leg) for h in install_side(s.backend).claims(s)]
    return out


def coverage_problems(
    matrix: Matrix, manifest: Manifest, index: ShaIndex | None, legs: set[str] | None = None
) -> list[str]:
    """One line per claimed host class (:func:`claimed`; of ``legs`` only, when given) that the
    release, as its manifest describes the built files, serves with nothing or with a bundle of
    another install kind."""
    probs = []
    for host, kind, leg in claimed(matrix):
        if legs is not None and leg not in legs:
            continue
        sel = select(host, manifest, index)
        if sel.choice is None:
            why = (
                "; ".join(f"{a}: {r}" for a, r in sel.rejected if "is not asked for" not in r)
                or f"no bundle of {' or '.join(sel.asked)} in the release"
            )
            probs.append(f"{host.describe()}: gets no bundle, though {leg} claims it ({why})")
        elif sel.install_kind != kind:
            probs.append(f"{host.describe()}: gets {sel.choice} ({sel.install_kind}), though {leg} claims it as {kind}")
    return probs


__all__ = [
    "DRIVERS",
    "GPU_WORDS",
    "MIN_DRIVER",
    "Host",
    "InstallSide",
    "Selection",
    "asks",
    "claimed",
    "coverage",
    "coverage_problems",
    "driver_lines",
    "host_classes",
    "install_side",
    "lowest_rank",
    "select",
    "sizes_of",
]
