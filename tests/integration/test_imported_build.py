"""A leg's build output made on another runner (doit ``built=DIR``), the seam the Windows legs
use: compiled on a Windows runner, everything after the compiler anywhere. The stand-in release
plays both runners here: runner A builds the aarch64 CPU leg, its ``cmake/bin`` travels as the
artifact ``built-<leg>``, runner B imports it (no configure, no compiler), verifies it as strictly
as a local build, merges and packages it, and records where every file came from."""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import tarfile
from pathlib import Path

import graphrun
import pytest
from conftest import linux_only, require_tools

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
LEG = "mini-linux-arm64-cpu"

pytestmark = linux_only


def _tree(root: Path) -> tuple[Path, Path]:
    return graphrun.standin_tree(root)


def _members(archive: Path) -> dict[str, str]:
    with tarfile.open(archive) as t:
        return {
            m.name.split("/", 1)[-1]: hashlib.sha256(t.extractfile(m).read()).hexdigest()
            for m in t.getmembers()
            if m.isfile()
        }


@pytest.fixture(scope="module")
def runner_a(tmp_path_factory) -> tuple[Path, Path]:
    """(bundles, work) after runner A packaged the leg the ordinary way."""
    require_tools("aarch64-linux-gnu-gcc", "aarch64-linux-gnu-g++")
    bundles, work = _tree(tmp_path_factory.mktemp("runner-a"))
    r = graphrun.doit([f"package:{LEG}"], bundles=bundles, workdir=work)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-3000:]
    return bundles, work


def test_an_imported_build_is_verified_merged_packaged_and_its_provenance_recorded(runner_a, tmp_path):
    _b, work_a = runner_a
    built = tmp_path / "built"
    shutil.copytree(work_a / "build" / LEG / "cmake" / "bin", built / f"built-{LEG}")  # the artifact download
    bundles, work = _tree(tmp_path / "runner-b")
    r = graphrun.doit([f"built={built}", f"package:{LEG}"], bundles=bundles, workdir=work)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-3000:]
    ran = graphrun.executed(r.stdout)
    assert ran == [f"source:{LEG}", f"build:{LEG}", f"verify:{LEG}", f"merge:{LEG}", f"package:{LEG}"], ran
    assert not (work / "build" / LEG / "cmake" / "CMakeCache.txt").exists()  # nothing configured here
    rec = json.loads((work / "build" / LEG / "build.json").read_text())
    imported = rec["imported"]
    assert imported["from"] == (built / f"built-{LEG}").as_posix()
    assert (
        imported["files"]["libggml-base.so"]
        == hashlib.sha256((built / f"built-{LEG}" / "libggml-base.so").read_bytes()).hexdigest()
    )
    # the bundle: the same files as runner A's, and an info file naming where they came from
    name = next(p.name for p in (work_a / "dist").glob("app-*.tar.gz"))
    a, b = _members(work_a / "dist" / name), _members(work / "dist" / name)
    info = json.loads(
        tarfile.open(work / "dist" / name)
        .extractfile(
            next(m for m in tarfile.open(work / "dist" / name).getmembers() if m.name.endswith("BUNDLE_INFO.json"))
        )
        .read()
    )
    assert [i["leg"] for i in info["imported_builds"]] == [LEG]
    assert info["imported_builds"][0]["files"] == imported["files"]
    assert {k: v for k, v in a.items() if k != "BUNDLE_INFO.json"} == {
        k: v for k, v in b.items() if k != "BUNDLE_INFO.json"
    }
    assert "imported_builds" not in json.loads(
        io.BytesIO(
            tarfile.open(work_a / "dist" / name)
            .extractfile(
                next(
                    m for m in tarfile.open(work_a / "dist" / name).getmembers() if m.name.endswith("BUNDLE_INFO.json")
                )
            )
            .read()
        ).read()
    )
    # a second run executes nothing; a changed imported file is imported (and verified) again
    assert (
        graphrun.executed(graphrun.doit([f"built={built}", f"package:{LEG}"], bundles=bundles, workdir=work).stdout)
        == []
    )
    (built / f"built-{LEG}" / "libggml-base.so").write_bytes(b"not an ELF file")
    r = graphrun.doit([f"built={built}", f"package:{LEG}"], bundles=bundles, workdir=work)
    assert r.returncode != 0 and f"build:{LEG}" in graphrun.executed(r.stdout)
    assert "libggml-base.so" in r.stdout + r.stderr  # verify names the file it refuses


