"""The Debian-package fetcher for real (:mod:`bundlegraph.toolkit.debs`): one small Debian 13
package (``libcub-dev``, 0.3 MB, headers only) fetched with ``apt-get download`` through the
private apt configuration into the shared cache and extracted with ``dpkg-deb -x``; a wrong
sha256 fails closed; an extraction that fails leaves the prefix as it was. About 5 s on a cold
cache (the trixie package lists), under 1 s warm."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import require_tools
from debskit import CUB_LOCK, CUB_SHA

from bundlegraph.core import paths
from bundlegraph.core.errors import HashMismatch
from bundlegraph.toolkit import debs


@pytest.fixture(autouse=True)
def _tools():
    require_tools("apt-get", "dpkg-deb")


def lock_file(tmp_path: Path, text: str) -> debs.DebLock:
    p = tmp_path / "lock.toml"
    p.write_text(text, encoding="utf-8")
    return debs.load_lock(p)


def test_fetch_and_extract_a_real_trixie_package(tmp_path):
    lock = lock_file(tmp_path, CUB_LOCK)
    (blob,) = debs.fetch(lock)
    assert blob == paths.blob_path(CUB_SHA) and blob.stat().st_size == 290612
    prefix = debs.extract(lock, tmp_path / "prefix")
    assert (prefix / "usr/include/cub/cub.cuh").is_file()
    rec = json.loads((prefix / debs.RECEIPT).read_text())
    assert rec["lock"] == lock.digest() and rec["packages"][0]["sha256"] == CUB_SHA
    assert [p.name for p in (tmp_path).iterdir() if p.name.startswith(".prefix.")] in ([], [".prefix.lock"])
    # a second extract of the same lock keeps the prefix (no re-extraction)
    marker = prefix / "usr" / "marker"
    marker.write_text("kept")
    assert debs.extract(lock, prefix) == prefix and marker.read_text() == "kept"


def test_a_wrong_sha256_fails_closed(tmp_path, monkeypatch):
    monkeypatch.setenv("BUNDLEGRAPH_CACHE", str(tmp_path / "cache"))  # the real blob must not be reused
    bad = "0" * 63 + "1"
    lock = lock_file(tmp_path, CUB_LOCK.replace(CUB_SHA, bad))
    with pytest.raises(
        HashMismatch, match=rf"lock\.toml: package libcub-dev 2\.3\.2-2 .*expected sha256 {bad}, got {CUB_SHA}"
    ):
        debs.fetch(lock)
    assert not paths.blob_path(bad).exists() and not paths.blob_path(CUB_SHA).exists()
    with pytest.raises(HashMismatch):
        debs.extract(lock, tmp_path / "prefix")
    assert not (tmp_path / "prefix").exists()


def test_a_failed_extraction_leaves_the_previous_prefix(tmp_path):
    lock = lock_file(tmp_path, CUB_LOCK)
    prefix = tmp_path / "prefix"
    prefix.mkdir()
    (prefix / "old").write_text("previous")

    def broken(tree: Path) -> None:
        assert (tree / "usr/include/cub").is_dir()  # the packages are there before the fixup
        raise RuntimeError("fixup failed")

    with pytest.raises(RuntimeError, match="fixup failed"):
        debs.extract(lock, prefix, fixup=broken)
    assert sorted(p.name for p in prefix.iterdir()) == ["old"]
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def _serve(root: Path):
    """A static HTTP server on 127.0.0.1 over ``root`` (a Debian archive's layout: ``pool/...``)."""
    import functools
    import http.server
    import threading

    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd


def test_a_host_without_debians_apt_downloads_by_pool_path_and_sha256(tmp_path, monkeypatch):
    """GitHub's Ubuntu runners have no Debian apt source: with BUNDLEGRAPH_DEBIAN_ARCHIVE the
    lock's pool paths are downloaded from that archive, checked against the pins, and apt is never
    run; a tampered file fails closed; a row without a pool path is named."""
    (blob,) = debs.fetch(lock_file(tmp_path, CUB_LOCK))  # the real package, into the shared cache
    pool = "pool/main/c/cub/libcub-dev_2.3.2-2_all.deb"
    archive = tmp_path / "archive"
    (archive / pool).parent.mkdir(parents=True)
    (archive / pool).write_bytes(blob.read_bytes())
    httpd = _serve(archive)
    try:
        monkeypatch.setenv("BUNDLEGRAPH_CACHE", str(tmp_path / "cache"))
        monkeypatch.setenv("BUNDLEGRAPH_DEBIAN_ARCHIVE", f"http://127.0.0.1:{httpd.server_address[1]}/")
        monkeypatch.setenv("PATH", str(tmp_path / "no-apt"))  # apt-get is not reachable at all
        lock = lock_file(tmp_path, CUB_LOCK + f'path = "{pool}"\n')
        (got,) = debs.fetch(lock)
        assert got == paths.blob_path(CUB_SHA) and got.read_bytes() == blob.read_bytes()
        # the archive's file no longer the pinned bytes: refused, nothing cached
        (archive / pool).write_bytes(b"not the package")
        monkeypatch.setenv("BUNDLEGRAPH_CACHE", str(tmp_path / "cache2"))
        with pytest.raises(HashMismatch):
            debs.fetch(lock)
        assert not paths.blob_path(CUB_SHA).exists()
        with pytest.raises(debs.ToolkitError, match=r"libcub-dev: no pool path pinned \(path =\)"):
            debs.fetch(lock_file(tmp_path, CUB_LOCK))
    finally:
        httpd.shutdown()
