"""manifest + SHA index + coverage gate on real bundles (tiny aarch64 builds packed by the real
package stage, the real llama.cpp source tree) and a real local HTTP server standing in for the
upstream release listing of the paired runtime asset."""

from __future__ import annotations

import hashlib
import json
import tarfile
from dataclasses import replace
from pathlib import Path

import pytest
from bundlekit import ROOT, compile_cuda_backend, linux_cpu_tree, package, real_source
from redistserver import RedistServer

from bundlegraph.pipeline.archivecheck import archive_verifier
from bundlegraph.pipeline.bundle.archive import read_member
from bundlegraph.pipeline.manifest import record_verified, run_manifest
from bundlegraph.pipeline.merge import backend_outputs, load_base, run_merge
from bundlegraph.pipeline.publish import ASSET_LIST, PublishRefused, run_publish
from bundlegraph.schemas.manifest import BundleInfo, Manifest, ShaIndex
from bundlegraph.schemas.records import CoverageRules, RequiredBundles
from bundlegraph.specs.loader import load_matrix

RUNTIME = "cudart-llama-bin-win-cuda-13.4-arm64.zip"
KEEP = {"linux-arm64-cpu", "linux-arm64-cuda13-blackwell"}


@pytest.fixture(scope="module")
def src(tmp_path_factory):
    return real_source(tmp_path_factory.mktemp("src"))


@pytest.fixture
def small(bundles_copy, monkeypatch):
    """The real bundles/ with the legs this host cannot build set to promised = false; the
    blackwell leg pairs the Windows ARM64 runtime asset too (a paired runtime is hashed when its
    bundle is in the release)."""
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    for f in bundles_copy.glob("*.toml"):
        if f.stem != "release" and f.stem not in KEEP:
            text = f.read_text()
            if "\npromised = false\n" not in text:  # the Vulkan legs say so already
                f.write_text("promised = false\n" + text)
        elif f.stem in KEEP:  # this module's bundles are link-level test kits: no program in them starts
            f.write_text(
                f.read_text()
                + '\n[smoke]\nwaived = "the test kit bundles of test_manifest_publish hold no runnable program"\n'
            )
    bw = bundles_copy / "linux-arm64-cuda13-blackwell.toml"
    bw.write_text(bw.read_text().replace("[runtime]\n", f'[runtime]\npaired = [{{ name = "{RUNTIME}" }}]\n', 1))
    # the release's coverage rules require the legs this host cannot build: only its CPU bundle here
    rel = bundles_copy / "release.toml"
    text = rel.read_text()
    rel.write_text(
        text[: text.index("[coverage]")]
        + '[[coverage.required]]\nplatforms = ["linux-arm64"]\nprofiles = ["cpu", "cuda13-blackwell"]\n'
    )
    return load_matrix(bundles_copy)


def build_linux(m, tmp: Path, src, dist: Path) -> dict[str, Path]:
    """Package linux-arm64-cpu, merge + package linux-arm64-cuda13-blackwell into ``dist``."""
    cpu, bw = m.legs["linux-arm64-cpu"], m.legs["linux-arm64-cuda13-blackwell"]
    rel = m.release
    base = dist / cpu.bundle_name(rel.tag)
    package(cpu, rel, linux_cpu_tree(tmp / "cpu-bin"), base, src)
    backend = compile_cuda_backend(tmp / "cuda-bin", "aarch64-linux-gnu-gcc", [120, 121], [121])
    run_merge(
        spec=bw,
        base_spec=cpu,
        info_file=rel.info_file,
        base=load_base(base, rel.info_file),
        backend_files=backend_outputs(backend, bw),
        runtime=[],
        source_commit=src.commit,
        source_digest=src.digest,
        dest_tree=tmp / "merged",
        record_path=tmp / "merge.json",
    )
    out = dist / bw.bundle_name(rel.tag)
    package(bw, rel, tmp / "merged", out, src, base=cpu, merged_from=base.name)
    for leg, p in (("linux-arm64-cpu", base), ("linux-arm64-cuda13-blackwell", out)):
        record_verified(p.name, hashlib.sha256(p.read_bytes()).hexdigest(), leg)
    return {"linux-arm64-cpu": base, "linux-arm64-cuda13-blackwell": out}


