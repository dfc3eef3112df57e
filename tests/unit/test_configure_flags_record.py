"""The configure record keeps the flags of every GPU language the tree enabled (issue 53 item 4:
HIP's flags reach the provenance), read from a CMakeCache.txt as CMake writes it."""

from __future__ import annotations

from bundlegraph.pipeline.configure import FLAG_LANGUAGES, _compile_flags

CACHE = """# This is the CMakeCache file.
CMAKE_C_FLAGS:STRING=-O2
CMAKE_CXX_FLAGS:STRING=-O2 -fno-plt
CMAKE_CXX_FLAGS_RELEASE:STRING=-O3 -DNDEBUG
//Flags used by the HIP compiler during all build types.
CMAKE_HIP_FLAGS:STRING=-ffile-prefix-map=/src=.
CMAKE_HIP_FLAGS_RELEASE:STRING=-O3 -DNDEBUG
GGML_HIP:BOOL=ON
"""


def test_hip_flags_are_recorded_and_absent_languages_are_not(tmp_path):
    (tmp_path / "CMakeCache.txt").write_text(CACHE, encoding="utf-8")
    assert _compile_flags(tmp_path) == {
        "CMAKE_C_FLAGS": "-O2",
        "CMAKE_CXX_FLAGS": "-O2 -fno-plt",
        "CMAKE_CXX_FLAGS_RELEASE": "-O3 -DNDEBUG",
        "CMAKE_HIP_FLAGS": "-ffile-prefix-map=/src=.",
        "CMAKE_HIP_FLAGS_RELEASE": "-O3 -DNDEBUG",
    }
    assert "HIP" in FLAG_LANGUAGES and "CUDA" in FLAG_LANGUAGES
    assert _compile_flags(tmp_path / "missing") == {}
