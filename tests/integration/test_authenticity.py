"""``verify-release`` authenticates by default (issue 51, item 3), with the real Sigstore code
(PyPI ``sigstore``) and the pinned trust root, offline:

- a real Sigstore bundle made by a real GitHub workflow verifies through the very function
  ``verify-release`` runs (``bundlegraph verify-attestation``): the test assets of
  trailofbits/pypi-attestations hold ``pypi_attestation_models-0.0.4a2.tar.gz`` and its bundle,
  signed by ``trailofbits/pypi-attestation-models``' ``release.yml`` at tag ``v0.0.4a2`` (Fulcio
  certificate, Rekor entry, DSSE envelope over an in-toto statement naming the file's sha256);
- that bundle tampered with (a flipped byte of the signature, a subject digest changed, another
  expected signer, the file itself changed) is refused in one line each;
- the stand-in release re-sealed by someone with write access (a program swapped inside a bundle,
  the SHA index and the provenance's subjects recomputed) is refused by the default command, and
  so it is with a genuine bundle of another workflow put in as its attestation;
- a run that cannot authenticate (no ``--repo``) never says "every check passed" and exits 1;
  only ``--no-authenticate`` passes it, saying "not authenticated".
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import shutil
import tarfile
from pathlib import Path

import graphrun
import pytest
from conftest import linux_only, require_input
from releasekit import reseal

from bundlegraph.release.authenticity import ATTESTATION_NAME

ARTIFACT = "pypi_attestation_models-0.0.4a2.tar.gz"
BUNDLE = ARTIFACT + ".sigstore"
REPO, TAG = "trailofbits/pypi-attestation-models", "v0.0.4a2"
OURS = "example-org/llama-prebuilt"
INDEX = "llama-prebuilt-sha256.json"


@pytest.fixture(scope="module")
def assets() -> Path:
    """The real artifact and its real Sigstore bundle (fetched with pip, pinned by sha256)."""
    root = require_input("pypi-attestations-sdist", unpack=True)
    return next(root.glob("pypi_attestations-*/test/assets"))


def _case(assets: Path, tmp_path: Path) -> tuple[Path, Path]:
    d = tmp_path / "case"
    d.mkdir()
    for n in (ARTIFACT, BUNDLE):
        shutil.copyfile(assets / n, d / n)
    return d / BUNDLE, d / ARTIFACT


def _attest(bundle: Path, artifact: Path, tmp_path: Path, *, repo: str = REPO, tag: str = TAG):
    empty = tmp_path / "empty"
    empty.mkdir(exist_ok=True)
    args = ["verify-attestation", str(bundle), str(artifact), "--repo", repo, "--tag", tag]
    r = graphrun.cli(args, bundles=empty / "no-bundles", workdir=empty)
    assert "Traceback" not in r.stderr, r.stderr
    return r


def test_a_real_sigstore_bundle_of_a_real_workflow_verifies_offline(assets, tmp_path):
    bundle, artifact = _case(assets, tmp_path)
    r = _attest(bundle, artifact, tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    sha = hashlib.sha256(artifact.read_bytes()).hexdigest()
    assert r.stdout.splitlines() == [
        f"verify-attestation {BUNDLE}",
        f"  signer: https://github.com/{REPO}/.github/workflows/release.yml@refs/tags/{TAG} "
        "(issuer https://token.actions.githubusercontent.com), verified against the pinned Sigstore trust root, offline",
        f"  {ARTIFACT}: sha256 {sha}, attested",
        "verify-attestation: passed",
    ]


def _edit(bundle: Path, fn) -> None:
    d = json.loads(bundle.read_bytes())
    fn(d)
    bundle.write_text(json.dumps(d))


def _flip_signature(d: dict) -> None:
    sig = bytearray(base64.b64decode(d["dsseEnvelope"]["signatures"][0]["sig"]))
    sig[12] ^= 0x01
    d["dsseEnvelope"]["signatures"][0]["sig"] = base64.b64encode(bytes(sig)).decode()


def _change_subject(d: dict) -> None:
    st = json.loads(base64.b64decode(d["dsseEnvelope"]["payload"]))
    st["subject"][0]["digest"]["sha256"] = "0" * 64
    d["dsseEnvelope"]["payload"] = base64.b64encode(json.dumps(st).encode()).decode()


@pytest.mark.parametrize("edit", [_flip_signature, _change_subject], ids=["signature-byte", "subject-digest"])
def test_a_tampered_bundle_is_refused_in_one_line(assets, tmp_path, edit):
    bundle, artifact = _case(assets, tmp_path)
    _edit(bundle, edit)
    r = _attest(bundle, artifact, tmp_path)
    assert r.returncode == 1
    assert r.stderr.splitlines() == [
        f"verify-attestation: {BUNDLE}: the signature does not verify against the Sigstore trust root: "
        "DSSE: invalid signature"
    ]


@pytest.mark.parametrize("repo,tag", [(REPO, "v0.0.5"), (OURS, "b42")], ids=["other-tag", "other-repo"])
def test_another_signer_than_the_expected_workflow_run_is_refused(assets, tmp_path, repo, tag):
    bundle, artifact = _case(assets, tmp_path)
    r = _attest(bundle, artifact, tmp_path, repo=repo, tag=tag)
    assert r.returncode == 1
    want = f"https://github.com/{repo}/.github/workflows/release.yml@refs/tags/{tag}"
    assert r.stderr.splitlines() == [
        f"verify-attestation: {BUNDLE}: not signed by the expected workflow run (issuer "
        f"https://token.actions.githubusercontent.com): Certificate's SANs do not match {want}; actual SANs: "
        f"{{'https://github.com/{REPO}/.github/workflows/release.yml@refs/tags/{TAG}'}}"
    ]


def test_a_changed_artifact_is_named_with_both_digests(assets, tmp_path):
    bundle, artifact = _case(assets, tmp_path)
    good = hashlib.sha256(artifact.read_bytes()).hexdigest()
    artifact.write_bytes(artifact.read_bytes() + b"\0")
    bad = hashlib.sha256(artifact.read_bytes()).hexdigest()
    r = _attest(bundle, artifact, tmp_path)
    assert r.returncode == 1
    assert r.stderr.splitlines() == [
        f"verify-attestation: {ARTIFACT}: sha256 {bad}, {BUNDLE} attests {good}",
        "verify-attestation: refused",
    ]


# -- verify-release on the stand-in release ----------------------------------------------------


def _swap_member(archive: Path, member: str, body: bytes) -> None:
    src = io.BytesIO(archive.read_bytes())
    out = io.BytesIO()
    with tarfile.open(fileobj=src, mode="r:gz") as tf, tarfile.open(fileobj=out, mode="w:gz") as dst:
        for m in tf.getmembers():
            data = tf.extractfile(m).read() if m.isfile() else None
            if m.name == member:
                data = body
                m.size = len(body)
            dst.addfile(m, io.BytesIO(data) if data is not None else None)
    archive.write_bytes(out.getvalue())


def _resealed(release, tmp_path: Path) -> Path:
    """The stand-in release with ``llama-server`` edited inside a bundle, repacked and re-sealed."""
    d = tmp_path / "dist"
    shutil.copytree(release.dist, d)
    bundle = "app-b42-linux-arm64-cpu.tar.gz"
    with tarfile.open(d / bundle, "r:gz") as tf:
        body = tf.extractfile("llama-server").read()
    _swap_member(d / bundle, "llama-server", body.replace(b"llama", b"LLAMA", 1))
    reseal(d)
    return d


def _verify_release(dist: Path, tmp_path: Path, *args: str):
    empty = tmp_path / "empty"
    empty.mkdir(exist_ok=True)
    r = graphrun.cli(["verify-release", str(dist), *args], bundles=empty / "no-bundles", workdir=empty)
    assert "Traceback" not in r.stderr, r.stderr
    return r


@linux_only
def test_the_reseal_attack_fails_by_default(release, tmp_path):
    d = _resealed(release, tmp_path)
    r = _verify_release(d, tmp_path, "--repo", OURS, "--tag", "b42")
    print(r.stdout + r.stderr)  # the closing note quotes it
    assert r.returncode == 1
    assert "every check passed" not in r.stdout + r.stderr
    lines = r.stdout.splitlines()
    i = lines.index("  authenticity: failed")
    assert lines[i + 1] == (
        f"    {ATTESTATION_NAME}: not in the release, so nothing proves "
        f"https://github.com/{OURS}/.github/workflows/release.yml@refs/tags/b42 built it "
        "(the release workflow's attest job publishes this Sigstore bundle)"
    )
    assert r.stderr.splitlines()[-1] == "verify-release: refused (failed: authenticity)"


@linux_only
def test_a_genuine_bundle_of_another_workflow_does_not_authenticate_the_release(release, assets, tmp_path):
    d = _resealed(release, tmp_path)
    shutil.copyfile(assets / BUNDLE, d / ATTESTATION_NAME)
    r = _verify_release(d, tmp_path, "--repo", OURS, "--tag", "b42", "--json")
    got = {c["check"]: c for c in json.loads(r.stdout)["checks"]}
    assert r.returncode == 1
    assert got["authenticity"]["status"] == "failed"
    [problem] = got["authenticity"]["problems"]
    assert problem.startswith(f"{ATTESTATION_NAME}: not signed by the expected workflow run"), problem
    assert got["assets"]["status"] == "passed"  # the bundle is a side file, not an unlisted asset


@linux_only
def test_without_repo_nothing_is_authenticated_and_nothing_passes(release, tmp_path):
    r = _verify_release(release.dist, tmp_path)
    assert r.returncode == 1
    assert "every check passed" not in r.stdout + r.stderr
    assert (
        "  authenticity: not run (not authenticated: needs --repo OWNER/REPO, whose release.yml must have signed it)"
        in (r.stdout.splitlines())
    )
    assert r.stderr.splitlines()[-1] == "verify-release: refused (not checked: authenticity)"


@linux_only
def test_no_authenticate_is_the_only_way_to_pass_unauthenticated_and_says_so(release, tmp_path):
    r = _verify_release(release.dist, tmp_path, "--no-authenticate")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "  authenticity: not run (not authenticated (--no-authenticate))" in r.stdout.splitlines()
    assert r.stdout.splitlines()[-1] == (
        "verify-release: every check that ran passed, but not authenticated (--no-authenticate): "
        "nothing proves who built it"
    )


class _Index:
    """What :func:`check_release` reads of a SHA index: the paired upstream assets (``of_kind``)."""

    def __init__(self, runtime: dict[str, object]):
        self.runtime = runtime

    def of_kind(self, kind: str) -> dict[str, object]:
        return self.runtime if kind == "runtime" else {}


def test_verify_release_s_check_passes_a_release_the_real_workflow_signed(assets, tmp_path):
    """``check_release``, the very function of verify-release's ``authenticity`` check, on a
    release folder whose assets are the real artifact and its real bundle under the release's
    bundle name: passed; a paired upstream asset and the local side files are not subjects; a file
    the workflow did not sign is named."""
    from bundlegraph.release.authenticity import check_release
    from bundlegraph.release.reading import Check, DistSource

    d = tmp_path / "release"
    d.mkdir()
    shutil.copyfile(assets / ARTIFACT, d / ARTIFACT)
    shutil.copyfile(assets / BUNDLE, d / ATTESTATION_NAME)
    (d / "release-assets.txt").write_text(ARTIFACT + "\n")
    (d / "cudart-upstream.zip").write_bytes(b"upstream's asset")
    index = _Index({"cudart-upstream.zip": object()})
    c = Check("authenticity")
    check_release(DistSource(d), index, REPO, TAG, None, c)  # type: ignore[arg-type]
    assert (c.status, c.problems) == ("passed", [])
    assert c.why == f"1 files signed by https://github.com/{REPO}/.github/workflows/release.yml@refs/tags/{TAG}"
    (d / "unsigned.bin").write_bytes(b"x")
    c = Check("authenticity")
    check_release(DistSource(d), index, REPO, TAG, None, c)  # type: ignore[arg-type]
    assert c.status == "failed" and c.problems == [
        f"unsigned.bin: not among the subjects {ATTESTATION_NAME} attests (sha256 {hashlib.sha256(b'x').hexdigest()})"
    ]
