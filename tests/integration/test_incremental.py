"""Rebuild only what changed, proven on the real graph (dodo.py and the same pipeline modules;
only the source pin differs): the stand-in project ``tests/data/minillama`` built by the three
legs of ``tests/data/bundles`` through every stage -- an aarch64 CPU leg, an aarch64 CUDA leg
(NVIDIA's 13.5 wheels, x86_64 nvcc) merged into it, and an unrelated native x86_64 CPU leg --
plus the shared manifest.

The whole graph is built once per module; every test restores that built tree (source, specs
and work directory, at the same absolute path, mtimes kept) and then changes one thing. Each
test asserts exactly which tasks doit executed and what the outputs became.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import time
from dataclasses import dataclass
from pathlib import Path

import graphrun
import pytest
from conftest import linux_only, require_input, require_tools

from bundlegraph.checks import elf, fatbin
from bundlegraph.core import fsutil, paths
from bundlegraph.core.fsutil import sha256_file

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
IS_LINUX = sys.platform.startswith("linux")

CPU, CUDA, X64 = "mini-linux-arm64-cpu", "mini-linux-arm64-cuda", "mini-linux-x64-cpu"
LEGS = (CPU, CUDA, X64)
CHAIN = ("source", "configure", "build", "verify", "merge", "package", "smoke")
TOOLS = f"smoke:tools-{CUDA}"  # test-backend-ops for the GPU checks: nothing built on this host
REF = f"smoke:reference-{CUDA}"  # the throughput check's reference (issue 43): nothing built here either
BUNDLE = {
    CPU: "app-b42-linux-arm64-cpu.tar.gz",
    CUDA: "app-b42-linux-arm64-cuda13-blackwell.tar.gz",
    X64: "app-b42-linux-x64-cpu.tar.gz",
}
SLOW_STEPS = 600_000  # the stand-in's slow translation unit: ~6 s of GCC constexpr work here


# the legs build on a Linux x86_64 host with Debian's cross compiler; signals and pgrep are POSIX
pytestmark = linux_only


def chain(leg: str, start: str = "source", stop: str = "smoke") -> list[str]:
    """``<stage>:<leg>`` for the stages ``start`` .. ``stop`` of the leg's chain."""
    return [f"{s}:{leg}" for s in CHAIN[CHAIN.index(start) : CHAIN.index(stop) + 1]]


