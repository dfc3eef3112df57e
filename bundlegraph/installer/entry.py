"""What a backend puts into its bundles' manifest entries beyond every bundle's fields
(:class:`~bundlegraph.schemas.entry.EntryFields`: CUDA's archs, toolkit version and supported SMs; HIP's gfx family and
targets), and what it adds to a bundle's estimated download size. It comes from the backend's
package, its ``manifest`` module (:class:`~bundlegraph.schemas.entry.EntrySide`, found by name:
:func:`bundlegraph.schemas.backend.plug_in`); a backend without one adds nothing. The planned manifest
(:mod:`.planned`) and the built bundle's info file (:func:`bundlegraph.pipeline.package.build_info`)
ask it, so neither names a backend."""

from __future__ import annotations

from functools import cache
from typing import cast

from ..schemas import backend as backends
from ..schemas.entry import EntryFields, EntrySide
from ..schemas.records import BundleSpec


class _AddsNothing:
    """The :class:`~bundlegraph.schemas.entry.EntrySide` of a backend whose package has no ``manifest`` module."""

    def fields(self, spec: BundleSpec, sass: list[str] | None) -> EntryFields:
        return EntryFields()

    def extra_mb(self, spec: BundleSpec) -> float | None:
        return 0.0


ADDS_NOTHING: EntrySide = _AddsNothing()
"""The side of a backend that adds no field and no size (CPU, Vulkan, Metal, OpenCL)."""


@cache
def entry_side(backend: str) -> EntrySide:
    """The :class:`~bundlegraph.schemas.entry.EntrySide` of backend ``backend`` (its spec name)."""
    mod = backends.plug_in(backends.backend(backend), "manifest")
    return cast(EntrySide, mod) if mod is not None else ADDS_NOTHING


__all__ = ["ADDS_NOTHING", "entry_side"]
