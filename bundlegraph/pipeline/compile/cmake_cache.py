"""The CMake cache entries of a leg: the spec's ``[cmake]`` table plus what every bundle needs.

Forced for every leg (a spec asking otherwise is refused when the specs load, naming its file
and key: :mod:`bundlegraph.schemas.cmake_rules`):

- ``GGML_NATIVE=OFF``: a bundle runs on machines other than the builder;
- nothing downloads during configure or build: ``FETCHCONTENT_FULLY_DISCONNECTED=ON`` and the
  llama.cpp options that fetch (``LLAMA_BUILD_BORINGSSL``, ``LLAMA_BUILD_LIBRESSL``,
  ``LLAMA_USE_PREBUILT_UI``, ``LLAMA_LLGUIDANCE``, ``GGML_OPENMP_FETCH``, ``GGML_CPU_KLEIDIAI``,
  ``GGML_CUDA_CUB_3DOT2``) are OFF.

Derived: ``CMAKE_BUILD_TYPE=Release``; ``CMAKE_CUDA_ARCHITECTURES`` from ``cuda.archs`` (CMake
list ``120;121``); on Linux ``CMAKE_INSTALL_RPATH=$ORIGIN`` with
``CMAKE_BUILD_WITH_INSTALL_RPATH=ON`` so the libraries in the build tree already carry
``$ORIGIN`` and never the build directory; ``LLAMA_BUILD_COMMIT`` (first 7 hex of the source
commit, as llama.cpp's ``build-info.cmake`` writes it) and ``LLAMA_BUILD_NUMBER`` (the release
tag's number); ``BUNDLEGRAPH_FINGERPRINT`` when the release declares a fingerprint.

On Windows (every Windows leg targets the MSVC ABI: cl.exe, nvcc with cl.exe, clang): debug
information embedded in each object or none, never a program database shared by a target's
compiles, which a compiler cache cannot cache (ccache's manual, "Windows": ``/Zi`` is
uncacheable, ``/Z7`` is): ``CMAKE_MSVC_DEBUG_INFORMATION_FORMAT`` = :data:`MSVC_DEBUG_INFORMATION`
(``/Z7`` in Debug and RelWithDebInfo, none in Release), with policy CMP0141 (CMake 3.25; it makes
CMake read that variable instead of putting ``/Zi`` in its default flags) set NEW by
``CMAKE_POLICY_DEFAULT_CMP0141``: a cache entry, since a policy default must be set before the
project's ``cmake_minimum_required`` runs, which is before the toolchain file is read.
"""

from __future__ import annotations

from ...core.errors import SpecError
from ...core.platforms import platform
from ...schemas import backend as backends
from ...schemas.cmake_rules import DERIVED, FORCED_OFF, cmake_problems
from ...schemas.records import BundleSpec, CMakeValue

__all__ = ["DERIVED", "FORCED_OFF", "MSVC_DEBUG_INFORMATION", "cache_entries", "render_value"]

MSVC_DEBUG_INFORMATION = "$<$<CONFIG:Debug,RelWithDebInfo>:Embedded>"
"""``CMAKE_MSVC_DEBUG_INFORMATION_FORMAT`` of the Windows legs: ``/Z7`` (embedded) where a
configuration has debug information, none in Release (CMake's documentation of the variable)."""


def render_value(v: CMakeValue) -> str:
    """A spec value as a ``-D`` value: bools ON/OFF, lists ``;``-joined."""
    if isinstance(v, bool):
        return "ON" if v else "OFF"
    if isinstance(v, list):
        return ";".join(str(x) for x in v)
    return str(v)


def backend_entries(spec: BundleSpec) -> dict[str, str]:
    """The cache entries leg ``spec``'s backend derives from its own table (a CUDA leg's
    ``CMAKE_CUDA_ARCHITECTURES`` from ``[cuda] archs``): its package's ``configure`` module's
    ``cache_entries`` (:class:`bundlegraph.pipeline.configure.ConfigureSide`); none for a backend
    without one."""
    side = backends.plug_in(backends.backend(spec.backend), "configure")
    entries = getattr(side, "cache_entries", None)
    got: dict[str, str] = entries(spec) if entries is not None else {}
    return got


def cache_entries(
    spec: BundleSpec,
    spec_file: str,
    *,
    commit: str | None,
    build_number: int,
    fingerprint: str | None = None,
    fetched: dict[str, dict[str, str]] | None = None,
) -> dict[str, str]:
    """``{name: value}`` sorted by name; ``fingerprint`` (the release's ``coverage.fingerprint``)
    adds ``BUNDLEGRAPH_FINGERPRINT``, which the configure's hooks file folds into ``BUILD_TARGET``
    (:mod:`bundlegraph.toolchains.cmake_hooks`); without it the entries are what they always were.
    ``fetched``: ``{option: {"FETCHCONTENT_SOURCE_DIR_<NAME>": folder}}`` for the download options
    the spec turns on whose source the release pins (:mod:`.fetchcontent`): the option keeps the
    spec's ON and the folder is added. Raises :class:`SpecError` (``<file>: cmake.<KEY>: ...``)
    when the spec turns on a forced-off option that is not served so, or sets a derived entry."""
    fetched = fetched or {}
    problems = cmake_problems(spec, spec_file, frozenset(fetched))  # checked at load too
    if problems:
        raise SpecError(problems)
    out = {k: render_value(v) for k, v in spec.cmake.items()}
    for k in FORCED_OFF:
        if k not in fetched:
            out[k] = "OFF"
    for dirs in fetched.values():
        out.update(dirs)
    out["FETCHCONTENT_FULLY_DISCONNECTED"] = "ON"
    out["CMAKE_BUILD_TYPE"] = "Release"
    out.update(backend_entries(spec))
    plat = platform(spec.os)
    if plat.rpath:
        out["CMAKE_INSTALL_RPATH"] = plat.rpath
        out["CMAKE_BUILD_WITH_INSTALL_RPATH"] = "ON"
    if plat.msvc_host:
        out["CMAKE_POLICY_DEFAULT_CMP0141"] = "NEW"
        out["CMAKE_MSVC_DEBUG_INFORMATION_FORMAT"] = MSVC_DEBUG_INFORMATION
    out["LLAMA_BUILD_COMMIT"] = (commit or "unknown")[:7]
    out["LLAMA_BUILD_NUMBER"] = str(build_number)
    if fingerprint:
        out["BUNDLEGRAPH_FINGERPRINT"] = fingerprint
    return dict(sorted(out.items()))
