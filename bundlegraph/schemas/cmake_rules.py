"""The rules on a spec's ``[cmake]`` table, checked when the specs load (so ``bundlegraph
matrix`` refuses a bad spec before CI fans out, and no ``source:`` task runs first).

- :data:`FORCED_OFF`: ``GGML_NATIVE`` (a bundle runs on machines other than the builder) and
  the llama.cpp options that download during configure or build (``LLAMA_BUILD_BORINGSSL``,
  ``LLAMA_BUILD_LIBRESSL``, ``LLAMA_USE_PREBUILT_UI``, ``LLAMA_LLGUIDANCE``,
  ``GGML_OPENMP_FETCH``, ``GGML_CPU_KLEIDIAI``, ``GGML_CUDA_CUB_3DOT2``) must be OFF;
- :data:`DERIVED`: entries bundlegraph sets itself (from the spec, the toolchain, the release)
  may not be set by a spec.

The configure stage (:mod:`bundlegraph.pipeline.compile.cmake_cache`) forces and derives them.
"""

from __future__ import annotations

from .records import BundleSpec

FORCED_OFF = (
    "GGML_NATIVE",
    "LLAMA_BUILD_BORINGSSL",
    "LLAMA_BUILD_LIBRESSL",
    "LLAMA_USE_PREBUILT_UI",
    "LLAMA_LLGUIDANCE",
    "GGML_OPENMP_FETCH",
    "GGML_CPU_KLEIDIAI",
    "GGML_CUDA_CUB_3DOT2",
)
DERIVED = (
    "CMAKE_BUILD_TYPE",
    "CMAKE_CUDA_ARCHITECTURES",
    "CMAKE_INSTALL_RPATH",
    "CMAKE_BUILD_WITH_INSTALL_RPATH",
    "LLAMA_BUILD_COMMIT",
    "LLAMA_BUILD_NUMBER",
    "CMAKE_TOOLCHAIN_FILE",
    "CMAKE_MAKE_PROGRAM",
    "FETCHCONTENT_FULLY_DISCONNECTED",
    "CMAKE_EXPORT_COMPILE_COMMANDS",
    "CMAKE_PROJECT_TOP_LEVEL_INCLUDES",
    "CMAKE_POLICY_DEFAULT_CMP0141",
    "CMAKE_MSVC_DEBUG_INFORMATION_FORMAT",
)


def cmake_problems(spec: BundleSpec, spec_file: str) -> list[str]:
    """One ``<file>: cmake.<KEY>: ...`` line per entry of ``spec.cmake`` that turns on a
    forced-off option or sets a derived entry."""
    out = []
    for k in spec.cmake:
        if k in FORCED_OFF and spec.cmake_bool(k, False) is not False:
            why = "a bundle must run on other machines" if k == "GGML_NATIVE" else "it downloads during the build"
            out.append(f"{spec_file}: cmake.{k}: must be OFF ({why})")
        elif k in DERIVED:
            out.append(f"{spec_file}: cmake.{k}: set by bundlegraph (from the spec/toolchain), remove it")
    return out
