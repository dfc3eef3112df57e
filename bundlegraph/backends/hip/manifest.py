"""What a ROCm (HIP) leg puts into its bundles' manifest entry and info file
(:class:`bundlegraph.schemas.entry.EntrySide`): its gfx family (``gfx_target``) and the gfx
targets it holds code for (``mapped_targets``). Its download size is not estimated: the bundle is
dominated by the runtime copied from AMD's TheRock SDK (libLLVM, rocBLAS and hipBLASLt with their
kernel folders), and no TheRock tree or ROCm bundle was ever measured here, so ``select`` and
``coverage`` say its size is unknown rather than show the CPU bundle's figure."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...schemas.entry import EntryFields
from .spec import HIP

if TYPE_CHECKING:
    from ...schemas.records import BundleSpec


def fields(spec: BundleSpec, sass: list[str] | None) -> EntryFields:
    """The leg's family and its targets (``[hip]``)."""
    hip = HIP.of(spec)
    return EntryFields(gfx_target=hip.gfx_target, mapped_targets=list(hip.mapped_targets))


def extra_mb(spec: BundleSpec) -> None:
    """None: never measured (module docstring)."""
    return None


if TYPE_CHECKING:  # mypy holds this module to the protocol the manifest's makers ask it by
    from ...schemas.entry import EntrySide
    from . import manifest as _this

    _AS_SIDE: EntrySide = _this