@dataclass
class Tree:
    """A stand-in checkout: ``minillama/`` (the source), ``bundles/`` (specs, locks),
    ``work/`` (``BUNDLEGRAPH_WORKDIR``)."""

    root: Path

    @property
    def src(self) -> Path:
        return self.root / "minillama"

    @property
    def bundles(self) -> Path:
        return self.root / "bundles"

    @property
    def work(self) -> Path:
        return self.root / "work"

    @property
    def dist(self) -> Path:
        return self.work / "dist"

    def env(self, **extra: str) -> dict[str, str]:
        return graphrun.env_for(self.bundles, self.work, PYTHONUNBUFFERED="1", **extra)

    def doit(self, *args: str) -> subprocess.CompletedProcess:
        return graphrun.doit(list(args), bundles=self.bundles, workdir=self.work, PYTHONUNBUFFERED="1")

    def run(self, *args: str) -> list[str]:
        """Run doit (bare: the default legs + manifest); the tasks it executed, in order."""
        r = self.doit(*args)
        assert r.returncode == 0, r.stdout[-6000:] + r.stderr[-3000:]
        return graphrun.executed(r.stdout)

    def probe(self, code: str) -> tuple[str, dict]:
        """Run ``python -c code <dodo.py>`` in this tree's environment: its stdout, and the JSON
        object its last line prints."""
        r = subprocess.run(
            [sys.executable, "-c", code, str(ROOT / "dodo.py")],
            capture_output=True,
            text=True,
            env=self.env(),
            timeout=300,
        )
        assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
        return r.stdout, json.loads(r.stdout.strip().splitlines()[-1])

    def popen(self, log: Path, **extra: str) -> subprocess.Popen:
        """A bare doit in the background, stdout+stderr into ``log`` (``extra``: environment)."""
        f = open(log, "w")
        return subprocess.Popen(
            [str(graphrun.BIN / "doit"), "-f", str(ROOT / "dodo.py")],
            stdout=f,
            stderr=subprocess.STDOUT,
            env=self.env(**extra),
            text=True,
        )

    def spec(self, leg: str) -> Path:
        return self.bundles / f"{leg}.toml"

    def edit(self, leg: str, old: str, new: str) -> None:
        f = self.spec(leg)
        text = f.read_text()
        assert old in text, f"{f} has no {old!r}"
        f.write_text(text.replace(old, new, 1))

    def stamp(self, task: str) -> dict | None:
        f = self.work / ".bundlegraph" / "stamps" / (task.replace(":", "__") + ".json")
        return json.loads(f.read_text()) if f.is_file() else None

    def stamps(self) -> dict[str, tuple[int, str]]:
        d = self.work / ".bundlegraph" / "stamps"
        return {p.name: (p.stat().st_mtime_ns, sha256_file(p)) for p in sorted(d.iterdir())}

    def snapshot(self, d: Path) -> dict[str, tuple[int, str]]:
        return {
            p.relative_to(d).as_posix(): (p.stat().st_mtime_ns, sha256_file(p))
            for p in sorted(d.rglob("*"))
            if p.is_file()
        }

    def member(self, leg: str, name: str) -> bytes:
        with tarfile.open(self.dist / BUNDLE[leg]) as t:
            for m in t.getmembers():
                if m.name.rsplit("/", 1)[-1] == name:
                    return t.extractfile(m).read()
        raise AssertionError(f"{name} not in {BUNDLE[leg]}")

    def manifest_sha(self, leg: str) -> str:
        idx = json.loads((self.dist / "llama-prebuilt-sha256.json").read_text())
        return idx["artifacts"][BUNDLE[leg]]["sha256"]

    def compiler_tasks(self) -> list[str]:
        """The pinned compilers' tasks (issue 50), from their stamps."""
        stamps = (self.work / ".bundlegraph" / "stamps").iterdir()
        return sorted(t.name[:-5].replace("__", ":") for t in stamps if t.name.startswith("toolkit__gcc-"))

    def toolkit_task(self) -> str:
        return (
            next(t for t in (self.work / ".bundlegraph" / "stamps").iterdir() if t.name.startswith("toolkit__cuda"))
            .name[:-5]
            .replace("__", ":")
        )


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The stand-in graph built once (every task executed), kept as a snapshot. NVIDIA's
    wheels of the CUDA leg are fetched first on a cold cache (or the tests fail saying so)."""
    require_tools("aarch64-linux-gnu-gcc", "aarch64-linux-gnu-g++", "gcc", "g++")
    require_input("cuda-13.5-sbsa-cross")
    base = tmp_path_factory.mktemp("incremental")
    live = Tree(base / "live")
    live.root.mkdir()
    shutil.copytree(DATA / "minillama", live.src)
    shutil.copytree(DATA / "bundles", live.bundles)
    shutil.copytree(ROOT / "bundles" / "locks", live.bundles / "locks", dirs_exist_ok=True)
    live.work.mkdir()
    ran = live.run()
    tk = [t for t in ran if t.startswith("toolkit:")]
    expected = [t for leg in LEGS for t in chain(leg)] + tk + [TOOLS, REF, "manifest"]
    # one CUDA toolkit, and the pinned compilers of the x64 and arm64 legs (issue 50)
    assert len([t for t in tk if t.startswith("toolkit:cuda")]) == 1, tk
    assert sorted(t.rsplit("-", 1)[0] for t in tk if t.startswith("toolkit:gcc-")) == [
        "toolkit:gcc-12.2.0-linux-arm64",
        "toolkit:gcc-12.2.0-linux-x64",
    ], tk
    assert sorted(ran) == sorted(expected), ran
    for leg in LEGS:
        assert (live.dist / BUNDLE[leg]).is_file()
    snap = base / "snap"
    shutil.copytree(live.root, snap, symlinks=True)
    return live, snap


@pytest.fixture
def tree(built) -> Tree:
    """The built stand-in tree, restored to the snapshot (same path, same mtimes)."""
    live, snap = built
    shutil.rmtree(live.root)
    shutil.copytree(snap, live.root, symlinks=True)
    return live


# 1 -------------------------------------------------------------------------------------------


def test_second_run_executes_nothing(tree):
    dist, stamps = tree.snapshot(tree.dist), tree.stamps()
    r = tree.doit()
    assert r.returncode == 0, r.stdout + r.stderr
    assert graphrun.executed(r.stdout) == []
    up = [l[3:] for l in r.stdout.splitlines() if l.startswith("-- ")]
    assert sorted(up) == sorted(
        [t for leg in LEGS for t in chain(leg)] + [tree.toolkit_task(), *tree.compiler_tasks(), TOOLS, REF, "manifest"]
    )
    assert tree.snapshot(tree.dist) == dist and tree.stamps() == stamps  # not even rewritten


NOOP_PROBE = """
import json, sys
from doit.doit_cmd import DoitMain
rc = DoitMain().run(["-f", sys.argv[1]])
from bundlegraph.graph.context import NOT_ON_THE_LOAD_PATH
print(json.dumps({"rc": rc, "modules": sorted(m for m in NOT_ON_THE_LOAD_PATH if m in sys.modules)}))
"""


def test_a_no_op_run_imports_nothing_only_a_running_task_needs(tree):
    """Reading PE or ELF files, downloading and Authenticode belong to tasks that run: a no-op
    never imports pefile, httpx, pyelftools or signify; the locks are the OS's (no filelock);
    and an unchanged bundles directory loads from the spec cache, without pydantic (issue 20)."""
    assert graphrun.executed(tree.doit().stdout) == []  # the spec cache holds this tree (a full cache evicts)
    out, got = tree.probe(NOOP_PROBE)
    assert graphrun.executed(out) == []
    assert got["rc"] == 0 and got["modules"] == [], got


RECALL_PROBE = """
import json, sys
sys.argv = ["doit", "-f", sys.argv[1]]  # the doit command's own command line: a memo may serve it
from doit.doit_cmd import DoitMain
rc = DoitMain().run(sys.argv[1:])
print(json.dumps({"rc": rc, "graph_loaded": "bundlegraph.graph.context" in sys.modules}))
"""


def _record_a_no_op(tree) -> Path:
    """A no-op run of the restored tree that records its memo. The restore rewrote every file
    a moment ago, and what changed that recently is not trusted (fsutil.RACY_NS): wait first."""
    memos: list[Path] = []
    for _ in range(2):  # a run that had to write its spec cache (evicted by an earlier test) records none
        time.sleep(fsutil.RACY_NS / 1e9 + 0.2)
        assert tree.run() == []
        memos = list((tree.work / ".bundlegraph" / "noop").glob("*.json"))
        if memos:
            break
    assert len(memos) == 1, memos
    return memos[0]


def test_a_recorded_no_op_is_recalled_without_loading_the_graph_and_says_the_same(tree):
    """Issue 53 item 5: the next identical run recalls the memo (the graph's modules are never
    imported) and doit prints what the full load made it print; so does a plain run after it."""
    _record_a_no_op(tree)
    out, got = tree.probe(RECALL_PROBE)
    assert got == {"rc": 0, "graph_loaded": False}, got
    full = tree.doit()
    off = graphrun.doit([], bundles=tree.bundles, workdir=tree.work, PYTHONUNBUFFERED="1", BUNDLEGRAPH_NOOP_MEMO="0")
    up = lambda out: [l for l in out.splitlines() if l.startswith(("-- ", ".  "))]
    assert up(out) == up(full.stdout) == up(off.stdout) and graphrun.executed(full.stdout) == []


@pytest.mark.parametrize(
    "change",
    ["bundle deleted", "bundle rewritten, same size", "stamp deleted", "spec edited", "spec comment", "environment"],
)
def test_after_a_recorded_no_op_every_change_is_still_seen(tree, change):
    """What the memo records is what the load and the checks looked at: each change below makes
    the next run load the graph, and exactly the tasks it concerns run (none for a change that
    changes no task's inputs)."""
    _record_a_no_op(tree)
    extra: dict[str, str] = {}
    f = tree.dist / BUNDLE[X64]
    if change == "bundle deleted":
        f.unlink()
        want = [f"package:{X64}", "manifest"]
    elif change == "bundle rewritten, same size":
        good = f.read_bytes()
        f.write_bytes(bytes(b ^ 0xFF for b in good[:64]) + good[64:])
        want = [f"package:{X64}", "manifest"]
    elif change == "stamp deleted":
        (tree.work / ".bundlegraph" / "stamps" / f"smoke__{X64}.json").unlink()
        want = [f"smoke:{X64}", "manifest"]  # the manifest records each smoke's outcome
    elif change == "spec edited":
        tree.edit(X64, "LLAMA_BUILD_TESTS = false", 'LLAMA_BUILD_TESTS = false\nCMAKE_C_FLAGS = "-fno-tree-vectorize"')
        want = chain(X64, "configure") + ["manifest"]
    elif change == "spec comment":
        tree.spec(X64).write_text(tree.spec(X64).read_text() + "# a comment\n")
        want = []
    else:
        extra = {"BUNDLEGRAPH_EXTRA_PROBE": "1"}
        want = []
    r = graphrun.doit([], bundles=tree.bundles, workdir=tree.work, PYTHONUNBUFFERED="1", **extra)
    assert r.returncode == 0, r.stdout[-6000:] + r.stderr[-3000:]
    assert sorted(graphrun.executed(r.stdout)) == sorted(want)
    assert tree.run() == []


# 2 -------------------------------------------------------------------------------------------


def test_touching_specs_and_sources_without_changing_them_runs_nothing(tree):
    later = time.time() + 120
    touched = [*tree.bundles.rglob("*.toml"), *(p for p in tree.src.rglob("*") if p.is_file())]
    for p in touched:
        os.utime(p, (later, later))
    assert len(touched) > 10
    assert tree.run() == []


def test_editing_the_path_pinned_source_rebuilds_every_leg_but_not_the_toolkit(tree):
    """A ``path`` pin is used in place: an edit to a file every leg compiles (ggml-base) goes
    through every leg's chain, and only the toolkit stays (its key has no source in it)."""
    f = tree.src / "src" / "ggml-base.c"
    f.write_text(f.read_text().replace('"%s/libggml-%s.so"', '"%s/./libggml-%s.so"'))
    ran = tree.run()
    assert sorted(ran) == sorted([t for leg in LEGS for t in chain(leg)] + [TOOLS, REF, "manifest"])
    for leg in LEGS:
        assert b"%s/./libggml-%s.so" in tree.member(leg, "libggml-base.so")
    assert tree.run() == []


# 3 -------------------------------------------------------------------------------------------


def test_editing_a_spec_reruns_that_leg_and_what_merges_it_only(tree):
    """Leg A = the aarch64 CPU leg, merge base of the CUDA leg. A cmake entry that changes the
    code: A's configure..package, the CUDA leg's merge and package (it ships A's libraries),
    the manifest; not the CUDA leg's configure/build, nor the x86_64 leg, nor any source."""
    x64_before = tree.snapshot(tree.dist)[BUNDLE[X64]]
    cpu_lib = tree.member(CPU, "libggml-cpu.so")
    tree.edit(CPU, "LLAMA_BUILD_TESTS = false", 'LLAMA_BUILD_TESTS = false\nCMAKE_C_FLAGS = "-fno-tree-vectorize"')
    ran = tree.run()
    # test-backend-ops (GPU checks) is built with the merge base's cmake entries: it follows them
    assert ran == chain(CPU, "configure") + [f"merge:{CUDA}", f"package:{CUDA}", TOOLS, f"smoke:{CUDA}", "manifest"]
    new_lib = tree.member(CPU, "libggml-cpu.so")
    assert new_lib != cpu_lib and elf.read_elf(new_lib).machine == "EM_AARCH64"
    assert tree.member(CUDA, "libggml-cpu.so") == new_lib  # the merged bundle carries A's new build
    assert tree.snapshot(tree.dist)[BUNDLE[X64]] == x64_before
    for leg in (CPU, CUDA):
        assert tree.manifest_sha(leg) == sha256_file(tree.dist / BUNDLE[leg])
    assert tree.run() == []


# 4 -------------------------------------------------------------------------------------------


def _sass(blob: bytes) -> list[int]:
    info = elf.read_elf(blob)
    assert info.fatbin is not None
    return sorted(fatbin.parse(blob, *info.fatbin).sass)


def test_changing_archs_reconfigures_and_rebuilds_that_leg_only(tree):
    assert _sass(tree.member(CUDA, "libggml-cuda.so")) == [120, 121]
    cpu_before = tree.snapshot(tree.dist)[BUNDLE[X64]], tree.snapshot(tree.dist)[BUNDLE[CPU]]
    tree.edit(CUDA, 'archs = ["120", "121"]', 'archs = ["120"]')
    assert tree.run() == chain(CUDA, "configure") + ["manifest"]
    assert _sass(tree.member(CUDA, "libggml-cuda.so")) == [120]
    assert (tree.snapshot(tree.dist)[BUNDLE[X64]], tree.snapshot(tree.dist)[BUNDLE[CPU]]) == cpu_before
    assert tree.run() == []


# 5 -------------------------------------------------------------------------------------------

ALT_LOCK = DATA / "bundles" / "locks" / "cuda-13.5-wheels-cudart-13.4.toml"


def test_changing_a_toolkit_component_reinstalls_it_and_rebuilds_only_its_legs(tree):
    """The lock moves cuda_cudart (sbsa) from 13.5.37 to 13.4.92 (a lock written by
    ``bundlegraph lock-wheels --require cuda_cudart=nvidia-cuda-runtime==13.4.92``): a new
    component set, so a new toolkit task installs it (the wheel fetched by pip on a cold
    cache) and only the CUDA leg is configured and built again."""
    from bundlegraph.toolkit.lockfile import load_lock

    row = load_lock(ALT_LOCK).row("cuda_cudart", "linux-sbsa")
    assert row.version == "13.4.92"
    require_input("cudart-13.4-sbsa")
    old_tk = tree.toolkit_task()
    cpu_before = tree.snapshot(tree.dist)[BUNDLE[X64]], tree.snapshot(tree.dist)[BUNDLE[CPU]]
    shutil.copyfile(ALT_LOCK, tree.bundles / "locks" / "cuda-13.5-wheels.toml")
    lib = tree.work / "build" / CUDA / "cmake" / "bin" / "libggml-cuda.so"
    lib_before = sha256_file(lib)
    ran = tree.run()
    new_tk = ran[0]
    assert new_tk.startswith("toolkit:cuda13.5-linux-x86_64+linux-sbsa-") and new_tk != old_tk
    # configured and built again against the 13.4 runtime; the stand-in's code does not change
    # with it, and the build is byte-reproducible (issue 19): the same library, so merge does not
    # run again (it keys on the built files' digests). Package does: the bundle's info file
    # records each toolkit component its leg compiled with (issue 40), so the bundle has new
    # bytes and a new smoke; and the manifest's provenance names the components too (issue 32).
    # The smoke's throughput reference is built with the leg's toolkit, so it is built again too
    assert ran == [
        new_tk,
        f"configure:{CUDA}",
        f"build:{CUDA}",
        f"package:{CUDA}",
        f"smoke:reference-{CUDA}",
        f"smoke:{CUDA}",
        "manifest",
    ]
    assert sha256_file(lib) == lib_before
    assert tree.member(CUDA, "libggml-cuda.so") == lib.read_bytes()
    receipt = json.loads(
        (paths.cache_root() / "toolkits" / new_tk.split(":", 1)[1] / "bundlegraph-toolkit.json").read_text()
    )
    assert {c["component"]: c["version"] for c in receipt["components"]}["cuda_cudart"] == "13.4.92"
    conf = json.loads((tree.work / "build" / CUDA / "configure.json").read_text())
    assert new_tk.split(":", 1)[1] in conf["checks"]["CUDA_cudart_LIBRARY"]
    assert (tree.snapshot(tree.dist)[BUNDLE[X64]], tree.snapshot(tree.dist)[BUNDLE[CPU]]) == cpu_before
    provenance = json.loads((tree.dist / "llama-prebuilt-provenance.json").read_text())
    names = [d["name"] for d in provenance["predicate"]["buildDefinition"]["resolvedDependencies"]]
    assert f"{CUDA}: cuda_cudart 13.4.92 (linux-sbsa, target)" in names, names
    assert not [n for n in names if "cuda_cudart 13.5" in n], names
    info = json.loads(tree.member(CUDA, "BUNDLE_INFO.json"))
    assert {c["component"]: c["version"] for c in info["build"]["toolkit"]}["cuda_cudart"] == "13.4.92"
    assert tree.run() == []


# 6 -------------------------------------------------------------------------------------------


def test_deleting_a_bundle_repackages_only_it(tree):
    """The deleted bundle is the CUDA leg's merge base: it is packed again, byte for byte the
    same, so nothing that consumed it (the CUDA leg's merge) runs again."""
    before = tree.snapshot(tree.dist)
    (tree.dist / BUNDLE[CPU]).unlink()
    assert tree.run() == [f"package:{CPU}", "manifest"]
    after = tree.snapshot(tree.dist)
    assert after[BUNDLE[CPU]][1] == before[BUNDLE[CPU]][1]  # reproducible: same bytes
    assert after[BUNDLE[CUDA]] == before[BUNDLE[CUDA]] and after[BUNDLE[X64]] == before[BUNDLE[X64]]
    assert tree.run() == []


def test_deleting_a_build_directory_configures_and_builds_that_leg_again(tree):
    """CMake's binary directory is not hashed (builds rewrite it), but its presence is part of
    the configure stamp: without it the leg configures and builds again (measured on the GPU
    machine, where a deleted directory left "cmake is not configured")."""
    shutil.rmtree(tree.work / "build" / CPU / "cmake")
    why = graphrun.cli(["explain", f"configure:{CPU}"], bundles=tree.bundles, workdir=tree.work)
    assert why.returncode == 0 and "CMakeCache.txt is missing" in why.stdout, why.stdout + why.stderr
    ran = tree.run()
    assert ran[:2] == [f"configure:{CPU}", f"build:{CPU}"], ran
    allowed = set(chain(CPU, "configure")) | {f"merge:{CUDA}", f"package:{CUDA}", TOOLS, f"smoke:{CUDA}", "manifest"}
    assert set(ran) <= allowed, ran
    assert (tree.work / "build" / CPU / "cmake" / "CMakeCache.txt").is_file()
    assert tree.run() == []


# 7 -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("how", ["other size", "same size"])
def test_bundle_overwritten_by_hand_is_detected_and_repackaged(tree, how):
    f = tree.dist / BUNDLE[X64]
    good = f.read_bytes()
    bad = b"not a bundle" if how == "other size" else bytes(b ^ 0xFF for b in good[:64]) + good[64:]
    f.write_bytes(bad)
    why = graphrun.cli(["explain", f"package:{X64}"], bundles=tree.bundles, workdir=tree.work)
    assert f"dist/{BUNDLE[X64]} was changed outside bundlegraph (fingerprint differs)" in why.stdout + why.stderr
    assert tree.run() == [f"package:{X64}", "manifest"]
    assert f.read_bytes() == good
    assert tree.manifest_sha(X64) == sha256_file(f)
    assert tree.run() == []


# 8 -------------------------------------------------------------------------------------------


def _procs(pattern: str) -> list[str]:
    """``pgrep -af pattern`` lines: processes whose command line contains ``pattern``."""
    r = subprocess.run(["pgrep", "-af", pattern], capture_output=True, text=True)
    return [l for l in r.stdout.splitlines() if l.strip()]


def _wait(pred, timeout: float, what: str):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        v = pred()
        if v:
            return v
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL], ids=lambda s: s.name)
def test_build_killed_mid_compile_resumes_and_leaves_no_compiler(tree, sig):
    tree.edit(X64, "LLAMA_BUILD_TESTS = false", f"LLAMA_BUILD_TESTS = false\nMINI_SLOW_TU = {SLOW_STEPS}")
    slow_src = (tree.src / "src" / "slow.cpp").as_posix()
    slow_obj = tree.work / "build" / X64 / "cmake" / "CMakeFiles" / "mini-slow.dir" / "src" / "slow.cpp.o"
    log = tree.root / "killed.log"
    p = tree.popen(log, CCACHE_DISABLE="1")  # a real compile to kill, never a cache hit
    try:
        compiling = _wait(lambda: [l for l in _procs(slow_src) if "cc1plus" in l], 120, "the slow compile to start")
        os.kill(p.pid, sig)
        p.wait(60)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    out = log.read_text()
    assert compiling and p.returncode != 0, out
    assert graphrun.executed(out) == [f"configure:{X64}", f"build:{X64}"], out
    # no compiler (nor ninja, cmake or the supervisor) outlives the killed doit
    if sig == signal.SIGKILL:  # the supervisor learns of it through PR_SET_PDEATHSIG
        try:
            _wait(lambda: not _procs(tree.root.as_posix()), 15, "the build's processes to end")
        except AssertionError:
            pass
    assert _procs(tree.root.as_posix()) == []
    # the interrupted build is not recorded as done; the configure that finished is
    assert tree.stamp(f"build:{X64}") is None
    assert f"-DMINI_SLOW_TU={SLOW_STEPS}" in tree.stamp(f"configure:{X64}")["inputs"]["argv"]
    assert not slow_obj.exists()
    # the next run resumes at the build; the slow object ships nothing, so the built files are
    # identical and verify (keyed on them) stays done; merge/package rerun for the spec edit, and
    # the bundle's info file records the leg's recipe (its CMake cache now holds MINI_SLOW_TU):
    # new bundle bytes, so a new smoke
    assert tree.run() == [
        f"build:{X64}",
        f"merge:{X64}",
        f"package:{X64}",
        f"smoke:{X64}",
        "manifest",
    ]
    assert slow_obj.is_file() and tree.stamp(f"build:{X64}") is not None
    assert tree.run() == []


