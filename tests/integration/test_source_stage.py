"""The source stage on real inputs: the pinned llama-cpp-python sdist (vendored llama.cpp),
a tarball served by a real local HTTP server, a local git repository, and unsafe/bad pins."""

from __future__ import annotations

import hashlib
import io
import json
import subprocess
import tarfile
from pathlib import Path

import pytest
from graphrun import doit, executed
from redistserver import RedistServer

COMMIT = "0c1e57098bba43ac29e6e3b677cdceebdd22334f"


def release_with(bundles: Path, source_toml: str) -> None:
    rel = bundles / "release.toml"
    text = rel.read_text()
    head = text.split("[source]")[0]
    rel.write_text(head + "[source]\n" + source_toml)


@pytest.mark.network
def test_real_llama_cpp_sdist_fetched_verified_unpacked_with_commit(workdir):
    """`doit source:linux-arm64-cuda13-blackwell` on the real pin (shared cache)."""
    r = doit(["source:linux-arm64-cuda13-blackwell"], workdir=workdir)
    assert r.returncode == 0, r.stdout + r.stderr
    rec = json.loads((workdir / "build/linux-arm64-cuda13-blackwell/source.json").read_text())
    assert rec["commit"] == COMMIT
    assert rec["commit_date"].startswith("2026-10-01")
    tree = Path(rec["tree"])
    assert tree.name == "llama.cpp" and (tree / "cmake/arm64-windows-msvc-cuda.cmake").is_file()
    assert rec["files"] > 3000 and len(rec["digest"]) == 64
    again = doit(["source:linux-arm64-cuda13-blackwell"], workdir=workdir)
    assert again.returncode == 0 and executed(again.stdout) == [], again.stdout
    assert "-- source:linux-arm64-cuda13-blackwell" in again.stdout


def make_tarball(files: dict[str, bytes], extra: list[tarfile.TarInfo] = ()) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        for name, data in files.items():
            ti = tarfile.TarInfo(name)
            ti.size = len(data)
            tf.addfile(ti, io.BytesIO(data))
        for ti in extra:
            tf.addfile(ti)
    return buf.getvalue()


@pytest.fixture
def own_cache(tmp_path, monkeypatch):
    c = tmp_path / "cache"
    monkeypatch.setenv("BUNDLEGRAPH_CACHE", str(c))
    return c


def test_tarball_pin_over_http_then_up_to_date(workdir, bundles_copy, own_cache):
    body = make_tarball({"llama.cpp-x/CMakeLists.txt": b"project(x)\n", "llama.cpp-x/src/a.c": b"int a;\n"})
    sha = hashlib.sha256(body).hexdigest()
    with RedistServer() as srv:
        srv.files["/src.tar.gz"] = body
        release_with(
            bundles_copy,
            f'kind = "tarball"\nurl = "{srv.url("/src.tar.gz")}"\nsha256 = "{sha}"\n'
            f'commit = "{"a" * 40}"\ncommit_date = 2026-10-01T00:00:00Z\n',
        )
        r = doit(["source:linux-x64-cpu"], bundles=bundles_copy, workdir=workdir, BUNDLEGRAPH_CACHE=str(own_cache))
        assert r.returncode == 0, r.stdout + r.stderr
        rec = json.loads((workdir / "build/linux-x64-cpu/source.json").read_text())
        assert rec["commit"] == "a" * 40 and rec["commit_date"] == "2026-10-01T00:00:00+00:00" and rec["files"] == 2
        assert (Path(rec["tree"]) / "src/a.c").read_bytes() == b"int a;\n"
        # a second leg reuses the cache entry: no second download
        r2 = doit(["source:linux-arm64-cpu"], bundles=bundles_copy, workdir=workdir, BUNDLEGRAPH_CACHE=str(own_cache))
        assert r2.returncode == 0 and srv.hits("/src.tar.gz") == 1
        r3 = doit(["--continue", "source"], bundles=bundles_copy, workdir=workdir, BUNDLEGRAPH_CACHE=str(own_cache))
        others = [
            p.stem for p in bundles_copy.glob("*.toml") if p.stem not in ("release", "linux-x64-cpu", "linux-arm64-cpu")
        ]
        assert sorted(executed(r3.stdout)) == sorted(f"source:{l}" for l in others)
        # the Windows and macOS legs compile on their own runners: on this host their sources are refused
        # (before any download), naming the host they need; the Linux legs' sources are done
        windows = [l for l in others if l.startswith("windows-")]
        macos = [l for l in others if l.startswith("macos-")]
        assert windows and macos and r3.returncode != 0
        for leg in windows:
            assert f"source:{leg}: {leg} compiles on a windows x64 host" in r3.stdout + r3.stderr, leg
        for leg in macos:  # each macOS leg on its own arch's runner
            arch = leg.split("-")[1]
            assert f"source:{leg}: {leg} compiles on a macos {arch} host" in r3.stdout + r3.stderr, leg
        elsewhere = windows + macos
        assert all((workdir / "build" / l / "source.json").is_file() for l in others if l not in elsewhere)
        # deleting the cached tree makes the source task run again
        import shutil

        shutil.rmtree(own_cache / "sources")
        r4 = doit(["source:linux-x64-cpu"], bundles=bundles_copy, workdir=workdir, BUNDLEGRAPH_CACHE=str(own_cache))
        assert executed(r4.stdout) == ["source:linux-x64-cpu"] and srv.hits("/src.tar.gz") == 1  # blob still cached


