"""The pinned Linux compilers (issue 50), for real: Debian 12's GCC 12, binutils and C library
from the machine files' locks (``bundlegraph/toolchains/machines/locks/``), fetched with
``apt-get download`` into the blob cache (about 130 MB on a cold cache; seconds once cached),
unpacked by the compiler task, and used the way configure uses them.

- The task's own proof: every include, library and program directory of a ``g++ -v`` compile and
  link lies in the prefix (its receipt records them).
- A runner's ``CPATH`` pointing at a poisoned ``stdio.h`` reaches no compile (the wrapper unsets
  GCC's search variables), and ``sscanf``/``strtol`` bind to symbols the floor allows (GCC with
  glibc >= 2.38 makes them ``__isoc23_*@GLIBC_2.38``).
- The cross compiler's output is AArch64; the binutils CMake runs directly work bare.
- A stand-in leg configures with it, and configure's record says every implicit directory of C and
  C++ lay in the prefix.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from conftest import require_tools

from bundlegraph.checks.elf import read_elf
from bundlegraph.checks.glibc import highest_needs, parse_version
from bundlegraph.core import proc
from bundlegraph.toolchains.compiler import compiler_of
from bundlegraph.toolchains.registry import TOOLCHAINS
from bundlegraph.toolkit import compiler as cc

SOURCE = r"""
#include <cstdio>
#include <cstdlib>
#include <string>
extern "C" int parse(const char* s) {
  int x = 0;
  std::sscanf(s, "%d", &x);
  return x + static_cast<int>(std::strtol(s, nullptr, 10)) + static_cast<int>(std::to_string(x).size());
}
"""


def installed(toolchain: str):
    require_tools("apt-get", "dpkg-deb")
    c = compiler_of(TOOLCHAINS[toolchain])
    assert c is not None
    outputs = cc.run(cc.plan(c, ("test",), None))
    return c, outputs


@pytest.mark.parametrize("toolchain", ["gcc-linux-x86_64", "gcc-cross-linux-aarch64"])
def test_the_pinned_compiler_searches_only_its_prefix_and_keeps_the_floor(toolchain, tmp_path):
    c, outputs = installed(toolchain)
    assert outputs[0] == c.receipt
    receipt = json.loads(c.receipt.read_text(encoding="utf-8"))
    assert receipt["driver"].endswith("12.2.0") and receipt["glibc_floor"] == "2.35"
    assert {p["name"] for p in receipt["packages"]} >= {"binutils-common", "libisl23"}
    dirs = receipt["search_dirs"]
    assert dirs["include"] and dirs["library"] and dirs["programs"]
    assert cc.foreign_dirs(dirs, c.prefix) == []
    # a runner's CPATH with a poisoned stdio.h: the wrapper unsets GCC's search variables
    poison = tmp_path / "poison"
    poison.mkdir()
    (poison / "stdio.h").write_text('#error "the runner\'s stdio.h reached the compile"\n', encoding="utf-8")
    src = tmp_path / "parse.cpp"
    src.write_text(SOURCE, encoding="utf-8")
    out = tmp_path / "libparse.so"
    env = dict(os.environ, CPATH=str(poison), CPLUS_INCLUDE_PATH=str(poison), LIBRARY_PATH=str(poison))
    proc.run([c.wrapper("cxx"), "-O2", "-shared", "-fPIC", src, "-o", out], env=env, echo=False)
    info = read_elf(out.read_bytes(), out.name)
    needs = highest_needs(info)
    assert parse_version(needs["GLIBC"].version) <= parse_version(c.floors[0]), needs
    assert not any("isoc23" in (n.symbol or "") for n in needs.values())
    arch = {"gcc-linux-x86_64": "x64", "gcc-cross-linux-aarch64": "arm64"}[toolchain]
    assert info.machine_name == arch, info.machine
    # the binutils CMake runs directly (CMAKE_AR ...) load their libraries from the prefix
    ar = proc.run([c.binutil("ar"), "--version"], env={"PATH": "/usr/bin:/bin"}, capture=True, echo=False)
    assert "2.40" in ar.output.splitlines()[0]


def test_a_second_install_is_kept_and_a_compiler_that_does_not_run_is_named(tmp_path):
    c, _ = installed("gcc-linux-x86_64")
    wrapper = c.wrapper("cxx").read_bytes()
    cc.run(cc.plan(c, ("test",), None))  # the same lock: the prefix is kept as it is, checked again
    assert c.wrapper("cxx").read_bytes() == wrapper
    assert cc.foreign_dirs({"include": ["/usr/include"]}, c.prefix) == ["include /usr/include"]
    # a copy of the prefix whose real driver fails (what a build host older than the lock's glibc
    # sees): one line naming the task and the host's C library, no traceback
    from dataclasses import replace

    broken = replace(c, root=tmp_path)
    proc.run(["cp", "-a", c.prefix, broken.prefix], echo=False)
    real = broken.prefix / dict(c.drivers)["cxx"]
    real.unlink()
    real.write_text("#!/bin/sh\nexit 3\n", encoding="utf-8")
    real.chmod(0o755)
    with pytest.raises(cc.ToolkitError, match=r"does not run on this build host \(glibc 2\.\d+\)"):
        cc.probe(broken)


def test_a_stand_in_leg_configures_hermetically_with_the_pinned_compiler(workdir, tmp_path):
    """The real graph over the stand-in's x64 CPU leg: the compiler task before configure, the
    configure record's ``hermetic`` check, the compilers and binutils being the prefix's."""
    require_tools("apt-get", "dpkg-deb")
    import shutil

    import graphrun

    from bundlegraph.graph.context import load_graph
    from bundlegraph.pipeline.base import Filters

    root = Path(__file__).resolve().parents[2]
    bundles = tmp_path / "bundles"
    shutil.copytree(root / "tests" / "data" / "bundles", bundles)
    shutil.copytree(root / "bundles" / "locks", bundles / "locks", dirs_exist_ok=True)
    shutil.copytree(root / "tests" / "data" / "minillama", tmp_path / "minillama")
    leg = "mini-linux-x64-cpu"
    g = load_graph(bundles, Filters(only_leg=leg))
    c = g.ctx.leg(leg).compiler
    assert c is not None and c.task in g.find(f"configure:{leg}").deps
    r = graphrun.doit([f"configure:{leg}"], bundles=bundles, workdir=workdir, timeout=300)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    assert f"{c.task}" in r.stdout
    rec = json.loads((workdir / "build" / leg / "configure.json").read_text(encoding="utf-8"))
    assert rec["checks"]["hermetic"].startswith("every implicit include and link directory")
    assert rec["compiler"]["lock"] == "debian12-gcc12-x86_64.toml" and rec["compiler"]["packages"]
    cache = (workdir / "build" / leg / "cmake" / "CMakeCache.txt").read_text(encoding="utf-8")
    assert c.wrapper("cxx").as_posix() in cache
    assert f"CMAKE_AR:FILEPATH={c.binutil('ar').as_posix()}" in cache
