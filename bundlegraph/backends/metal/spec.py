"""The ``[metal]`` table of a Metal leg (:data:`TABLE`, which :class:`~bundlegraph.schemas.records.BundleSpec`
and the JSON Schema take up as they load): how it ships its shader library."""

from __future__ import annotations

from ...schemas.record_base import Record, TableReader, record
from . import SPEC_TABLE


@record
class MetalSpec(Record):
    """How a Metal leg (macOS arm64) ships its shader library."""

    embed_library: bool = True
    """the compiled Metal shader library is embedded in libggml-metal.dylib (GGML_METAL_EMBED_LIBRARY, as the fork
    builds), so no default.metallib travels beside it; must equal the cmake entry"""


TABLE = MetalSpec
"""The record of a Metal leg's ``[metal]`` table."""

METAL = TableReader(SPEC_TABLE, MetalSpec)
"""Typed reads of a leg's ``[metal]`` table (``METAL.of(spec)``, ``METAL.get(spec)``)."""