STANDIN = """#!{python}
# A compiler-cache stand-in (found as `ccache` on PATH): runs the real ccache with what it is
# given (so the launcher probe's hits are real; the test's CCACHE_DISABLE=1 makes the build's
# compiles real compiles); on SIGTERM it finishes what it is doing for 3 s before it exits, as a
# real compiler may.
import os, signal, subprocess, sys, time
def term(*_):
    with open({marker!r}, "a") as f:
        f.write(f"{{os.getpid()}} term\\n")
    time.sleep(3)
    with open({marker!r}, "a") as f:
        f.write(f"{{os.getpid()}} done\\n")
    os._exit(143)
signal.signal(signal.SIGTERM, term)
sys.exit(subprocess.call([{real!r}, *sys.argv[1:]]))
"""


def test_cancelled_build_ends_only_when_a_lingering_compiler_is_gone(tree):
    """A cancelled CI job (SIGTERM to doit) leaves nothing running: ninja starts each compile in
    a process group of its own and exits as soon as its direct children die, but a compiler
    (here a launcher stand-in) that traps SIGTERM lingers 3 s. doit must not exit before it is
    gone -- the runner would tear the job down with the compiler still writing."""
    bindir = tree.root / "standin"
    bindir.mkdir()
    marker = tree.root / "standin.log"
    real = str(graphrun.BIN / "ccache")
    (bindir / "ccache").write_text(STANDIN.format(python=sys.executable, marker=str(marker), real=real))
    (bindir / "ccache").chmod(0o755)
    env = {"PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}", "BUNDLEGRAPH_LAUNCHER": "ccache", "CCACHE_DISABLE": "1"}
    tree.edit(X64, "LLAMA_BUILD_TESTS = false", f"LLAMA_BUILD_TESTS = false\nMINI_SLOW_TU = {SLOW_STEPS}")
    slow_src = (tree.src / "src" / "slow.cpp").as_posix()
    log = tree.root / "cancelled.log"
    p = tree.popen(log, **env)
    try:
        _wait(lambda: [l for l in _procs(slow_src) if "cc1plus" in l], 120, "the slow compile to start")
        assert any(str(bindir / "ccache") in l for l in _procs(slow_src)), "the build does not use the stand-in"
        t0 = time.monotonic()
        os.kill(p.pid, signal.SIGTERM)
        p.wait(60)
        took = time.monotonic() - t0
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    out = log.read_text()
    assert p.returncode != 0, out
    assert _procs(tree.root.as_posix()) == [], "doit exited while its build was still running"
    lines = marker.read_text().splitlines()
    termed = {l.split()[0] for l in lines if l.endswith(" term")}
    assert termed and termed == {l.split()[0] for l in lines if l.endswith(" done")}, lines
    assert took >= 2.5, f"doit exited {took:.1f}s after SIGTERM: it did not wait for the compiler"
    assert tree.stamp(f"build:{X64}") is None


