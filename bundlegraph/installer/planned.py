"""The release as its specs plan it, before anything is built: each promised leg's manifest entry
and an estimate of its bundle's download size. ``bundlegraph coverage --planned`` and
``select --planned`` answer from it, so the coverage of a matrix (the 21 legs the fork's release
publishes, most of which this machine cannot build) is known from the specs alone.

A planned entry says what the built bundle's entry will say (:func:`bundlegraph.pipeline.package.build_info`):
the same name, kind, profile, line, class and rank, and ``supported_sms`` from the SASS the
build will hold. ggml rewrites every plain ``12X`` arch to ``12Xa`` (llama.cpp
``ggml/src/ggml-cuda/CMakeLists.txt``, "Replace any plain 12X CUDA architectures with their
architecture-specific equivalents", for every toolkit), so ``120`` plans SASS ``120a``, which runs
on sm_120 only; a PTX-only leg plans its spec's ``cuda.supported_sms``.

Sizes (MB = 10^6 bytes, of the archive an installer downloads), every figure an estimate built
from measured parts (BENCHMARKS.md, "Download size per host class"):

- :data:`ENTRY_MB`: one fatbin entry (the SASS or the PTX of one arch, all ggml-cuda kernels);
- :data:`CPU_BASE_MB`: the CPU bundle every backend bundle is merged into;
- :data:`RUNTIME_MB`: the CUDA runtime a bundle ships, compressed (measured: Windows's DLLs).

A ROCm (``hip``) leg's size is not estimated: its bundle is dominated by the runtime copied from
AMD's TheRock SDK (libLLVM, rocBLAS and hipBLASLt with their kernel folders), and no TheRock tree
or ROCm bundle was ever measured here, so :func:`planned_sizes` leaves it out and ``select`` /
``coverage`` say its size is unknown rather than show the CPU bundle's figure.
"""

from __future__ import annotations

from typing import Literal

from ..core.lightclass import frozen
from ..schemas.archs import supported_sms_of
from ..schemas.manifest import Manifest, ManifestArtifact
from ..schemas.records import BundleSpec, Matrix

ENTRY_MB = 20.8
"""One fatbin entry, compressed as nvcc stores it (deflate gains < 1 % on it). Measured: the real
``app-b11642-…-linux-arm64-cuda13-blackwell.tar.gz`` is 90.7 MB, 83.2 MB more than the 7.5 MB
CPU bundle it merges, for 4 entries (SASS and PTX of 120a and 121a). The npm
``@node-llama-cpp/win-x64-cuda@3.21.1`` ``ggml-cuda.dll`` agrees: 16.1-18.7 MB per SASS entry,
19.7 MB per PTX entry, 143 kernels each."""

CPU_BASE_MB = 7.5
"""The CPU bundle: measured for ``linux-arm64-cpu`` (``app-b11642-…-linux-arm64-cpu.tar.gz``,
7,504,640 bytes); a stand-in for the other CPU legs, whose bundles are not built here."""

RUNTIME_MB = {"windows": {("cuda13", "x64"): 423.3, ("cuda12", "x64"): 423.3, ("cuda13", "arm64"): 154.0}}
"""os -> ``(runtime line, arch)`` -> MB of the CUDA runtime a bundle ships (an OS not named: none
measured, counted as 0; a line and arch not measured: the OS's largest). Windows: ``cudart64``,
``cublas64`` and ``cublasLt64`` in a zip (deflate level 6).
Measured for CUDA 13.4's redist DLLs: windows-x86_64 0.2 + 50.7 + 372.4 MB (0.6 + 54.9 + 493.5 MB
unpacked), windows-arm64 0.2 + 20.9 + 132.9 MB; CUDA 12.8's x64 DLLs are not reachable here and
are taken as 13.4's."""

SizeSource = Literal["measured", "estimated"]


@frozen
class PlannedSize:
    """A bundle's download size in MB and where the figure comes from: ``measured`` (the bytes of
    the built bundle, as the SHA index records them) or ``estimated`` (:func:`estimate_mb`)."""

    mb: float
    source: SizeSource


def planned_sass(spec: BundleSpec) -> list[str]:
    """The SASS targets a CUDA leg's fatbin will hold, as verify reports them (``["86", "120a"]``):
    its archs with SASS, plain ``12X`` rewritten to ``12Xa`` as ggml does (module docstring)."""
    if spec.cuda is None:
        return []
    out = []
    for a in spec.cuda.archs:
        if a.sass:
            plain = not a.feature and 120 <= a.sm <= 129
            out.append(f"{a.sm}{'a' if plain else a.feature}")
    return out


