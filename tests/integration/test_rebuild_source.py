"""``verify-release --rebuild`` proves the source (issue 40, items 4 and 9): a mix release of the
stand-in (its pull request fetched from a real ``git daemon`` and merged) is rebuilt, the base and
the pinned head fetched and merged again and the source archive's tree compared with the merge;
and the attacker's case: the same release re-sealed (SHA index, manifest and provenance recomputed,
as someone with write access to the release would) around a source archive with a changed file
under the same commit id is refused, naming the file. A release naming a commit its source
repository does not have is refused too."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import shutil
import tarfile
from pathlib import Path

import graphrun
import pytest
from conftest import linux_only, require_tools
from gitkit import GitServer, archive_sha256, mix_release_text, standin_repository

pytestmark = linux_only

LEG = "mini-linux-x64-cpu"
SOURCE_FILE = "tools/cli.c"
"""The file the attacker changes in the source archive (under its top-level directory)."""


@pytest.fixture(scope="module")
def mix_release(tmp_path_factory):
    """The stand-in as a mix release of its one x64 CPU leg (the other legs' specs removed: only
    this leg is promised), built with the real graph. Yields ``(server, bundles, work)``."""
    require_tools("git", "gcc", "g++")
    root = tmp_path_factory.mktemp("mixrebuild")
    with GitServer(root / "srv") as srv:
        shas = standin_repository(srv)
        sha256 = archive_sha256(srv.root / "minillama", shas["base"])
        bundles, work = graphrun.standin_tree(root)
        for other in ("mini-linux-arm64-cpu", "mini-linux-arm64-cuda"):
            (bundles / f"{other}.toml").unlink()
        text = mix_release_text(
            srv.url("minillama"), ("b42", shas["base"], sha256), [(1, shas["1"])], default_legs=[LEG]
        )
        (bundles / "release.toml").write_text(text, encoding="utf-8")
        r = graphrun.doit([], bundles=bundles, workdir=work, timeout=900)
        assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-3000:]
        yield srv, bundles, work


def _index(dist: Path) -> dict:
    return json.loads((dist / "llama-prebuilt-sha256.json").read_text(encoding="utf-8"))


def _source_archive(dist: Path) -> Path:
    (name,) = [n for n, a in _index(dist)["artifacts"].items() if a["kind"] == "upstream-source"]
    return dist / name


def _sha(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def reseal(dist: Path, replaced: dict[str, str]) -> None:
    """What someone with write access to the release does after changing assets: every JSON file of
    ``dist`` (SHA index, manifest, provenance) has each old sha256 of ``replaced`` swapped for the
    new one, and again for the JSON files that changed, until nothing changes."""
    todo = dict(replaced)
    while todo:
        changed: dict[str, str] = {}
        for f in sorted(dist.glob("*.json")):
            before = f.read_bytes()
            text = before.decode("utf-8")
            for old, new in todo.items():
                text = text.replace(old, new)
            if text.encode() != before:
                f.write_bytes(text.encode())
                changed[hashlib.sha256(before).hexdigest()] = _sha(f)
        todo = changed


def test_verify_release_rebuilds_a_mix_release_after_proving_its_source(mix_release, tmp_path):
    srv, bundles, work = mix_release
    dist = work / "dist"
    where = tmp_path / "rebuild"
    r = graphrun.cli(
        ["verify-release", str(dist), "--rebuild", LEG, "--rebuild-dir", str(where)],
        bundles=bundles,
        workdir=work,
        timeout=900,
    )
    out = r.stdout + r.stderr
    commit = _index(dist)["source_commit"]
    tree = (where / "proof.git").is_dir()
    assert f"{_source_archive(dist).name} is the tree " in out and f"of commit {commit}" in out, out[-4000:]
    assert f"fetched from {srv.url('minillama')}" in out and tree
    assert f"app-{_index(dist)['release_tag']}-linux-x64-cpu.tar.gz rebuilt byte-identical" in out, out[-4000:]
    assert "  rebuild: passed" in r.stdout, out[-4000:]


def test_a_resealed_release_whose_source_archive_changed_under_the_same_commit_is_refused_naming_the_file(
    mix_release, tmp_path
):
    """The attacker's case of issue 40, item 9: ``tools/cli.c`` (llama-cli) of the source archive gets one
    more line (a printf added under the pinned commit id), the archive keeps its name, and the
    index, manifest and provenance are recomputed around it. The archive's sha256 then matches
    the index; its tree does not match the commit the index names."""
    _srv, bundles, work = mix_release
    dist = tmp_path / "dist"
    shutil.copytree(work / "dist", dist)
    archive = _source_archive(dist)
    old = _sha(archive)
    buf = io.BytesIO()
    with tarfile.open(archive) as src, tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as dst:
        hit = False
        for m in src.getmembers():
            data = src.extractfile(m).read() if m.isfile() else None  # type: ignore[union-attr]
            if data is not None and m.name.split("/", 1)[-1] == SOURCE_FILE:
                data += b'\nstatic int planted = printf("owned\\n");\n'
                m.size = len(data)
                hit = True
            dst.addfile(m, io.BytesIO(data) if data is not None else None)
    assert hit, f"{SOURCE_FILE} is not in {archive.name}"
    archive.write_bytes(gzip.compress(buf.getvalue(), mtime=0))
    reseal(dist, {old: _sha(archive)})
    assert _index(dist)["artifacts"][archive.name]["sha256"] == _sha(archive)  # sealed again

    r = graphrun.cli(
        ["verify-release", str(dist), "--rebuild", LEG, "--rebuild-dir", str(tmp_path / "rebuild")],
        bundles=bundles,
        workdir=work,
        timeout=900,
    )
    assert r.returncode != 0
    out = r.stdout + r.stderr
    assert f"{archive.name}: its tree " in out and "is not the tree " in out, out[-4000:]
    assert f"files that differ: {SOURCE_FILE}" in out, out[-4000:]
    assert not (tmp_path / "rebuild" / "work" / "dist").exists()  # refused before building anything
