"""The ``[vulkan]`` table of a Vulkan leg (:data:`TABLE`, which :class:`~bundlegraph.schemas.records.BundleSpec`
and the JSON Schema take up as they load): where its SDK comes from and the shader extensions it
may lack."""

from __future__ import annotations

from typing import Annotated, Literal

from ...core.errors import did_you_mean
from ...schemas.constraints import SHA256, Check
from ...schemas.record_base import Record, TableReader, record
from . import SHADER_EXTENSIONS, SPEC_TABLE


@record
class VulkanSdkSpec(Record):
    """Where a Vulkan leg's SDK (the Vulkan headers, the loader to link, ``glslc``) comes from:
    ``debs`` (Debian packages pinned by name, version and sha256 in a lock file), ``host`` (the
    build machine's own, as ``toolkit source = "host"`` is for CUDA) or ``lunarg`` (LunarG's SDK
    installer, pinned by version and sha256: the Windows legs)."""

    OMIT_NONE = ("lock", "version", "sha256", "url_name")

    source: Literal["debs", "host", "lunarg"]
    """debs (Debian packages from a lock file), host (the build machine's glslc, headers and loader) or lunarg
    (LunarG's SDK installer)"""
    lock: str | None = None
    """debs: the lock file (bundles/locks/...) pinning each Debian package by name, version and sha256"""
    version: Annotated[str, Check(pattern=r"^\d+\.\d+\.\d+\.\d+$")] | None = None
    """lunarg: the SDK version (1.4.357.0)"""
    sha256: Annotated[str, SHA256] | None = None
    """lunarg: the installer's sha256 (an install without it is refused: hashes fail closed)"""
    url_name: Annotated[str, Check(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")] | None = None
    """lunarg: the installer's file name (vulkansdk-windows-X64-1.4.357.0.exe)"""

    def __post_init__(self) -> None:
        allowed = {"debs": ("lock",), "host": (), "lunarg": ("version", "sha256", "url_name")}[self.source]
        for k in ("lock", "version", "url_name", "sha256"):
            if getattr(self, k) is not None and k not in allowed:
                raise ValueError(f"{k}: not a key of source '{self.source}' (it takes: {', '.join(allowed) or 'none'})")
        if self.source == "debs" and not self.lock:
            raise ValueError("lock: source 'debs' needs 'lock' (a lock file under bundles/locks/)")
        if self.source == "lunarg":
            for k in ("version", "url_name"):
                if getattr(self, k) is None:
                    raise ValueError(f"{k}: source 'lunarg' needs '{k}'")


@record
class VulkanSpec(Record):
    """The SDK of a Vulkan leg, and the shader extensions its bundle may lack."""

    OMIT_NONE = ("waive_compiled_out",)

    sdk: VulkanSdkSpec
    """where the Vulkan headers, loader and glslc come from"""
    waive_compiled_out: dict[str, Annotated[str, Check(min_length=10)]] | None = None
    """shader extensions (GL_KHR_cooperative_matrix, ...) whose shader paths the bundle may lack, each with the
    reason; verify refuses a bundle whose glslc compiled out any other (build.vulkan.compiled_out)"""

    def __post_init__(self) -> None:
        for k in self.waive_compiled_out or {}:
            if k not in SHADER_EXTENSIONS:
                raise ValueError(
                    f"waive_compiled_out.{k}: not a shader extension ggml's CMake tests glslc for"
                    f"{did_you_mean(k, SHADER_EXTENSIONS)}; known: {', '.join(SHADER_EXTENSIONS)}"
                )


TABLE = VulkanSpec
"""The record of a Vulkan leg's ``[vulkan]`` table."""

VULKAN = TableReader(SPEC_TABLE, VulkanSpec)
"""Typed reads of a leg's ``[vulkan]`` table (``VULKAN.of(spec)``, ``VULKAN.get(spec)``)."""
