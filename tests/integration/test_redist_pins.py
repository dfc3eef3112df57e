"""Issue 51: NVIDIA's redist manifests are pinned by sha256 (``bundles/locks/cuda-redist-manifests.toml``).
``bundlegraph lock-redist`` writes the pin from what a pool on 127.0.0.1 serves (NVIDIA's real
``redistrib_12.9.1.json``, byte-exact, ``tests/data/redist/SOURCES.md``); a leg without a pin refuses
before downloading, naming the command; a manifest whose bytes moved is refused in one line naming
it and both digests, fetched or cached."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import graphrun
import pytest
from redistserver import RedistServer

from bundlegraph.backends.cuda.toolkit_set import component_set
from bundlegraph.core.errors import HashMismatch
from bundlegraph.toolkit.identity import ComponentSet
from bundlegraph.toolkit.redist import get_manifest, manifest_location
from bundlegraph.toolkit.redistlock import ManifestNotPinned, load_pins, lock_path

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "redist"
REAL_1291 = "8335301010b0023ee1ff61eb11e2600ca62002d76780de4089011ad77e0c7630"
"""sha256 of NVIDIA's redistrib_12.9.1.json as tests/data/redist/SOURCES.md records it."""


@pytest.fixture
def env(tmp_path, monkeypatch):
    monkeypatch.setenv("BUNDLEGRAPH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("BUNDLEGRAPH_RETRIES", "0")
    return tmp_path


def a_set(server, sha: str | None, label: str = "12.9.1") -> ComponentSet:
    return ComponentSet(
        "redist",
        "12.9",
        "linux-x86_64",
        "linux-x86_64",
        ("cuda_nvcc",),
        ("cuda_cudart",),
        {"manifest": label, "pool": server.url("/"), "manifest_sha256": sha},
        "bundles/test-leg.toml",
    )


def test_lock_redist_pins_the_real_manifest_and_the_pin_is_checked(env):
    bundles = env / "bundles"
    bundles.mkdir()
    real = (DATA / "redistrib_12.9.1.json").read_bytes()
    with RedistServer() as s:
        s.files["/redistrib_12.9.1.json"] = real
        r = graphrun.cli(["lock-redist", "12.9.1"], bundles=bundles, workdir=env, BUNDLEGRAPH_REDIST_URL=s.url("/"))
        assert r.returncode == 0, r.stdout + r.stderr
        print(r.stdout)
        assert f"redistrib_12.9.1.json: pinned, sha256 {REAL_1291}, {len(real)} bytes" in r.stdout
        pin = load_pins(lock_path(bundles))["12.9.1"]
        assert (pin.sha256, pin.size) == (REAL_1291, len(real))
        # again: unchanged
        r = graphrun.cli(["lock-redist", "12.9.1"], bundles=bundles, workdir=env, BUNDLEGRAPH_REDIST_URL=s.url("/"))
        assert r.returncode == 0 and "unchanged" in r.stdout, r.stdout + r.stderr
        # the pinned manifest resolves (and is cached); NVIDIA's real components parse
        _origin, path, m = get_manifest(a_set(s, pin.sha256), bundles)
        assert m.component("cuda_nvcc") is not None and path.read_bytes() == real
        # the pool's bytes move: lock-redist refuses without --update, names both digests, keeps the pin
        moved = (DATA / "redistrib_13.0.2.json").read_bytes().replace(b'"13.0.2"', b'"12.9.1"', 1)
        s.files["/redistrib_12.9.1.json"] = moved
        new = hashlib.sha256(moved).hexdigest()
        r = graphrun.cli(["lock-redist", "12.9.1"], bundles=bundles, workdir=env, BUNDLEGRAPH_REDIST_URL=s.url("/"))
        assert r.returncode == 2 and "Traceback" not in r.stderr, r.stdout + r.stderr
        assert f"sha256 {new}, but" in r.stderr and REAL_1291 in r.stderr and "--update" in r.stderr, r.stderr
        assert load_pins(lock_path(bundles))["12.9.1"].sha256 == REAL_1291
        # a build never takes the moved bytes: the cached copy is the pinned one ...
        assert get_manifest(a_set(s, pin.sha256), bundles)[1].read_bytes() == real
        # ... and a cache that lost it fetches, and refuses in one line naming the manifest and both digests
        path.unlink()
        with pytest.raises(HashMismatch) as e:
            get_manifest(a_set(s, pin.sha256), bundles)
        msg = str(e.value)
        assert "\n" not in msg and s.url("/redistrib_12.9.1.json") in msg and new in msg and REAL_1291 in msg, msg
        assert not path.exists(), "moved bytes are never cached"
        # a cached copy altered in place is not trusted either
        s.files["/redistrib_12.9.1.json"] = real
        get_manifest(a_set(s, pin.sha256), bundles)
        path.write_bytes(moved)
        hits = s.hits("/redistrib_12.9.1.json")
        assert get_manifest(a_set(s, pin.sha256), bundles)[1].read_bytes() == real
        assert s.hits("/redistrib_12.9.1.json") == hits + 1
        # --update re-pins what the pool serves now (a maintainer reviewed the change)
        s.files["/redistrib_12.9.1.json"] = moved
        r = graphrun.cli(
            ["lock-redist", "12.9.1", "--update"], bundles=bundles, workdir=env, BUNDLEGRAPH_REDIST_URL=s.url("/")
        )
        assert r.returncode == 0 and "re-pinned" in r.stdout, r.stdout + r.stderr
        assert load_pins(lock_path(bundles))["12.9.1"].sha256 == new


def test_lock_redist_refuses_a_document_of_another_label(env):
    bundles = env / "bundles"
    bundles.mkdir()
    with RedistServer() as s:
        s.files["/redistrib_12.9.1.json"] = (DATA / "redistrib_13.0.2.json").read_bytes()
        r = graphrun.cli(["lock-redist", "12.9.1"], bundles=bundles, workdir=env, BUNDLEGRAPH_REDIST_URL=s.url("/"))
    assert r.returncode == 4, r.stdout + r.stderr  # ToolkitError: not the manifest it should be
    assert "release_label is '13.0.2', not 12.9.1" in r.stderr and "Traceback" not in r.stderr
    assert not lock_path(bundles).exists()


def test_the_real_specs_unpinned_manifests_refuse_before_any_download(env):
    """CUDA 12.8.0's and 13.4.2's manifests cannot be fetched here, so they are not pinned (no hash
    is invented): their legs refuse before downloading, naming the command that pins them."""
    bundles = env / "bundles"
    shutil.copytree(ROOT / "bundles", bundles)
    from bundlegraph.specs.loader import load_matrix

    matrix = load_matrix(bundles)
    with RedistServer() as s:
        for leg, label in (("windows-x64-cuda12-portable", "12.8.0"), ("windows-x64-cuda13-portable", "13.4.2")):
            cs = component_set(matrix.legs[leg], bundles, f"bundles/{leg}.toml")
            assert cs.pins["manifest_sha256"] is None
            cs = ComponentSet(**{**cs.__dict__, "pins": {**cs.pins, "pool": s.url("/")}})
            with pytest.raises(ManifestNotPinned) as e:
                get_manifest(cs, bundles)
            msg = str(e.value)
            assert msg == (
                f"bundles/{leg}.toml: cuda.toolkit.manifest: redistrib_{label}.json is not pinned in "
                f"{lock_path(bundles)}; a maintainer runs `bundlegraph lock-redist {label}` (with the network), "
                "reviews and commits the lock"
            ), msg
            assert s.hits(f"/redistrib_{label}.json") == 0
            assert not manifest_location(cs, bundles)[1].exists()
