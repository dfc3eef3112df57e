"""``verify-release`` against an attacker with write access to a release (issue 40, item 9): the
stand-in release the graph builds (the session's ``release``, tests/conftest.py), copied per case,
tampered with, then re-sealed as that attacker would (:func:`releasekit.reseal`: the SHA index's
hashes and the provenance's subjects recomputed from the tampered files), so that every hash in the
release agrees with every file. verify-release must still refuse, naming the cause:

- a forged provenance field (tag, source commit, source archive digest, a bundle's digest, the
  legs, the CUDA archs, a compiler flag of a leg's recipe, which the bundle's info file records
  too, a toolkit component's sha256): the field, by name, from the release's own files; a forged
  field no other file states (the builder) only by the provenance's signature (``--attestations``);
- a promised leg removed from dist, manifest, index and provenance alike: the leg, by name;
- a swapped binary inside a bundle: the bundle, whose bytes no attestation signed.

``--attestations`` runs against a stand-in for the GitHub CLI (Sigstore and GitHub's attestation
API are out of reach here) that answers as ``gh attestation verify`` does: it finds an attestation
for a file exactly when the file's sha256 is one the release workflow signed, here every asset of
the original release, its SHA index and its provenance (what ``actions/attest`` signs)."""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import sys
import tarfile
from pathlib import Path

import graphrun
import pytest
from conftest import linux_only
from releasekit import reseal

PROV = "llama-prebuilt-provenance.json"
INDEX = "llama-prebuilt-sha256.json"
MANIFEST = "llama-prebuilt-manifest.json"
OURS = "example-org/llama-prebuilt"

pytestmark = linux_only

GH = """#!{python}
import hashlib, json, sys
with open({log!r}, "a") as f:
    f.write(" ".join(sys.argv[1:]) + "\\n")
signed = set(json.load(open({store!r})))
if hashlib.sha256(open(sys.argv[3], "rb").read()).hexdigest() not in signed:
    print("Error: failed to verify the artifact: no attestations found for subject")
    sys.exit(1)
print("\\u2713 Verification succeeded!")
"""


@pytest.fixture(scope="module")
def gh(release, tmp_path_factory):
    """``PATH`` with the stand-in ``gh`` whose attestations are the original release's files."""
    root = tmp_path_factory.mktemp("gh-standin")
    index = json.loads((release.dist / INDEX).read_text())
    signed = [*index["artifacts"], INDEX, PROV]
    store = root / "signed.json"
    store.write_text(
        json.dumps(
            [
                hashlib.sha256((release.dist / n).read_bytes()).hexdigest()
                for n in signed
                if (release.dist / n).is_file()
            ]
        )
    )
    (root / "bin").mkdir()
    (root / "bin" / "gh").write_text(GH.format(python=sys.executable, log=str(root / "gh.log"), store=str(store)))
    (root / "bin" / "gh").chmod(0o755)
    return f"{root / 'bin'}{os.pathsep}{os.environ['PATH']}"


def _copy(release, tmp_path: Path) -> Path:
    d = tmp_path / "dist"
    shutil.copytree(release.dist, d)
    return d


def _verify(dist: Path, tmp_path: Path, gh_path: str | None = None) -> tuple[int, dict[str, list[str]]]:
    """verify-release of ``dist`` from an empty folder with no bundles/ (as a consumer runs it):
    its exit status and each check's problems."""
    empty = tmp_path / "empty"
    empty.mkdir(exist_ok=True)
    # the stand-in release has no Sigstore bundle (nothing can sign it here): these cases test the
    # other checks and gh's; the default authenticity check is tests/integration/test_authenticity.py's
    args = ["verify-release", str(dist), "--json", "--no-authenticate"]
    extra = {}
    if gh_path:
        tag = json.loads((dist / INDEX).read_text())["release_tag"]
        args += ["--attestations", "--repo", OURS, "--tag", tag]
        extra["PATH"] = gh_path
    r = graphrun.cli(args, bundles=empty / "no-bundles", workdir=empty, **extra)
    assert "Traceback" not in r.stderr, r.stderr
    got = json.loads(r.stdout)
    return r.returncode, {c["check"]: c["problems"] for c in got["checks"]}


