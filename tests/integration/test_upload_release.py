"""``bundlegraph upload-release`` against a GitHub releases API on 127.0.0.1 (``githubkit``), with
the stand-in release built by the real graph and passed by the coverage gate (``doit publish``):
a draft first, every asset, the listing checked against the SHA index, published last; a rerun
changes nothing; changed bytes are refused, never overwritten; a half-uploaded asset is replaced;
a tag that is not the release's is refused before any call. Then the installer's own download
check accepts what was published."""

from __future__ import annotations

import json
from pathlib import Path

import graphrun
import pytest
from conftest import linux_only, require_input, require_tools
from githubkit import Asset, FakeGitHub, Release

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
REPO = "example-org/llama-prebuilt"
INDEX = "llama-prebuilt-sha256.json"

pytestmark = linux_only


@pytest.fixture(scope="module")
def gated(tmp_path_factory) -> tuple[Path, Path, str]:
    """(bundles, work) of the stand-in release after `doit` and `doit publish`, and its tag."""
    require_tools("aarch64-linux-gnu-gcc", "aarch64-linux-gnu-g++", "gcc", "g++")
    require_input("cuda-13.5-sbsa-cross")
    root = tmp_path_factory.mktemp("upload")
    graphrun.standin_tree(root)
    for args in ([], ["publish"]):  # the default legs and the manifest, then the coverage gate
        r = graphrun.doit(args, bundles=root / "bundles", workdir=root / "work", timeout=900)
        assert r.returncode == 0, r.stdout[-6000:] + r.stderr[-3000:]
    tag = json.loads((root / "work" / "dist" / INDEX).read_text())["release_tag"]
    return root / "bundles", root / "work", tag


def _upload(gated, gh: FakeGitHub, *extra: str, **env: str):
    bundles, work, _tag = gated
    return graphrun.cli(
        ["upload-release", "--repo", REPO, *extra],
        bundles=bundles,
        workdir=work,
        BUNDLEGRAPH_GITHUB_API=gh.api,
        GITHUB_TOKEN="t0ken",
        **env,
    )


def _want(work: Path) -> dict[str, str]:
    import hashlib

    names = (work / "dist" / "release-assets.txt").read_text().split()
    return {n: hashlib.sha256((work / "dist" / n).read_bytes()).hexdigest() for n in names}


def test_upload_is_a_draft_until_every_asset_is_there(gated):
    _b, work, tag = gated
    want = _want(work)
    idx = json.loads((work / "dist" / INDEX).read_text())["artifacts"]
    # every indexed asset, the index, and the provenance (it names the index's digest: not in it)
    assert {n for n in want if n not in (INDEX, "llama-prebuilt-provenance.json")} == set(idx)
    assert "llama-prebuilt-provenance.json" in want
    with FakeGitHub(REPO, token="t0ken") as gh:
        r = _upload(gated, gh, GITHUB_REF=f"refs/tags/{tag}")
        assert r.returncode == 0, r.stdout + r.stderr
        rel = gh.release(tag)
        assert rel is not None and not rel.draft
        got = {a.name: a.json(gh.api, REPO, tag)["digest"] for a in rel.assets}
        assert got == {n: f"sha256:{s}" for n, s in want.items()}
        # the order of calls: nothing visible before the last one
        base = f"/repos/{REPO}/releases"
        up = f"/uploads/repos/{REPO}/releases/{rel.id}/assets"
        assert gh.calls == [
            f"GET {base}/tags/{tag}",
            f"GET {base}",
            f"POST {base}",
            f"GET {base}/{rel.id}/assets",
            *[f"POST {up}"] * len(want),
            f"GET {base}/{rel.id}/assets",
            f"PATCH {base}/{rel.id}",
        ]
        assert [a.name for a in rel.assets][-1] == INDEX  # the index goes last
        # a rerun: already published, identical -> nothing uploaded, nothing changed
        gh.calls.clear()
        r = _upload(gated, gh)
        assert r.returncode == 0 and "already published" in r.stdout, r.stdout + r.stderr
        assert [c.split()[0] for c in gh.calls] == ["GET", "GET"]

        # the installer's own check on what was published (its download, our index's sha256)
        import hashlib
        import urllib.request

        name = next(n for n in want if n.startswith("app-"))
        with urllib.request.urlopen(f"{gh.api}/{REPO}/releases/download/{tag}/{name}") as f:
            assert hashlib.sha256(f.read()).hexdigest() == idx[name]["sha256"] == want[name]