def planned_sms(spec: BundleSpec) -> list[int]:
    """The ``supported_sms`` the leg's built bundle will state: a PTX-only leg's from its spec,
    else from :func:`planned_sass` by NVIDIA's compatibility rule
    (:func:`~bundlegraph.schemas.archs.supported_sms_of`); [] for a CPU leg."""
    if spec.cuda is None:
        return []
    if spec.cuda.supported_sms:
        return list(spec.cuda.supported_sms)
    return supported_sms_of(planned_sass(spec), spec.cuda.version.parts)


def estimate_mb(spec: BundleSpec) -> float | None:
    """The download size of a leg's bundle in MB, estimated (module docstring): the CPU bundle, plus
    for a CUDA leg one :data:`ENTRY_MB` per SASS and per PTX arch, plus on Windows the shipped
    runtime; None for a ROCm leg (its TheRock runtime and kernels were never measured)."""
    if spec.hip is not None:
        return None
    mb = CPU_BASE_MB
    if spec.cuda is not None:
        mb += ENTRY_MB * sum(int(a.sass) + int(a.ptx) for a in spec.cuda.archs)
        shipped = RUNTIME_MB.get(spec.os, {})
        if shipped and spec.runtime.ships and spec.profile.line:
            mb += shipped.get((spec.profile.line, spec.arch), max(shipped.values()))
    return round(mb, 1)


def planned_artifact(spec: BundleSpec, tag: str, prefix: str) -> ManifestArtifact:
    """The manifest entry leg ``spec``'s built bundle will have (module docstring)."""
    sms = planned_sms(spec)
    return ManifestArtifact(
        asset_name=spec.bundle_name(tag, prefix),
        install_kind=spec.install_kind,
        os=spec.os,
        arch=spec.arch,
        bundle_profile=spec.profile_name,
        runtime_line=spec.profile.line,
        coverage_class=spec.profile.klass,
        supported_sms=sms,
        min_sm=min(sms) if sms else None,
        max_sm=max(sms) if sms else None,
        rank=spec.profile.rank,
        toolkit_version=str(spec.cuda.version) if spec.cuda else None,
        ggml_backend_dl=bool(spec.cmake_bool("GGML_BACKEND_DL", False)),
        paired_assets=[p.name for p in spec.runtime.paired],
        gfx_target=spec.hip.gfx_target if spec.hip else None,
        mapped_targets=list(spec.hip.mapped_targets) if spec.hip else None,
    )


PLANNED_COMMIT = "0" * 40
"""The ``source_commit`` of a planned manifest's header: no source has been fetched for it."""


def planned_manifest(matrix: Matrix, legs: list[str] | None = None, every: bool = False) -> Manifest:
    """The manifest of the release the specs plan: one entry per promised leg (of ``legs`` when
    given; ``every``: the legs not promised too, as the release will be once they ship), sorted by
    asset name as a built manifest is, under the release's tag."""
    r = matrix.release
    arts = [
        planned_artifact(matrix.legs[leg], r.tag, r.bundle_prefix)
        for leg in (matrix.legs if every else matrix.promised)
        if legs is None or leg in legs
    ]
    return Manifest(
        source_repo=r.source_repo,
        source_commit=PLANNED_COMMIT,
        upstream_tag=r.upstream_tag or r.tag,
        release_tag=r.tag,
        artifacts=sorted(arts, key=lambda a: a.asset_name),
    )


def planned_sizes(matrix: Matrix, every: bool = False) -> dict[str, PlannedSize]:
    """Asset name -> estimated size of every promised leg's bundle (``every``: every leg's), except
    those :func:`estimate_mb` cannot estimate (ROCm legs: their size is unknown)."""
    r = matrix.release
    out = {}
    for leg in matrix.legs if every else matrix.promised:
        mb = estimate_mb(matrix.legs[leg])
        if mb is not None:
            out[matrix.legs[leg].bundle_name(r.tag, r.bundle_prefix)] = PlannedSize(mb, "estimated")
    return out


__all__ = [
    "CPU_BASE_MB",
    "ENTRY_MB",
    "RUNTIME_MB",
    "PlannedSize",
    "estimate_mb",
    "planned_artifact",
    "planned_manifest",
    "planned_sass",
    "planned_sizes",
    "planned_sms",
]
