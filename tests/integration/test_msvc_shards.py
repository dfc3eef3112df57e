"""A sharded Windows leg in the MSVC command-line dialect, through the compiler cache (issue 39,
item 1), with clang-cl standing in for cl.exe (:mod:`clangclkit`: minillama for
``x86_64-pc-windows-msvc``, MinGW-w64's headers, lld-link).

The release workflow's steps, each a fresh "runner" at the one workspace path GitHub gives every
runner of a repository, with an empty ccache of its own:

- three shard jobs (``run_shard``, as ``doit build:L shard=I/3`` runs it) each compile a third of
  the leg's objects into their cache and keep what they added (the ``shard-<leg>-<I>`` artifact);
- the final compile's job runs the real ``bundlegraph shard-merge`` on those folders, then the
  leg's build (``run_build``): every object a cache hit, 0 misses, and its DLLs and programs are
  byte-identical to an unsharded build without any cache in another work directory;
- the guards trip for real: a final compile whose merged shards' entries are gone fails naming the
  leg and each missed object; a shard of a leg configured without a cache is refused before it
  compiles.

Also: the launcher probe accepts ccache on clang-cl in MSVC's dialect, and the leg's cache entries
give ``/Z7`` (never ``/Zi``'s shared PDB) in a configuration with debug information."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import clangclkit
import graphrun
import pytest
from conftest import linux_only, require_tools

pytestmark = linux_only
LEG = clangclkit.LEG


def _step(root: Path, workdir: Path, ccache: Path | None, *args: str, **env: str) -> subprocess.CompletedProcess:
    """One runner step of :mod:`clangclkit` in ``workdir`` (a new process, as a job is)."""
    e = {k: v for k, v in os.environ.items() if not k.startswith(("CCACHE_", "BUNDLEGRAPH_LAUNCHER"))}
    e |= {"BUNDLEGRAPH_WORKDIR": str(workdir), "CCACHE_DEPEND": "1", **env}  # why depend mode: clangclkit
    e["PYTHONPATH"] = os.pathsep.join([str(graphrun.ROOT), e.get("PYTHONPATH", "")])
    if ccache is not None:
        e["CCACHE_DIR"] = str(ccache)
    return subprocess.run(
        [sys.executable, str(graphrun.ROOT / "tests" / "clangclkit.py"), *args],
        capture_output=True,
        text=True,
        env=e,
        timeout=300,
        cwd=workdir,
    )


def _ok(r: subprocess.CompletedProcess) -> str:
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]
    return r.stdout + r.stderr


def _runner(root: Path) -> Path:
    """A fresh runner: the workspace path every job gets, empty."""
    work = root / "runner" / "work"
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    return work


def _sha(d: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(d.iterdir()) if p.is_file()}


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    require_tools("clang", "lld-link", "llvm-dlltool", "llvm-lib")
    if not (clangclkit.MINGW_INCLUDE / "stdio.h").is_file():
        pytest.fail(f"{clangclkit.MINGW_INCLUDE}: no MinGW-w64 headers: `apt-get install mingw-w64-x86-64-dev`")
    root = tmp_path_factory.mktemp("msvc-shards")
    src = root / "shared" / "minillama"
    shutil.copytree(graphrun.ROOT / "tests" / "data" / "minillama", src)
    kit = clangclkit.make_kit(root / "kit")
    out: dict = {"root": root, "src": src, "kit": kit, "shards": {}}
    for i in (1, 2, 3):
        work = _runner(root)
        cache = root / f"ccache-shard-{i}"
        out["launcher"] = json.loads(_ok(_step(root, work, cache, "configure", str(src), str(kit))).splitlines()[-1])
        out["shards"][i] = _ok(_step(root, work, cache, "shard", f"{i}/3"))
        shutil.copytree(work / "build" / LEG / "shard", root / "artifacts" / f"shard-{LEG}-{i}")
        out.setdefault("shard_records", {})[i] = json.loads((work / "build" / LEG / "shard" / "shard.json").read_text())
    # the final compile's job: merge the downloaded shard folders, then build
    work = _runner(root)
    cache = root / "ccache-final"
    _ok(_step(root, work, cache, "configure", str(src), str(kit)))
    merge = graphrun.cli(["shard-merge", str(root / "artifacts")], workdir=work, CCACHE_DIR=str(cache))
    assert merge.returncode == 0, merge.stdout + merge.stderr
    out["merge"] = merge.stdout
    out["merged_record"] = json.loads((work / "build" / LEG / "shards-merged.json").read_text())
    out["final"] = _ok(_step(root, work, cache, "build", "3"))
    out["final_stats"] = json.loads((work / "build" / LEG / "compiler-cache.json").read_text())
    out["final_bin"] = _sha(work / "build" / LEG / "cmake" / "bin")
    out["final_work"] = work
    shutil.copytree(work / "build" / LEG, root / "final-build")
    # the same leg unsharded, without any compiler cache, in another work directory
    whole = root / "elsewhere" / "work"
    whole.mkdir(parents=True)
    _ok(_step(root, whole, None, "configure", str(src), str(kit), BUNDLEGRAPH_LAUNCHER="none"))
    out["whole"] = _ok(_step(root, whole, None, "build", "3", BUNDLEGRAPH_LAUNCHER="none"))
    out["whole_bin"] = _sha(whole / "build" / LEG / "cmake" / "bin")
    out["whole_work"] = whole
    return out


def test_the_probe_caches_clang_cl_in_msvcs_dialect(release):
    got = release["launcher"]
    assert got["name"] == "ccache" and got["version"].startswith("ccache version 4.") and got["refused"] == "", got
    rec = json.loads((release["root"] / "final-build" / "configure.json").read_text())
    assert any(a.startswith("-DCMAKE_C_COMPILER_LAUNCHER=") and a.endswith("/ccache") for a in rec["argv"])
    commands = json.loads((release["root"] / "final-build" / "cmake" / "compile_commands.json").read_text())
    assert commands and all("/Fo" in c["command"] and " -c " in c["command"] for c in commands)  # MSVC's dialect


def test_each_shard_compiled_a_third_into_its_cache(release):
    objects = []
    for i, text in release["shards"].items():
        assert f"build:{LEG}: shard {i}/3: 4 of 12 compile steps" in text, text[-2000:]
        rec = release["shard_records"][i]
        assert rec["cache"]["misses"] == 4 and rec["cache"]["hits"] == 0 and rec["cache_entries_added"] > 0, rec
        objects += rec["objects"]
    assert len(objects) == len(set(objects)) == 12 and all(o.endswith(".obj") for o in objects)


def test_the_final_compile_took_every_object_from_the_merged_shards(release):
    assert f"shard-merge: {LEG}: 3 of 3 shards" in release["merge"]
    assert len(release["merged_record"]["objects"]) == 12
    s = release["final_stats"]
    assert (s["hits"], s["misses"], s["uncacheable"]) == (12, 0, 0), s
    assert s["missed_objects"] == [] and s["shards_wrote"] == 12 and "shard_shortfall" not in s, s
    assert f"build:{LEG}: ccache 4.14.2: 12 hits (0 remote, 12 local), 0 misses, 0 uncacheable" in release["final"]
    assert f"build:{LEG}: the final compile of 3 shards found every compiled object in the cache" in release["final"]
    # judged once: a later build in this work directory is a local one again
    assert not (release["root"] / "final-build" / "shards-merged.json").exists()


def test_the_sharded_build_is_byte_identical_to_an_unsharded_uncached_one_elsewhere(release):
    final, whole = release["final_bin"], release["whole_bin"]
    assert sorted(final) == sorted(whole) and "ggml-cpu.dll" in final and "llama-cli.exe" in final
    assert final == whole
    rec = json.loads((release["whole_work"] / "build" / LEG / "compiler-cache.json").read_text())
    assert rec["launcher"] is None and rec["why"] == "no compiler cache"  # a local build: not a final compile
    dll = (release["whole_work"] / "build" / LEG / "cmake" / "bin" / "ggml-base.dll").read_bytes()
    assert dll[:2] == b"MZ" and str(release["src"]).encode() not in dll


def test_a_final_compile_that_misses_what_its_shards_wrote_fails_naming_them(release, tmp_path):
    root = release["root"]
    arts = tmp_path / "artifacts"
    shutil.copytree(root / "artifacts", arts)
    shutil.rmtree(arts / f"shard-{LEG}-2" / "ccache")  # shard 2's entries lost on the way
    work = _runner(root)
    cache = tmp_path / "ccache"
    _ok(_step(root, work, cache, "configure", str(release["src"]), str(release["kit"])))
    summary = tmp_path / "summary.md"
    merge = graphrun.cli(["shard-merge", str(arts)], workdir=work, CCACHE_DIR=str(cache))
    assert merge.returncode == 0, merge.stdout + merge.stderr
    r = _step(root, work, cache, "build", "3", GITHUB_STEP_SUMMARY=str(summary))
    assert r.returncode == 1, r.stdout[-3000:] + r.stderr[-3000:]
    line = r.stderr.strip().splitlines()[-1]
    assert line.startswith(f"error: build:{LEG}: the final compile got 8 cache hit(s) but its 3 of 3 shards wrote 12")
    stats = json.loads((work / "build" / LEG / "compiler-cache.json").read_text())
    named = stats["shard_missed"]
    assert stats["misses"] == 4 and stats["hits"] == 8 and len(named) == 4, stats
    assert line.endswith(f"it missed 4: {', '.join(named)}"), line
    # ccache's stats log names the source, not the object: an object whose source no other object
    # compiles is named exactly (every ggml-cuda object); minillama compiles part.c and main.c for
    # several targets, and those are named by source only (module docstring of shard_guard)
    wrote = release["merged_record"]["objects"]
    source = {o: o.split(".dir/", 1)[1].removesuffix(".obj") for o in wrote}
    unique = [o for o in release["shard_records"][2]["objects"] if list(source.values()).count(source[o]) == 1]
    assert unique and set(unique) <= set(named) and set(named) <= set(wrote), (unique, named)
    assert not (work / "build" / LEG / "build.json").exists()  # the step failed: nothing recorded
    text = summary.read_text()
    assert f"### build:{LEG}: the final compile missed 4 object(s) (FAILED)" in text
    assert all(f"- `{o}`" in text for o in named)


def test_a_shard_of_a_leg_without_a_compiler_cache_is_refused_before_it_compiles(release):
    root = release["root"]
    work = _runner(root)
    _ok(_step(root, work, None, "configure", str(release["src"]), str(release["kit"]), BUNDLEGRAPH_LAUNCHER="none"))
    r = _step(root, work, None, "shard", "1/3", BUNDLEGRAPH_LAUNCHER="none")
    assert r.returncode == 1
    assert r.stderr.strip() == (
        f"error: build:{LEG}: shard 1/3 of a leg of 3 shards without a compiler cache (BUNDLEGRAPH_LAUNCHER=none): "
        "the shards' objects reach the final compile only through the cache, so every shard would be a runner "
        f"spent for nothing; install ccache (pip install -e .[tools]) and configure:{LEG} again, or unset "
        "BUNDLEGRAPH_LAUNCHER=none"
    ), r.stderr
    assert not (work / "build" / LEG / "shard").exists()
    assert not list((work / "build" / LEG / "cmake").glob("CMakeFiles/*.dir/**/*.obj"))  # no object compiled


def test_a_shard_whose_compiles_ccache_cannot_cache_fails_naming_why(release):
    """A compiler option ccache refuses (here clang-cl's /clang: form, which ccache 4.14 calls
    unsupported) makes every compile of a shard uncacheable: the shard fails instead of handing
    the final compile nothing."""
    root = release["root"]
    work = _runner(root)
    extra = {"BUNDLEGRAPH_EXTRA_CLANGCL_FLAGS": "/clang:-fno-ident"}
    _ok(_step(root, work, root / "ccache-uncacheable", "configure", str(release["src"]), str(release["kit"]), **extra))
    r = _step(root, work, root / "ccache-uncacheable", "shard", "1/3", **extra)
    assert r.returncode == 1, r.stdout[-3000:] + r.stderr[-3000:]
    assert (
        r.stderr.strip()
        .splitlines()[-1]
        .startswith(f"error: build:{LEG}: shard 1/3: 4 compile(s) could not be cached (unsupported_compiler_option: 4)")
    ), r.stderr
    assert not (work / "build" / LEG / "shard").exists()


def test_debug_information_is_embedded_z7_never_a_shared_pdb(release):
    """The leg's CMAKE_MSVC_DEBUG_INFORMATION_FORMAT (policy CMP0141): none in Release, /Z7 where a
    configuration has debug information, and never /Zi (one PDB written by every compile of a
    target, which no compiler cache can cache)."""
    root = release["root"]
    work = _runner(root)
    args = ("configure", str(release["src"]), str(release["kit"]), "RelWithDebInfo")
    _ok(_step(root, work, None, *args, BUNDLEGRAPH_LAUNCHER="none"))
    commands = json.loads((work / "build" / LEG / "cmake" / "compile_commands.json").read_text())
    assert commands and all(" -Z7 " in c["command"] or " /Z7 " in c["command"] for c in commands), commands[0]
    assert not any("Zi " in c["command"] for c in commands)
    release_cmds = json.loads((root / "final-build" / "cmake" / "compile_commands.json").read_text())
    assert not any(f in c["command"] for c in release_cmds for f in ("Z7", "Zi ", "/ZI", "-ZI"))
