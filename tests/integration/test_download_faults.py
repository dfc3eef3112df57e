"""download(): real HTTP against a server on 127.0.0.1: retries, resume, verification, refusals.
Each failure leaves the blob cache without the file (no half-written blobs)."""

from __future__ import annotations

import hashlib
import os
import time

import pytest
from redistserver import RedistServer

from bundlegraph.core import paths
from bundlegraph.core.download import Settings, check_url, download, download_many
from bundlegraph.core.errors import DownloadError, HashMismatch

FAST = Settings(connect_timeout=2.0, read_timeout=0.5, retries=2, backoff=0.01, jobs=3)
DATA = os.urandom(300_000)
SHA = hashlib.sha256(DATA).hexdigest()


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("BUNDLEGRAPH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("CI", "1")  # plain progress lines
    return tmp_path / "cache"


def blobs(cache):
    d = cache / "blobs" / "sha256"
    return sorted(p.name for p in d.iterdir()) if d.is_dir() else []


def test_ok_then_cached_without_request(cache):
    with RedistServer() as s:
        s.files["/a.bin"] = DATA
        p = download(s.url("/a.bin"), SHA, len(DATA), settings=FAST)
        assert p == paths.blob_path(SHA) and p.read_bytes() == DATA
        n = len(s.requests)
        assert download(s.url("/a.bin"), SHA, len(DATA), settings=FAST) == p
        assert len(s.requests) == n  # warm cache: no request at all


def test_dropped_connection_resumes_with_range(cache):
    with RedistServer() as s:
        s.files["/a.bin"] = DATA
        s.faults["/a.bin"] = ["drop"]
        p = download(s.url("/a.bin"), SHA, len(DATA), settings=FAST)
        assert p.read_bytes() == DATA
        ranges = [r for path, r in s.requests if path == "/a.bin"]
        assert ranges[0] is None and ranges[1] == f"bytes={len(DATA) // 2}-"


def test_server_ignoring_range_restarts_file(cache):
    with RedistServer() as s:
        s.files["/a.bin"] = DATA
        s.faults["/a.bin"] = ["drop", "ignore-range"]
        assert download(s.url("/a.bin"), SHA, len(DATA), settings=FAST).read_bytes() == DATA


def test_500_then_200_succeeds(cache):
    with RedistServer() as s:
        s.files["/a.bin"] = DATA
        s.faults["/a.bin"] = [500, 503]
        assert download(s.url("/a.bin"), SHA, len(DATA), settings=FAST).read_bytes() == DATA
        assert s.hits("/a.bin") == 3


def test_429_is_retried(cache):
    with RedistServer() as s:
        s.files["/a.bin"] = DATA
        s.faults["/a.bin"] = [429]
        assert download(s.url("/a.bin"), SHA, len(DATA), settings=FAST).read_bytes() == DATA


def test_404_fails_at_once(cache):
    with RedistServer() as s:
        with pytest.raises(DownloadError, match=r"/missing.bin: HTTP 404 .*not retried"):
            download(s.url("/missing.bin"), SHA, 10, settings=FAST)
        assert s.hits("/missing.bin") == 1
    assert blobs(cache) == []


def test_persistent_500_exhausts_retries(cache):
    with RedistServer() as s:
        s.faults["/a.bin"] = [500] * 10
        with pytest.raises(DownloadError, match=r"failed after 3 attempt\(s\): HTTP 500"):
            download(s.url("/a.bin"), SHA, 10, settings=FAST)
        assert s.hits("/a.bin") == 3
    assert blobs(cache) == []


def test_wrong_sha256_deleted_retried_once_then_named(cache):
    with RedistServer() as s:
        s.files["/a.bin"] = DATA
        wrong = "0" * 64
        with pytest.raises(HashMismatch) as e:
            download(s.url("/a.bin"), wrong, len(DATA), settings=FAST)
        msg = str(e.value)
        assert s.url("/a.bin") in msg and f"expected sha256 {wrong}" in msg
        assert f"got sha256 {SHA} size {len(DATA)}" in msg
        assert s.hits("/a.bin") == 2  # deleted and fetched once more
    assert blobs(cache) == []
    assert not list((cache / "partial").glob("*.part"))


def test_truncated_body_named_with_sizes(cache):
    short = DATA[:92]
    with RedistServer() as s:
        s.files["/a.bin"] = short  # a complete response that is only 92 bytes long
        with pytest.raises(HashMismatch) as e:
            download(s.url("/a.bin"), SHA, len(DATA), settings=FAST)
        msg = str(e.value)
        assert f"size {len(DATA)}" in msg and "size 92" in msg
        assert hashlib.sha256(short).hexdigest() in msg
    assert blobs(cache) == []


def test_stall_past_read_timeout(cache):
    with RedistServer(stall_s=2.0) as s:
        s.files["/a.bin"] = DATA
        s.faults["/a.bin"] = ["stall"] * 5
        t0 = time.monotonic()
        with pytest.raises(DownloadError, match=r"failed after 3 attempt\(s\): ReadTimeout"):
            download(s.url("/a.bin"), SHA, len(DATA), settings=FAST)
        assert time.monotonic() - t0 < 5
    assert blobs(cache) == []


def test_only_https_except_loopback(cache, monkeypatch):
    monkeypatch.delenv("BUNDLEGRAPH_ALLOW_HTTP", raising=False)
    with pytest.raises(DownloadError, match="only https"):
        check_url("http://example.invalid/x")
    with pytest.raises(DownloadError, match="only https"):
        download("ftp://example.invalid/x", SHA)
    check_url("http://127.0.0.1:1/x")
    check_url("http://[::1]:1/x")
    check_url("http://example.invalid/x", allow_insecure=True)


def test_download_many_parallel_and_first_error(cache, capsys):
    items = {f"/f{i}.bin": os.urandom(50_000 + i) for i in range(5)}
    with RedistServer() as s:
        s.files.update(items)
        got = download_many(
            [(s.url(p), hashlib.sha256(b).hexdigest(), len(b)) for p, b in items.items()], settings=FAST
        )
        assert [g.read_bytes() for g in got] == list(items.values())
        err = capsys.readouterr().err
        assert err.count(" done in ") == 5  # plain lines in CI
        with pytest.raises(DownloadError, match="nope.bin: HTTP 404"):
            download_many([(s.url("/nope.bin"), "1" * 64, 5)], settings=FAST)