def test_tarball_with_wrong_hash_fails_closed(workdir, bundles_copy, own_cache):
    body = make_tarball({"x/a.c": b"int a;\n"})
    with RedistServer() as srv:
        srv.files["/src.tar.gz"] = body
        url = srv.url("/src.tar.gz")
        release_with(bundles_copy, f'kind = "tarball"\nurl = "{url}"\nsha256 = "{"0" * 64}"\n')
        r = doit(["source:linux-x64-cpu"], bundles=bundles_copy, workdir=workdir, BUNDLEGRAPH_CACHE=str(own_cache))
    assert r.returncode != 0
    out = r.stdout + r.stderr
    assert f"{url}: content does not match its pin: expected sha256 {'0' * 64}" in out
    assert f"got sha256 {hashlib.sha256(body).hexdigest()} size {len(body)}" in out
    assert "Traceback" not in out
    assert not list((own_cache / "blobs/sha256").glob("[0-9a-f]*"))
    assert not (own_cache / "sources").exists() or not [p for p in (own_cache / "sources").iterdir() if p.is_dir()]
    assert not (workdir / "build/linux-x64-cpu/source.json").exists()


def test_tarball_with_traversal_entry_is_refused(workdir, bundles_copy, own_cache):
    body = make_tarball({"x/a.c": b"int a;\n", "x/../../evil": b"boom"})
    sha = hashlib.sha256(body).hexdigest()
    with RedistServer() as srv:
        srv.files["/src.tar.gz"] = body
        release_with(bundles_copy, f'kind = "tarball"\nurl = "{srv.url("/src.tar.gz")}"\nsha256 = "{sha}"\n')
        r = doit(["source:linux-x64-cpu"], bundles=bundles_copy, workdir=workdir, BUNDLEGRAPH_CACHE=str(own_cache))
    assert r.returncode != 0
    assert "entry 'x/../../evil' climbs out of the extraction root ('..')" in r.stdout + r.stderr
    assert not (own_cache / "sources").exists() or not [p for p in (own_cache / "sources").iterdir() if p.is_dir()]


def test_git_pin_records_commit_and_date(workdir, bundles_copy, own_cache, tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    env = {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@e",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@e",
        "GIT_COMMITTER_DATE": "2026-10-01T12:00:00Z",
        "GIT_AUTHOR_DATE": "2026-10-01T12:00:00Z",
        "PATH": "/usr/bin:/bin",
    }
    (repo / "CMakeLists.txt").write_text("project(x)\n")
    for argv in (["git", "init", "-q"], ["git", "add", "."], ["git", "commit", "-qm", "x"]):
        subprocess.run(argv, cwd=repo, env=env, check=True)
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True).stdout.strip()
    release_with(bundles_copy, f'kind = "git"\nurl = "{repo}"\ncommit = "{commit}"\n')
    r = doit(["source:linux-x64-cpu"], bundles=bundles_copy, workdir=workdir, BUNDLEGRAPH_CACHE=str(own_cache))
    assert r.returncode == 0, r.stdout + r.stderr
    rec = json.loads((workdir / "build/linux-x64-cpu/source.json").read_text())
    assert rec["commit"] == commit and rec["commit_date"] == "2026-10-01T12:00:00+00:00"


def test_path_pin_used_in_place(workdir, bundles_copy, tmp_path):
    src = tmp_path / "src"
    (src / "sub").mkdir(parents=True)
    (src / "sub" / "CMakeLists.txt").write_text("project(x)\n")
    release_with(bundles_copy, f'kind = "path"\npath = "{src}"\nsubdirectory = "sub"\ncommit = "{"b" * 40}"\n')
    r = doit(["source:linux-x64-cpu"], bundles=bundles_copy, workdir=workdir)
    assert r.returncode == 0, r.stdout + r.stderr
    rec = json.loads((workdir / "build/linux-x64-cpu/source.json").read_text())
    assert rec["tree"] == str(src / "sub") and rec["commit"] == "b" * 40 and rec["files"] == 1
