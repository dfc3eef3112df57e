"""The GPU sides of ``smoke:<leg>`` by backend spec name (:data:`SIDES`): for each backend of
:data:`bundlegraph.backends.BACKENDS`, the module its :attr:`~bundlegraph.backends.Backend.SMOKE`
names (a :class:`~.side.GpuSide`), None for a backend without GPU steps (the CPU). Adding a GPU
backend's smoke: its side module, named by the backend module; nothing here changes."""

from __future__ import annotations

import importlib
from typing import cast

from ... import backends
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
    member of :class:`.side.GpuSide` (:data:`MEMBERS`). Checked on :data:`SIDES` when this module
    loads (a bad table is a bug: RuntimeError)."""
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


SIDES: dict[str, GpuSide | None] = load_sides()
"""Backend spec name -> its smoke side (None: the host steps only)."""


def side_of(backend_name: str, table: dict[str, GpuSide | None] | None = None) -> GpuSide | None:
    """The smoke side of the backend ``backend_name`` (None: no GPU steps)."""
    return (SIDES if table is None else table)[backend_name]


if _probs := side_problems(SIDES):
    raise RuntimeError("bundlegraph.pipeline.smoke.sides: " + "; ".join(_probs))

__all__ = ["MEMBERS", "SIDES", "load_sides", "side_of", "side_problems"]
