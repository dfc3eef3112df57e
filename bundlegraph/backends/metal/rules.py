"""The rules of a Metal leg's ``[metal]`` table (:func:`problems`, run by
:func:`bundlegraph.specs.validation.cross_field_problems` on every spec of this backend, found as
``bundlegraph.backends.<name>.rules``). One line per problem, ``<file>: <key.path>: <message>``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from .spec import METAL

if TYPE_CHECKING:
    from ...schemas.records import BundleSpec


def problems(f: Path, s: BundleSpec, root: Path, read: list[Path]) -> list[str]:
    """A Metal leg's ``GGML_METAL`` must be on and its ``GGML_METAL_EMBED_LIBRARY`` must be its
    ``[metal] embed_library`` (verify and the smoke rely on where the shader library is), one line each."""
    metal = METAL.of(s)
    out = []
    if s.cmake_bool("GGML_METAL", False) is not True:
        out.append(f"{f}: cmake.GGML_METAL: a Metal leg builds ggml-metal: set GGML_METAL = true")
    if bool(s.cmake_bool("GGML_METAL_EMBED_LIBRARY", False)) != metal.embed_library:
        out.append(
            f"{f}: cmake.GGML_METAL_EMBED_LIBRARY: {s.cmake.get('GGML_METAL_EMBED_LIBRARY')!r}, but "
            f"metal.embed_library is {str(metal.embed_library).lower()}: set the one the bundle is built with"
        )
    return out
