"""The GPU sides of ``smoke:<leg>`` by backend spec name (:func:`sides`): for each backend of
:data:`bundlegraph.schemas.backend.BACKENDS`, the module its :attr:`~bundlegraph.schemas.backend.Backend.SMOKE`
names (a :class:`~.side.GpuSide`), None for a backend without GPU steps (the CPU). Adding a GPU
backend's smoke: its side module, named by the backend module; nothing here changes."""

from __future__ import annotations

import functools
import importlib
from typing import cast

from ...schemas import backend as backends
from .side import GpuSide


def load_sides(table: tuple[backends.Backend, ...] | None = None) -> dict[str, GpuSide | None]:
    """Backend spec name -> the module its ``SMOKE`` names, imported (None where ``SMOKE`` is None)
    for every backend of ``table`` (default: the registry as it is now). An unimportable module
    raises ImportError naming it (a bad registry is a bug)."""
    sides: dict[str, GpuSide | None] = {}
    for b in backends.BACKENDS if table is None else table:
        sides[b.NAME] = cast(GpuSide, importlib.import_module(b.SMOKE)) if b.SMOKE else None
    return sides


MEMBERS: tuple[str, ...] = tuple(
    sorted(
        set(GpuSide.__annotations__) | {n for n, v in vars(GpuSide).items() if callable(v) and not n.startswith("_")}
    )
)
"""Every name a side module must define: the attributes and functions of :class:`.side.GpuSide`."""


def side_problems(table: dict[str, GpuSide | None]) -> list[str]:
    """What is wrong with a sides table, one line each: a backend missing or unknown, a GPU
    backend without a side, a side keyed under another backend's name, a side module lacking a
    member of :class:`.side.GpuSide` (:data:`MEMBERS`). Checked by :func:`sides` on first use
    (a bad table is a bug: RuntimeError)."""
    probs = []
    if set(table) != set(backends.BACKEND_NAMES):
        probs.append(
            f"smoke sides for {sorted(table)}: expected one entry per backend {sorted(backends.BACKEND_NAMES)}"
        )
    for b in backends.GPU_BACKENDS:
        s = table.get(b.NAME)
        if s is None:
            probs.append(f"GPU backend {b.NAME} has no smoke side")
        elif lacks := [m for m in MEMBERS if not hasattr(s, m)]:
            probs.append(
                f"smoke side of {b.NAME} ({getattr(s, '__name__', s)}) lacks {lacks}: expected every member of GpuSide"
            )
        elif s.BACKEND != b.NAME:
            probs.append(f"smoke side {s.BACKEND} is registered as {b.NAME}")
    return probs


@functools.cache
def sides() -> dict[str, GpuSide | None]:
    """Backend spec name -> its smoke side (None: the host steps only), loaded on first use and
    checked (:func:`side_problems`; a bad table is a bug: RuntimeError naming every problem).

    Loaded on first use, not at import: a side module imports :mod:`.side` (its protocol), which
    runs this package's ``__init__``; loading the sides there would import the side module while
    it is half-initialised (an import circle). It also keeps the side modules out of a run that
    never smokes (``doit list``)."""
    table = load_sides()
    if probs := side_problems(table):
        raise RuntimeError("bundlegraph.pipeline.smoke.sides: " + "; ".join(probs))
    return table


def side_of(backend_name: str, table: dict[str, GpuSide | None] | None = None) -> GpuSide | None:
    """The smoke side of the backend ``backend_name`` (None: no GPU steps)."""
    return (sides() if table is None else table)[backend_name]


__all__ = ["MEMBERS", "load_sides", "side_of", "side_problems", "sides"]
