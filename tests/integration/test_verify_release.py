"""The release's provenance and ``bundlegraph verify-release`` (issue 32), on the stand-in release
the graph builds (the session's ``release``, tests/conftest.py):

- ``llama-prebuilt-provenance.json`` validates as an in-toto Statement v1 whose predicate is
  SLSA Provenance v1, with the in-toto project's own bindings (PyPI ``in-toto-attestation``:
  the Statement wrapper's ``validate()``, the provenance predicate parsed strictly into its
  protobuf message); its subjects are the SHA index's assets and the index; a second manifest
  run writes the same bytes; ``publish`` lists it for upload;
- ``verify-release`` passes on the release, from ``dist/`` and by the releases API, also from an
  empty folder with no ``bundles/`` (issue 40: everything it judges comes from the release's own
  files), and refuses, naming the culprit, a flipped byte in a bundle, a missing asset, an extra
  name in the index, a manifest entry whose SMs differ from its bundle's info JSON, a provenance
  with a stale subject and a waived smoke the index does not waive;
- each input that is not what it should be (not JSON, a missing or wrong-typed key, a truncated
  bundle) is one line naming the file and key, exit 1, never a traceback.
The attacker's cases (a re-sealed release) are in ``test_verify_release_tampered.py``."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import graphrun
import pytest
from conftest import linux_only
from githubkit import Asset, FakeGitHub, Release
from releasekit import reseal

PROV = "llama-prebuilt-provenance.json"
INDEX = "llama-prebuilt-sha256.json"
MANIFEST = "llama-prebuilt-manifest.json"

pytestmark = linux_only


def _verify(release, dist: Path, *args: str):
    """verify-release of the stand-in release, which no Sigstore bundle can sign here: its other
    checks, with the authenticity check left out (``--no-authenticate``; tests/integration/test_authenticity.py)."""
    return graphrun.cli(
        ["verify-release", str(dist), "--json", "--no-authenticate", *args],
        bundles=release.bundles,
        workdir=release.work,
    )


def test_the_provenance_is_an_in_toto_statement_of_slsa_provenance_over_the_index(release):
    from google.protobuf import json_format
    from in_toto_attestation.predicates.provenance.v1 import provenance_pb2
    from in_toto_attestation.v1.statement import Statement
    from in_toto_attestation.v1.statement_pb2 import Statement as StatementPb

    raw = (release.dist / PROV).read_bytes()
    st = json.loads(raw)
    pb = json_format.ParseDict(st, StatementPb())  # unknown fields refused
    Statement.copy_from_pb(pb).validate()
    pred = json_format.ParseDict(st["predicate"], provenance_pb2.Provenance())  # strict: SLSA v1's fields only
    assert pred.build_definition.build_type == "urn:bundlegraph:build-type:release:v1"
    assert pred.run_details.builder.id == "local"

    index_bytes = (release.dist / INDEX).read_bytes()
    index = json.loads(index_bytes)
    want = {n: e["sha256"] for n, e in index["artifacts"].items()} | {INDEX: hashlib.sha256(index_bytes).hexdigest()}
    assert {s["name"]: s["digest"]["sha256"] for s in st["subject"]} == want
    ext = st["predicate"]["buildDefinition"]["externalParameters"]
    assert ext["tag"] == index["release_tag"] and len(ext["legs"]) == 3 and "release.toml" in ext["specs"]
    deps = {d["name"]: d for d in st["predicate"]["buildDefinition"]["resolvedDependencies"]}
    assert deps["llama.cpp"]["digest"]["gitCommit"] == index["source_commit"]
    assert raw.endswith(b"}\n") and json.dumps(st, sort_keys=True, indent=2, ensure_ascii=False) + "\n" == raw.decode()


def test_a_second_manifest_run_writes_the_same_provenance_bytes(release, tmp_path):
    work = tmp_path / "work"
    shutil.copytree(release.work, work, symlinks=True)
    before = (work / "dist" / PROV).read_bytes()
    (work / "dist" / PROV).unlink()
    r = graphrun.doit(["manifest"], bundles=release.bundles, workdir=work)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    assert (work / "dist" / PROV).read_bytes() == before


def test_verify_release_passes_on_the_release(release):
    r = _verify(release, release.dist)
    assert r.returncode == 0, r.stdout + r.stderr
    got = json.loads(r.stdout)
    assert got["ok"] is True
    status = {c["check"]: c["status"] for c in got["checks"]}
    assert status == {
        "index": "passed",
        "promised": "passed",
        "assets": "passed",
        "agreement": "passed",
        "provenance": "passed",
        "smoke": "passed",
        "upstream": "not applicable",  # the stand-in pairs no upstream asset: nothing checked, never "passed"
        "authenticity": "not run",  # --no-authenticate: said "not authenticated"
        "attestations": "not run",  # not asked for, and said so
    }
    # asked for without gh on PATH: said, and never a pass
    r = _verify(release, release.dist, "--attestations")
    assert r.returncode == 1
    att = next(c for c in json.loads(r.stdout)["checks"] if c["check"] == "attestations")
    assert att["status"] == "not run" and "gh is not on PATH" in att["why"]


def test_verify_release_looks_for_the_info_file_the_release_names(release, tmp_path):
    """The bundles' info file is the one the release's own index names (``info_file``), not a
    fixed name and not the local spec's: an index (re-sealed) that names another is refused on
    the stand-in's bundles, naming that file."""
    d = _copy(release, tmp_path)
    idx = json.loads((d / INDEX).read_text())
    assert idx["info_file"] == "BUNDLE_INFO.json"
    idx["info_file"] = "OTHER_INFO.json"
    (d / INDEX).write_text(json.dumps(idx, indent=2))
    reseal(d)
    r = _verify(release, d)
    assert r.returncode == 1, r.stdout + r.stderr
    agreement = next(c for c in json.loads(r.stdout)["checks"] if c["check"] == "agreement")
    assert agreement["problems"] and all("no OTHER_INFO.json inside" in p for p in agreement["problems"])


