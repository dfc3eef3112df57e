"""The installer's own code chooses our ROCm and macOS bundles for AMD and Apple hosts, as
``bundlegraph.installer.selection`` says it will (issue 44).

The release is a manifest and SHA index for the 14 ROCm legs and the 2 macOS legs of
``bundles/``: each artifact made the way the pipeline makes it, the info file ``package`` writes
(:func:`bundlegraph.pipeline.package.build_info`: ``gfx_target``, ``mapped_targets``, the fork's
macOS asset names) turned into the manifest stage's entry
(:meth:`~bundlegraph.schemas.manifest.ManifestArtifact.from_info`), served on 127.0.0.1 as
``unslothai/llama.cpp@<tag>`` by :mod:`installerkit`. The bundles themselves are placeholders of
their names: nothing of them was compiled here (no TheRock SDK, no macOS runner), so this test
checks selection only, by ``select_backend_install`` of ``unsloth==2026.10.9``: for every gfx
target of the fork's families on Linux and Windows x64, an in-family target the fork does not
build (gfx1033: no bundle, a source build), and both Macs. Time: ~2 s once the installer is cached.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import installerkit
import pytest
from conftest import linux_only

from bundlegraph.backends import hip
from bundlegraph.installer.selection import Host, select
from bundlegraph.pipeline.package import PackageInputs, build_info
from bundlegraph.schemas.asset_names import MANIFEST_NAME, source_archive_name
from bundlegraph.schemas.manifest import WAIVED, IndexEntry, Manifest, ManifestArtifact, ShaIndex, VerifyFindings
from bundlegraph.specs.loader import load_matrix

ROOT = Path(__file__).resolve().parents[2]
COMMIT = "0c1e57098bba43ac29e6e3b677cdceebdd22334f"

pytestmark = linux_only


@pytest.fixture(scope="module")
def ilp():
    return installerkit.installer()


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> tuple[Path, Manifest, ShaIndex]:
    """``dist/``: the manifest and SHA index of the ROCm and macOS legs, and one placeholder file
    per asset (hashed in the index as it is)."""
    m = load_matrix(ROOT / "bundles")
    tag = m.release.tag
    out = tmp_path_factory.mktemp("dist")
    arts, entries = [], {}
    for leg, s in m.legs.items():
        if s.backend != "hip" and s.os != "macos":
            continue
        name = s.bundle_name(tag, m.release.bundle_prefix)
        blob = f"placeholder of {name}: selection only\n".encode()
        (out / name).write_bytes(blob)
        entries[name] = IndexEntry(kind="bundle", sha256=hashlib.sha256(blob).hexdigest(), source_commit=COMMIT)
        inp = PackageInputs(
            spec=s,
            release=m.release,
            tree=out,
            dest=out / name,
            source_tree=out,
            source_commit=COMMIT,
            source_digest="0" * 64,
            commit_epoch=None,
        )
        info = build_info(inp, "not-required", [], VerifyFindings(machine=s.arch, passed=True))
        smoke = f"{WAIVED}{s.smoke.waived}" if s.smoke else None
        arts.append(ManifestArtifact.from_info(info, smoke=smoke))
    head = {
        "source_repo": m.release.source_repo,
        "source_commit": COMMIT,
        "upstream_tag": m.release.upstream_tag,
        "release_tag": tag,
    }
    manifest = Manifest(**head, artifacts=sorted(arts, key=lambda a: a.asset_name))
    mbytes = (manifest.model_dump_json(indent=2) + "\n").encode()
    (out / installerkit.MANIFEST_NAME).write_bytes(mbytes)
    # the index lists the manifest and the source archive as the manifest stage writes them (the
    # installer refuses a release whose index lacks its source archive)
    src = out / source_archive_name(COMMIT)
    src.write_bytes(b"placeholder of the source archive: selection only\n")
    entries[MANIFEST_NAME] = IndexEntry(
        kind="manifest", sha256=hashlib.sha256(mbytes).hexdigest(), source_commit=COMMIT
    )
    entries[src.name] = IndexEntry(
        kind="upstream-source", sha256=hashlib.sha256(src.read_bytes()).hexdigest(), source_commit=COMMIT
    )
    index = ShaIndex(**head, artifacts=dict(sorted(entries.items())))
    (out / installerkit.INDEX_NAME).write_text(index.model_dump_json(indent=2) + "\n")
    return out, manifest, index


def _host(ilp, os_name: str, arch: str, gfx: str | None):
    """The installer's ``HostInfo`` of an AMD host with ROCm reporting ``gfx`` (Linux/Windows
    x64), or of a Mac (no GPU probe answers: Apple silicon or Intel)."""
    machine = {
        ("linux", "x64"): "x86_64",
        ("windows", "x64"): "AMD64",
        ("macos", "arm64"): "arm64",
        ("macos", "x64"): "x86_64",
    }
    return ilp.HostInfo(
        system={"linux": "Linux", "windows": "Windows", "macos": "Darwin"}[os_name],
        machine=machine[(os_name, arch)],
        is_windows=os_name == "windows",
        is_linux=os_name == "linux",
        is_macos=os_name == "macos",
        is_x86_64=arch == "x64",
        is_arm64=arch == "arm64",
        nvidia_smi=None,
        driver_cuda_version=None,
        compute_caps=[],
        visible_cuda_devices=None,
        has_physical_nvidia=False,
        has_usable_nvidia=False,
        has_rocm=gfx is not None,
        rocm_gfx_target=gfx,
        rocm_gfx_targets=[gfx] if gfx else [],
        macos_version=(14, 5) if os_name == "macos" else None,
    )


def _installer_pick(ilp, srv, host) -> tuple[str | None, str | None]:
    """The installer's first attempt (asset, install kind) for ``host``; (None, None) when it
    would build from source."""
    try:
        sel = ilp.select_backend_install(
            backend=None,
            llama_tag="latest",
            published_repo=installerkit.REPO,
            published_release_tag=srv.release_tag,
            host=host,
        )
        attempts = [a for plan in sel.release_plans for a in plan.attempts]
    except ilp.PrebuiltFallback:
        return None, None
    return (attempts[0].name, attempts[0].install_kind) if attempts else (None, None)


HOSTS = [
    *((o, "x64", t) for o in ("linux", "windows") for fam in hip.FAMILIES.values() for t in fam),
    ("linux", "x64", "gfx1033"),
    ("windows", "x64", "gfx1033"),
    ("macos", "arm64", None),
    ("macos", "x64", None),
]


def test_the_installer_serves_every_windows_target_of_ours_from_a_prebuilt_bundle(ilp):
    """The installer takes a windows-rocm bundle only for a gfx of its own list; every target of
    our Windows legs must be on it, or those hosts build from source whatever we publish."""
    assert set(hip.INSTALLER_WINDOWS_TARGETS) <= set(ilp.WINDOWS_HIP_PREBUILT_GFX_TARGETS), sorted(
        set(hip.INSTALLER_WINDOWS_TARGETS) - set(ilp.WINDOWS_HIP_PREBUILT_GFX_TARGETS)
    )


def test_the_installer_chooses_our_rocm_and_macos_bundles_as_selection_says(ilp, dist):
    d, manifest, index = dist
    disagree, served = [], 0
    with installerkit.released(ilp, d) as srv:
        for os_name, arch, gfx in HOSTS:
            ours = select(Host(os_name, arch, gfx=gfx), manifest, index)
            got = _installer_pick(ilp, srv, _host(ilp, os_name, arch, gfx))
            if got != (ours.choice, ours.install_kind):
                disagree.append(
                    f"{os_name} {arch} {gfx}: bundlegraph {ours.choice} ({ours.install_kind}), installer {got}"
                )
            served += ours.choice is not None
        assert srv.unexpected == [], srv.unexpected
    assert not disagree, "\n".join(disagree)
    # every fork target on both OSes, and both Macs, get a bundle; gfx1033 none (a source build)
    assert served == len(HOSTS) - 2