@pytest.fixture
def upstream():
    """The upstream release listing served over real HTTP: the paired asset with a body and
    no published digest (so it is streamed and hashed)."""
    names = sorted({p.name for s in load_matrix(ROOT / "bundles").legs.values() for p in s.runtime.paired})
    assert RUNTIME in names
    with RedistServer() as srv:
        assets = []
        for n in names:
            body = b"PK\x05\x06" + n.encode().ljust(18, b"\0")[:18]  # a distinct body per asset
            srv.files["/dl/" + n] = body
            assets.append({"name": n, "browser_download_url": srv.url("/dl/" + n), "size": len(body)})
        srv.files[
            "/repos/ggml-org/llama.cpp/releases/tags/" + load_matrix(ROOT / "bundles").release.paired_runtime_tag
        ] = json.dumps({"tag_name": "b6990", "assets": assets}).encode()
        yield srv, hashlib.sha256(srv.files["/dl/" + RUNTIME]).hexdigest()


def test_manifest_reads_bundles_info_and_index_holds_runtime_source_and_itself(
    small, tmp_path, workdir, src, upstream, monkeypatch
):
    srv, runtime_sha = upstream
    monkeypatch.setenv("BUNDLEGRAPH_GITHUB_API", srv.url(""))
    dist = workdir / "dist"
    bundles = build_linux(small, tmp_path, src, dist)
    rel = small.release
    assert not rel.is_mix and rel.source_ref_kind == "tag"  # one upstream build as it is (issue 31)
    res = run_manifest(small, dist=dist, source_tree=Path(src.tree), source_commit=src.commit, commit_epoch=src.epoch)
    man = Manifest.model_validate_json((dist / "llama-prebuilt-manifest.json").read_bytes())
    idx = ShaIndex.model_validate_json((dist / "llama-prebuilt-sha256.json").read_bytes())
    assert (man.component, man.source_commit, man.release_tag, man.upstream_tag) == (
        "llama.cpp",
        src.commit,
        rel.tag,
        rel.upstream_tag,
    )
    for head in (man, idx):  # what kind of source, the pull requests merged (none), the ggml tree id
        assert head.source_ref_kind == "tag" and head.merged_prs == [] and head.ggml_tree is None
    assert [a.asset_name for a in man.artifacts] == sorted(p.name for p in bundles.values())
    for art in man.artifacts:
        info = BundleInfo.model_validate_json(read_member(dist / art.asset_name, rel.info_file))
        assert (
            art.install_kind,
            art.bundle_profile,
            art.runtime_line,
            art.coverage_class,
            art.rank,
            art.supported_sms,
            art.min_sm,
            art.max_sm,
            art.toolkit_version,
        ) == (
            info.install_kind,
            info.bundle_profile,
            info.runtime_line,
            info.coverage_class,
            info.bundle_rank,
            info.supported_sms,
            info.min_sm,
            info.max_sm,
            info.toolkit_version,
        )
    bw = next(a for a in man.artifacts if a.bundle_profile == "cuda13-blackwell")
    assert (bw.supported_sms, bw.min_sm, bw.max_sm, bw.rank) == ([120, 121], 120, 121, 55)
    kinds = {k: v.kind for k, v in idx.artifacts.items() if v.kind != "runtime"}
    assert kinds == {
        bundles["linux-arm64-cpu"].name: "bundle",
        bundles["linux-arm64-cuda13-blackwell"].name: "bundle",
        "llama-prebuilt-manifest.json": "manifest",
        f"llama.cpp-source-commit-{src.commit}.tar.gz": "upstream-source",
    }
    # the paired runtime of every bundle in the release; none of legs without a bundle here
    assert set(idx.of_kind("runtime")) == {RUNTIME}
    assert "cudart-llama-bin-win-cuda-13.4-x64.zip" not in idx.artifacts
    assert idx.artifacts[RUNTIME].sha256 == runtime_sha and srv.hits("/dl/" + RUNTIME) == 1
    assert (
        idx.artifacts["llama-prebuilt-manifest.json"].sha256
        == hashlib.sha256((dist / "llama-prebuilt-manifest.json").read_bytes()).hexdigest()
    )
    for name, e in idx.artifacts.items():
        if e.kind != "runtime":
            assert e.sha256 == hashlib.sha256((dist / name).read_bytes()).hexdigest() and e.source_commit == src.commit
    with tarfile.open(dist / f"llama.cpp-source-commit-{src.commit}.tar.gz") as tf:
        names = tf.getnames()
    assert f"llama.cpp-source-commit-{src.commit}/LICENSE" in names and not any("/.git/" in n for n in names)
    # a second run writes byte-identical files; a published digest is checked against the bytes,
    # downloaded again, never copied on the API's word (issue 40, item 5)
    before = {p.name: p.read_bytes() for p in dist.iterdir() if p.is_file()}
    srv.files["/repos/ggml-org/llama.cpp/releases/tags/" + rel.paired_runtime_tag] = json.dumps(
        {
            "assets": [
                {"name": n, "digest": "sha256:" + e.sha256, "size": e.size, "browser_download_url": srv.url("/dl/" + n)}
                for n, e in idx.of_kind("runtime").items()
            ]
        }
    ).encode()
    run_manifest(small, dist=dist, source_tree=Path(src.tree), source_commit=src.commit, commit_epoch=src.epoch)
    assert srv.hits("/dl/" + RUNTIME) == 2
    assert {p.name: p.read_bytes() for p in dist.iterdir() if p.is_file()} == before
    assert res.index == idx
    # the API's digest is not the bytes': refused, naming the asset and both digests
    from bundlegraph.core.errors import HashMismatch

    srv.files["/dl/" + RUNTIME] = b"PK\x05\x06 other bytes under the published name"
    with pytest.raises(HashMismatch, match=f"{RUNTIME}: the bytes downloaded from .* published digest is sha256:"):
        run_manifest(small, dist=dist, source_tree=Path(src.tree), source_commit=src.commit, commit_epoch=src.epoch)