def test_the_sealed_release_passes_with_its_attestations(release, tmp_path, gh):
    rc, problems = _verify(_copy(release, tmp_path), tmp_path, gh)
    assert rc == 0 and not any(problems.values()), problems


def _dep(st: dict, name: str) -> dict:
    return next(d for d in st["predicate"]["buildDefinition"]["resolvedDependencies"] if d["name"] == name)


def _forge_bundle_digest(st: dict) -> str:
    s = next(s for s in st["subject"] if s["name"].startswith("app-"))
    s["digest"]["sha256"] = "e" * 64
    return f"{PROV}: subject {s['name']} has sha256 {'e' * 64}, the index's is "


FORGERIES = {
    "tag": (
        lambda st: st["predicate"]["buildDefinition"]["externalParameters"].update(tag="b43"),
        f"{PROV}: externalParameters.tag: states 'b43', {INDEX} release_tag says 'b42'",
    ),
    "source commit": (
        lambda st: _dep(st, "llama.cpp")["digest"].update(gitCommit="f" * 40),
        f"{PROV}: resolvedDependencies[llama.cpp].digest.gitCommit: states '{'f' * 40}', {INDEX} source_commit gives ",
    ),
    "source archive digest": (
        lambda st: _dep(st, "llama.cpp")["digest"].update(sha256="d" * 64),
        f"{PROV}: resolvedDependencies[llama.cpp].digest.sha256: states '{'d' * 64}', {INDEX} sha256 of "
        "llama.cpp-source-commit-",
    ),
    "bundle digest": (_forge_bundle_digest, None),
    "legs": (
        lambda st: st["predicate"]["buildDefinition"]["externalParameters"]["legs"].remove("mini-linux-x64-cpu"),
        f"{PROV}: externalParameters.legs: states ['mini-linux-arm64-cpu', 'mini-linux-arm64-cuda'], each bundle's "
        "info file says ",
    ),
    "CUDA archs": (
        lambda st: st["predicate"]["buildDefinition"]["internalParameters"]["builds"]["mini-linux-arm64-cuda"][
            "cmake_cache"
        ].update(CMAKE_CUDA_ARCHITECTURES="90"),
        f"{PROV}: internalParameters.builds.mini-linux-arm64-cuda.cmake_cache.CMAKE_CUDA_ARCHITECTURES: states '90', "
        "app-b42-linux-arm64-cuda13-blackwell.tar.gz's info file says '120;121'",
    ),
    "CMAKE_C_FLAGS": (
        lambda st: st["predicate"]["buildDefinition"]["internalParameters"]["builds"]["mini-linux-x64-cpu"][
            "flags"
        ].update(CMAKE_C_FLAGS="-O0 -fno-stack-protector"),
        f"{PROV}: internalParameters.builds.mini-linux-x64-cpu.flags.CMAKE_C_FLAGS: states '-O0 -fno-stack-protector', "
        "app-b42-linux-x64-cpu.tar.gz's info file says '-ffile-prefix-map=",
    ),
    "toolkit component": (
        lambda st: next(
            d
            for d in st["predicate"]["buildDefinition"]["resolvedDependencies"]
            if d["name"].startswith("mini-linux-arm64-cuda: cuda_nvcc ")
        )["digest"].update(sha256="c" * 64),
        f"{PROV}: resolvedDependencies[mini-linux-arm64-cuda: cuda_nvcc ",
    ),
    # no other file of the release says who built it: only the statement's signature tells
    "builder": (
        lambda st: st["predicate"]["runDetails"]["builder"].update(id="https://example.org/someone-else"),
        None,
    ),
}


