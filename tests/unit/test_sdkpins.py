"""The pure parts of ``bundlegraph lock`` (:mod:`bundlegraph.toolkit.sdkpins`): which SDK files the
real specs name and which are pinned, and how a pin is written into a spec and a lock."""

from __future__ import annotations

import tomllib
from pathlib import Path

from bundlegraph.backends.hip import sdk as therock
from bundlegraph.specs.loader import load_matrix
from bundlegraph.toolkit import sdkpins

ROOT = Path(__file__).resolve().parents[2]


def test_the_specs_name_one_lunarg_installer_and_fourteen_therock_tarballs_thirteen_unpinned():
    files = sdkpins.wanted(load_matrix(ROOT / "bundles"), ROOT / "bundles")
    lunarg = [f for f in files if f.kind == "lunarg"]
    rock = [f for f in files if f.kind == "therock"]
    assert [(f.name, f.legs, f.sha256) for f in lunarg] == [
        ("vulkansdk-windows-X64-1.4.357.0.exe", ("windows-x64-vulkan",), "")
    ]
    assert lunarg[0].url == "https://sdk.lunarg.com/sdk/download/1.4.357.0/windows/vulkansdk-windows-X64-1.4.357.0.exe"
    assert len(rock) == 14 and len([f for f in rock if not f.sha256]) == 13
    assert all(f.url == therock.DOWNLOAD.format(name=f.name) for f in rock)
    assert all(len(f.legs) == 1 for f in rock)  # one leg per OS and gfx family


def test_a_pin_is_the_last_key_of_the_sdk_table_and_the_only_change():
    spec = '[vulkan.sdk]\nsource = "lunarg"\nversion = "1.4.357.0"\n\n[cmake]\nGGML_VULKAN = true\n'
    pinned = sdkpins.pin_spec(spec, "a" * 64)
    assert pinned == spec.replace('1.4.357.0"\n', f'1.4.357.0"\nsha256 = "{"a" * 64}"\n', 1)
    assert tomllib.loads(pinned)["vulkan"]["sdk"]["sha256"] == "a" * 64
    assert sdkpins.pin_spec(pinned, "b" * 64).count("sha256 =") == 1


def test_a_lock_gains_one_row_per_tarball(tmp_path):
    text = (ROOT / "bundles" / "locks" / "therock-7.14.0.toml").read_text(encoding="utf-8")
    name = "therock-dist-windows-gfx908-7.14.0.tar.gz"
    row = sdkpins.SdkFile("therock", name, therock.DOWNLOAD.format(name=name), tmp_path, "c" * 64, 7)
    lock = tmp_path / "therock-7.14.0.toml"
    lock.write_text(sdkpins.pin_lock(text, [row]), encoding="utf-8")
    got = therock.load_lock(lock).tarballs
    assert len(got) == 2 and got[name].sha256 == "c" * 64 and got[name].size == 7
