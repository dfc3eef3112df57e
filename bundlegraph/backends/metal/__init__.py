"""The Metal backend (Apple silicon GPUs): ``ggml-metal``, the framework it links, its install
kind. Registered in :data:`bundlegraph.schemas.backend.BACKENDS`.

Sources: Apple's Metal framework is ``/System/Library/Frameworks/Metal.framework`` on every
macOS (a system library: never shipped); ggml builds ``libggml-metal.dylib`` with
``GGML_METAL=ON`` (the default on Apple) and, with ``GGML_METAL_EMBED_LIBRARY=ON``, embeds its
compiled shader library in it, so no ``default.metallib`` travels beside it. The fork builds its
``macos-arm64`` bundle that way on ``macos-26`` with ``CMAKE_OSX_DEPLOYMENT_TARGET=13.3``, and its
``macos-x64`` bundle with ``GGML_METAL=OFF`` (a CPU bundle: :mod:`.cpu`)
(``unsloth-prebuilt.yml``'s ``MACOS_INCLUDE``, ``unsloth-prebuilt-macos.yml``). The install kind
is the installer's (:data:`~bundlegraph.schemas.installer.CHECKED_AGAINST`: ``macos-arm64``,
its runtime groups name ``lib*.dylib`` and treat metal, blas and rpc as optional).

Left at their defaults (:data:`~bundlegraph.schemas.backend.DEFAULTS`): no SDK beyond the runner's
Xcode; no GPU compiler in the machine file (with ``GGML_METAL_EMBED_LIBRARY`` ggml embeds the
Metal shader source in ``libggml-metal.dylib`` and the framework compiles it on the user's Mac,
``ggml/src/ggml-metal/CMakeLists.txt``: :data:`COMPILED_BY_DRIVER`); no CPU fallback (an Apple
silicon host asks for ``macos-arm64`` only).
"""

from __future__ import annotations

ORDER = 40
"""Its place in the registry (:data:`bundlegraph.schemas.backend.BACKENDS`, lowest first)."""

TITLE = "Metal"
"""Its name in messages."""

GPU = True
"""A GPU backend: device code (the embedded Metal library) and GPU smoke steps (on the macOS runner)."""

LIBRARY = "ggml-metal"
"""ggml's Metal backend library stem (``libggml-metal.dylib``)."""

DRIVERS: dict[str, str] = {"macos": "/System/Library/Frameworks/Metal.framework/Versions/A/Metal"}
"""The Metal framework: on every macOS, never shipped (a system library, as the Mach-O closure
allows anything under ``/System/Library/``)."""

DRIVER_WHAT = "the Metal framework"
"""What the driver library is, for messages."""

INSTALL_KINDS: dict[tuple[str, str], str] = {("macos", "arm64"): "macos-arm64"}
"""``(os, arch)`` -> the install kind of this backend's bundles (the installer's names). The
``macos-x64`` kind is the CPU backend's: the fork builds it without Metal."""


SPEC_TABLE: str | None = "metal"
"""The spec table a Metal leg must have (``[metal]``: whether the shader library is embedded); its
floor is the OS's ``[macos]`` table (the CPU-only ``macos-x64`` leg has one too)."""


COMPILED_BY_DRIVER = True
"""The Metal framework compiles the embedded shader source on the user's Mac when the
backend starts (see :attr:`COMPILER`)."""


DEPLOYMENT_TARGET = "13.3"
"""The fork's ``CMAKE_OSX_DEPLOYMENT_TARGET`` for both macOS bundles: upstream's macos-26 runner
stamps minos 26 otherwise, and those binaries do not load on older macOS
(ggml-org/llama.cpp#26370)."""


CMAKE_OPTION: str | None = "GGML_METAL"
"""ggml's CMake option that builds this backend (``ggml/CMakeLists.txt``); on unless a spec says
otherwise (:mod:`bundlegraph.specs.derive`)"""
