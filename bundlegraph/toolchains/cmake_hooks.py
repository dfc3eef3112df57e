"""The CMake script bundlegraph injects into a leg's configure (``bundlegraph-hooks.cmake``,
passed as ``CMAKE_PROJECT_TOP_LEVEL_INCLUDES``, CMake >= 3.24): a CUDA leg's always, any leg's
when the release declares a fingerprint. It changes no file of the source tree.

- ``fingerprint`` (the release's ``coverage.fingerprint``, passed as the cache entry
  ``BUNDLEGRAPH_FINGERPRINT``): appends `` (<fingerprint>)`` to ``BUILD_TARGET`` whenever the
  project sets it. llama.cpp's ``cmake/build-info.cmake`` sets ``BUILD_TARGET`` (a normal
  variable, so a cache entry of that name would be shadowed) and ``common/build-info.cpp.in``
  compiles it into ``LLAMA_BUILD_TARGET``, printed by ``--version`` as "built with <compiler>
  for <target>". The fork's release appends ``set(BUILD_TARGET "${BUILD_TARGET} (Compiled by
  ...)")`` to that file; a ``variable_watch`` does the same without editing the tree, the hooks
  file being read at the first ``project()``, before the project sets the variable. A value
  that already ends in the stamp is left alone (the watch sees its own ``set``).

Once the top-level directory is processed (``cmake_language(DEFER ...)``, CMake >= 3.19) the
CUDA hooks walk every build-system target and, for targets with ``.cu`` sources,

- ``seeds``: gives each ``.cu`` source its own ``-frandom-seed=<path relative to the source
  tree>`` (a source property, ``TARGET_DIRECTORY``: CMake >= 3.18). nvcc uses the seed for the
  random numbers in the names it generates (nvcc --help, ``--frandom-seed``: "can be used to
  generate deterministically identical ptx and object files ... users are responsible for
  assigning different seed to different files") and passes it to GCC/Clang host compilers too.
  Measured on the real leg: ggml-cuda's ``fattn-vec-instance-f16-f16.cu`` compiled twice
  differs in its device code (``.nv_fatbin``) without a seed, and is identical with one. The
  seed is the relative path, so it is the same in every work directory and on every runner.
- ``host_flag`` (MSVC CUDA legs): adds ``-Xcompiler=<flag>`` (``/Zc:preprocessor``) to CUDA
  compiles of targets whose options and ``CMAKE_CUDA_FLAGS`` lack it; never twice.

Each action prints one ``bundlegraph:`` status line per target into the configure log.
"""

from __future__ import annotations

from typing import Any

_TARGETS = r"""function( _bundlegraph_targets dir out )
    get_property( tgts DIRECTORY "${dir}" PROPERTY BUILDSYSTEM_TARGETS )
    get_property( subs DIRECTORY "${dir}" PROPERTY SUBDIRECTORIES )
    foreach( s IN LISTS subs )
        _bundlegraph_targets( "${s}" more )
        list( APPEND tgts ${more} )
    endforeach()
    set( ${out} ${tgts} PARENT_SCOPE )
endfunction()
function( _bundlegraph_cuda_targets out )
    _bundlegraph_targets( "${CMAKE_SOURCE_DIR}" all )
    set( cu "" )
    foreach( t IN LISTS all )
        get_target_property( type ${t} TYPE )
        if( type STREQUAL "INTERFACE_LIBRARY" OR type STREQUAL "UTILITY" )
            continue()
        endif()
        get_target_property( srcs ${t} SOURCES )
        if( "${srcs}" MATCHES "\\.cu(;|$|>)" )
            list( APPEND cu ${t} )
        endif()
    endforeach()
    set( ${out} ${cu} PARENT_SCOPE )
endfunction()
"""

_SEEDS = r"""function( _bundlegraph_cuda_seeds )
    _bundlegraph_cuda_targets( cu )
    foreach( t IN LISTS cu )
        get_target_property( srcs ${t} SOURCES )
        get_target_property( tdir ${t} SOURCE_DIR )
        set( n 0 )
        foreach( s IN LISTS srcs )
            if( NOT s MATCHES "\\.cu$" OR s MATCHES "\\$<" )
                continue()
            endif()
            get_filename_component( abs "${s}" ABSOLUTE BASE_DIR "${tdir}" )
            file( RELATIVE_PATH rel "${CMAKE_SOURCE_DIR}" "${abs}" )
            get_property( have SOURCE "${abs}" TARGET_DIRECTORY ${t} PROPERTY COMPILE_OPTIONS )
            if( NOT "${have}" MATCHES "-frandom-seed=" )
                set_property( SOURCE "${abs}" TARGET_DIRECTORY ${t} APPEND PROPERTY COMPILE_OPTIONS "-frandom-seed=${rel}" )
                math( EXPR n "${n} + 1" )
            endif()
        endforeach()
        message( STATUS "bundlegraph: ${t}: -frandom-seed=<source path> on ${n} CUDA sources" )
    endforeach()
endfunction()
cmake_language( DEFER DIRECTORY "${CMAKE_SOURCE_DIR}" CALL _bundlegraph_cuda_seeds )
"""

