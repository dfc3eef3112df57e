"""The Vulkan backend (AMD, Intel and NVIDIA GPUs through their Vulkan drivers): ``ggml-vulkan``,
the loader it links, its install kinds. Registered in :data:`bundlegraph.backends.BACKENDS`.

Sources: the Khronos loader is ``libvulkan.so.1`` on Linux (Debian's ``libvulkan1``) and
``vulkan-1.dll`` on Windows (installed with every GPU driver); a bundle imports it and never
ships it. The install kinds are the installer's (unsloth 2026.10.9
``studio/backend/utils/prebuilt/llama_backend.py`` ``INSTALL_KIND_BACKENDS``: ``linux-vulkan``,
``windows-vulkan``; it has no Linux arm64 Vulkan kind).
"""

from __future__ import annotations

NAME = "vulkan"
"""A spec's ``backend`` value."""

TITLE = "Vulkan"
"""Its name in messages."""

GPU = True
"""A GPU backend: it has a driver (the loader), device code (SPIR-V shaders) and GPU smoke steps."""

LIBRARY = "ggml-vulkan"
"""ggml's Vulkan backend library stem (``libggml-vulkan.so`` / ``ggml-vulkan.dll``)."""

DRIVERS: dict[str, str] = {"linux": "libvulkan.so.1", "windows": "vulkan-1.dll"}
"""The Vulkan loader per OS: present on a host with a Vulkan driver, never shipped."""

DRIVER_WHAT = "the Vulkan loader"
"""What the driver library is, for messages."""

INSTALL_KINDS: dict[tuple[str, str], str] = {
    ("linux", "x64"): "linux-vulkan",
    ("linux", "arm64"): "linux-arm64-vulkan",  # a-sdk's stand-in: b-vkfacts' facts hold the installer's own
    ("windows", "x64"): "windows-vulkan",
}
"""``(os, arch)`` -> the install kind of this backend's bundles (the installer's names; the
installer has no ``linux-arm64-vulkan``: this stand-in lets the linux-arm64 spec load until
b-vkfacts' facts, where both Linux arches ask for ``linux-vulkan``, replace this module)."""

RUNTIME_GLOBS: dict[str, tuple[str, ...]] = {}
"""No runtime files the installer checks beyond the common libraries."""

CPU_FALLBACK: frozenset[tuple[str, str]] = frozenset()
"""``(os, arch)`` of the Vulkan hosts that fall back to their CPU kind (the installer tries the
CPU bundle after Vulkan itself; selection's rule is b-vkfacts' slice)."""

SPEC_TABLE: str | None = "vulkan"
"""The spec table a Vulkan leg must have (``[vulkan]``: its SDK)."""

SDK: str | None = "bundlegraph.toolkit.vulkan"
"""The module that plans, keys and installs this backend's SDK (:class:`bundlegraph.toolkit.sdk.SdkModule`)."""

COMPILER: str | None = "glslc"
"""The machine-file ``[binaries]`` entry a Vulkan leg's toolchain must name (``glslc = "glslc"``)."""
