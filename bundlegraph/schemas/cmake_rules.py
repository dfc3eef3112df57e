"""The rules on a spec's ``[cmake]`` table, checked when the specs load (so ``bundlegraph
matrix`` refuses a bad spec before CI fans out, and no ``source:`` task runs first).

- :data:`FORCED_OFF`: ``GGML_NATIVE`` (a bundle runs on machines other than the builder) and
  the llama.cpp options that download during configure or build (``LLAMA_BUILD_BORINGSSL``,
  ``LLAMA_BUILD_LIBRESSL``, ``LLAMA_USE_PREBUILT_UI``, ``LLAMA_LLGUIDANCE``,
  ``GGML_OPENMP_FETCH``, ``GGML_CPU_KLEIDIAI``, ``GGML_CUDA_CUB_3DOT2``) must be OFF;
- :data:`DERIVED`: entries bundlegraph sets itself (from the spec, the toolchain, the release)
  may not be set by a spec;
- a BOOL option gets a TOML boolean or one of CMake's own constants (``ON``/``OFF``/``TRUE``/
  ``FALSE``/``YES``/``NO``/``Y``/``N``/``1``/``0``/``IGNORE``/``NOTFOUND``/``*-NOTFOUND``, any
  case: :func:`~bundlegraph.schemas.records.cmake_constant`). CMake reads any other text as
  true, so ``GGML_CUDA_NCCL = "flase"`` would link NCCL and configure would say nothing.

  The specs load before any source tree exists, so which keys are BOOL options is not known
  then (configure knows, from ``CMakeCache.txt``: :mod:`bundlegraph.pipeline.compile.cmake_keys`).
  The rule used, :func:`bool_problem`: for the options bundlegraph itself reads as booleans
  (:data:`BOOL_OPTIONS`) any value other than a boolean or a constant is refused; for any other
  key, a text one edit away from a constant of two letters or more (``"flase"``, ``"of"``,
  ``"ture"``, ``"yse"``: a letter changed, added, dropped, or two neighbours swapped) is refused
  as a misspelt boolean. Other text passes (a STRING option's ``"none"`` or ``"speed"``: ggml's
  ``GGML_CUDA_COMPRESSION_MODE``), and configure's key check still applies.

The configure stage (:mod:`bundlegraph.pipeline.compile.cmake_cache`) forces and derives them.
"""

from __future__ import annotations

from ..core.errors import did_you_mean
from .records import BundleSpec, CMakeValue, cmake_constant

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
    "BUNDLEGRAPH_FINGERPRINT",
    "CMAKE_MSVC_DEBUG_INFORMATION_FORMAT",
)


BOOL_OPTIONS = (*FORCED_OFF, "GGML_CPU", "GGML_BACKEND_DL")
"""The BOOL options bundlegraph reads itself (:meth:`BundleSpec.cmake_bool`): their value must be a
boolean or a CMake constant, nothing else."""

_WORDS = ("ON", "OFF", "YES", "NO", "TRUE", "FALSE")
"""CMake's constants that a misspelling resembles (one-letter ``Y``/``N``, digits and
``IGNORE``/``NOTFOUND`` are not guessed at)."""


def _one_edit(a: str, b: str) -> bool:
    """Whether ``a`` and ``b`` differ by exactly one edit: a letter changed, added or dropped, or
    two neighbouring letters swapped (optimal string alignment distance 1)."""
    if a == b or abs(len(a) - len(b)) > 1:
        return False
    if len(a) == len(b):
        diff = [i for i in range(len(a)) if a[i] != b[i]]
        return len(diff) == 1 or (
            len(diff) == 2 and diff[1] == diff[0] + 1 and a[diff[0]] == b[diff[1]] and a[diff[1]] == b[diff[0]]
        )
    short, long_ = (a, b) if len(a) < len(b) else (b, a)
    return any(long_[:i] + long_[i + 1 :] == short for i in range(len(long_)))


def bool_problem(key: str, value: CMakeValue) -> str | None:
    """What is wrong with ``value`` for the cache entry ``key`` as a boolean (module docstring),
    as the end of a ``cmake.<KEY>: ...`` line; None when nothing is."""
    if isinstance(value, bool):
        return None
    strict = key in BOOL_OPTIONS
    if isinstance(value, str):
        if cmake_constant(value) is not None:
            return None
        word = value.strip().upper()
        if not strict and not any(_one_edit(word, w) for w in _WORDS):
            return None
        hint = did_you_mean(word, _WORDS)
        return (
            f"{value!r} is not a boolean: CMake reads any text but its constants as true{hint}; "
            f"write true or false (or ON/OFF)"
        )
    if strict and not (isinstance(value, int) and value in (0, 1)):
        return f"{value!r} is not a boolean: write true or false (or ON/OFF)"
    return None


def cmake_problems(spec: BundleSpec, spec_file: str) -> list[str]:
    """One ``<file>: cmake.<KEY>: ...`` line per entry of ``spec.cmake`` whose value is not a
    boolean where one is expected (:func:`bool_problem`), that turns on a forced-off option or
    that sets a derived entry."""
    out = []
    for k, v in spec.cmake.items():
        bad = bool_problem(k, v)
        if bad:
            out.append(f"{spec_file}: cmake.{k}: {bad}")
        elif k in FORCED_OFF and spec.cmake_bool(k, False) is not False:
            why = "a bundle must run on other machines" if k == "GGML_NATIVE" else "it downloads during the build"
            out.append(f"{spec_file}: cmake.{k}: must be OFF ({why})")
        elif k in DERIVED:
            out.append(f"{spec_file}: cmake.{k}: set by bundlegraph (from the spec/toolchain), remove it")
    return out
