"""The ``[cuda]`` table of a CUDA leg (:data:`TABLE`, which :class:`~bundlegraph.schemas.records.BundleSpec`
and the JSON Schema take up as they load): the CUDA version, the archs and where the toolkit
comes from."""

from __future__ import annotations

from dataclasses import field
from typing import Annotated, Literal

from ...schemas.archs import Arch, CudaVersion, known_sms
from ...schemas.constraints import Check, unique
from ...schemas.record_base import Record, TableReader, record
from . import SPEC_TABLE

RedistPlatform = Literal["linux-x86_64", "linux-sbsa", "linux-aarch64", "linux-all", "windows-x86_64", "windows-arm64"]
"""NVIDIA's redist platform keys (the keys of a ``redistrib_<ver>.json`` component)."""


@record
class ToolkitSpec(Record):
    """Where the leg's CUDA toolkit comes from and what it holds: ``host`` components run on the
    build machine (installed for ``host_platform``), ``target`` components are linked into the
    output (installed for ``target_platform``)."""

    source: Literal["redist", "wheels", "host", "debs"] = "redist"
    """redist (NVIDIA's archives), wheels (NVIDIA's PyPI wheels), host (already installed) or debs (Debian's packages)"""
    manifest: str | None = None
    """redist: the redistrib_<label>.json label (13.4.2); its major.minor must be cuda.version"""
    lock: str | None = None
    """wheels, debs: the lock file (bundles/locks/...) pinning each wheel or Debian package by sha256"""
    path: str | None = None
    """host: the toolkit root (default CUDA_PATH, else /usr/local/cuda)"""
    host: list[str] = field(default_factory=lambda: ["cuda_nvcc", "cuda_crt", "libnvvm", "cuda_cccl"])
    """components that run on the build machine (nvcc, crt, nvvm, cccl)"""
    target: list[str] = field(default_factory=lambda: ["cuda_cudart", "libcublas"])
    """components linked into the output (cudart, cublas)"""
    host_platform: RedistPlatform | None = None
    """NVIDIA's platform key of the build machine (default: the toolchain's)"""
    target_platform: RedistPlatform
    """NVIDIA's platform key of the target libraries (windows-arm64, linux-sbsa)"""

    def __post_init__(self) -> None:
        if self.source == "redist" and not self.manifest:
            raise ValueError("manifest: source 'redist' needs 'manifest' (a redist release label such as '13.4.2')")
        if self.source == "wheels" and not self.lock:
            raise ValueError("lock: source 'wheels' needs 'lock' (a lock file under bundles/locks/)")
        if self.source == "debs" and not self.lock:
            raise ValueError("lock: source 'debs' needs 'lock' (a debs lock file under bundles/locks/)")


@record
class CudaSpec(Record):
    """The CUDA version, archs and toolkit of a CUDA leg."""

    version: CudaVersion
    """the CUDA toolkit version major.minor (13.4)"""
    archs: Annotated[list[Arch], Check(min_length=1)]
    """GPU archs in CMake form (120, 120a, 86-real, 75-virtual); each must be buildable with version"""
    toolkit: ToolkitSpec
    """where the toolkit comes from and its components"""
    supported_sms: list[Annotated[int, Check(ge=10, le=999, strict=True)]] | None = None
    """a PTX-only leg (every arch -virtual, the legacy class): the SMs it promises, each JIT-compiled from
    the newest PTX arch at or below it (legacy: 50, 52, 60, 61); legs with SASS derive theirs from it"""

    OMIT_NONE = ("supported_sms",)

    def __post_init__(self) -> None:
        unique("archs", self.archs)
        if self.supported_sms is not None:
            self._check_supported_sms()
        if not isinstance(self.version, CudaVersion):  # a record built by hand: typed all the same
            object.__setattr__(self, "version", CudaVersion(self.version))

    @property
    def cmake_archs(self) -> list[str]:
        """The archs in CMake's spelling (``["120", "121"]``)."""
        return [a.cmake for a in self.archs]

    def _check_supported_sms(self) -> None:
        """``supported_sms`` only on a PTX-only leg, sorted, each SM reached by a PTX arch at or
        below it of the same major or older (NVIDIA's "PTX Compatibility": PTX for compute_XY
        JIT-compiles for any GPU of capability >= X.Y) and known to the leg's toolkit."""
        sms = self.supported_sms or []
        if any(a.sass for a in self.archs):
            raise ValueError(
                "supported_sms: only a PTX-only leg (every arch '-virtual') states its SMs; a leg with SASS "
                "derives them from its archs"
            )
        if not sms or sms != sorted(set(sms)):
            raise ValueError(f"supported_sms: {sms} must be a non-empty ascending list without duplicates")
        ptx = [a.sm for a in self.archs]
        unreached = [sm for sm in sms if not any(p <= sm for p in ptx)]
        if unreached:
            raise ValueError(f"supported_sms: {unreached} is below every PTX arch ({', '.join(map(str, ptx))})")
        unknown = [sm for sm in sms if sm not in known_sms(self.version.parts)]
        if unknown:
            raise ValueError(f"supported_sms: {unknown} is not an SM CUDA {self.version} knows")


TABLE = CudaSpec
"""The record of a CUDA leg's ``[cuda]`` table."""

CUDA = TableReader(SPEC_TABLE, CudaSpec)
"""Typed reads of a leg's ``[cuda]`` table (``CUDA.of(spec)``, ``CUDA.get(spec)``)."""

WRITE_NULL = True
"""A leg of another backend writes ``"cuda": null`` in its JSON form (what action keys hold):
the form every key has held since issue 30, when ``cuda`` was the one GPU table; the tables added
later are left out while None."""
