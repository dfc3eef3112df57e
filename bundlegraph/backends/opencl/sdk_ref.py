"""Where a leg's OpenCL SDK is: :class:`OpenClSdk`, what its SDK task
(``toolkit:opencl-<version>-<platform>-<hash6>``, :mod:`.sdk`) promises the later stages (a
:class:`~bundlegraph.toolchains.sdk_ref.SdkRef`). Pure data: nothing here looks at the disk except
:meth:`OpenClSdk.missing` and :meth:`OpenClSdk.configure_record`.

The CMake entries (:meth:`OpenClSdk.cmake_cache`) pin what CMake's ``FindOpenCL`` would otherwise
search the build machine for: ``OpenCL_INCLUDE_DIR`` and ``OpenCL_LIBRARY`` (its cache variables,
CMake's ``FindOpenCL`` documentation), so a runner with its own OpenCL headers builds the same.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...core.fsutil import read_json_object
from ...core.lightclass import frozen
from ...toolchains.sdk_ref import InPrefix, ShipsNothing

if TYPE_CHECKING:
    from ...toolchains.sdk_ref import BuildsWith, GpuCompiler, LineInputs, SdkRef

RECEIPT = "bundlegraph-opencl-sdk.json"
"""The SDK task's receipt file name (in the prefix): the packages and the headers' OpenCL version."""


@frozen
class OpenClSdk(InPrefix, ShipsNothing):
    """An OpenCL SDK as later stages see it: ``name``/``task``
    (``opencl-3.0-linux-x64-1a2b3c`` / ``toolkit:<name>``), ``version`` (the headers' OpenCL
    version, ``3.0``), ``platform`` (``linux-x64``), ``prefix`` (where it is unpacked),
    ``receipt``, and the prefix-relative (POSIX) ``include_dir`` and ``library`` (the loader's
    link name) it pins."""

    name: str
    task: str
    version: str
    platform: str
    prefix: Path
    receipt: Path
    include_dir: str
    library: str

    def cmake_cache(self) -> dict[str, str]:
        """``OpenCL_INCLUDE_DIR`` and ``OpenCL_LIBRARY``, absolute, CMake form."""
        return {
            "OpenCL_INCLUDE_DIR": f"{self.root.rstrip('/')}/{self.include_dir}",
            "OpenCL_LIBRARY": f"{self.root.rstrip('/')}/{self.library}",
        }

    def missing(self) -> list[str]:
        """The pinned files (prefix-relative) that are not there (empty: all are)."""
        return [r for r in (f"{self.include_dir}/CL/cl.h", self.library) if not self.path(r).exists()]

    # -- what the stages ask of it (:class:`~bundlegraph.toolchains.sdk_ref.SdkRef`) ---------------
    def gpu_compiler(self) -> GpuCompiler | None:
        """None: the driver compiles the kernels on the user's machine."""
        return None

    def toolchain_lines(self, tc: BuildsWith, at: LineInputs) -> list[str]:
        """The SDK's pins (:meth:`cmake_cache`), so FindOpenCL searches nothing on the build machine."""

        from ...toolchains.base import cache_lines

        lines = ["", f"# The OpenCL SDK ({self.task}): Khronos headers and the ICD loader to link."]
        lines += cache_lines(self.cmake_cache(), frozenset({"OpenCL_LIBRARY"}))
        return lines

    def configure_record(self, log: Path) -> dict[str, Any]:
        """``{"opencl": ...}``: the SDK task, the headers' OpenCL version and the packages (its
        receipt), and whether the kernels are embedded (the configure output's ``opencl:
        embedding kernel`` lines, one per kernel, from ``ggml/src/ggml-opencl/CMakeLists.txt``)."""
        text = log.read_text(encoding="utf-8", errors="replace")
        receipt = read_json_object(self.receipt) or {}
        return {
            "opencl": {
                "sdk": self.task,
                "headers_version": receipt.get("headers_version"),
                "packages": receipt.get("packages"),
                "embedded_kernels": text.count("opencl: embedding kernel "),
                "kernel_files": text.count("opencl: adding kernel "),
            }
        }


if TYPE_CHECKING:

    def _holds_the_protocol(sdk: OpenClSdk) -> SdkRef:  # mypy holds OpenClSdk to what the stages ask of an SDK
        return sdk


__all__ = ["RECEIPT", "OpenClSdk"]