def test_a_leg_that_cannot_compile_here_stops_before_any_download(tmp_path):
    """On Linux, a Windows leg with no imported build: its source and toolkit tasks refuse first,
    naming the host it needs; nothing is fetched into an empty cache."""
    cache = tmp_path / "cache"
    leg = "windows-arm64-cuda13-portable"
    r = graphrun.doit([f"configure:{leg}"], bundles=ROOT / "bundles", workdir=tmp_path, BUNDLEGRAPH_CACHE=str(cache))
    out = r.stdout + r.stderr
    assert r.returncode != 0
    assert f"{leg} compiles on a windows x64 host (runner 'windows-2022')" in out, out[-3000:]
    assert "bring its build output from that runner with built=DIR" in out
    fetched = [p for p in cache.rglob("*") if p.is_file() and p.stat().st_size > 100_000] if cache.exists() else []
    assert fetched == [], fetched


def test_plan_shows_the_cuda_host_flags_and_where_they_come_from(tmp_path):
    leg = "windows-arm64-cuda13-portable"
    r = graphrun.cli(["plan", leg, "--json"], workdir=tmp_path)
    assert r.returncode == 0, r.stderr
    st = {s["task"]: s for s in json.loads(r.stdout)["legs"][leg]["stages"]}[f"configure:{leg}"]
    flags = st["cuda_host_flags"]
    assert flags["-target-dir=arm64"].startswith("toolchain file: CMAKE_CUDA_FLAGS_INIT")
    assert flags["-Xcompiler=/Zc:preprocessor"].startswith("bundlegraph-hooks.cmake (CMAKE_PROJECT_TOP_LEVEL_INCLUDES)")
    assert st["on_this_host"].startswith(
        f"refused before any download (by source:{leg}, the leg's first task): {leg} compiles on a windows x64 host"
    )


def test_a_compile_runner_job_needs_no_merge_base(tmp_path):
    """The release workflow's compile job runs ``doit only_leg=L build:L`` on the compile runner,
    where L's merge base bundle is nowhere; a run asking for more refuses before any download."""
    bundles, work = _tree(tmp_path)
    cuda = "mini-linux-arm64-cuda"
    r = graphrun.doit([f"only_leg={cuda}", f"package:{cuda}"], bundles=bundles, workdir=work)
    assert r.returncode != 0 and "merges into mini-linux-arm64-cpu" in r.stdout + r.stderr, r.stdout[-3000:]
    r = graphrun.doit([f"only_leg={cuda}", f"source:{cuda}"], bundles=bundles, workdir=work)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert graphrun.executed(r.stdout) == [f"source:{cuda}"]


def test_doit_targets_are_the_task_names_only():
    from bundlegraph.core.runlock import doit_targets
    from bundlegraph.pipeline.stages import COMPILE_STAGES

    argv = ["-n", "2", "run", "only_leg=x", "--continue", "build:x", "toolkit:cuda13.4-a+b-1"]
    assert doit_targets(argv) == ["build:x", "toolkit:cuda13.4-a+b-1"]
    assert all(t.split(":")[0] in COMPILE_STAGES for t in doit_targets(argv))
    assert doit_targets(["list", "--all"]) == []  # a command, not a target
    assert doit_targets(["only_leg=x"]) == []
    # variables before the command, as doit accepts them (issue 41)
    from bundlegraph.core.runlock import doit_command

    assert doit_targets(["only_leg=x", "info", "build:x"]) == ["build:x"]
    assert doit_command(["only_leg=x", "list"]) == doit_command(["list", "only_leg=x"]) == "list"
    assert doit_command(["only_leg=x", "build:x"]) == "run"
