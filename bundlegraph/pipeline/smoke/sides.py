"""The GPU sides of ``smoke:<leg>`` by backend spec name (:data:`SIDES`): one entry per backend
of :data:`bundlegraph.backends.BACKENDS`, None for a backend without GPU steps (the CPU). Adding
a GPU backend's smoke: its module (a :class:`~.side.GpuSide`) and its entry here."""

from __future__ import annotations

from ...backends import BACKEND_NAMES, GPU_BACKENDS
from . import cuda, hip, metal, vulkan
from .side import GpuSide

SIDES: dict[str, GpuSide | None] = {"cpu": None, "cuda": cuda, "vulkan": vulkan, "hip": hip, "metal": metal}
"""Backend spec name -> its smoke side (None: the host steps only)."""


def side_problems(table: dict[str, GpuSide | None]) -> list[str]:
    """What is wrong with a sides table, one line each: a backend missing or unknown, a GPU
    backend without a side, a side keyed under another backend's name. Checked on :data:`SIDES`
    when this module loads (a bad table is a bug: RuntimeError)."""
    probs = []
    if set(table) != set(BACKEND_NAMES):
        probs.append(f"smoke sides for {sorted(table)}: expected one entry per backend {sorted(BACKEND_NAMES)}")
    for b in GPU_BACKENDS:
        s = table.get(b.NAME)
        if s is None:
            probs.append(f"GPU backend {b.NAME} has no smoke side")
        elif s.BACKEND != b.NAME:
            probs.append(f"smoke side {s.BACKEND} is registered as {b.NAME}")
    return probs


def side_of(backend_name: str, table: dict[str, GpuSide | None] | None = None) -> GpuSide | None:
    """The smoke side of the backend ``backend_name`` (None: no GPU steps)."""
    return (SIDES if table is None else table)[backend_name]


if _probs := side_problems(SIDES):
    raise RuntimeError("bundlegraph.pipeline.smoke.sides: " + "; ".join(_probs))

__all__ = ["SIDES", "side_of", "side_problems"]
