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
"""

from __future__ import annotations

from ..verbs import no_required_files, no_table_targets

NAME = "opencl"
"""A spec's ``backend`` value."""

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

RUNTIME_GLOBS: dict[str, tuple[str, ...]] = {}
"""No runtime files beyond the backend library (the kernels are inside it, the loader is the host's)."""

CPU_FALLBACK: frozenset[tuple[str, str]] = frozenset()
"""No host asks for an OpenCL kind, so none falls back from one."""

REQUIRED_PROGRAMS: tuple[str, ...] = ()
"""No program beyond every bundle's."""

HOST_GPUS: tuple[str, ...] = ()
"""No vendor routing: the installer sends Intel GPUs to Vulkan and knows no Adreno Linux host."""

SPEC_TABLE: str | None = None
"""No spec table: the SDK is pinned by its lock (:data:`.sdk.LOCK`), nothing else is a choice."""

SDK: str | None = f"{__name__}.sdk"
"""The module that plans, keys and installs the OpenCL SDK (headers and ICD loader from Debian)."""

COMPILER: str | None = None
"""No GPU compiler: the driver compiles the embedded OpenCL C kernels at run time."""

SMOKE: str | None = f"{__name__}.smoke"
"""The module of an OpenCL leg's smoke GPU steps (the driver an ICD file names, ``GPUOpenCL``)."""

COMPILED_BY_DRIVER = True
"""The OpenCL driver compiles the embedded OpenCL C kernels on the user's machine when the
backend starts."""

CMAKE_OPTION: str | None = "GGML_OPENCL"
"""ggml's CMake option that builds this backend (``ggml/CMakeLists.txt``); on unless a spec says
otherwise (:mod:`bundlegraph.specs.derive`)"""

CMAKE_TARGETS_KEY: str | None = None
"""the CMake cache entry that lists the GPU targets to compile for (none: the driver compiles)"""


table_targets = no_table_targets
required_files = no_required_files
