"""A moved or copied checkout builds from where it is (issue 41): the stand-in's ``path`` source pin
is written relative to the bundles directory, so after ``mv`` its key holds while ``source.json``
named the old absolute tree, and configure built from the old place (or failed on its absence).

After a real ``mv`` of a built stand-in checkout the next ``doit`` reruns what names the moved
paths, from the new place, gives the same bundle bytes, and the run after it is a no-op. After a
``cp -r``, the copy builds from itself: the original's source is made uncompilable first, so a
build that read the old location would fail."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import graphrun
from conftest import linux_only, require_tools

from bundlegraph.core.fsutil import sha256_file

pytestmark = linux_only

LEG = "mini-linux-x64-cpu"
BUNDLE = "app-b42-linux-x64-cpu.tar.gz"
CHAIN = [f"{s}:{LEG}" for s in ("source", "configure", "build", "verify", "merge", "package")]


def _package(root: Path):
    r = graphrun.doit([f"package:{LEG}"], bundles=root / "bundles", workdir=root / "work")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    return r


def _names(root: Path, old: Path) -> list[str]:
    """Files of ``root``'s records and CMake cache that name ``old`` (the place it came from)."""
    cmake = root / "work" / "build" / LEG / "cmake" / "CMakeCache.txt"
    found = []
    for f in [*(root / "work" / "build" / LEG).glob("*.json"), cmake]:
        if f"{old}/" in f.read_text(encoding="utf-8", errors="replace"):
            found.append(f.name)
    return found


def test_a_moved_checkout_reruns_what_moved_from_the_new_place_then_nothing(tmp_path):
    require_tools("gcc", "g++")
    a = tmp_path / "a"
    a.mkdir()
    graphrun.standin_tree(a)
    # the chain, and the pinned compiler's task before configure (issue 50)
    assert [t for t in graphrun.executed(_package(a).stdout) if not t.startswith("toolkit:gcc-")] == CHAIN
    sha = sha256_file(a / "work" / "dist" / BUNDLE)

    b = tmp_path / "b"
    a.rename(b)  # mv: the old place is gone
    r = _package(b)
    assert f"source:{LEG}: runs because source.json names the source tree {a / 'minillama'}" in r.stdout, r.stdout
    # the source names the new tree; configure and build run again in the moved build directory
    assert [t for t in graphrun.executed(r.stdout) if not t.startswith("toolkit:gcc-")][:3] == CHAIN[:3], r.stdout
    rec = json.loads((b / "work" / "build" / LEG / "source.json").read_text())
    assert rec["tree"] == str(b / "minillama")
    assert _names(b, a) == []
    assert sha256_file(b / "work" / "dist" / BUNDLE) == sha  # the prefix maps: same bytes from anywhere
    assert graphrun.executed(_package(b).stdout) == []
    why = graphrun.cli(["explain", f"source:{LEG}"], bundles=b / "bundles", workdir=b / "work")
    assert why.stdout.strip() == f"source:{LEG}: up to date", why.stdout


def test_a_copied_checkout_never_reads_the_original(tmp_path):
    require_tools("gcc", "g++")
    a = tmp_path / "a"
    a.mkdir()
    graphrun.standin_tree(a)
    _package(a)
    c = tmp_path / "c"
    shutil.copytree(a, c, symlinks=True)
    for f in (a / "minillama" / "src").glob("*.c"):  # a build reading the original would fail now
        f.write_text('#error "the copy read its original"\n', encoding="utf-8")
    r = _package(c)
    assert f"source:{LEG}" in graphrun.executed(r.stdout) and "the copy read its original" not in r.stdout
    assert _names(c, a) == []
    assert graphrun.executed(_package(c).stdout) == []