@pytest.mark.parametrize("field", list(FORGERIES))
def test_a_forged_provenance_field_is_named(release, tmp_path, gh, field):
    forge, named = FORGERIES[field]
    d = _copy(release, tmp_path)
    st = json.loads((d / PROV).read_text())
    got = forge(st)
    named = named or got
    (d / PROV).write_text(json.dumps(st, sort_keys=True, indent=2) + "\n")
    if field != "bundle digest":
        reseal(d)  # (the statement's subjects are what the index says again)
    rc, problems = _verify(d, tmp_path)
    if named is not None:
        assert rc == 1
        assert any(p.startswith(named) for p in problems["provenance"]), problems
    else:  # a field nothing else states: the release alone cannot tell
        assert rc == 0, problems
    # with the attestations, the statement itself is refused: the workflow never signed these bytes
    rc, problems = _verify(d, tmp_path, gh)
    assert rc == 1
    assert any(
        p.startswith(f"{PROV}: this release's ({OURS}, release.yml at refs/tags/b42) attestation does not verify")
        for p in problems["attestations"]
    ), problems


def test_a_promised_leg_removed_from_dist_manifest_index_and_provenance_is_named(release, tmp_path, gh):
    leg = "mini-linux-x64-cpu"
    d = _copy(release, tmp_path)
    index = json.loads((d / INDEX).read_text())
    bundle = next(p["asset_name"] for p in index["promised"] if p["leg"] == leg)
    (d / bundle).unlink()
    (d / f"{bundle}.smoke.json").unlink()
    man = json.loads((d / MANIFEST).read_text())
    man["artifacts"] = [a for a in man["artifacts"] if a["asset_name"] != bundle]
    (d / MANIFEST).write_text(json.dumps(man, indent=2) + "\n")
    del index["artifacts"][bundle]
    (d / INDEX).write_text(json.dumps(index, indent=2) + "\n")
    st = json.loads((d / PROV).read_text())
    bd = st["predicate"]["buildDefinition"]
    bd["externalParameters"]["legs"].remove(leg)
    bd["externalParameters"]["specs"] = {k: v for k, v in bd["externalParameters"]["specs"].items() if leg not in k}
    bd["internalParameters"]["builds"].pop(leg, None)
    bd["resolvedDependencies"] = [x for x in bd["resolvedDependencies"] if not x["name"].startswith(f"{leg}: ")]
    (d / PROV).write_text(json.dumps(st, sort_keys=True, indent=2) + "\n")
    reseal(d)
    rc, problems = _verify(d, tmp_path)
    assert rc == 1
    assert problems["promised"] == [f"{leg}: promised, but its bundle {bundle} is not in {INDEX}"], problems
    # every other check agrees with the edited release: only the promise tells
    assert not any(v for k, v in problems.items() if k != "promised"), problems
    rc, problems = _verify(d, tmp_path, gh)
    assert rc == 1
    assert any(p.startswith(f"{INDEX}: this release's") for p in problems["attestations"]), problems


def _swap_member(archive: Path, member: str, data: bytes) -> None:
    """Rewrite the .tar.gz ``archive`` with ``member``'s bytes replaced (every other member, its
    order and metadata kept)."""
    out = io.BytesIO()
    with tarfile.open(archive, "r:gz") as src, tarfile.open(fileobj=out, mode="w:gz") as dst:
        for m in src.getmembers():
            body = src.extractfile(m).read() if m.isfile() else None
            if m.name == member:
                body, m.size = data, len(data)
            dst.addfile(m, io.BytesIO(body) if body is not None else None)
    archive.write_bytes(out.getvalue())


def test_a_swapped_binary_is_named_by_the_bundle_no_attestation_signed(release, tmp_path, gh):
    d = _copy(release, tmp_path)
    bundle = "app-b42-linux-arm64-cpu.tar.gz"
    with tarfile.open(d / bundle, "r:gz") as tf:
        other = tf.extractfile("llama-quantize").read()  # another real aarch64 program of the same bundle
    _swap_member(d / bundle, "llama-cli", other)
    reseal(d)
    rc, problems = _verify(d, tmp_path, gh)
    assert rc == 1
    assert problems["attestations"] == [
        f"{bundle}: this release's ({OURS}, release.yml at refs/tags/b42) attestation does not verify: "
        "Error: failed to verify the artifact: no attestations found for subject",
        f"{PROV}: this release's ({OURS}, release.yml at refs/tags/b42) attestation does not verify: "
        "Error: failed to verify the artifact: no attestations found for subject",
        f"{INDEX}: this release's ({OURS}, release.yml at refs/tags/b42) attestation does not verify: "
        "Error: failed to verify the artifact: no attestations found for subject",
    ], problems
