"""The release's fingerprint in a bundle's binaries (``coverage.fingerprint`` of
``release.toml``): every ELF or PE binary that links llama.cpp's build-info must hold it, or it is
refused as "unbranded"; and a finished bundle must hold it somewhere (the fork's gate: "no file
carries the fingerprint").

A binary links build-info when it holds the line :data:`BUILD_INFO_LINE`, the format
``llama_print_build_info`` prints the build target with (llama.cpp's ``common/build-info.cpp.in``:
``fprintf(stream, "built with %s for %s\\n", llama_compiler(), llama_build_target())``), and
does not import the target (:data:`TARGET_SYMBOLS`) from another library: a tool may print the same line of
its own (``tools/gguf-split/gguf-split.cpp``) while the target comes from ``libllama-common.so``.
Measured on a real Linux x86_64 build of llama.cpp (GCC 12, shared libraries):
``llama-gguf-split`` holds the line, imports ``llama_build_target`` (``_Z18llama_build_targetv``) and holds no target; only
``libllama-common.so`` holds both the line and the stamped target. The
target string (``LLAMA_BUILD_TARGET``, from ``BUILD_TARGET`` in ``cmake/build-info.cmake``) sits
in the same object, and configure stamps the fingerprint into it
(:mod:`bundlegraph.toolchains.cmake_hooks`), so a binary holding the line without the fingerprint
was built from an unstamped configure. Measured on a real llama.cpp build (node-llama-cpp's
Windows x64 CUDA build, MSVC 19.44): the line and the build-info strings are in
``llama-common.dll`` only, none of the ``ggml-*.dll`` hold it. The check reads bytes (recorded by
the bundle reader, :attr:`bundlegraph.checks.inspect.FileResult.marks`), never runs a binary
(cross-built and Windows binaries cannot run here), as the fork's gate does.
"""

from __future__ import annotations

from collections.abc import Mapping

from . import Failure

BUILD_INFO_LINE = b"built with %s for %s"
"""What marks a binary that links build-info (see the module docstring; the stand-in
``tests/data/minillama/src/build-info.c.in`` prints the same line)."""

TARGET_SYMBOLS = (
    "llama_build_target",
    "_Z18llama_build_targetv",
    "?llama_build_target@@YAPEBDXZ",
    "LLAMA_BUILD_TARGET",
)
"""build-info's function returning the target (``common/build-info.h``) as C (the stand-in), the
Itanium C++ ABI (GCC, Clang: ``_Z18llama_build_targetv``, as ``nm -D`` shows it on the real
build) and MSVC's x64/ARM64 mangling of ``const char * llama_build_target(void)``, and the
variable ``LLAMA_BUILD_TARGET``: a binary importing one prints another library's target."""

WHOLE = "(bundle)"
"""The file a failure of the whole bundle names."""


def brand_marks(fingerprint: str | None) -> tuple[bytes, ...]:
    """The byte strings the bundle reader records per binary: build-info's line and the
    fingerprint (ASCII by the schema); none without a fingerprint."""
    return (BUILD_INFO_LINE, fingerprint.encode("ascii")) if fingerprint else ()


def unbranded(
    marks: Mapping[str, frozenset[bytes]],
    fingerprint: str,
    *,
    whole: bool,
    importers: frozenset[str] = frozenset(),
) -> list[Failure]:
    """``marks``: bundle path -> the marks (:func:`brand_marks`) that binary holds; ``importers``:
    the paths of binaries that import one of :data:`TARGET_SYMBOLS`. One failure per binary that links
    build-info (holds the line, imports no target) without ``fingerprint``; with ``whole`` (a
    finished bundle), one more when no binary holds it at all."""
    fp = fingerprint.encode("ascii")
    out = [
        Failure(
            path,
            "brand",
            f"unbranded: it links llama.cpp's build-info (holds {BUILD_INFO_LINE.decode()!r}) but not the "
            f"release's fingerprint {fingerprint!r}: its configure did not stamp BUILD_TARGET "
            f"(BUNDLEGRAPH_FINGERPRINT); configure and build the leg again",
        )
        for path, held in sorted(marks.items())
        if BUILD_INFO_LINE in held and fp not in held and path not in importers
    ]
    if whole and not any(fp in held for held in marks.values()):
        out.append(
            Failure(
                WHOLE,
                "brand",
                f"unbranded bundle: none of its {len(marks)} binaries holds the release's fingerprint {fingerprint!r}",
            )
        )
    return out


__all__ = ["BUILD_INFO_LINE", "TARGET_SYMBOLS", "WHOLE", "brand_marks", "unbranded"]
