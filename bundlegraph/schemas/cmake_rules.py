"""The rules on a spec's ``[cmake]`` table, checked when the specs load (so ``bundlegraph
matrix`` refuses a bad spec before CI fans out, and no ``source:`` task runs first).

- :data:`FORCED_OFF`: ``GGML_NATIVE`` (a bundle runs on machines other than the builder) and
  the llama.cpp options that download during configure or build (``LLAMA_BUILD_BORINGSSL``,
  ``LLAMA_BUILD_LIBRESSL``, ``LLAMA_USE_PREBUILT_UI``, ``LLAMA_LLGUIDANCE``,
  ``GGML_OPENMP_FETCH``, ``GGML_CPU_KLEIDIAI``, ``GGML_CUDA_CUB_3DOT2``) must be OFF;
- :data:`DERIVED`: entries bundlegraph sets itself (from the spec, the toolchain, the release)
  may not be set by a spec;
- a BOOL option gets a TOML boolean or one of CMake's boolean words (:data:`BOOL_WORDS`:
  ``ON``/``OFF``/``TRUE``/``FALSE``/``YES``/``NO``/``Y``/``N``/``1``/``0``, any case). CMake reads
  any other text as true, so ``GGML_CUDA_NCCL = "flase"`` would link NCCL and
  ``LLAMA_BUILD_TESTS = "nope"`` build the tests, and configure would say nothing.

  The specs load before any source tree exists, so which keys are BOOL options is not known
  then (configure knows, from ``CMakeCache.txt``: :mod:`bundlegraph.pipeline.compile.cmake_keys`).
  The rule used, :func:`bool_problem`: for the keys known to be BOOL options (:data:`BOOL_OPTIONS`:
  those bundlegraph reads, and llama.cpp's common ``option()`` names) any value other than a
  boolean or a boolean word is refused, naming the file and key; for any other
  key, a text one edit away from a constant of two letters or more (``"flase"``, ``"of"``,
  ``"ture"``, ``"yse"``: a letter changed, added, dropped, or two neighbours swapped) is refused
  as a misspelt boolean. Other text passes (a STRING option's ``"none"`` or ``"speed"``: ggml's
  ``GGML_CUDA_COMPRESSION_MODE``), and configure's key check still applies: a key the configured
  tree declares BOOL whose value is no boolean word fails configure, naming file and key.

The configure stage (:mod:`bundlegraph.pipeline.compile.cmake_cache`) forces and derives them.
"""

from __future__ import annotations

from ..core.errors import did_you_mean
from .records import BundleSpec, CMakeValue, Release, cmake_constant

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
FETCHED_BY_OPTION = {"GGML_CUDA_CUB_3DOT2": "CCCL"}
"""The forced-off options whose download a release can pin instead (``FetchContent_Declare`` name
in llama.cpp's CMake: ``ggml/src/ggml-cuda/CMakeLists.txt`` fetches CCCL v3.2.0 with git)."""
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
    *(f"FETCHCONTENT_SOURCE_DIR_{n.upper()}" for n in FETCHED_BY_OPTION.values()),
    "CMAKE_EXPORT_COMPILE_COMMANDS",
    "CMAKE_PROJECT_TOP_LEVEL_INCLUDES",
    "CMAKE_POLICY_DEFAULT_CMP0141",
    "BUNDLEGRAPH_FINGERPRINT",
    "CMAKE_MSVC_DEBUG_INFORMATION_FORMAT",
)


