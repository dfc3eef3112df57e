"""What a backend puts into its bundles' manifest entries beyond every bundle's fields
(:class:`EntryFields`: CUDA's archs, toolkit version and supported SMs; HIP's gfx family and
targets), and what it adds to a bundle's estimated download size. It comes from the backend's
package, its ``manifest`` module (:class:`EntrySide`, found by name:
:func:`bundlegraph.backends.plug_in`); a backend without one adds nothing. The planned manifest
(:mod:`.planned`) and the built bundle's info file (:func:`bundlegraph.pipeline.package.build_info`)
ask it, so neither names a backend."""

from __future__ import annotations

from dataclasses import field
from functools import cache
from typing import Protocol, cast

from .. import backends
from ..core.lightclass import frozen
from ..schemas.records import BundleSpec


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


class _AddsNothing:
    """The :class:`EntrySide` of a backend whose package has no ``manifest`` module."""

    def fields(self, spec: BundleSpec, sass: list[str] | None) -> EntryFields:
        return EntryFields()

    def extra_mb(self, spec: BundleSpec) -> float | None:
        return 0.0


ADDS_NOTHING: EntrySide = _AddsNothing()
"""The side of a backend that adds no field and no size (CPU, Vulkan, Metal, OpenCL)."""


@cache
def entry_side(backend: str) -> EntrySide:
    """The :class:`EntrySide` of backend ``backend`` (its spec name)."""
    mod = backends.plug_in(backends.backend(backend), "manifest")
    return cast(EntrySide, mod) if mod is not None else ADDS_NOTHING


__all__ = ["ADDS_NOTHING", "EntryFields", "EntrySide", "entry_side"]
