"""The OpenCL backend (Qualcomm Adreno and Intel GPUs through the host's OpenCL driver):
``ggml-opencl``, the ICD loader it imports, its install kind. Found by the registry
(:func:`bundlegraph.schemas.backend.discover`); everything else it needs sits beside this file: its SDK
(:mod:`.sdk`, :mod:`.sdk_ref`), smoke side (:mod:`.smoke`) and verify rows (:mod:`.verify`).

Sources: ggml builds ``libggml-opencl.so`` with ``GGML_OPENCL=ON`` (``ggml/CMakeLists.txt``),
links the Khronos ICD loader (``find_package(OpenCL)``; ``libOpenCL.so.1`` on Linux, the
soname of ocl-icd and of Khronos' own loader) and, with ``GGML_OPENCL_EMBED_KERNELS`` (on by
default), compiles its OpenCL C kernels into the library as strings, so no ``.cl`` file travels
beside it (``ggml/src/ggml-opencl/CMakeLists.txt``). The driver compiles them on the user's
machine; ggml's OpenCL backend takes only Adreno and Intel GPUs and refuses any other device
(``ggml_opencl_probe_devices``: "unsupported GPU"). Upstream releases an OpenCL build only for
Adreno (Windows arm64 and Android); the fork's installer asks for no OpenCL kind, so no host is
routed here: :data:`INSTALL_KINDS` names the bundle in the manifest for those who fetch it by
hand.

Left at their defaults (:data:`~bundlegraph.schemas.backend.DEFAULTS`): no spec table (the SDK is
pinned by its lock, :data:`.sdk.LOCK`; nothing else is a choice), no GPU compiler (the driver
compiles the embedded OpenCL C kernels at run time: :data:`COMPILED_BY_DRIVER`), no CPU fallback
and no vendor routing (no host asks for an OpenCL kind).
"""

from __future__ import annotations

ORDER = 50
"""Its place in the registry (:data:`bundlegraph.schemas.backend.BACKENDS`, lowest first)."""

TITLE = "OpenCL"
"""Its name in messages."""

GPU = True
"""A GPU backend: a driver (the ICD loader, and the vendor's ICD behind it), device code (OpenCL C
kernels embedded in the library) and GPU smoke steps."""

LIBRARY = "ggml-opencl"
"""ggml's OpenCL backend library stem (``libggml-opencl.so``)."""

DRIVERS: dict[str, str] = {"linux": "libOpenCL.so.1"}
"""The ICD loader: installed with every OpenCL driver (Debian's ``ocl-icd-libopencl1``, which
Intel's ``intel-opencl-icd`` depends on), so an OpenCL bundle may import it without shipping it,
and never ships it (the host's reads the host's driver list, ``/etc/OpenCL/vendors``)."""

DRIVER_WHAT = "the OpenCL ICD loader"
"""What the driver library is, for messages."""

INSTALL_KINDS: dict[tuple[str, str], str] = {("linux", "x64"): "linux-opencl"}
"""``(os, arch)`` -> the install kind of this backend's bundles: a name of ours (the fork's
installer has none), so the manifest lists the bundle; no host asks for it (:data:`HOST_GPUS`)."""


COMPILED_BY_DRIVER = True
"""The OpenCL driver compiles the embedded OpenCL C kernels on the user's machine when the
backend starts."""

CMAKE_OPTION: str | None = "GGML_OPENCL"
"""ggml's CMake option that builds this backend (``ggml/CMakeLists.txt``); on unless a spec says
otherwise (:mod:`bundlegraph.specs.derive`)"""
