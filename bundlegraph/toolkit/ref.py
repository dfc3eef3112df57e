"""Where an installed CUDA toolkit is: :class:`ToolkitRef` (the contract the toolkit stage,
:mod:`bundlegraph.pipeline.toolkit`, documents for later stages) and :func:`ref_for_set`, the
pure mapping from a component set to it. Lives with the installer, below the pipeline, so the
installer and the stages share it without importing each other."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from ..core import paths
from ..toolchains.cuda import LIBRARIES
from .components import is_windows, target_dir
from .identity import ComponentSet, host_toolkit_path

RECEIPT = "bundlegraph-toolkit.json"


@dataclass(frozen=True)
class ToolkitRef:
    """Where a leg's installed toolkit is (see the module docstring for the contract)."""

    task: str
    name: str
    prefix: Path
    receipt: Path
    version: str
    source: str
    host_platform: str
    target_platform: str
    target_dir: str
    host_target_dir: str

    @property
    def windows(self) -> bool:
        return is_windows(self.target_platform)

    @property
    def cross(self) -> bool:
        return self.host_platform != self.target_platform

    @property
    def major(self) -> int:
        return int(self.version.split(".")[0])

    @property
    def nvcc(self) -> Path:
        return self.prefix / "bin" / ("nvcc.exe" if is_windows(self.host_platform) else "nvcc")

    @property
    def include_dir(self) -> Path:
        return self.prefix / "include" if self.windows else self.prefix / "targets" / self.target_dir / "include"

    @property
    def lib_dir(self) -> Path:
        return (
            self.prefix / "lib" / self.target_dir if self.windows else self.prefix / "targets" / self.target_dir / "lib"
        )

    @property
    def bin_dir(self) -> Path:
        return self.prefix / "bin" / self.target_dir if self.windows else self.lib_dir

    def library(self, role: str) -> Path:
        """The link input for ``role`` (``cudart``, ``cudart_static``, ``cudadevrt``, ``cublas``,
        ``cublasLt``, ``cuda_driver``). Raises KeyError for another role."""
        table = LIBRARIES["windows" if self.windows else "linux"]
        if role not in table:
            raise KeyError(f"unknown library role {role!r}; roles: {', '.join(table)}")
        return self.lib_dir / table[role]

    def libraries(self) -> dict[str, Path]:
        return {r: self.library(r) for r in LIBRARIES["linux"]}

    def runtime(self, name: str) -> Path:
        """A runtime file of ``name`` (``cudart``, ``cublas``, ``cublasLt``) as shipped."""
        if self.windows:
            return self.bin_dir / f"{name}64_{self.major}.dll"
        return self.lib_dir / f"lib{name}.so.{self.major}"

    def nvcc_target_flags(self) -> list[str]:
        return ["-target-dir", self.target_dir] if self.cross else []

    def cmake_cache(self) -> dict[str, str]:
        out = {"CMAKE_CUDA_COMPILER": self.nvcc.as_posix(), "CUDAToolkit_ROOT": self.prefix.as_posix()}
        for role, var in (
            ("cudart", "CUDA_cudart_LIBRARY"),
            ("cublas", "CUDA_cublas_LIBRARY"),
            ("cublasLt", "CUDA_cublasLt_LIBRARY"),
            ("cuda_driver", "CUDA_cuda_driver_LIBRARY"),
        ):
            out[var] = self.library(role).as_posix()
        return out

    def never_ship(self) -> list[str]:
        try:
            data = json.loads(self.receipt.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return []
        return [g["path"] for g in data.get("generated", [])]


def toolkits_root() -> Path:
    """``<cache>/toolkits``: one directory per component-set name."""
    return paths.cache_root() / "toolkits"


def ref_for_set(cs: ComponentSet) -> ToolkitRef:
    """The :class:`ToolkitRef` of a component set (pure)."""
    if cs.source == "host":
        prefix = host_toolkit_path(cs.pins.get("path"))
        receipt = toolkits_root() / cs.name / RECEIPT
    else:
        prefix = toolkits_root() / cs.name
        receipt = prefix / RECEIPT
    return ToolkitRef(
        task=f"toolkit:{cs.name}",
        name=cs.name,
        prefix=prefix,
        receipt=receipt,
        version=cs.cuda_version,
        source=cs.source,
        host_platform=cs.host_platform,
        target_platform=cs.target_platform,
        target_dir=target_dir(cs.target_platform),
        host_target_dir=target_dir(cs.host_platform),
    )


__all__ = ["RECEIPT", "ToolkitRef", "ref_for_set", "toolkits_root"]