LLAMA_BOOL_OPTIONS = frozenset(
    """
    LLAMA_USE_SYSTEM_GGML LLAMA_ALL_WARNINGS LLAMA_ALL_WARNINGS_3RD_PARTY LLAMA_FATAL_WARNINGS
    LLAMA_SANITIZE_THREAD LLAMA_SANITIZE_ADDRESS LLAMA_SANITIZE_UNDEFINED LLAMA_BUILD_COMMON
    LLAMA_BUILD_TESTS LLAMA_BUILD_TOOLS LLAMA_BUILD_EXAMPLES LLAMA_BUILD_SERVER LLAMA_TOOLS_INSTALL
    LLAMA_CURL LLAMA_OPENSSL BUILD_SHARED_LIBS GGML_STATIC GGML_LTO GGML_CCACHE GGML_ALL_WARNINGS
    GGML_CPU_HBM GGML_CPU_REPACK GGML_AVX GGML_AVX2 GGML_AVX512 GGML_FMA GGML_F16C GGML_CPU_ALL_VARIANTS
    GGML_BLAS GGML_LLAMAFILE GGML_OPENMP GGML_RPC GGML_CUDA GGML_CUDA_FORCE_MMQ GGML_CUDA_FORCE_CUBLAS
    GGML_CUDA_NO_PEER_COPY GGML_CUDA_NO_VMM GGML_CUDA_FA GGML_CUDA_FA_ALL_QUANTS GGML_CUDA_GRAPHS
    GGML_CUDA_NCCL GGML_HIP GGML_HIP_GRAPHS GGML_HIP_RCCL GGML_HIP_NO_VMM GGML_HIP_MMQ_MFMA GGML_VULKAN
    GGML_METAL GGML_METAL_NDEBUG GGML_METAL_EMBED_LIBRARY GGML_SYCL GGML_OPENCL GGML_BUILD_TESTS
    GGML_BUILD_EXAMPLES
    """.split()
)
"""Options llama.cpp declares with ``option()`` (so BOOL), in its top-level and ``ggml/``
``CMakeLists.txt`` (ggml-org/llama.cpp, 2026): the ones a bundle spec is likely to set. Known at
load, before any tree is configured; configure checks every other BOOL key against the tree's own
``CMakeCache.txt`` (:func:`bundlegraph.pipeline.compile.cmake_keys.judge`)."""

BOOL_OPTIONS = frozenset((*FORCED_OFF, "GGML_CPU", "GGML_BACKEND_DL")) | LLAMA_BOOL_OPTIONS
"""The keys known to be BOOL options when the specs load: those bundlegraph reads itself
(:meth:`BundleSpec.cmake_bool`) and :data:`LLAMA_BOOL_OPTIONS`. Their value must be a TOML
boolean or one of :data:`BOOL_WORDS`, nothing else."""

BOOL_WORDS = ("ON", "OFF", "TRUE", "FALSE", "YES", "NO", "Y", "N", "1", "0")
"""What a BOOL option's value may be as text (any case): CMake's boolean words. CMake reads any
other text but its false constants (``IGNORE``, ``NOTFOUND``, ``*-NOTFOUND``, empty) as true."""

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
        word = value.strip().upper()
        if word in BOOL_WORDS or (not strict and cmake_constant(value) is not None):
            return None
        if strict:
            near = any(_one_edit(word, w) for w in _WORDS)
            return (
                f"{value!r} is not a boolean: a BOOL option takes true or false, or one of CMake's boolean words "
                f"({'/'.join(BOOL_WORDS)}, any case){did_you_mean(word, _WORDS) if near else ''}; CMake reads "
                f"other text as true"
            )
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


def served_options(release: Release | None) -> frozenset[str]:
    """The download options whose source ``release`` pins (``[[fetchcontent]]``): a leg may turn them on."""
    return frozenset(p.option for p in release.fetchcontent) if release is not None else frozenset()


def cmake_problems(spec: BundleSpec, spec_file: str, served: frozenset[str] = frozenset()) -> list[str]:
    """One ``<file>: cmake.<KEY>: ...`` line per entry of ``spec.cmake`` whose value is not a
    boolean where one is expected (:func:`bool_problem`), that turns on a forced-off option or
    that sets a derived entry. ``served``: the download options whose source the release pins
    (``[[fetchcontent]]`` of ``release.toml``, :mod:`bundlegraph.pipeline.compile.fetchcontent`),
    which a leg may turn on."""
    out = []
    for k, v in spec.cmake.items():
        bad = bool_problem(k, v)
        if bad:
            out.append(f"{spec_file}: cmake.{k}: {bad}")
        elif k in FORCED_OFF and k not in served and spec.cmake_bool(k, False) is not False:
            if k == "GGML_NATIVE":
                why = "a bundle must run on other machines"
            elif k in FETCHED_BY_OPTION:
                why = (
                    f"it downloads {FETCHED_BY_OPTION[k]} at configure; pin that source in release.toml "
                    f'[[fetchcontent]] (name = "{FETCHED_BY_OPTION[k]}", option = "{k}") to turn it on'
                )
            else:
                why = "it downloads during the build"
            out.append(f"{spec_file}: cmake.{k}: must be OFF ({why})")
        elif k in DERIVED:
            out.append(f"{spec_file}: cmake.{k}: set by bundlegraph (from the spec/toolchain), remove it")
    return out
