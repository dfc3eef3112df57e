"""The pure parts of the authenticity check (:mod:`bundlegraph.release.authenticity`), no process, no
network: the signer's identity, the pinned trust root, and the one-line differences between the
attested subjects and a release's files. The signatures themselves are verified on real bundles in
tests/integration/test_authenticity.py."""

from __future__ import annotations

import base64
import hashlib
import json

import pytest

from bundlegraph.release.authenticity import (
    TRUSTED_ROOT,
    TRUSTED_ROOT_SHA256,
    AuthenticityError,
    attested_subjects,
    subject_problems,
    unverified_statement,
    workflow_identity,
)


def test_the_signer_is_the_release_workflow_at_the_tag():
    assert (
        workflow_identity("example-org/llama-prebuilt", "b42")
        == "https://github.com/example-org/llama-prebuilt/.github/workflows/release.yml@refs/tags/b42"
    )


def test_the_pinned_trust_root_is_the_file_shipped():
    raw = TRUSTED_ROOT.read_bytes()
    assert hashlib.sha256(raw).hexdigest() == TRUSTED_ROOT_SHA256
    root = json.loads(raw)
    assert root["mediaType"] == "application/vnd.dev.sigstore.trustedroot+json;version=0.1"
    assert root["certificateAuthorities"] and root["tlogs"]


def test_each_difference_between_the_subjects_and_the_files_is_one_line():
    a, b = "a" * 64, "b" * 64
    attested = {"x.tar.gz": {"sha256": a}, "gone.zip": {"sha256": a}, "y.json": {"sha512": "c" * 128}}
    files = {"x.tar.gz": b, "y.json": a, "new.bin": a}
    assert subject_problems("B.sigstore.json", attested, files) == [
        f"new.bin: not among the subjects B.sigstore.json attests (sha256 {a})",
        f"x.tar.gz: sha256 {b}, B.sigstore.json attests {a}",
        "y.json: B.sigstore.json attests no sha256 for it (only sha512)",
        "gone.zip: attested by B.sigstore.json but not in the release",
    ]
    assert subject_problems("B", {"x": {"sha256": a}}, {"x": a}) == []


@pytest.mark.parametrize(
    "statement,message",
    [
        ({"subject": [{"name": "x"}]}, "B: subject[0]: expected a name and a digest"),
        (
            {"subject": [{"name": "x", "digest": {"sha256": "a"}}, {"name": "x", "digest": {"sha256": "a"}}]},
            "B: subject 'x' is attested twice",
        ),
    ],
)
def test_malformed_subjects_are_one_line(statement, message):
    with pytest.raises(AuthenticityError) as e:
        attested_subjects("B", statement)
    assert str(e.value) == message


def test_the_unverified_statement_of_a_bundle_or_one_line():
    st = {"_type": "https://in-toto.io/Statement/v1", "subject": [{"name": "x", "digest": {"sha256": "a"}}]}
    doc = {"dsseEnvelope": {"payload": base64.b64encode(json.dumps(st).encode()).decode()}}
    assert unverified_statement("B", json.dumps(doc).encode()) == st
    for raw in (b"not json", b"{}", json.dumps({"dsseEnvelope": {"payload": "%%%"}}).encode()):
        with pytest.raises(AuthenticityError) as e:
            unverified_statement("B", raw)
        assert str(e.value) == "B: not a Sigstore bundle of an in-toto statement (dsseEnvelope.payload)"
