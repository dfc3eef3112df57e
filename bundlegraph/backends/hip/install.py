"""How the installer picks among a ROCm kind's bundles for an AMD host with ROCm
(:class:`bundlegraph.schemas.host.InstallSide`): the first bundle in manifest order whose
``mapped_targets`` hold the host's gfx target, or whose ``gfx_target`` label is it
(the installer's ``published_rocm_choice_for_host``); none: no bundle (the installer builds HIP
from source)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...schemas.host import Host, Selection
from ...schemas.manifest import ManifestArtifact
from . import FAMILIES
from .spec import HIP


def attempts(sel: Selection, kind: str, arts: list[ManifestArtifact], host: Host) -> list[str]:
    """The installer's ROCm choice: the first bundle of ``kind`` in manifest order whose
    ``mapped_targets`` (or ``gfx_target`` label) is the host's ``gfx``, compared case-insensitively."""
    gfx = host.gfx or ""
    g = gfx.strip().lower()
    got: list[str] = []
    for a in (a for a in arts if a.install_kind == kind):
        mapped = {t.lower() for t in a.mapped_targets or []}
        if got:
            sel.rejected.append((a.asset_name, f"an earlier bundle serves {gfx}: {got[0]}"))
        elif g in mapped or g == (a.gfx_target or "").lower():
            got.append(a.asset_name)
        else:
            sel.rejected.append((a.asset_name, f"{gfx} is not in mapped_targets {a.mapped_targets}"))
    return got


def host_classes(os_name: str, arch: str, drivers: list[tuple[int, int]]) -> list[Host]:
    """An AMD host of each gfx target of the fork's families (:data:`FAMILIES`)."""
    return [Host(os_name, arch, gfx=t) for fam in FAMILIES.values() for t in fam]


def claims(spec: BundleSpec) -> list[Host]:
    """An AMD host of each of the leg's ``mapped_targets``."""
    hip = HIP.of(spec)
    return [Host(spec.os, spec.arch, gfx=t) for t in hip.mapped_targets]


if TYPE_CHECKING:
    from ...schemas.records import BundleSpec


if TYPE_CHECKING:  # mypy holds this module to the protocol selection asks it by
    from ...schemas.host import InstallSide
    from . import install as _this

    _AS_SIDE: InstallSide = _this