# 9 -------------------------------------------------------------------------------------------


def test_two_doit_runs_at_once_one_stops_with_a_message(tree):
    tree.edit(X64, "LLAMA_BUILD_TESTS = false", "LLAMA_BUILD_TESTS = false\nMINI_SLOW_TU = 200000")
    logs = [tree.root / "a.log", tree.root / "b.log"]
    runs = [tree.popen(logs[0]), tree.popen(logs[1])]
    for p in runs:
        p.wait(300)
    outs = [l.read_text() for l in logs]
    codes = [p.returncode for p in runs]
    assert sorted(codes) == [0, 2], outs
    win = codes.index(0)
    lose = 1 - win
    assert f"another doit run (pid {runs[win].pid}, started " in outs[lose], outs[lose]
    assert "BUNDLEGRAPH_LOCK_WAIT" in outs[lose]
    assert graphrun.executed(outs[lose]) == []
    # the slow object ships nothing: verify (keyed on the built files) has nothing new to check;
    # the smoke runs again because the bundle's info file records the new CMake cache entry
    assert graphrun.executed(outs[win]) == [
        f"configure:{X64}",
        f"build:{X64}",
        f"merge:{X64}",
        f"package:{X64}",
        f"smoke:{X64}",
        "manifest",
    ]
    assert tree.run() == []  # the state both runs saw is intact
