"""The upstream check checks something (issue 40, item 5): a paired runtime asset's bytes are
downloaded and hashed by the machine that writes the SHA index, and must be the digest upstream's
releases API publishes; the API is asked with ``GITHUB_TOKEN`` when it is set (the token never
goes to the download URL); without ``gh`` on PATH the upstream attestation is said not to be
verified, never passed. A real HTTP server on 127.0.0.1 stands in for the API and the download."""

from __future__ import annotations

import hashlib
import json

import pytest
from redistserver import RedistServer

from bundlegraph.core.errors import HashMismatch
from bundlegraph.pipeline.paired_assets import hash_paired
from bundlegraph.schemas.records import PairedAsset

NAME = "cudart-llama-bin-win-cuda-13.4-arm64.zip"
BODY = b"PK\x05\x06 the upstream runtime asset"
LISTING = "/repos/ggml-org/llama.cpp/releases/tags/b6990"


@pytest.fixture
def upstream(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "no-gh"))  # no gh: the attestation is not verified, and said so
    monkeypatch.setenv("GITHUB_TOKEN", "tok-secret")
    with RedistServer() as srv:
        monkeypatch.setenv("BUNDLEGRAPH_GITHUB_API", srv.url(""))
        srv.files["/dl/" + NAME] = BODY

        def publish(digest: str | None) -> None:
            asset = {"name": NAME, "browser_download_url": srv.url("/dl/" + NAME), "size": len(BODY)}
            if digest is not None:
                asset["digest"] = digest
            srv.files[LISTING] = json.dumps({"tag_name": "b6990", "assets": [asset]}).encode()

        yield srv, publish


def _hash(tmp_path):
    return hash_paired(PairedAsset(name=NAME), repo="ggml-org/llama.cpp", tag="b6990", local_dirs=[tmp_path / "none"])


def test_the_bytes_are_downloaded_and_must_be_the_published_digest(upstream, tmp_path):
    srv, publish = upstream
    sha = hashlib.sha256(BODY).hexdigest()
    publish(f"sha256:{sha}")
    h = _hash(tmp_path)
    assert (h.sha256, h.size) == (sha, len(BODY))
    assert h.how == f"downloaded:{srv.url('/dl/' + NAME)} = published digest"
    assert srv.hits("/dl/" + NAME) == 1  # the bytes were fetched, not only the API's word
    assert h.attested.startswith("not verified: gh (GitHub CLI) is not on PATH")
    # the API is asked with the token; the download URL never sees it
    assert (LISTING, "Bearer tok-secret") in srv.authorization
    assert (f"/dl/{NAME}", None) in srv.authorization

    publish("sha256:" + "0" * 64)  # the API says one thing, the bytes are another
    with pytest.raises(HashMismatch) as e:
        _hash(tmp_path)
    assert str(e.value).startswith(f"{NAME}: the bytes downloaded from {srv.url('/dl/' + NAME)} have sha256 {sha}")
    assert f"published digest is sha256:{'0' * 64}" in str(e.value)


def test_without_a_published_digest_the_downloaded_bytes_are_hashed_and_said_so(upstream, tmp_path):
    srv, publish = upstream
    publish(None)
    h = _hash(tmp_path)
    assert h.sha256 == hashlib.sha256(BODY).hexdigest()
    assert h.how == f"downloaded:{srv.url('/dl/' + NAME)} (no published digest)"


GH = """#!{python}
import sys
with open({log!r}, "a") as f:
    f.write(" ".join(sys.argv[1:3] + sys.argv[4:]) + "\\n")
if b"unattested" in open(sys.argv[3], "rb").read():
    print("Error: failed to verify the artifact: no attestations found for subject")
    sys.exit(1)
print("\\u2713 Verification succeeded!")
"""
"""A stand-in for the GitHub CLI (no network here): logs its arguments and answers as gh does
for a file upstream attested, or one it did not (the bytes say which)."""


def test_with_gh_the_downloaded_bytes_are_checked_against_upstream_s_attestation(upstream, tmp_path, monkeypatch):
    import os
    import sys

    srv, publish = upstream
    bindir, log = tmp_path / "gh-bin", tmp_path / "gh.log"
    bindir.mkdir()
    (bindir / "gh").write_text(GH.format(python=sys.executable, log=str(log)))
    (bindir / "gh").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    publish("sha256:" + hashlib.sha256(BODY).hexdigest())
    assert _hash(tmp_path).attested == "gh attestation verify --repo ggml-org/llama.cpp"
    assert log.read_text().splitlines() == ["attestation verify --repo ggml-org/llama.cpp"]
    # an older upstream release, published before upstream attested its builds: the bytes are its
    # published digest, and gh finds no attestation: recorded as not verified, never as verified
    old = b"PK\x05\x06 unattested, from before upstream attested its builds"
    srv.files["/dl/" + NAME] = old
    publish("sha256:" + hashlib.sha256(old).hexdigest())
    h = _hash(tmp_path)
    assert h.attested.startswith("not verified: ggml-org/llama.cpp published no attestation of these bytes"), h
    assert h.attested.endswith("they are its published digest")