def test_changed_bytes_are_refused_and_nothing_is_published(gated):
    _b, work, tag = gated
    want = _want(work)
    bundle = next(n for n in want if n.startswith("app-"))
    with FakeGitHub(REPO) as gh:
        draft = Release(gh.new_id(), tag, draft=True, assets=[Asset(gh.new_id(), bundle, b"other bytes")])
        gh.releases.append(draft)
        r = _upload(gated, gh)
        assert r.returncode != 0
        err = r.stdout + r.stderr
        assert f"{bundle}: the draft holds other bytes" in err and "refused" in err, err
        assert draft.draft and [a.data for a in draft.assets] == [b"other bytes"]  # untouched, unpublished
        assert not any(c.startswith(("POST /uploads", "PATCH", "DELETE")) for c in gh.calls), gh.calls


def test_a_half_uploaded_asset_is_replaced(gated):
    _b, work, tag = gated
    want = _want(work)
    with FakeGitHub(REPO) as gh:
        part = Asset(gh.new_id(), INDEX, b"{", state="starter")
        draft = Release(gh.new_id(), tag, draft=True, assets=[part])
        gh.releases.append(draft)
        r = _upload(gated, gh)
        assert r.returncode == 0, r.stdout + r.stderr
        assert f"DELETE /repos/{REPO}/releases/assets/{part.id}" in gh.calls
        assert not draft.draft and len(draft.assets) == len(want)


def test_a_published_release_that_differs_is_never_changed(gated):
    _b, _work, tag = gated
    with FakeGitHub(REPO) as gh:
        old = Release(gh.new_id(), tag, draft=False, assets=[Asset(gh.new_id(), "app-old.tar.gz", b"x")])
        gh.releases.append(old)
        r = _upload(gated, gh)
        assert r.returncode != 0 and "already published and differs" in r.stdout + r.stderr
        assert [a.name for a in old.assets] == ["app-old.tar.gz"]
        assert all(c.startswith("GET ") for c in gh.calls), gh.calls


def test_a_tag_that_is_not_the_release_is_refused_before_any_call(gated):
    _b, _work, tag = gated
    with FakeGitHub(REPO) as gh:
        r = _upload(gated, gh, GITHUB_REF="refs/tags/b1-mix-0000000")
        assert r.returncode != 0
        assert f"GITHUB_REF is 'refs/tags/b1-mix-0000000', not refs/tags/{tag}" in r.stdout + r.stderr
        r = _upload(gated, gh, "--tag", "b1-mix-0000000")
        assert r.returncode != 0 and f"release_tag is '{tag}'" in r.stdout + r.stderr
        assert gh.calls == []


def _subjects(work: Path, path: Path, *, drop: str | None = None, extra: str | None = None) -> Path:
    """What the attest job signs: ``sha256sum`` of every uploaded asset (``release-assets.txt``),
    less ``drop``, plus ``extra`` (a file of the dist not uploaded)."""
    want = _want(work)
    if extra:
        import hashlib

        want[extra] = hashlib.sha256((work / "dist" / extra).read_bytes()).hexdigest()
    path.write_text("".join(f"{s}  {n}\n" for n, s in want.items() if n != drop), encoding="utf-8")
    return path


def test_draft_only_then_publish_release_of_exactly_the_attested_subjects(gated, tmp_path):
    """The release workflow's order (issue 40, item 1): ``upload-release --draft-only`` uploads
    and checks but publishes nothing; ``publish-release`` publishes only when what was attested is
    exactly the release's assets (the provenance among them) and the draft holds exactly those:
    subjects that leave an asset out, or a draft that changed meanwhile, leave it a draft."""
    bundles, work, tag = gated
    want = _want(work)
    assert "llama-prebuilt-provenance.json" in want
    with FakeGitHub(REPO, token="t0ken") as gh:
        r = _upload(gated, gh, "--draft-only", GITHUB_REF=f"refs/tags/{tag}")
        assert r.returncode == 0, r.stdout + r.stderr
        rel = gh.release(tag)
        assert rel is not None and rel.draft and len(rel.assets) == len(want)
        assert "a draft, not published" in r.stdout and not any(c.startswith("PATCH") for c in gh.calls)

        def publish(subjects: Path):
            return graphrun.cli(
                ["publish-release", "--repo", REPO, "--subjects", str(subjects)],
                bundles=bundles,
                workdir=work,
                BUNDLEGRAPH_GITHUB_API=gh.api,
                GITHUB_TOKEN="t0ken",
                GITHUB_REF=f"refs/tags/{tag}",
            )

        # an asset not attested (the provenance, as before this issue): refused before any call
        gh.calls.clear()
        r = publish(_subjects(work, tmp_path / "less.txt", drop="llama-prebuilt-provenance.json"))
        assert r.returncode == 2, r.stdout + r.stderr
        assert "the attested subjects (less.txt) differ from the release's assets (missing " in r.stderr, r.stderr
        assert "llama-prebuilt-provenance.json" in r.stderr and rel.draft and gh.calls == []
        # an attested file that is not an asset of the release is refused too
        r = publish(_subjects(work, tmp_path / "more.txt", extra="release-assets.txt"))
        assert r.returncode == 2 and "extra release-assets.txt" in r.stderr, r.stderr
        # the draft changed after the attestation: refused, still a draft
        bundle = next(n for n in want if n.startswith("app-"))
        a = next(x for x in rel.assets if x.name == bundle)
        good, a.data = a.data, b"swapped after signing"
        r = publish(_subjects(work, tmp_path / "all.txt"))
        assert r.returncode == 2 and "the draft's assets are not what was attested (other bytes " in r.stderr, r.stderr
        assert rel.draft and not any(c.startswith("PATCH") for c in gh.calls)
        a.data = good
        # exactly the attested subjects: published, with one PATCH as the last call
        r = publish(tmp_path / "all.txt")
        assert r.returncode == 0, r.stdout + r.stderr
        assert not rel.draft and gh.calls[-1].startswith("PATCH ")
        gh.calls.clear()
        r = publish(tmp_path / "all.txt")  # a rerun changes nothing
        assert (
            r.returncode == 0 and "already published" in r.stdout and not any(c.startswith("PATCH") for c in gh.calls)
        )


