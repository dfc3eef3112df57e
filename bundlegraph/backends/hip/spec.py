"""The ``[hip]`` table of a ROCm leg (:data:`TABLE`, which :class:`~bundlegraph.schemas.records.BundleSpec`
and the JSON Schema take up as they load): the gfx family it serves and its TheRock SDK."""

from __future__ import annotations

from dataclasses import field
from typing import Annotated, Literal

from ...schemas.constraints import Check, unique
from ...schemas.record_base import Record, TableReader, record
from . import SPEC_TABLE


@record
class TheRockSdkSpec(Record):
    """The HIP SDK of a leg: one of AMD TheRock's multi-arch tarballs
    (``therock-dist-<linux|windows>-<archive family>-<version>.tar.gz``, :mod:`bundlegraph.backends.hip.sdk`),
    pinned by its exact build in a lock file that holds each tarball's sha256."""

    source: Literal["therock"] = "therock"
    """therock (AMD's TheRock tarballs: compilers, HIP runtime, rocBLAS/hipBLAS(Lt) and their kernel folders)"""
    version: Annotated[str, Check(pattern=r"^\d+\.\d+\.\d+((a|rc)\d+)?$")]
    """TheRock's exact build (7.14.0, or a nightly such as 10.1.0a20260807); never weekly or latest"""
    lock: str
    """the lock file (bundles/locks/therock-<version>.toml) pinning each tarball of the build by sha256"""


@record
class HipSpec(Record):
    """The gfx family a ROCm (HIP) leg serves, its mapped targets and its TheRock SDK."""

    gfx_target: Annotated[str, Check(pattern=r"^gfx[0-9a-fA-FX]{3,4}$")]
    """the fork's gfx family label (gfx1151, gfx110X, ...; bundlegraph.backends.hip.FAMILIES): the manifest's
    gfx_target"""
    mapped_targets: Annotated[list[str], Check(min_length=1)] = field(default_factory=list)
    """the gfx targets compiled (GPU_TARGETS) and promised to the installer; must be the family's expansion (a spec
    file leaves it out: it follows from gfx_target)"""
    sdk: TheRockSdkSpec
    """the pinned TheRock tarball"""

    def __post_init__(self) -> None:
        unique("mapped_targets", self.mapped_targets)


TABLE = HipSpec
"""The record of a ROCm leg's ``[hip]`` table."""

HIP = TableReader(SPEC_TABLE, HipSpec)
"""Typed reads of a leg's ``[hip]`` table (``HIP.of(spec)``, ``HIP.get(spec)``)."""
