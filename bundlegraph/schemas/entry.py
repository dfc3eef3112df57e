"""The fields a backend puts into its bundles' manifest entries and info files beyond every
bundle's (:class:`EntryFields`), and the shape of the backend module that gives them
(:class:`EntrySide`: its package's ``manifest`` module, which :func:`bundlegraph.installer.entry.entry_side`
finds by name). Here, on the records' floor, so that a backend's module imports no floor above
the records to fill them."""

from __future__ import annotations

from dataclasses import field
from typing import TYPE_CHECKING, Protocol

from ..core.lightclass import frozen

if TYPE_CHECKING:
    from .records import BundleSpec


@frozen
class EntryFields:
    """A backend's fields of a manifest entry and info file (:mod:`bundlegraph.schemas.manifest`):
    ``archs`` (the CMake archs compiled), ``toolkit_version`` (the toolkit the spec names),
    ``supported_sms`` (ascending), ``gfx_target`` and ``mapped_targets`` (a ROCm leg's family and
    its targets; None for other legs)."""

    archs: list[str] = field(default_factory=list)
    toolkit_version: str | None = None
    supported_sms: list[int] = field(default_factory=list)
    gfx_target: str | None = None
    mapped_targets: list[str] | None = None


class EntrySide(Protocol):
    """A backend's ``manifest`` module."""

    def fields(self, spec: BundleSpec, sass: list[str] | None) -> EntryFields:
        """the entry's fields of leg ``spec``; ``sass``: the SASS targets verify found in the
        built bundle's fatbins (None: a planned entry, from the spec alone)"""
        ...

    def extra_mb(self, spec: BundleSpec) -> float | None:
        """MB (10^6 bytes) a bundle of leg ``spec`` adds to the CPU bundle it is merged into, an
        estimate (:mod:`.planned`); None: not known (never measured)"""
        ...


__all__ = ["EntryFields", "EntrySide"]
