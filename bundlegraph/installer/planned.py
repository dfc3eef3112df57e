"""The release as its specs plan it, before anything is built: each promised leg's manifest entry
and an estimate of its bundle's download size. ``bundlegraph coverage --planned`` and
``select --planned`` answer from it, so the coverage of a matrix (the 21 legs the fork's release
publishes, most of which this machine cannot build) is known from the specs alone.

A planned entry says what the built bundle's entry will say (:func:`bundlegraph.pipeline.package.build_info`):
the same name, kind, profile, line, class and rank, and the backend's own fields from the spec
alone (:mod:`.entry`: a CUDA leg's ``supported_sms`` from the SASS the build will hold).

Sizes (MB = 10^6 bytes, of the archive an installer downloads) are estimates built from measured
parts (BENCHMARKS.md, "Download size per host class"): :data:`CPU_BASE_MB`, the CPU bundle every
backend bundle is merged into, plus what the backend adds (:meth:`.entry.EntrySide.extra_mb`:
CUDA's fatbin entries and shipped runtime). A backend whose addition was never measured (ROCm:
its TheRock runtime) has no estimate: :func:`planned_sizes` leaves it out and ``select`` /
``coverage`` say its size is unknown rather than show the CPU bundle's figure.
"""

from __future__ import annotations

from typing import Literal

from ..core.lightclass import frozen
from ..schemas.manifest import Manifest, ManifestArtifact
from ..schemas.records import BundleSpec, Matrix
from .entry import entry_side

CPU_BASE_MB = 7.5
"""The CPU bundle: measured for ``linux-arm64-cpu`` (``app-b11642-…-linux-arm64-cpu.tar.gz``,
7,504,640 bytes); a stand-in for the other CPU legs, whose bundles are not built here."""

SizeSource = Literal["measured", "estimated"]


@frozen
class PlannedSize:
    """A bundle's download size in MB and where the figure comes from: ``measured`` (the bytes of
    the built bundle, as the SHA index records them) or ``estimated`` (:func:`estimate_mb`)."""

    mb: float
    source: SizeSource


def estimate_mb(spec: BundleSpec) -> float | None:
    """The download size of a leg's bundle in MB, estimated (module docstring): the CPU bundle plus
    what its backend adds; None where that was never measured (a ROCm leg)."""
    extra = entry_side(spec.backend).extra_mb(spec)
    return None if extra is None else round(CPU_BASE_MB + extra, 1)


def planned_artifact(spec: BundleSpec, tag: str, prefix: str) -> ManifestArtifact:
    """The manifest entry leg ``spec``'s built bundle will have (module docstring)."""
    own = entry_side(spec.backend).fields(spec, None)
    sms = own.supported_sms
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
        toolkit_version=own.toolkit_version,
        ggml_backend_dl=bool(spec.cmake_bool("GGML_BACKEND_DL", False)),
        paired_assets=[p.name for p in spec.runtime.paired],
        gfx_target=own.gfx_target,
        mapped_targets=own.mapped_targets,
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
    "PlannedSize",
    "estimate_mb",
    "planned_artifact",
    "planned_manifest",
    "planned_sizes",
]
