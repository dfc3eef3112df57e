"""The pinned compiler's pure parts (issue 50): the machine files' ``[compiler]`` table checked on
load, the lock digest the task's name is made of, the search-directory and CMake-record checks,
nvcc's host compiler in every command, and the runner's compiler variables scrubbed."""

from __future__ import annotations

from pathlib import Path

import pytest

from bundlegraph.pipeline.configure import ccbin_problems
from bundlegraph.toolchains.base import scrubbed
from bundlegraph.toolchains.compiler import LOCKS_DIR, compiler_of, implicit_dir_problems
from bundlegraph.toolchains.registry import MACHINES_DIR, TOOLCHAINS, ToolchainFileError, load_machine
from bundlegraph.toolkit.compiler import foreign_dirs, search_dirs
from bundlegraph.toolkit.debs import load_lock


def _machine(tmp_path: Path, text: str) -> Path:
    f = tmp_path / "my-gcc.toml"
    f.write_text(text, encoding="utf-8")
    return f


def test_every_linux_gcc_machine_file_pins_a_compiler_whose_name_is_its_lock():
    for tid, info in TOOLCHAINS.items():
        c = compiler_of(info)
        assert (c is not None) == (info.kind == "gcc"), tid
        if c is None:
            continue
        # the same digest the debs library gives the lock (the toolchain layer computes it itself)
        assert c.lock_digest == load_lock(c.lock).digest()
        assert c.name.startswith(f"gcc-12.2.0-linux-{info.target_arch}-") and c.task == f"toolkit:{c.name}"
        assert c.prefix.parent.name == "toolkits" and c.wrapper("cxx").parent == c.prefix / "bin"
        assert "task" not in c.identity()  # a layout change must not change a bundle's bytes
    cross = compiler_of(TOOLCHAINS["gcc-cross-linux-aarch64"])
    assert cross is not None and cross.cross_root == cross.prefix / "usr" / "aarch64-linux-gnu"


def test_a_bad_compiler_table_is_refused_naming_file_and_key(tmp_path):
    good = (MACHINES_DIR / "gcc-linux-x86_64.toml").read_text(encoding="utf-8")
    assert load_machine(_machine(tmp_path, good)).floors() == ("2.35", "3.4.30")
    head = good[: good.index("[compiler]")]
    with pytest.raises(ToolchainFileError) as e:
        load_machine(_machine(tmp_path, head))
    assert "compiler: required for kind 'gcc'" in str(e.value)
    bad = (
        good.replace('glibc_floor = "2.35"', 'glibc_floor = "two"')
        .replace('lock = "debian12-gcc12-x86_64.toml"', 'lock = "nope.toml"')
        .replace('tools = "usr/bin"', 'tools = "usr/bin"\nflavour = "x"')
    )
    with pytest.raises(ToolchainFileError) as e:
        load_machine(_machine(tmp_path, bad))
    text = str(e.value)
    f = tmp_path / "my-gcc.toml"
    assert f"{f}: compiler.glibc_floor: expected a version such as 2.35 or 3.4.30, got 'two'" in text
    assert f"{f}: compiler.lock: 'nope.toml' is not a file in {LOCKS_DIR}" in text
    assert f"{f}: compiler.flavour: unknown key" in text
    msvc = (MACHINES_DIR / "msvc-x64.toml").read_text(encoding="utf-8") + '\n[compiler]\nlock = "x"\n'
    with pytest.raises(ToolchainFileError, match="compiler: only kind gcc takes a pinned compiler"):
        load_machine(_machine(tmp_path, msvc))


VERBOSE = """\
#include "..." search starts here:
#include <...> search starts here:
 /p/usr/include/c++/12
 /p/usr/lib/gcc/x86_64-linux-gnu/12/include
 /usr/include
End of search list.
COMPILER_PATH=/p/usr/bin/:/p/usr/lib/gcc/x86_64-linux-gnu/12/
LIBRARY_PATH=/p/usr/lib/gcc/x86_64-linux-gnu/12/:/p/lib/../lib/:/usr/lib/x86_64-linux-gnu/
"""


def test_search_dirs_outside_the_prefix_are_named():
    dirs = search_dirs(VERBOSE)
    assert dirs["include"] == ["/p/usr/include/c++/12", "/p/usr/lib/gcc/x86_64-linux-gnu/12/include", "/usr/include"]
    assert dirs["library"] == ["/p/usr/lib/gcc/x86_64-linux-gnu/12", "/p/lib", "/usr/lib/x86_64-linux-gnu"]
    assert foreign_dirs(dirs, Path("/p")) == ["include /usr/include", "library /usr/lib/x86_64-linux-gnu"]
    assert foreign_dirs(dirs, Path("/p/usr")) != []  # /p/lib is outside /p/usr


def test_cmakes_record_of_the_compiler_is_held_against_the_prefix():
    text = (
        'set(CMAKE_CXX_IMPLICIT_INCLUDE_DIRECTORIES "/p/usr/include/c++/12;/p/usr/include")\n'
        'set(CMAKE_CXX_IMPLICIT_LINK_DIRECTORIES "/p/usr/lib/gcc/x86_64-linux-gnu/12;/usr/lib64")\n'
    )
    assert implicit_dir_problems({"4.4.5/CMakeCXXCompiler.cmake": text}, Path("/p")) == [
        "4.4.5/CMakeCXXCompiler.cmake: CMAKE_CXX_IMPLICIT_LINK_DIRECTORIES names /usr/lib64, outside the pinned compiler"
    ]


def test_every_nvcc_command_must_name_the_pinned_host_compiler():
    ok = {"file": "a.cu", "command": "/t/bin/nvcc -forward-unknown-to-host-compiler -ccbin=/p/bin/g++ -c a.cu"}
    env_gcc = {"file": "b.cu", "command": "/t/bin/nvcc -ccbin=/opt/gcc/bin/g++ -c b.cu"}
    none = {"file": "c.cu", "arguments": ["/t/bin/nvcc", "-c", "c.cu"]}
    cxx = {"file": "d.cpp", "command": "/p/bin/g++ -c d.cpp"}
    assert ccbin_problems([ok, cxx], "/p/bin/g++") == []
    assert ccbin_problems([env_gcc, none], "/p/bin/g++") == [
        "b.cu: nvcc's host compiler is /opt/gcc/bin/g++, not /p/bin/g++",
        "c.cu: nvcc's host compiler is not named, not /p/bin/g++",
    ]


def test_the_runners_compiler_variables_never_reach_configure_or_build():
    env = {
        "PATH": "/usr/bin",
        "CUDAHOSTCXX": "/opt/gcc/bin/g++",  # what the Ubuntu 24.04 GPU machine's environment held
        "NVCC_PREPEND_FLAGS": "-ccbin /opt/gcc/bin/g++",
        "CC": "gcc-13",
        "CXXFLAGS": "-march=native",
        "CPATH": "/usr/include",
        "CMAKE_TOOLCHAIN_FILE": "/x.cmake",
        "CMAKE_BUILD_PARALLEL_LEVEL": "4",
    }
    assert scrubbed(env) == {"PATH": "/usr/bin", "CMAKE_BUILD_PARALLEL_LEVEL": "4"}
    assert TOOLCHAINS["gcc-linux-x86_64"] and "CUDAHOSTCXX" not in __import__(
        "bundlegraph.toolchains", fromlist=["get"]
    ).get("gcc-linux-x86_64").environment(env)
