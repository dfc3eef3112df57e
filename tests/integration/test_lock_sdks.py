"""``bundlegraph lock`` (:mod:`bundlegraph.toolkit.sdkpins`) against a static HTTP server on
127.0.0.1 (``--mirror``) standing in for LunarG's and AMD's download sites: a copy of the real
specs, whose LunarG installer and 13 TheRock tarballs are unpinned, gets every pin in one command
(the spec's ``[vulkan.sdk] sha256``, one lock row per tarball) and loads again; a second run
changes nothing; a pinned file whose served bytes changed is refused in one line and nothing is
written. The served files are small stand-ins: what is tested is the pinning, not AMD's bytes."""

from __future__ import annotations

import functools
import hashlib
import http.server
import shutil
import threading
from pathlib import Path

import pytest

from bundlegraph import cli
from bundlegraph.backends.hip import sdk as therock
from bundlegraph.specs.loader import load_matrix
from bundlegraph.toolkit import sdkpins

ROOT = Path(__file__).resolve().parents[2]
LOCK = "locks/therock-7.14.0.toml"


@pytest.fixture
def site(tmp_path):
    """``(bundles copy, served directory, mirror URL)``; the server stops after the test."""
    bundles, served = tmp_path / "bundles", tmp_path / "site"
    shutil.copytree(ROOT / "bundles", bundles)
    served.mkdir()

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *a: object) -> None:
            pass

    handler = functools.partial(Quiet, directory=str(served))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield bundles, served, f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def _serve_all(bundles: Path, served: Path, seed: str) -> dict[str, bytes]:
    """Write a distinct small file for every SDK file the specs name; returns name -> bytes."""
    out = {}
    for f in sdkpins.wanted(load_matrix(bundles), bundles):
        out[f.name] = f"{seed} {f.name}\n".encode() * 1000
        (served / f.name).write_bytes(out[f.name])
    return out


def test_one_command_pins_every_unpinned_sdk_file_and_a_second_run_changes_nothing(site, capsys, monkeypatch, tmp_path):
    bundles, served, url = site
    monkeypatch.setenv("BUNDLEGRAPH_CACHE", str(tmp_path / "cache"))
    # the one row pinned from public records (AUR, an install script): its bytes cannot be served
    # here, so this copy of the lock starts without it
    lock = bundles / LOCK
    text = lock.read_text(encoding="utf-8")
    lock.write_text(text[: text.index("[[tarball]]")].rstrip("\n") + "\n", encoding="utf-8")
    wanted = sdkpins.wanted(load_matrix(bundles), bundles)
    assert sorted(f.kind for f in wanted).count("therock") == 14 and [f.kind for f in wanted].count("lunarg") == 1
    assert not any(f.sha256 for f in wanted)
    body = _serve_all(bundles, served, "v1")

    assert cli.main(["--bundles", str(bundles), "lock", "--mirror", url]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 15 and all(": pinned sha256 " in line for line in lines), lines

    pins = therock.load_lock(lock).tarballs
    assert len(pins) == 14
    for name, row in pins.items():
        assert row.sha256 == hashlib.sha256(body[name]).hexdigest() and row.size == len(body[name])
        assert row.url == therock.DOWNLOAD.format(name=name)  # the pin names AMD's address, not the mirror
    win = load_matrix(bundles).legs["windows-x64-vulkan"].vulkan
    assert win is not None
    exe = "vulkansdk-windows-X64-1.4.357.0.exe"
    assert win.sdk.sha256 == hashlib.sha256(body[exe]).hexdigest()

    before = {p: p.read_bytes() for p in (lock, bundles / "windows-x64-vulkan.toml")}
    assert cli.main(["--bundles", str(bundles), "lock", "--mirror", url]) == 0
    assert all(": unchanged (sha256 " in line for line in capsys.readouterr().out.splitlines())
    assert {p: p.read_bytes() for p in before} == before


def test_a_pin_whose_bytes_changed_is_refused_and_nothing_is_written(site, capsys, monkeypatch, tmp_path):
    bundles, served, url = site
    monkeypatch.setenv("BUNDLEGRAPH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("BUNDLEGRAPH_RETRIES", "0")
    _serve_all(bundles, served, "other bytes")  # gfx110X's pin (from public records) is not these
    before = {p: p.read_bytes() for p in bundles.rglob("*.toml")}

    assert cli.main(["--bundles", str(bundles), "lock", "--mirror", url]) == 3
    out = capsys.readouterr().err.splitlines()
    err = [line.removeprefix("bundlegraph: ") for line in out if str(bundles) in line]  # not the progress lines
    name = "therock-dist-linux-gfx110X-all-7.14.0.tar.gz"
    assert len(err) == 1 and err[0].startswith(f"{bundles / LOCK}: {name}: the bytes changed, the pin is kept ("), err
    assert "e78a4445c52d879fbd0765f24e7fa9df1e262a8baf681b118a13e75340120127" in err[0]
    assert {p: p.read_bytes() for p in bundles.rglob("*.toml")} == before  # the 14 others are not pinned either
