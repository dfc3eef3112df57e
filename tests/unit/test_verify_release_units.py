"""The pure parts of ``verify-release`` and of what it reads (no process, no file): the one-line
problems a record that is not what it should be gives, an index written before the promises keeps
its bytes, and a leg's recipe does not depend on where its build ran."""

from __future__ import annotations

import json

from bundlegraph.release.verify_release import Check, parse_record
from bundlegraph.schemas.manifest import IndexEntry, Promise, ShaIndex
from bundlegraph.schemas.provenance import build_recipe

HEADER = {
    "source_repo": "example/minillama",
    "source_commit": "0123456789abcdef0123456789abcdef01234567",
    "upstream_tag": "b42",
    "release_tag": "b42",
}


def test_a_bad_record_is_one_line_per_key_naming_the_file():
    c = Check("index")
    bad = {**HEADER, "source_commit": 42, "artifacts": {"a.zip": {"kind": "bundle", "sha256": "x"}}}
    del bad["release_tag"]
    assert parse_record("llama-prebuilt-sha256.json", json.dumps(bad).encode(), ShaIndex, c) is None
    assert c.status == "failed"
    assert c.problems == [
        "llama-prebuilt-sha256.json: source_commit: Input should be a valid string, got 42",
        "llama-prebuilt-sha256.json: release_tag: Field required",
        "llama-prebuilt-sha256.json: artifacts.a.zip.sha256: String should match pattern '^[0-9a-f]{64}$', got 'x'",
        "llama-prebuilt-sha256.json: artifacts.a.zip.source_commit: Field required",
    ]
    c = Check("agreement")
    assert parse_record("m.json", b"{not json", ShaIndex, c, where="app.zip: ") is None
    assert len(c.problems) == 1 and c.problems[0].startswith("app.zip: m.json: not JSON (Invalid JSON: ")


def test_an_index_without_promises_keeps_its_bytes_and_one_with_them_reads_back():
    entry = IndexEntry(kind="bundle", sha256="a" * 64, source_commit=HEADER["source_commit"], size=1)
    old = ShaIndex(**HEADER, artifacts={"app.zip": entry})
    assert "promised" not in old.model_dump_json() and "info_file" not in old.model_dump_json()
    assert ShaIndex.model_validate_json(old.model_dump_json()).promised is None
    new = ShaIndex(
        **HEADER,
        artifacts={"app.zip": entry},
        promised=[Promise(leg="l", asset_name="app.zip", smoke_waived="no runner starts it")],
        info_file="BUNDLE_INFO.json",
    )
    back = ShaIndex.model_validate_json(new.model_dump_json())
    assert back == new and back.promised is not None and back.promised[0].smoke_waived == "no runner starts it"


def test_a_recipe_does_not_depend_on_where_the_build_ran():
    """The same compile under other roots, whose lengths order the prefix maps otherwise: the
    recipe (in every bundle's info file) is the same, and names no root."""

    def configure(work: str, cache: str) -> dict:
        roots = {"work": work, "cache": cache, "build": f"{work}/build/l/cmake"}
        maps = " ".join(f"-ffile-prefix-map={r}={n}" for n, r in sorted(roots.items(), key=lambda kv: len(kv[1])))
        return {
            "toolchain": "gcc",
            "prefix_maps": roots,
            "compile_flags": {"CMAKE_C_FLAGS": f"-O2 {maps} -g0"},
            "cache": {"CUDA_cudart_LIBRARY": f"{cache}/toolkits/x/lib/libcudart.so", "GGML_CUDA": "ON"},
        }

    a = build_recipe(configure("/w", "/home/someone/.cache/bundlegraph"), None)
    b = build_recipe(configure("/tmp/a/much/longer/work/directory", "/c"), None)
    assert a == b
    assert a["flags"]["CMAKE_C_FLAGS"] == (
        "-O2 -ffile-prefix-map=<build>=build -ffile-prefix-map=<cache>=cache -ffile-prefix-map=<work>=work -g0"
    )
    assert a["cmake_cache"]["CUDA_cudart_LIBRARY"] == "<cache>/toolkits/x/lib/libcudart.so"
