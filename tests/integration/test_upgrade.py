"""Upgrading bundlegraph never forces a rebuild: the stand-in release built by the code as it
was before the pipeline renovation (issue 14; commit 801811ce78cd, taken from this repository's
git history, with the stand-in data of that commit) is up to date for today's code -- `doit` of
every task the old code ran executes nothing over its work directory, except what a change that
alters a build says here (issue 19: the CUDA leg's nvcc flags; issue 32: every leg's prefix maps). Action keys keep their form across
refactorings; a change that alters one must say so in this test."""

from __future__ import annotations

import io
import subprocess
import tarfile
from pathlib import Path

import graphrun
import pytest
from conftest import linux_only, require_input, require_tools

ROOT = Path(__file__).resolve().parents[2]
BEFORE = "801811ce78cda53fd0ae247b02238874339abfe1"
"""The last commit before the renovation (its stamps are the ones users have)."""

pytestmark = linux_only


def _git(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, timeout=120)


def test_a_release_built_before_the_renovation_is_up_to_date_after_it(tmp_path):
    require_tools("git", "aarch64-linux-gnu-gcc", "aarch64-linux-gnu-g++", "gcc", "g++")
    require_input("cuda-13.5-sbsa-cross")
    if _git("cat-file", "-e", f"{BEFORE}^{{commit}}").returncode != 0:
        pytest.fail(f"needs this repository's git history (commit {BEFORE[:12]}): run from a full clone", pytrace=False)
    old = tmp_path / "old"
    arch = _git("archive", "--format=tar", BEFORE, "bundlegraph", "dodo.py", "tests/data", "bundles/locks")
    assert arch.returncode == 0, arch.stderr
    with tarfile.open(fileobj=io.BytesIO(arch.stdout)) as t:
        t.extractall(old, filter="data")
    tree = tmp_path / "tree"
    (tree / "bundles").parent.mkdir(parents=True)
    (old / "tests/data/minillama").rename(tree / "minillama")
    (old / "tests/data/incbundles").rename(tree / "bundles")
    for lock in (old / "bundles/locks").iterdir():
        lock.rename(tree / "bundles/locks" / lock.name)
    work = tree / "work"
    work.mkdir()
    env = graphrun.env_for(tree / "bundles", work, PYTHONPATH=str(old), PYTHONUNBUFFERED="1")
    before = subprocess.run(
        [str(graphrun.BIN / "doit"), "-f", str(old / "dodo.py")],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
        cwd=tmp_path,
    )
    assert before.returncode == 0, before.stdout[-4000:] + before.stderr[-3000:]
    ran = graphrun.executed(before.stdout)
    assert "build:mini-linux-arm64-cuda" in ran and "manifest" in ran, ran
    # today's code, same work directory: every task the old code ran is up to date. (A bare doit
    # would add the stages that came later, the smoke of each bundle: new tasks, not reruns; the
    # old stand-in's llama-cli predates the --version line they check.)
    # Two changes say so here:
    # - issue 19: every nvcc compile gets -objtemp and a per-source -frandom-seed (byte-reproducible
    #   objects), so the CUDA leg's toolchain file differs;
    # - issue 32: every compile of every leg maps the build host's roots (source tree, build,
    #   work and cache directories, toolkit) to stable names (-ffile-prefix-map), so every leg's
    #   toolchain file differs, configure and build run with git blind to the tree (ggml's commit
    #   string no longer depends on how the tree was fetched: the configure key says so), and
    #   verify now checks that no binary names those roots;
    # - issue 50: every Linux leg compiles with the pinned compiler (new tasks toolkit:gcc-..., a new
    #   compiler in every configure key), and the specs' [linux] floors are refused (the machine
    #   file's [compiler] states them): the one spec edit an upgrade asks for, made here.
    # So each leg is configured, built and verified again, and what its new bytes feed runs again
    # (merge, package, the manifest); a task of no other stage does.
    import re

    for spec in (tree / "bundles").glob("*.toml"):
        text = spec.read_text(encoding="utf-8")
        spec.write_text(re.sub(r"\n\[linux\]\n(?:[a-z_]+ = [^\n]*\n)+", "\n", text), encoding="utf-8")
    after = graphrun.doit(ran, bundles=tree / "bundles", workdir=work, PYTHONUNBUFFERED="1")
    assert after.returncode == 0, after.stdout[-4000:] + after.stderr[-3000:]
    reran = graphrun.executed(after.stdout)
    legs = ("mini-linux-arm64-cpu", "mini-linux-arm64-cuda", "mini-linux-x64-cpu")
    rebuilt = {f"{st}:{leg}" for st in ("configure", "build", "verify") for leg in legs}
    fed = {f"{st}:{leg}" for st in ("merge", "package") for leg in legs} | {"manifest"}
    assert rebuilt <= set(reran), after.stdout[-4000:]
    compilers = {t for t in reran if t.startswith("toolkit:gcc-12.2.0-linux-")}
    assert len(compilers) == 2, reran  # x64 and arm64 (issue 50)
    assert set(reran) <= rebuilt | fed | compilers, reran
    assert sorted(l[3:] for l in after.stdout.splitlines() if l.startswith("-- ")) == sorted(set(ran) - set(reran))