def _copy(release, tmp_path: Path) -> Path:
    d = tmp_path / "dist"
    shutil.copytree(release.dist, d)
    return d


def _problems(release, d: Path) -> list[str]:
    r = _verify(release, d)
    assert r.returncode == 1, r.stdout + r.stderr
    return [f"{c['check']}: {p}" for c in json.loads(r.stdout)["checks"] for p in c["problems"]]


def test_verify_release_refuses_each_tampering_naming_the_culprit(release, tmp_path):
    index = json.loads((release.dist / INDEX).read_text())
    bundle = next(n for n, e in index["artifacts"].items() if e["kind"] == "bundle")

    d = _copy(release, tmp_path / "flip")
    b = bytearray((d / bundle).read_bytes())
    b[len(b) // 2] ^= 0xFF
    (d / bundle).write_bytes(bytes(b))
    assert any(
        p.startswith(f"assets: {bundle}: sha256 ") and index["artifacts"][bundle]["sha256"] in p
        for p in _problems(release, d)
    )

    d = _copy(release, tmp_path / "missing")
    (d / bundle).unlink()
    assert f"assets: {bundle}: in {INDEX} but not in the release" in _problems(release, d)

    d = _copy(release, tmp_path / "extra")
    idx = json.loads((d / INDEX).read_text())
    idx["artifacts"]["app-extra.tar.gz"] = {"kind": "bundle", "sha256": "0" * 64, "source_commit": None}
    (d / INDEX).write_text(json.dumps(idx, indent=2))
    ps = _problems(release, d)
    assert f"assets: app-extra.tar.gz: in {INDEX} but not in the release" in ps
    assert any(p.startswith(f"provenance: {PROV}: subject {INDEX} has sha256") for p in ps)  # the index changed

    d = _copy(release, tmp_path / "sms")
    man = json.loads((d / MANIFEST).read_text())
    entry = next(a for a in man["artifacts"] if a["supported_sms"])
    entry["supported_sms"] = [*entry["supported_sms"], 999]
    (d / MANIFEST).write_text(json.dumps(man, indent=2))
    ps = _problems(release, d)
    assert any(p.startswith(f"agreement: {entry['asset_name']}: supported_sms is ") and "999" in p for p in ps), ps

    d = _copy(release, tmp_path / "stale")
    st = json.loads((d / PROV).read_text())
    stale = next(s for s in st["subject"] if s["name"] == bundle)
    stale["digest"]["sha256"] = "f" * 64
    (d / PROV).write_text(json.dumps(st, indent=2))
    assert (
        f"provenance: {PROV}: subject {bundle} has sha256 {'f' * 64}, the index's is {index['artifacts'][bundle]['sha256']}"
        in _problems(release, d)
    )


def test_verify_release_reads_a_published_release_through_the_api(release):
    index = json.loads((release.dist / INDEX).read_text())
    tag = index["release_tag"]
    names = [*index["artifacts"], INDEX, PROV]
    with FakeGitHub("example-org/llama-prebuilt") as gh:
        rel = Release(gh.new_id(), tag, False, tag)
        rel.assets = [
            Asset(gh.new_id(), n, (release.dist / n).read_bytes()) for n in names if (release.dist / n).is_file()
        ]
        gh.releases.append(rel)
        r = graphrun.cli(
            ["verify-release", "--repo", "example-org/llama-prebuilt", "--tag", tag, "--json", "--no-authenticate"],
            bundles=release.bundles,
            workdir=release.work,
            BUNDLEGRAPH_GITHUB_API=gh.api,
        )
    assert r.returncode == 0, r.stdout + r.stderr
    assert json.loads(r.stdout)["release"] == f"example-org/llama-prebuilt@{tag}"
    assert any(c.startswith(f"GET /repos/example-org/llama-prebuilt/releases/tags/{tag}") for c in gh.calls)


def test_publish_lists_the_provenance_for_upload(release, tmp_path):
    work = tmp_path / "work"
    shutil.copytree(release.work, work, symlinks=True)
    r = graphrun.doit(["publish"], bundles=release.bundles, workdir=work)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    assert PROV in (work / "dist" / "release-assets.txt").read_text().split()


def test_a_paired_upstream_asset_is_checked_against_the_digest_upstreams_api_reports(release, tmp_path):
    """A paired runtime asset (kind ``runtime`` in the index) is upstream's: its sha256 must be the
    ``digest`` GitHub's releases API reports for that asset of the upstream release."""
    name = "cudart-llama-bin-win-cuda-13.4-arm64.zip"
    body = b"the upstream runtime asset"
    d = _copy(release, tmp_path / "paired")
    idx = json.loads((d / INDEX).read_text())
    repo, tag = idx["source_repo"], "b42"
    idx["artifacts"][name] = {
        "kind": "runtime",
        "sha256": hashlib.sha256(b"something else").hexdigest(),
        "source_commit": None,
        "upstream_tag": tag,
    }
    (d / INDEX).write_text(json.dumps(idx, indent=2))
    with FakeGitHub("example-org/llama-prebuilt") as gh:
        gh.publish_upstream(repo, tag, {name: body})
        r = graphrun.cli(
            ["verify-release", str(d), "--json", "--no-authenticate"],
            bundles=release.bundles,
            workdir=release.work,
            BUNDLEGRAPH_GITHUB_API=gh.api,
        )
        assert r.returncode == 1
        up = next(c for c in json.loads(r.stdout)["checks"] if c["check"] == "upstream")
        assert up["problems"] == [
            f"{name}: {INDEX} says sha256 {hashlib.sha256(b'something else').hexdigest()}, upstream's API reports "
            f"{hashlib.sha256(body).hexdigest()} ({repo}@{tag})"
        ]
        idx["artifacts"][name]["sha256"] = hashlib.sha256(body).hexdigest()
        (d / INDEX).write_text(json.dumps(idx, indent=2))
        r = graphrun.cli(
            ["verify-release", str(d), "--json", "--no-authenticate"],
            bundles=release.bundles,
            workdir=release.work,
            BUNDLEGRAPH_GITHUB_API=gh.api,
        )
        up = next(c for c in json.loads(r.stdout)["checks"] if c["check"] == "upstream")
        assert up["status"] == "passed", up


# A stand-in for the GitHub CLI (``gh attestation verify`` needs Sigstore's and GitHub's services,
# which no test here can reach; Debian's gh 2.23 predates the subcommand). It logs its arguments and
# refuses a file whose bytes say "tampered", printing gh's own last line for a refusal.
GH = """#!{python}
import sys
with open({log!r}, "a") as f:
    f.write(" ".join(sys.argv[1:]) + "\\n")
data = open(sys.argv[3], "rb").read()
if b"tampered" in data:
    print('Error: failed to verify the artifact: no attestations found for subject')
    sys.exit(1)
print("\\u2713 Verification succeeded!")
"""


def _gh(tmp_path: Path) -> tuple[dict[str, str], Path]:
    import os
    import sys

    bindir, log = tmp_path / "gh-bin", tmp_path / "gh.log"
    bindir.mkdir()
    (bindir / "gh").write_text(GH.format(python=sys.executable, log=str(log)))
    (bindir / "gh").chmod(0o755)
    return {"PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}"}, log


def test_upstream_s_attestation_of_a_paired_input_is_verified_with_gh_or_said_not_to_be(tmp_path, monkeypatch):
    """A paired upstream file of this run: with ``gh`` on PATH its upstream attestation is verified
    (``--repo`` the upstream repository) and a refusal names the file and gh's verdict; without
    ``gh`` the input is recorded as trusted by its hash alone, never as verified."""
    from bundlegraph.core.errors import HashMismatch
    from bundlegraph.pipeline.paired_assets import attest_upstream

    good, bad = tmp_path / "cudart-good.zip", tmp_path / "cudart-bad.zip"
    good.write_bytes(b"the upstream runtime asset")
    bad.write_bytes(b"tampered bytes")
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert attest_upstream(good, "ggml-org/llama.cpp").startswith("not verified: gh (GitHub CLI) is not on PATH")
    env, log = _gh(tmp_path)
    monkeypatch.setenv("PATH", env["PATH"])
    assert attest_upstream(good, "ggml-org/llama.cpp") == "gh attestation verify --repo ggml-org/llama.cpp"
    assert log.read_text().splitlines() == [f"attestation verify {good} --repo ggml-org/llama.cpp"]
    try:
        attest_upstream(bad, "ggml-org/llama.cpp")
        raise AssertionError("a refused attestation must raise")
    except HashMismatch as e:
        assert str(e) == (
            "cudart-bad.zip: upstream's attestation does not verify (gh attestation verify --repo "
            "ggml-org/llama.cpp): Error: failed to verify the artifact: no attestations found for subject"
        )


def test_verify_release_attestations_checks_ours_against_our_workflow_and_upstream_s_against_upstream(
    release, tmp_path
):
    """``--attestations`` with ``gh`` on PATH: each of our assets against this repository's
    ``release.yml`` at the tag; a paired upstream asset against upstream's repository; a file gh
    refuses is named with whose attestation failed."""
    name = "cudart-llama-bin-win-cuda-13.4-arm64.zip"
    body = b"the upstream runtime asset"
    d = _copy(release, tmp_path / "att")
    (d / name).write_bytes(body)
    idx = json.loads((d / INDEX).read_text())
    upstream, tag = idx["source_repo"], idx["release_tag"]
    idx["artifacts"][name] = {
        "kind": "runtime",
        "sha256": hashlib.sha256(body).hexdigest(),
        "source_commit": None,
        "upstream_tag": tag,
    }
    (d / INDEX).write_text(json.dumps(idx, indent=2))
    env, log = _gh(tmp_path)
    env["BUNDLEGRAPH_GITHUB_API"] = "http://127.0.0.1:9"  # no releases API here: the upstream check fails, said
    ours = "example-org/llama-prebuilt"
    args = ["verify-release", str(d), "--json", "--attestations", "--repo", ours, "--tag", tag]
    r = graphrun.cli(args, bundles=release.bundles, workdir=release.work, **env)
    att = next(c for c in json.loads(r.stdout)["checks"] if c["check"] == "attestations")
    assert att["status"] == "passed", att
    lines = log.read_text().splitlines()
    assert f"attestation verify {d / name} --repo {upstream}" in lines
    bundle = next(n for n in idx["artifacts"] if n.endswith(".tar.gz") and n.startswith("app-"))
    assert (
        f"attestation verify {d / bundle} --repo {ours} --signer-workflow {ours}/.github/workflows/release.yml "
        f"--source-ref refs/tags/{tag}"
    ) in lines
    assert len(lines) == len([n for n in idx["artifacts"] if (d / n).is_file()]) + 2  # and the index, the provenance
    for signed in (INDEX, PROV):
        assert (
            f"attestation verify {d / signed} --repo {ours} --signer-workflow {ours}/.github/workflows/release.yml "
            f"--source-ref refs/tags/{tag}"
        ) in lines
    (d / name).write_bytes(b"tampered upstream bytes")  # (its sha256 no longer matches either)
    r = graphrun.cli(args, bundles=release.bundles, workdir=release.work, **env)
    att = next(c for c in json.loads(r.stdout)["checks"] if c["check"] == "attestations")
    assert att["problems"] == [
        f"{name}: upstream's ({upstream}) attestation does not verify: Error: failed to verify the artifact: "
        "no attestations found for subject"
    ]


def _consumer(dist_or_args: list[str], tmp_path: Path, **env: str):
    """``verify-release ... --json`` as a consumer runs it: from an empty folder, with no
    ``bundles/`` anywhere (the ``--bundles`` named does not exist), no traceback."""
    empty = tmp_path / "empty"
    empty.mkdir(exist_ok=True)
    args = ["verify-release", *dist_or_args, "--json", "--no-authenticate"]
    r = graphrun.cli(args, bundles=empty / "no-bundles", workdir=empty, **env)
    assert "Traceback" not in r.stderr, r.stderr
    return r


def test_verify_release_stands_alone_in_an_empty_folder(release, tmp_path):
    """No spec file at hand: the promised legs, the waived smokes and the info file's name come
    from the release's own index; by ``DIST`` and by ``--repo``/``--tag`` alike."""
    r = _consumer([str(release.dist)], tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert {c["check"]: c["status"] for c in json.loads(r.stdout)["checks"]}["promised"] == "passed"
    index = json.loads((release.dist / INDEX).read_text())
    assert sorted(p["leg"] for p in index["promised"]) == sorted(
        ["mini-linux-arm64-cpu", "mini-linux-arm64-cuda", "mini-linux-x64-cpu"]
    )
    tag = index["release_tag"]
    with FakeGitHub("example-org/llama-prebuilt") as gh:
        rel = Release(gh.new_id(), tag, False, tag)
        rel.assets = [
            Asset(gh.new_id(), n, (release.dist / n).read_bytes())
            for n in [*index["artifacts"], INDEX, PROV]
            if (release.dist / n).is_file()
        ]
        gh.releases.append(rel)
        r = _consumer(["--repo", "example-org/llama-prebuilt", "--tag", tag], tmp_path, BUNDLEGRAPH_GITHUB_API=gh.api)
    assert r.returncode == 0, r.stdout + r.stderr


def test_a_waived_smoke_is_judged_by_the_release_s_own_promise(release, tmp_path):
    """A bundle whose manifest entry says ``waived: <why>`` passes only when the index's promise
    of its leg waives it with that reason; a re-sealed manifest that waives what the index does
    not is named."""
    d = _copy(release, tmp_path)
    index = json.loads((d / INDEX).read_text())
    promise = index["promised"][0]
    man = json.loads((d / MANIFEST).read_text())
    entry = next(a for a in man["artifacts"] if a["asset_name"] == promise["asset_name"])
    entry["smoke"] = "waived: no runner here starts this bundle"
    (d / MANIFEST).write_text(json.dumps(man, indent=2) + "\n")
    reseal(d)
    r = _consumer([str(d)], tmp_path)
    smoke = next(c for c in json.loads(r.stdout)["checks"] if c["check"] == "smoke")
    assert r.returncode == 1 and smoke["problems"] == [
        f"{promise['asset_name']}: smoke 'waived: no runner here starts this bundle' in {MANIFEST}, but {INDEX}'s "
        "promised does not waive it"
    ], smoke
    index = json.loads((d / INDEX).read_text())
    index["promised"][0]["smoke_waived"] = "no runner here starts this bundle"
    (d / INDEX).write_text(json.dumps(index, indent=2) + "\n")
    reseal(d)
    r = _consumer([str(d)], tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr


def _bad_manifest(d: Path) -> None:
    (d / MANIFEST).write_text("{not json")


def _entry_without_asset_name(d: Path) -> None:
    man = json.loads((d / MANIFEST).read_text())
    del man["artifacts"][0]["asset_name"]
    man["artifacts"][1]["supported_sms"] = "all"
    (d / MANIFEST).write_text(json.dumps(man, indent=2))


def _index_not_json(d: Path) -> None:
    (d / INDEX).write_text("[1, 2")


def _index_wrong_types(d: Path) -> None:
    idx = json.loads((d / INDEX).read_text())
    idx["source_commit"] = 42
    del idx["release_tag"]
    (d / INDEX).write_text(json.dumps(idx, indent=2))


def _truncated_bundle(d: Path) -> None:
    b = d / "app-b42-linux-arm64-cpu.tar.gz"
    b.write_bytes(b.read_bytes()[:3000])


def _provenance_wrong_types(d: Path) -> None:
    st = json.loads((d / PROV).read_text())
    st["subject"] = [{"name": INDEX, "digest": "sha256:0"}]
    st["predicate"]["buildDefinition"]["internalParameters"]["builds"] = {"mini-linux-x64-cpu": "fast"}
    (d / PROV).write_text(json.dumps(st))


BAD = {
    "manifest not JSON": (_bad_manifest, "agreement", f"{MANIFEST}: not JSON (Invalid JSON: "),
    "entry without asset_name": (
        _entry_without_asset_name,
        "agreement",
        f"{MANIFEST}: artifacts.0.asset_name: Field required",
    ),
    "entry with wrong-typed SMs": (
        _entry_without_asset_name,
        "agreement",
        f"{MANIFEST}: artifacts.1.supported_sms: Input should be a valid array, got 'all'",
    ),
    "index not JSON": (_index_not_json, "index", f"{INDEX}: not JSON (Invalid JSON: "),
    "index source_commit a number": (
        _index_wrong_types,
        "index",
        f"{INDEX}: source_commit: Input should be a valid string",
    ),
    "index without release_tag": (_index_wrong_types, "index", f"{INDEX}: release_tag: Field required"),
    "truncated bundle": (
        _truncated_bundle,
        "agreement",
        "app-b42-linux-arm64-cpu.tar.gz: not a readable bundle archive (Compressed file ended before the end-of-stream",
    ),
    "provenance digest not an object": (
        _provenance_wrong_types,
        "provenance",
        f"{PROV}: not a provenance statement (AttributeError: ",
    ),
    "provenance recipe not an object": (
        _provenance_wrong_types,
        "provenance",
        f"{PROV}: internalParameters.builds.mini-linux-x64-cpu.cmake_cache: missing or not an object",
    ),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_input_is_one_line_naming_the_file_and_key(release, tmp_path, case):
    """Each input that is not what it should be is a failed check naming the file and the key,
    exit 1, never a traceback (it used to end with exit 70)."""
    spoil, check, line = BAD[case]
    d = _copy(release, tmp_path)
    spoil(d)
    r = _consumer([str(d)], tmp_path)
    assert r.returncode == 1, r.stdout + r.stderr
    problems = next(c for c in json.loads(r.stdout)["checks"] if c["check"] == check)["problems"]
    assert any(p.startswith(line) for p in problems), problems
    assert all("\n" not in p for p in problems)


def test_verify_names_a_truncated_bundle_archive(release, tmp_path):
    """``bundlegraph verify`` of a truncated .tar.gz: a failed ``archive`` check naming it, exit 1."""
    b = tmp_path / "app-b42-linux-arm64-cpu.tar.gz"
    b.write_bytes((release.dist / b.name).read_bytes()[:3000])
    r = graphrun.cli(["verify", str(b)], workdir=tmp_path)
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stdout + r.stderr
    assert f"{b.name}: archive: truncated or corrupt after " in r.stdout
