"""Action keys and stamps: up to date only when inputs and outputs match; explain says why."""

from __future__ import annotations

import os

from bundlegraph.core import state


def test_key_is_canonical():
    assert state.key_of({"a": 1, "b": [1, 2]}) == state.key_of({"b": [1, 2], "a": 1})
    assert state.key_of({"a": 1}) != state.key_of({"a": 2})


def test_record_then_current_then_each_kind_of_change(workdir):
    out = workdir / "out.bin"
    out.write_bytes(b"x" * 10)
    inputs = {"spec": {"archs": ["120", "121"]}, "cmake": "4.4.5"}
    assert state.explain("build:a", inputs) == ["never completed (no stamp), or its last run failed or was interrupted"]
    state.record("build:a", inputs, [out])
    assert state.is_current("build:a", inputs)
    # an input changed: named, from what to what
    changed = {"spec": {"archs": ["120"]}, "cmake": "4.4.5"}
    assert state.explain("build:a", changed) == ['input spec.archs changed: ["120","121"] -> ["120"]']
    assert state.explain("build:a", {**inputs, "env": "x"}) == ['input env added: "x"']
    # touching an output without changing it keeps it current (content equal)
    os.utime(out, ns=(1, 1))
    assert state.is_current("build:a", inputs)
    # overwriting an output by hand is detected, even at the same size
    out.write_bytes(b"y" * 10)
    assert state.explain("build:a", inputs) == ["output out.bin was changed outside bundlegraph (fingerprint differs)"]
    out.unlink()
    assert state.explain("build:a", inputs) == ["output out.bin is missing"]


def test_forget_and_corrupt_stamp(workdir):
    out = workdir / "o"
    out.write_text("1")
    state.record("t:x", {"a": 1}, [out])
    state.forget("t:x")
    assert state.load("t:x") is None
    state.record("t:x", {"a": 1}, [out])
    f = workdir / ".bundlegraph/stamps/t__x.json"
    f.write_text("{not json")
    assert state.load("t:x") is None and not state.is_current("t:x", {"a": 1})


def test_present_outputs_are_checked_for_presence_not_content(workdir):
    import pytest

    cache = workdir / "cmake" / "CMakeCache.txt"
    cache.parent.mkdir()
    cache.write_text("A:STRING=1\n")
    rec = workdir / "configure.json"
    rec.write_text("{}")
    stamp = state.record("configure:a", {"k": 1}, [rec, state.Present(cache)])
    assert stamp.present == ("cmake/CMakeCache.txt",)
    assert state.load("configure:a").present == ("cmake/CMakeCache.txt",)
    assert list(stamp.outputs) == ["configure.json"]  # not hashed, not in the output digest
    cache.write_text("A:STRING=2 (a build re-ran CMake)\n")
    assert state.is_current("configure:a", {"k": 1})
    cache.unlink()
    assert state.explain("configure:a", {"k": 1}) == ["output cmake/CMakeCache.txt is missing"]
    with pytest.raises(FileNotFoundError, match="configure:b: output .*CMakeCache.txt was not created"):
        state.record("configure:b", {"k": 1}, [rec, state.Present(cache)])
    assert state.load("configure:b") is None


def test_explain_names_the_items_of_a_long_command_line_that_changed(workdir):
    """A command line longer than the dump limit: the reason names the item, not two
    identical-looking truncated prefixes."""
    out = workdir / "o"
    out.write_text("1")
    argv = [
        "cmake",
        "--fresh",
        "-S",
        "/src/" + "x" * 200,
        "-B",
        "/w/build/a/cmake",
        "-G",
        "Ninja",
        "-DCMAKE_MAKE_PROGRAM=/a/.venv/bin/ninja",
        "-DGGML_CUDA=ON",
    ]
    state.record("configure:a", {"argv": argv}, [out])
    changed = argv[:8] + ["-DCMAKE_MAKE_PROGRAM=/b/.venv/bin/ninja"] + argv[9:]
    assert state.explain("configure:a", {"argv": changed}) == [
        'input argv[8] changed: "-DCMAKE_MAKE_PROGRAM=/a/.venv/bin/ninja" -> "-DCMAKE_MAKE_PROGRAM=/b/.venv/bin/ninja"'
    ]
    assert state.explain("configure:a", {"argv": argv + ["-DGGML_NATIVE=OFF"]}) == [
        'input argv[10] inserted: ["-DGGML_NATIVE=OFF"]'
    ]
    assert state.explain("configure:a", {"argv": argv[:9]}) == ['input argv[9:10] removed (was ["-DGGML_CUDA=ON"])']