def test_gate_passes_a_complete_release_and_refuses_a_filtered_run(
    small, tmp_path, workdir, src, upstream, monkeypatch
):
    srv, _ = upstream
    monkeypatch.setenv("BUNDLEGRAPH_GITHUB_API", srv.url(""))
    dist = workdir / "dist"
    build_linux(small, tmp_path, src, dist)
    run_manifest(small, dist=dist, source_tree=Path(src.tree), source_commit=src.commit, commit_epoch=src.epoch)
    with pytest.raises(PublishRefused, match="filtered .*only_leg=linux-arm64-cpu.* can never publish"):
        run_publish(small, dist, filtered="only_leg=linux-arm64-cpu", source_commit=src.commit)
    assert not (dist / ASSET_LIST).exists()
    # a rule of the release refuses by name what the promised legs do not cover
    strict = replace(
        small,
        release=small.release.replace(
            coverage=CoverageRules(required=[RequiredBundles(platforms=["linux-x64"], profiles=["cpu"])])
        ),
    )
    with pytest.raises(PublishRefused) as e:
        run_publish(strict, dist, filtered=None, source_commit=src.commit)
    assert e.value.missing == [
        f"coverage.required[0]: app-{small.release.tag}-linux-x64-cpu.tar.gz is missing "
        "(profile cpu on linux-x64 is required)"
    ]
    assert not (dist / ASSET_LIST).exists()
    out = run_publish(small, dist, filtered=None, source_commit=src.commit)
    listed = out.read_text().split()
    assert (
        f"app-{small.release.tag}-linux-arm64-cuda13-blackwell.tar.gz" in listed
        and "llama-prebuilt-sha256.json" in listed
    )


