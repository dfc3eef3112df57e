"""Which PTX a driver can JIT-compile: NVIDIA's table of the PTX ISA each CUDA release emits and
each driver of that release reads, and the check of a fatbin's PTX-only code against a driver.

A driver JIT-compiles PTX only up to the ISA version of its own CUDA release; CUDA's
minor-version compatibility covers SASS, not newer PTX (``shared/FINDINGS.md``, 2026-12-06). A
toolkit writes its release's ISA into every PTX text (``.version X.Y``), whatever the target:
CUDA 12.8's ``compute_61`` PTX is ISA 8.7, which a 12.4 driver refuses to load
(``CUDA_ERROR_UNSUPPORTED_PTX_VERSION``).

Source of :data:`FIRST_DRIVER`: NVIDIA's PTX ISA manual, "Release Notes" > "PTX Release History"
(https://docs.nvidia.com/cuda/parallel-thread-execution/#release-notes-ptx-release-history), as
NVIDIA's own ``cuda-python`` encodes that table (``cuda/bindings/utils/_ptx_utils.py``,
``_ptx_to_cuda``: "Mapping based on the official PTX ISA <-> CUDA Release table"; its
``get_minimal_required_cuda_ver_from_ptx_ver`` gives "the minimal CUDA driver ... needed to
load a PTX of the given ISA version"). From 12.0 to 12.5 the ISA is 8.<minor>; CUDA 12.6 still
emits 8.5 (openxla/xla#16504), 8.6 came with the drivers that report CUDA 12.7 (R565; no 12.7
toolkit was released), then 12.8 -> 8.7, 12.9 -> 8.8, 13.0 -> 9.0, 13.1 -> 9.1. The 13.5 row
is measured: nvcc 13.5.37 writes ``.version 9.5`` (``tests/data/ptx/README.md``). An ISA newer
than every row needs a driver newer than every row: the check refuses it against any driver of
the table.
"""

from __future__ import annotations

from ..core.lightclass import frozen
from . import Failure

Version = tuple[int, int]

FIRST_DRIVER: dict[Version, Version] = {
    (8, 0): (12, 0), (8, 1): (12, 1), (8, 2): (12, 2), (8, 3): (12, 3), (8, 4): (12, 4), (8, 5): (12, 5),
    (8, 6): (12, 7), (8, 7): (12, 8), (8, 8): (12, 9), (9, 0): (13, 0), (9, 1): (13, 1), (9, 5): (13, 5),
}  # fmt: skip
"""PTX ISA version -> the oldest driver (its CUDA version) that loads it (see the module docstring)."""


def fmt(v: Version) -> str:
    """``(8, 4)`` -> ``8.4``."""
    return f"{v[0]}.{v[1]}"


def max_isa(driver: Version) -> Version | None:
    """The newest PTX ISA a driver of CUDA ``driver`` JIT-compiles (12.4 -> 8.4, 12.6 -> 8.5);
    None for a driver older than every row (it loads none of today's ISAs)."""
    known = [isa for isa, first in FIRST_DRIVER.items() if first <= driver]
    return max(known) if known else None


def emitted_isa(toolkit: Version) -> Version | None:
    """The PTX ISA a toolkit of CUDA ``toolkit`` writes (12.4 -> 8.4, 12.8 -> 8.7): the newest
    its own release's driver loads. None for a release older than every row. A release without a
    row of its own (13.2-13.4) gets the row below it, an underestimate: the spec rule at load may
    then pass what verify's ``ptx-isa`` row, reading the built fatbin, refuses."""
    return max_isa(toolkit)


def first_driver(isa: Version) -> str:
    """The oldest driver that loads ``isa``, as words: ``CUDA 12.8``; for an ISA without a row,
    ``a driver newer than CUDA 13.5`` (the driver of the newest row below it)."""
    if isa in FIRST_DRIVER:
        return f"CUDA {fmt(FIRST_DRIVER[isa])}"
    below = [i for i in FIRST_DRIVER if i < isa]
    return f"a driver newer than CUDA {fmt(FIRST_DRIVER[max(below)])}" if below else "an unknown driver"


@frozen
class PtxOnly:
    """One file's PTX-only code: ``isa``, SM -> the PTX ISA versions its entries carry
    (:attr:`bundlegraph.checks.fatbin.Inventory.ptx_isa` of the SMs without SASS)."""

    path: str
    isa: dict[int, frozenset[Version]]


def jit_problems(code: PtxOnly, driver: Version) -> list[Failure]:
    """One :class:`Failure` (check ``ptx-isa``) per PTX-only SM of ``code`` whose PTX ISA is newer
    than a driver of CUDA ``driver`` JIT-compiles, naming the file, the ISA, the driver it needs and
    ``driver``."""
    top = max_isa(driver)
    out = []
    for sm, isas in sorted(code.isa.items()):
        too_new = sorted(i for i in isas if top is None or i > top)
        if not too_new:
            continue
        isa = too_new[-1]
        reads = f"which reads PTX ISA up to {fmt(top)}" if top else "which reads none of the table's PTX ISAs"
        out.append(
            Failure(
                code.path,
                "ptx-isa",
                f"compute_{sm} PTX is ISA {fmt(isa)}, which needs {first_driver(isa)}; the leg is selected for "
                f"drivers from CUDA {fmt(driver)}, {reads}: build it with a toolkit of CUDA {fmt(driver)} or older, "
                f"or raise its driver floor",
            )
        )
    return out
