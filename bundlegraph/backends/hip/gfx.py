"""The fork's gfx families as the code-object check takes them: :data:`GFX_FAMILIES` and
:func:`expand`, which turns families and processors into the gfx processors a bundle must hold.

- :data:`GFX_FAMILIES`: the seven default families of the release we replace, each with the
  gfx processors its bundle is compiled for (:data:`bundlegraph.backends.hip.FAMILIES`, one table
  for the legs' specs and this check). Source: unslothai/llama.cpp
  ``.github/workflows/unsloth-prebuilt-rocm.yml`` (the "Map GPU targets" step, the same on
  Linux and Windows: ``gfx110X`` -> ``gfx1100;gfx1101;gfx1102;gfx1103`` passed as
  ``-DGPU_TARGETS``) and ``unsloth-prebuilt.yml`` (the default list
  ``gfx1151,gfx1150,gfx120X,gfx110X,gfx103X,gfx90a,gfx908``, in that order), read at the
  mirror's commit d32676d7 (2026-08-18). Read as reference; no code is taken from them.
"""

from __future__ import annotations

from collections.abc import Iterable

from ...checks.gfx import is_processor
from . import FAMILIES

GFX_FAMILIES: dict[str, tuple[str, ...]] = FAMILIES
"""Family name (a bundle's ``gfx_target``) -> the gfx processors compiled into it (its
``mapped_targets``), in the fork's default order."""

DEFAULT_FAMILIES: tuple[str, ...] = tuple(GFX_FAMILIES)
"""The fork's default families, one ROCm bundle each per OS."""


def expand(names: Iterable[str]) -> tuple[str, ...]:
    """The gfx processors ``names`` stand for: each family (``gfx110X``) expands to its
    processors, a processor (``gfx1100``) stands for itself; order kept, duplicates dropped.
    Raises ValueError naming the first name that is neither, with the known families."""
    out: list[str] = []
    for n in names:
        if n in GFX_FAMILIES:
            procs: Iterable[str] = GFX_FAMILIES[n]
        elif is_processor(n):
            procs = (n,)
        else:
            raise ValueError(
                f"{n!r} is neither a gfx processor (gfx1100, gfx90a) nor a family ({', '.join(GFX_FAMILIES)})"
            )
        out += [p for p in procs if p not in out]
    return tuple(out)


__all__ = ["DEFAULT_FAMILIES", "GFX_FAMILIES", "expand"]
