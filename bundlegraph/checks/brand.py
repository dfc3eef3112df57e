"""The release's fingerprint in a bundle's binaries (``coverage.fingerprint`` of
``release.toml``): every ELF or PE binary that links llama.cpp's build-info must hold it, or it is
refused as "unbranded".

A binary links build-info when it holds the line :data:`BUILD_INFO_LINE`, the format
``llama_print_build_info`` prints the build target with (llama.cpp's ``common/build-info.cpp.in``:
``fprintf(stream, "built with %s for %s\\n", llama_compiler(), llama_build_target())``). The
target string (``LLAMA_BUILD_TARGET``, from ``BUILD_TARGET`` in ``cmake/build-info.cmake``) sits
in the same object, and configure stamps the fingerprint into it
(:mod:`bundlegraph.toolchains.cmake_hooks`), so a binary holding the line without the fingerprint
was built from an unstamped configure. Measured on a real llama.cpp build (node-llama-cpp's
``llama-common.dll``, Windows x64, MSVC 19.44): the line and the build-info strings are in
``llama-common.dll`` only, none of the ``ggml-*.dll`` hold it. The check reads bytes, never runs a
binary (cross-built and Windows binaries cannot run here), as the fork's gate does.
"""

from __future__ import annotations

from . import BytesLike, Failure, claims_elf_library, claims_pe

BUILD_INFO_LINE = b"built with %s for %s"
"""What marks a binary that links build-info (see the module docstring; the stand-in
``tests/data/minillama/src/build-info.c.in`` prints the same line)."""


def is_binary(path: str, data: BytesLike) -> bool:
    """A PE by name (``.dll``/``.exe``/...) or an ELF by name or magic, as the reader decides
    (:func:`bundlegraph.checks.inspect.inspect_file`)."""
    return claims_pe(path) or claims_elf_library(path) or bytes(data[:4]) == b"\x7fELF"


def unbranded(path: str, data: BytesLike, fingerprint: str) -> list[Failure]:
    """One failure when the binary at bundle path ``path`` (its bytes ``data``) links build-info
    but does not hold ``fingerprint`` (ASCII by the schema); none otherwise, and none for a file
    that is no binary."""
    if not is_binary(path, data) or data.find(BUILD_INFO_LINE) == -1:
        return []
    if data.find(fingerprint.encode("ascii")) != -1:
        return []
    return [
        Failure(
            path,
            "brand",
            f"unbranded: it links llama.cpp's build-info (holds {BUILD_INFO_LINE.decode()!r}) but not the "
            f"release's fingerprint {fingerprint!r}: its configure did not stamp BUILD_TARGET "
            f"(BUNDLEGRAPH_FINGERPRINT); configure and build the leg again",
        )
    ]


__all__ = ["BUILD_INFO_LINE", "is_binary", "unbranded"]