def test_gate_refuses_a_release_missing_bundles_naming_each(
    bundles_copy, tmp_path, workdir, src, upstream, monkeypatch
):
    srv, _ = upstream
    monkeypatch.setenv("BUNDLEGRAPH_GITHUB_API", srv.url(""))
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    m = load_matrix(bundles_copy)  # the real release: 9 promised legs, 2 built here
    dist = workdir / "dist"
    build_linux(m, tmp_path, src, dist)
    run_manifest(m, dist=dist, source_tree=Path(src.tree), source_commit=src.commit, commit_epoch=src.epoch)
    with pytest.raises(PublishRefused) as e:
        run_publish(m, dist, filtered=None, source_commit=src.commit)
    missing = [leg for leg in m.promised if leg not in KEEP]
    paired = [pa.name for leg in missing for pa in m.legs[leg].runtime.paired]  # listed too: every item at once
    # the two bundles built here have no smoke result (and these specs waive none): listed too
    smokeless = [x for x in e.value.missing if "has no passed smoke for these bytes" in x]
    assert sorted(x.split(":")[0] for x in smokeless) == sorted(m.legs[leg].bundle_name(m.release.tag) for leg in KEEP)
    # the release's own coverage rules ([coverage] of release.toml), each missing bundle named
    rules = [x for x in e.value.missing if x.startswith("coverage.")]
    t = m.release.tag
    for rule, name in (
        ("coverage.required[0]", f"app-{t}-linux-x64-cuda12-legacy.tar.gz"),
        ("coverage.required[0]", f"app-{t}-windows-x64-cuda12-legacy.zip"),
        ("coverage.required[1]", f"app-{t}-windows-x64-cpu.zip"),
        ("coverage.required[2]", f"app-{t}-linux-arm64-cuda13-portable.tar.gz"),
    ):
        assert any(x.startswith(f"{rule}: {name} is missing") for x in rules), rules
    assert len(rules) == 2 + 2 + 3 + 1, rules  # equal_classes: nothing on either x64 platform
    others = [x for x in e.value.missing if not x.startswith(("coverage: ", "coverage."))]
    assert len(others) == len(missing) + len(paired) + len(KEEP)
    for name in paired:
        assert f"{name}: paired runtime of " in str(e.value)
    assert "coverage:" not in str(e.value)  # the missing legs' host classes are those missing bundles
    for leg in missing:
        assert f"{m.legs[leg].bundle_name(m.release.tag)}: bundle of promised leg {leg} is missing" in str(e.value)
    assert not (dist / ASSET_LIST).exists()


def test_gate_refuses_unverified_or_altered_bundle_and_missing_manifest(
    small, tmp_path, workdir, src, upstream, monkeypatch
):
    srv, _ = upstream
    monkeypatch.setenv("BUNDLEGRAPH_GITHUB_API", srv.url(""))
    dist = workdir / "dist"
    with pytest.raises(PublishRefused) as e:
        run_publish(small, dist, filtered=None, source_commit=src.commit)
    assert "llama-prebuilt-manifest.json: missing" in str(e.value) and "source archive is missing" in str(e.value)
    bundles = build_linux(small, tmp_path, src, dist)
    run_manifest(small, dist=dist, source_tree=Path(src.tree), source_commit=src.commit, commit_epoch=src.epoch)
    p = bundles["linux-arm64-cpu"]
    p.write_bytes(p.read_bytes() + b"\0")  # changed after hashing and verifying
    with pytest.raises(PublishRefused) as e:
        run_publish(small, dist, filtered=None, source_commit=src.commit)
    assert f"{p.name}: bundle of promised leg linux-arm64-cpu is not verified" in str(e.value)
    assert f"{p.name}: sha256" in str(e.value) and "differs from the index" in str(e.value)