def _statement_bundle(subjects: Path, out: Path, *, drop: str = "") -> Path:
    """A Sigstore-bundle-shaped file whose DSSE payload is an in-toto statement of ``subjects``
    (no real signature: publish-release reads the subjects; verify-release checks signatures)."""
    import base64

    subj = [
        {"name": n, "digest": {"sha256": h}}
        for h, n in (line.split("  ", 1) for line in subjects.read_text().splitlines() if line)
        if n != drop
    ]
    st = {
        "_type": "https://in-toto.io/Statement/v1",
        "subject": subj,
        "predicateType": "https://slsa.dev/provenance/v1",
    }
    payload = base64.b64encode(json.dumps(st).encode()).decode()
    doc = {
        "mediaType": "application/vnd.dev.sigstore.bundle.v0.3+json",
        "verificationMaterial": {},
        "dsseEnvelope": {"payload": payload, "payloadType": "application/vnd.in-toto+json", "signatures": []},
    }
    out.write_text(json.dumps(doc))
    return out


def test_publish_release_uploads_the_attestation_s_sigstore_bundle_of_exactly_the_subjects(gated, tmp_path):
    """``publish-release --sigstore-bundle`` (issue 51, item 3): the bundle's statement must name
    exactly the attested subjects; it is uploaded to the draft as
    ``llama-prebuilt-attestation.sigstore.json`` before the release is published."""
    bundles, work, tag = gated
    with FakeGitHub(REPO, token="t0ken") as gh:
        r = _upload(gated, gh, "--draft-only", GITHUB_REF=f"refs/tags/{tag}")
        assert r.returncode == 0, r.stdout + r.stderr
        rel = gh.release(tag)
        subjects = _subjects(work, tmp_path / "all.txt")

        def publish(bundle: Path):
            return graphrun.cli(
                ["publish-release", "--repo", REPO, "--subjects", str(subjects), "--sigstore-bundle", str(bundle)],
                bundles=bundles,
                workdir=work,
                BUNDLEGRAPH_GITHUB_API=gh.api,
                GITHUB_TOKEN="t0ken",
                GITHUB_REF=f"refs/tags/{tag}",
            )

        short = _statement_bundle(subjects, tmp_path / "short.sigstore.json", drop="llama-prebuilt-provenance.json")
        r = publish(short)
        assert r.returncode == 2, r.stdout + r.stderr
        assert (
            "short.sigstore.json: its subjects differ from the attested subjects (missing llama-prebuilt-provenance.json)"
            in r.stderr
        ), r.stderr
        assert rel.draft and "llama-prebuilt-attestation.sigstore.json" not in {a.name for a in rel.assets}
        # an earlier run's bundle in the draft: a rerun of upload-release leaves it to
        # publish-release, which replaces it with this attestation's
        rel.assets.append(Asset(gh.new_id(), "llama-prebuilt-attestation.sigstore.json", b"an earlier bundle"))
        r = _upload(gated, gh, "--draft-only", GITHUB_REF=f"refs/tags/{tag}")
        assert r.returncode == 0, r.stdout + r.stderr
        r = publish(_statement_bundle(subjects, tmp_path / "good.sigstore.json"))
        assert r.returncode == 0, r.stdout + r.stderr
        assert not rel.draft
        [got] = [a for a in rel.assets if a.name == "llama-prebuilt-attestation.sigstore.json"]
        assert got.data == (tmp_path / "good.sigstore.json").read_bytes()
