"""The OpenCL backend's verify rows (:mod:`bundlegraph.backends.opencl`), found by the verify
table as this package's ``verify`` module (:func:`bundlegraph.verification.table.registry_rows`):

- ``opencl-kernels``: the OpenCL library holds its kernels. ggml compiles them into it as text
  with ``GGML_OPENCL_EMBED_KERNELS`` (on by default); without it the library reads ``add.cl`` and
  its ~90 siblings from beside itself at run time (``read_file`` in
  ``ggml/src/ggml-opencl/ggml-opencl.cpp``), which a bundle does not carry. The mark is the first
  kernel of ``kernels/add.cl`` (``kernel void kernel_add(``), which every build embeds.
- ``opencl-loader``: the library imports the ICD loader (:attr:`~bundlegraph.backends.opencl.DRIVERS`)
  and the bundle ships no copy of it (the host's reads the host's driver list).

The loader is the backend's ``DRIVERS`` entry, which the generic closure row lets the bundle import
without shipping.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...checks import BytesLike, Failure
from ...schemas.backend import backend, library_file
from ...verification.rows import FileRow, Outcome, Row, Subject

if TYPE_CHECKING:
    from ...verification.policy import VerifyPolicy

NAME = "opencl"
"""The backend these rows belong to."""

KERNEL_MARK = b"kernel void kernel_add("
"""Text of an embedded kernel (``ggml/src/ggml-opencl/kernels/add.cl``'s first kernel)."""


def _is_opencl(p: VerifyPolicy) -> bool:
    return p.backend == NAME


def _library(p: VerifyPolicy) -> set[str]:
    b = backend(NAME)
    return {library_file(b, o) for o in (b.DRIVERS if p.os is None else (p.os,)) if o in b.DRIVERS}


def kernels(path: str, data: BytesLike, p: VerifyPolicy) -> list[Failure]:
    """One failure when ``path`` is the OpenCL library and holds no embedded kernel."""
    if path.rsplit("/", 1)[-1] not in _library(p) or data.find(KERNEL_MARK) >= 0:
        return []
    return [
        Failure(
            path,
            "opencl-kernels",
            "holds no embedded OpenCL kernels (GGML_OPENCL_EMBED_KERNELS off?): it would read add.cl and the "
            "other .cl files from beside itself at run time, and the bundle carries none",
        )
    ]


def loader(s: Subject, p: VerifyPolicy) -> Outcome:
    """One failure per OpenCL library that does not import the ICD loader, one per shipped loader."""
    b = backend(NAME)
    libs = _library(p)
    fails = []
    for path, elf in sorted(s.elf.items()):
        if path.rsplit("/", 1)[-1] in libs and b.DRIVERS["linux"] not in elf.needed:
            fails.append(
                Failure(
                    path, "opencl-loader", f"does not import {b.DRIVER_WHAT} {b.DRIVERS['linux']}: not an OpenCL build"
                )
            )
    for n in s.names:
        if n.rsplit("/", 1)[-1].startswith("libOpenCL.so"):
            fails.append(
                Failure(
                    n,
                    "opencl-loader",
                    f"the bundle ships {b.DRIVER_WHAT}: the host's must load (it reads the host's drivers)",
                )
            )
    return fails, {}


ROWS: tuple[Row | FileRow, ...] = (
    FileRow("opencl-kernels", kernels, ("backend", "os"), "files", gate=_is_opencl),
    Row("opencl-loader", loader, ("backend", "os"), "imports", gate=_is_opencl),
)
"""The OpenCL backend's rows, gated on an OpenCL leg's policy (``backend="opencl"``)."""