def test_imported_bundle_is_verified_and_copied(small, tmp_path, workdir, src, upstream, monkeypatch):
    """A bundle from an artifacts directory (another runner) is verified before it is listed."""
    srv, _ = upstream
    monkeypatch.setenv("BUNDLEGRAPH_GITHUB_API", srv.url(""))
    arts = tmp_path / "artifacts"
    built = build_linux(small, tmp_path / "b", src, arts / "bundle-linux")
    dist = workdir / "dist"
    vf = lambda leg: archive_verifier(
        small.legs[leg],
        small.release,
        base=small.legs.get(small.legs[leg].merge.base) if small.legs[leg].merge else None,
    )
    (workdir / ".bundlegraph" / "release" / "verified.json").unlink()
    res = run_manifest(
        small,
        dist=dist,
        source_tree=Path(src.tree),
        source_commit=src.commit,
        commit_epoch=src.epoch,
        artifacts=arts,
        verifier_for=vf,
    )
    assert set(res.bundles) == KEEP
    for p in built.values():
        assert (dist / p.name).read_bytes() == p.read_bytes()
    run_publish(small, dist, filtered=None, source_commit=src.commit)


def test_an_empty_release_is_refused_by_manifest_and_said_by_select_coverage_and_verify_release(tmp_path):
    """Issue 29: ``doit manifest`` with nothing packaged wrote an empty release; ``select`` said
    only "gets: nothing" (exit 1) and ``coverage`` exited 0. Issue 41: ``doit manifest`` now
    refuses, naming the missing bundles and writing nothing; an empty release made otherwise (an
    older bundlegraph) is said by ``select`` and ``coverage`` (exit 1), and ``verify-release``
    fails it."""
    import graphrun

    from bundlegraph.pipeline.manifest import release_header
    from bundlegraph.schemas.asset_names import INDEX_NAME, MANIFEST_NAME
    from bundlegraph.schemas.manifest import IndexEntry

    bundles, work = graphrun.standin_tree(tmp_path)
    r = graphrun.doit(["manifest"], bundles=bundles, workdir=work)
    dist = work / "dist"
    assert r.returncode != 0 and "Traceback" not in r.stderr, r.stdout + r.stderr
    m = load_matrix(bundles)
    names = [s.bundle_name(m.release.tag, m.release.bundle_prefix) for s in m.legs.values()]
    assert f"manifest: no bundle to describe: none of {', '.join(names)} is in {dist}" in r.stdout + r.stderr
    assert not (dist / MANIFEST_NAME).exists() and not (dist / INDEX_NAME).exists()
    # an empty release as an older bundlegraph wrote it
    commit = json.loads((work / "build" / next(iter(m.legs)) / "source.json").read_text())["commit"]
    header = release_header(m.release, commit, None)
    mbytes = (Manifest(**header, artifacts=[]).model_dump_json(indent=2) + "\n").encode()
    entry = IndexEntry(
        kind="manifest", sha256=hashlib.sha256(mbytes).hexdigest(), source_commit=commit, size=len(mbytes)
    )
    (dist / MANIFEST_NAME).write_bytes(mbytes)
    (dist / INDEX_NAME).write_text(ShaIndex(**header, artifacts={MANIFEST_NAME: entry}).model_dump_json(indent=2))
    v = graphrun.cli(["verify-release", str(dist)], bundles=bundles, workdir=work)
    assert v.returncode == 1 and f"{INDEX_NAME}: lists no bundle" in v.stdout + v.stderr, v.stdout + v.stderr
    assert "every check passed" not in v.stdout
    said = "holds no bundles at all: its manifest lists none (`doit` builds and packages the default legs"
    s = graphrun.cli(["select", "--os", "linux", "--arch", "arm64", str(dist)], bundles=bundles, workdir=work)
    assert s.returncode == 1 and said in s.stdout and "gets: nothing" in s.stdout, s.stdout + s.stderr
    c = graphrun.cli(["coverage", str(dist)], bundles=bundles, workdir=work)
    assert c.returncode == 1 and said in c.stdout and "| host |" not in c.stdout, c.stdout + c.stderr
    j = graphrun.cli(["coverage", "--json", str(dist)], bundles=bundles, workdir=work)
    assert j.returncode == 1 and json.loads(j.stdout)["bundles"] == 0
