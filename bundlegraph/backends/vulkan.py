"""The Vulkan backend (AMD, Intel and NVIDIA GPUs through their Vulkan drivers): ``ggml-vulkan``,
the loader it links, its install kinds. Registered in :data:`bundlegraph.backends.BACKENDS`.

(The facts of issue 42's design, as the stand-in leg needs them; the installer's selection facts
and the verify rows come with the backend's own slice.) Sources: the Khronos loader is
``libvulkan.so.1`` on Linux and ``vulkan-1.dll`` on Windows, installed with the GPU driver (or
Debian's ``libvulkan1``), never shipped in a bundle; the install kinds are the installer's
(unsloth 2026.10.9 ``studio/install_llama_prebuilt.py``: ``linux-vulkan``, ``windows-vulkan``).
"""

from __future__ import annotations

NAME = "vulkan"
"""A spec's ``backend`` value."""

TITLE = "Vulkan"
"""Its name in messages, and ggml's name for its devices (``Vulkan0``)."""

GPU = True
"""A GPU backend: a driver (reached through the loader), device code (SPIR-V), GPU smoke steps."""

LIBRARY = "ggml-vulkan"
"""ggml's Vulkan backend library stem (``libggml-vulkan.so`` / ``ggml-vulkan.dll``)."""

DRIVERS: dict[str, str] = {"linux": "libvulkan.so.1", "windows": "vulkan-1.dll"}
"""The Vulkan loader per OS: present on a host with a Vulkan driver, never shipped."""

DRIVER_WHAT = "the Vulkan loader"
"""What the driver library is, for messages."""

INSTALL_KINDS: dict[tuple[str, str], str] = {("linux", "x64"): "linux-vulkan", ("windows", "x64"): "windows-vulkan"}
"""``(os, arch)`` -> the install kind of this backend's bundles (the installer's names)."""

RUNTIME_GLOBS: dict[str, tuple[str, ...]] = {}
"""No runtime files beyond the common libraries (the loader is the host's)."""

CPU_FALLBACK: frozenset[tuple[str, str]] = frozenset({("linux", "x64"), ("windows", "x64")})
"""``(os, arch)`` of the Vulkan hosts that fall back to their CPU kind when no Vulkan bundle fits."""