_HOST_FLAG = r"""function( _bundlegraph_cuda_host_flag )
    _bundlegraph_cuda_targets( cu )
    foreach( t IN LISTS cu )
        get_target_property( opts ${t} COMPILE_OPTIONS )
        get_property( dopts DIRECTORY "${CMAKE_SOURCE_DIR}" PROPERTY COMPILE_OPTIONS )
        string( FIND "${opts};${dopts};${CMAKE_CUDA_FLAGS}" "@FLAG@" pos )
        if( pos EQUAL -1 )
            target_compile_options( ${t} PRIVATE "$<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=@FLAG@>" )
            message( STATUS "bundlegraph: ${t}: added -Xcompiler=@FLAG@ to its CUDA sources" )
        else()
            message( STATUS "bundlegraph: ${t}: already passes @FLAG@" )
        endif()
    endforeach()
endfunction()
cmake_language( DEFER DIRECTORY "${CMAKE_SOURCE_DIR}" CALL _bundlegraph_cuda_host_flag )
"""


_FINGERPRINT = r"""macro( _bundlegraph_fingerprint var access value )
    if( "${access}" STREQUAL "MODIFIED_ACCESS" )
        string( FIND "${value}" " (${BUNDLEGRAPH_FINGERPRINT})" _bundlegraph_at )
        if( _bundlegraph_at EQUAL -1 )
            set( BUILD_TARGET "${value} (${BUNDLEGRAPH_FINGERPRINT})" )
            message( STATUS "bundlegraph: BUILD_TARGET stamped: ${BUILD_TARGET}" )
        endif()
    endif()
endmacro()
if( NOT BUNDLEGRAPH_FINGERPRINT )
    message( FATAL_ERROR "bundlegraph: the hooks stamp a fingerprint, but BUNDLEGRAPH_FINGERPRINT is not set" )
endif()
variable_watch( BUILD_TARGET _bundlegraph_fingerprint )
"""


def hooks_script(*, seeds: bool, host_flag: str | None = None, fingerprint: bool = False) -> str:
    """The hooks file's text: per-source ``-frandom-seed`` when ``seeds``, ``-Xcompiler=<host_flag>``
    when given, the ``BUILD_TARGET`` stamp when ``fingerprint``; empty when none is asked for.
    Without ``fingerprint`` the text is what it always was (configure keys hold it)."""
    if not seeds and not host_flag and not fingerprint:
        return ""
    what: list[str] = []
    parts = []
    if seeds or host_flag:
        parts.append(_TARGETS)
    if seeds:
        what.append("per-source -frandom-seed")
        parts.append(_SEEDS)
    if host_flag:
        what.append(f"host-compiler flag {host_flag}")
        parts.append(_HOST_FLAG.replace("@FLAG@", host_flag))
    if fingerprint:
        what.append("the fingerprint in BUILD_TARGET")
        parts.append(_FINGERPRINT)
    return f"# Generated by bundlegraph for CUDA sources: {', '.join(what)}.\n" + "".join(parts)


def reproducibility_problems(commands: list[dict[str, Any]]) -> list[str]:
    """For ``compile_commands.json`` entries (CMake's format: ``file`` and ``command`` or
    ``arguments``): every nvcc compile must pass ``-objtemp`` and exactly one ``-frandom-seed=``,
    and no two sources may share a seed. Returns one line per offending source."""
    out = []
    seen: dict[str, str] = {}
    for c in commands:
        args = c.get("arguments") or str(c.get("command", "")).split()  # tokens sought hold no blanks
        f = str(c.get("file"))
        if not args or not (f.endswith(".cu") or "nvcc" in args[0].lower()):
            continue
        seeds = [a for a in args if a.startswith(("-frandom-seed=", "--frandom-seed="))]
        if "-objtemp" not in args and "--objdir-as-tempdir" not in args:
            out.append(f"{f}: its nvcc command lacks -objtemp (tmpxft_<pid> names would land in the object)")
        if len(seeds) != 1:
            out.append(f"{f}: -frandom-seed appears {len(seeds)} times in its nvcc command (expected once)")
        elif seeds[0] in seen and seen[seeds[0]] != f:
            out.append(f"{f}: shares {seeds[0]} with {seen[seeds[0]]}")
        else:
            seen[seeds[0]] = f
    return out


__all__ = ["hooks_script", "reproducibility_problems"]
