"""The Vulkan backend (AMD, Intel and NVIDIA GPUs through the host's Vulkan driver):
``ggml-vulkan``, the loader it imports, its install kinds and the installer's rules for choosing
a Vulkan bundle. Registered in :data:`bundlegraph.schemas.backend.BACKENDS`.

Sources: the Khronos loader is ``libvulkan.so.1`` on Linux (its soname since Vulkan 1.0) and
``vulkan-1.dll`` on Windows (installed with every GPU driver); ggml links it directly
(``ggml/src/ggml-vulkan/CMakeLists.txt``: ``Vulkan::Vulkan``). The install kinds and the selection
facts below are the installer's (:data:`~bundlegraph.schemas.installer.CHECKED_AGAINST`:
``INSTALL_KIND_BACKENDS`` of ``studio/backend/utils/prebuilt/llama_backend.py``,
``_linux_published_attempts``, ``resolve_release_asset_choice``, ``published_asset_choice_for_kind``
and ``_route_to_vulkan_prebuilt`` of ``studio/install_llama_prebuilt.py``), stated in
``docs/installer-contract.md`` and checked against its own code by
``tests/integration/test_installer_contract.py``.

Left at their defaults (:data:`~bundlegraph.schemas.backend.DEFAULTS`): no runtime files the
installer checks beyond the backend library (the loader is the host's) and no CMake targets entry
(SPIR-V runs on any device); glslc compiles the shaders to SPIR-V when the bundle is built.
"""

from __future__ import annotations

ORDER = 20
"""Its place in the registry (:data:`bundlegraph.schemas.backend.BACKENDS`, lowest first)."""

TITLE = "Vulkan"
"""Its name in messages."""

GPU = True
"""A GPU backend: a driver (the loader, and the vendor's ICD behind it), device code (SPIR-V
shaders compiled into the library) and GPU smoke steps."""

LIBRARY = "ggml-vulkan"
"""ggml's Vulkan backend library stem (``libggml-vulkan.so`` / ``ggml-vulkan.dll``)."""

DRIVERS: dict[str, str] = {"linux": "libvulkan.so.1", "windows": "vulkan-1.dll"}
"""The Vulkan loader per OS: present on every host with a Vulkan driver, so a Vulkan bundle may
import it without shipping it, and never ships it (a bundled loader would shadow the host's, whose
driver manifests (ICDs) it must read)."""

DRIVER_WHAT = "the Vulkan loader"
"""What the driver library is, for messages."""

SHADER_EXTENSIONS: dict[str, str] = {
    "GL_KHR_cooperative_matrix": "the cooperative-matrix (coopmat) matrix multiplication shaders",
    "GL_NV_cooperative_matrix2": "NVIDIA's cooperative-matrix-2 (coopmat2) matmul and flash-attention shaders",
    "GL_NV_cooperative_matrix_decode_vector": "coopmat2's vector dequantization",
    "GL_EXT_integer_dot_product": "the integer dot-product (MMQ) shaders for quantized matmul",
    "GL_EXT_bfloat16": "the bf16 shaders",
    "GL_EXT_float_e4m3": "the FP8 (e4m3) shaders",
    "GL_EXT_float_e2m1": "the FP4 (e2m1) shaders",
}
"""The GLSL extensions ggml's CMake tests glslc for (``test_shader_extension_support`` in
``ggml/src/ggml-vulkan/CMakeLists.txt``, one test shader each under
``vulkan-shaders/feature-tests/``) -> the shader path compiled out when glslc lacks it. The names
a spec may waive (``[vulkan] waive_compiled_out``) and the info file reports
(``build.vulkan.compiled_out``)."""

INSTALL_KINDS: dict[tuple[str, str], str] = {
    ("linux", "x64"): "linux-vulkan",
    ("linux", "arm64"): "linux-vulkan",
    ("windows", "x64"): "windows-vulkan",
    ("windows", "arm64"): "windows-arm64-vulkan",
}
"""``(os, arch)`` -> the install kind of this backend's bundles (the installer's names). The
installer has no ``linux-arm64-vulkan``: both Linux arches ask for ``linux-vulkan`` and tell the
bundles apart by :data:`ARCH_TOKENS`."""


CPU_FALLBACK: frozenset[tuple[str, str]] = frozenset(INSTALL_KINDS)
"""``(os, arch)`` of the Vulkan hosts that try their CPU kind's bundle after the Vulkan one (both
are attempts: the installer falls through to CPU when the Vulkan archive is missing or fails
its checks): every host the installer routes to Vulkan."""

REQUIRED_PROGRAMS: tuple[str, ...] = ("llama-diffusion-gemma-visual-server",)
"""Programs the installer's health check requires of a published bundle of a Vulkan kind
(``runtime_payload_health_groups``: ``linux-vulkan``, ``windows-vulkan`` and
``windows-arm64-vulkan`` published bundles must carry the DiffusionGemma visual server, where a
CPU or CUDA bundle without it is only downloaded again to backfill it). Named per OS by
:meth:`~bundlegraph.core.platforms.Platform.program`."""

HOST_GPUS: tuple[str, ...] = ("intel", "amd")
"""The GPU vendors (:attr:`bundlegraph.installer.selection.Host.gpu`) whose hosts the installer routes to
this backend's kinds: an Intel GPU, or an AMD GPU without ROCm, and no physical NVIDIA GPU
(``has_intel_gpu`` / ``has_amd_gpu_without_rocm``, probed only without a usable NVIDIA driver
or ROCm)."""

ROUTED_BY_VENDOR: frozenset[tuple[str, str]] = frozenset({("linux", "x64"), ("linux", "arm64"), ("windows", "x64")})
"""``(os, arch)`` where a :data:`HOST_GPUS` host asks for the Vulkan kind. Not Windows arm64:
there a stale Intel adapter entry names no GPU, so only the loader's own device listing (a probe
this module does not model) or an explicit ``--llama-backend vulkan`` routes it."""

CUDA_BELOW_FLOOR: frozenset[tuple[str, str]] = frozenset({("windows", "x64")})
"""``(os, arch)`` of the NVIDIA hosts whose driver is below CUDA's floor
(:data:`bundlegraph.backends.cuda.MIN_DRIVER`) that ask for the Vulkan kind, then their CPU kind
(Vulkan runs on the NVIDIA GPU through its own driver; #12842 in the installer)."""

ARCH_TOKENS: dict[str, tuple[str, ...]] = {"x64": ("x64", "x86_64", "amd64"), "arm64": ("arm64", "aarch64")}
"""arch -> the words one of which a Vulkan bundle's ``bundle_profile`` + asset name (lower-case)
must hold for the installer to offer it to a host of that arch (one install kind serves both
Linux arches)."""

SPEC_TABLE: str | None = "vulkan"
"""The spec table a Vulkan leg carries (``[vulkan]``: its SDK)."""


COMPILER: str | None = "glslc"
"""The machine-file ``[binaries]`` entry a Vulkan leg's toolchain must name (``glslc = "glslc"``)."""


CMAKE_OPTION: str | None = "GGML_VULKAN"
"""ggml's CMake option that builds this backend (``ggml/CMakeLists.txt``); on unless a spec says
otherwise (:mod:`bundlegraph.specs.derive`)"""
