"""Where an installed CUDA toolkit is: :func:`ref_for_set`, the pure mapping from a component set
to its :class:`~bundlegraph.toolchains.cuda.CudaToolkit` (the contract the toolkit stage,
:mod:`bundlegraph.pipeline.toolkit`, documents for later stages). Lives with the installer, below the pipeline, so the
installer and the stages share it without importing each other."""

from __future__ import annotations

from pathlib import Path

from ..core import paths
from ..toolchains.cuda import CudaToolkit
from .identity import ComponentSet, host_toolkit_path

RECEIPT = "bundlegraph-toolkit.json"


def toolkits_root() -> Path:
    """``<cache>/toolkits``: one directory per component-set name."""
    return paths.cache_root() / "toolkits"


def ref_for_set(cs: ComponentSet) -> CudaToolkit:
    """The :class:`~bundlegraph.toolchains.cuda.CudaToolkit` of a component set (pure): where
    ``toolkit:<name>`` installs it (a ``host`` toolkit: where it is)."""
    if cs.source == "host":
        prefix = host_toolkit_path(cs.pins.get("path"))
        receipt = toolkits_root() / cs.name / RECEIPT
    else:
        prefix = toolkits_root() / cs.name
        receipt = prefix / RECEIPT
    return CudaToolkit(
        prefix=prefix,
        version=str(cs.cuda_version),
        host_platform=cs.host_platform,
        target_platform=cs.target_platform,
        name=cs.name,
        task=f"toolkit:{cs.name}",
        receipt=receipt,
        source=cs.source,
        with_cublas="libcublas" in cs.target,
    )


__all__ = ["RECEIPT", "CudaToolkit", "ref_for_set", "toolkits_root"]
