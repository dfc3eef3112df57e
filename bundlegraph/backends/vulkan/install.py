"""How the installer picks among a Vulkan kind's bundles for a host (:class:`bundlegraph.schemas.host.InstallSide`):
the lowest ``rank`` of those whose profile or asset name names the host's arch (:data:`ARCH_TOKENS`:
``linux-vulkan`` serves both Linux arches)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...schemas.host import Host, Selection, vendor_hosts
from ...schemas.manifest import ManifestArtifact
from . import ARCH_TOKENS, HOST_GPUS


def attempts(sel: Selection, kind: str, arts: list[ManifestArtifact], host: Host) -> list[str]:
    """The installer's Vulkan choice: the lowest-rank bundle of ``kind`` whose profile or asset
    name names the host's arch (:data:`bundlegraph.backends.vulkan.ARCH_TOKENS`)."""
    tokens = ARCH_TOKENS.get(host.arch, ())
    cands = sorted((a for a in arts if a.install_kind == kind), key=lambda a: (a.rank, a.asset_name))
    fit = []
    for a in cands:
        identity = f"{a.bundle_profile} {a.asset_name}".lower()
        if any(t in identity for t in tokens):
            fit.append(a)
        else:
            sel.rejected.append(
                (a.asset_name, f"names no {host.arch} ({'/'.join(tokens)}) in its profile or asset name")
            )
    for a in fit[1:]:
        sel.rejected.append((a.asset_name, f"higher rank than {fit[0].asset_name}"))
    return [a.asset_name for a in fit[:1]]


def host_classes(os_name: str, arch: str, drivers: list[tuple[int, int]]) -> list[Host]:
    """A host of each GPU vendor the installer routes to Vulkan (:data:`HOST_GPUS`), with no
    NVIDIA driver."""
    return vendor_hosts(os_name, arch, HOST_GPUS)


def claims(spec: BundleSpec) -> list[Host]:
    """A host of the leg's os and arch with a GPU of each such vendor."""
    return host_classes(spec.os, spec.arch, [])


if TYPE_CHECKING:
    from ...schemas.records import BundleSpec


if TYPE_CHECKING:  # mypy holds this module to the protocol selection asks it by
    from ...schemas.host import InstallSide
    from . import install as _this

    _AS_SIDE: InstallSide = _this
