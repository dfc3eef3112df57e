"""`doit manifest publish` through the real graph (dodo.py), with bundles imported from an
artifacts directory the way the CI manifest job gets them."""

from __future__ import annotations

import json
import re

import pytest
from bundlekit import compile_cuda_backend, linux_cpu_tree, package, real_matrix, real_source
from graphrun import doit

from bundlegraph.pipeline.merge import backend_outputs, load_base, run_merge


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("arts")
    src = real_source(tmp)
    m = real_matrix()
    rel, cpu, bw = m.release, m.legs["linux-arm64-cpu"], m.legs["linux-arm64-cuda13-blackwell"]
    arts = tmp / "artifacts"
    base = arts / "bundle-linux-arm64-cpu" / cpu.bundle_name(rel.tag)
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
    package(bw, rel, tmp / "merged", arts / "bundle-bw" / bw.bundle_name(rel.tag), src, base=cpu)
    # the paired runtime assets, as the upstream release would provide them
    for s in m.legs.values():
        for p in s.runtime.paired:
            (arts / "runtime").mkdir(exist_ok=True)
            (arts / "runtime" / p.name).write_bytes(b"PK\x05\x06" + p.name.encode().ljust(18, b"\0")[:18])
    return arts


def test_doit_publish_refuses_listing_every_missing_bundle(workdir, artifacts, monkeypatch):
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    r = doit([f"artifacts={artifacts}", "manifest", "publish"], workdir=workdir)
    out = r.stdout + r.stderr
    assert r.returncode != 0, out
    m = real_matrix()
    idx = json.loads((workdir / "dist" / "llama-prebuilt-sha256.json").read_text())
    assert {k for k, v in idx["artifacts"].items() if v["kind"] == "bundle"} == {
        m.legs[l].bundle_name(m.release.tag) for l in ("linux-arm64-cpu", "linux-arm64-cuda13-blackwell")
    }
    # a paired runtime is hashed with its bundle: the Windows bundles are not here
    assert "cudart-llama-bin-win-cuda-13.4-arm64.zip" not in idx["artifacts"]
    missing = [l for l in m.promised if l not in ("linux-arm64-cpu", "linux-arm64-cuda13-blackwell")]
    for leg in missing:
        assert f"bundle of promised leg {leg} is missing" in out
    # the host classes those legs claim are those missing bundles: not listed twice; the built
    # legs' classes (GB10 and the other aarch64 SMs, aarch64 CPU) are all served
    # every item at once: the paired runtimes of the missing legs are listed too
    paired = [pa.name for leg in missing for pa in m.legs[leg].runtime.paired]
    assert paired and all(f"{n}: paired runtime of " in out for n in paired)
    # the two bundles that are there came without a smoke result (no .smoke.json beside them)
    built = ("linux-arm64-cpu", "linux-arm64-cuda13-blackwell")
    for leg in built:
        assert f"bundle of promised leg {leg} has no passed smoke for these bytes" in out, out[-3000:]
    # and the release's coverage rules ([coverage] of release.toml), each missing bundle once
    rules = re.findall(r"coverage\.\w+\[\d+\]: ", out)
    assert rules and f"refused, {len(missing) + len(paired) + len(built) + len(rules)} item(s)" in out
    assert "coverage:" not in out
    assert not (workdir / "dist" / "release-assets.txt").exists()
    # a filtered run refuses too, whatever it holds
    r = doit([f"artifacts={artifacts}", "only_leg=linux-arm64-cpu", "publish"], workdir=workdir)
    assert r.returncode != 0 and "a filtered run can never publish" in r.stdout + r.stderr
    # on a tag push, a release.toml tag that is not the pushed tag is refused (installers would
    # void the SHA index of the GitHub release)
    r = doit([f"artifacts={artifacts}", "publish"], workdir=workdir, GITHUB_REF="refs/tags/b11643")
    assert r.returncode != 0
    assert "release.toml: tag: 'b11642' is not the git tag being released ('b11643')" in r.stdout + r.stderr
