"""The order of the prefix maps (issue 41): a root comes after every root enclosing it, whatever
the lengths of the paths, so GCC (last match wins) and clang (longest match wins) both map a file
to its most specific root; and the quoting of a flag whose root holds a space."""

from __future__ import annotations

from pathlib import Path

import pytest

from bundlegraph.toolchains.prefix_maps import PrefixMaps, flag_text


def _gcc_remap(flags: list[str], filename: str) -> str:
    """What GCC's ``remap_filename`` (gcc/file-prefix-map.cc) makes of ``filename``: the last
    ``-ffile-prefix-map`` whose old side is a string prefix of it wins."""
    for f in reversed(flags):
        old, new = f.removeprefix("-ffile-prefix-map=").rsplit("=", 1)
        if filename.startswith(old):
            return new + filename[len(old) :]
    return filename


def _clang_remap(flags: list[str], filename: str) -> str:
    """clang's rule: the longest matching old prefix wins."""
    best = None
    for f in flags:
        old, new = f.removeprefix("-ffile-prefix-map=").rsplit("=", 1)
        if filename.startswith(old) and (best is None or len(old) > len(best[0])):
            best = (old, new)
    return best[1] + filename[len(best[0]) :] if best else filename


SHORT = "/t"
LONG = "/tmp/a-very-long-directory-name-with-spaces and more/" + "x" * 40


@pytest.mark.parametrize("tmp", [SHORT, LONG])
def test_the_order_follows_nesting_not_length(tmp):
    cache = Path("/home/u/.cache/bundlegraph")
    maps = PrefixMaps(
        source=cache / "sources/abc/tree",
        build=Path(tmp) / "work/build/leg/cmake",
        work=Path(tmp) / "work",
        cache=cache,
        toolkit=cache / "toolkits/cuda-13",
    )
    assert [new for _old, new in maps.pairs()] == ["work", "cache", "build", "cuda", "llama.cpp"]


@pytest.mark.parametrize(
    "layout",
    [
        # the work directory inside the cache; the toolkit inside the cache; a short toolkit path
        {"cache": "/c", "work": "/c/w", "toolkit": "/c/toolkits/cuda", "source": "/c/src", "build": "/c/w/b"},
        # the cache inside the work directory, much longer than everything else
        {"work": "/w", "cache": "/w/" + "k" * 90, "toolkit": "/w/" + "k" * 90 + "/t", "source": "/s", "build": "/w/b"},
        # one root a string prefix of another that does not enclose it (/x/c and /x/cc)
        {"cache": "/x/c", "work": "/x/cc", "toolkit": "/x/c/t", "source": "/x/c/s", "build": "/x/cc/b"},
    ],
)
def test_each_file_maps_to_its_most_specific_root_on_gcc_and_clang(layout):
    maps = PrefixMaps(**{k: Path(v) for k, v in layout.items()})
    flags = maps.gnu_flags()
    names = {"cache": "cache", "work": "work", "toolkit": "cuda", "source": "llama.cpp", "build": "build"}
    for role, root in layout.items():
        f = f"{root}/f.c"
        assert _gcc_remap(flags, f) == f"{names[role]}/f.c", (role, flags)
        assert _clang_remap(flags, f) == f"{names[role]}/f.c", (role, flags)


def test_the_order_of_msvc_flags_is_the_same():
    maps = PrefixMaps(source=Path("/c/s"), build=Path("/w/b"), work=Path("/w"), cache=Path("/c"))
    gnu = [f.split("=")[1] for f in maps.gnu_flags()]
    msvc = [f.removeprefix("/d1trimfile:").replace("\\", "/") for f in maps.msvc_flags()]
    assert gnu == msvc == ["/w", "/c", "/w/b", "/c/s"]


def test_a_flag_with_a_space_is_quoted_for_cmake_and_the_msvc_runtime():
    assert flag_text(["-a", "/d1trimfile:C:\\a b", "-ffile-prefix-map=/a b=work"]) == (
        '-a "/d1trimfile:C:\\a b" "-ffile-prefix-map=/a b=work"'
    )
    # a trailing backslash is doubled so it does not escape the closing quote
    assert flag_text(["/d1trimfile:C:\\a b\\"]) == '"/d1trimfile:C:\\a b\\\\"'
