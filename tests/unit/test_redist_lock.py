"""The redist manifest lock's rules (:mod:`bundlegraph.toolkit.redistlock`): every bad row named at
once, a round trip through the writer, and the two refusals in one line each."""

from __future__ import annotations

import pytest

from bundlegraph.core.errors import ToolkitError, exit_code
from bundlegraph.toolkit.redistlock import ManifestPin, dump_pins, load_pins, moved, unpinned

SHA = "8335301010b0023ee1ff61eb11e2600ca62002d76780de4089011ad77e0c7630"


def test_round_trip_and_missing_file(tmp_path):
    p = tmp_path / "locks" / "cuda-redist-manifests.toml"
    assert load_pins(p) == {}
    pins = {"12.9.1": ManifestPin("12.9.1", SHA, 61234), "12.10.0": ManifestPin("12.10.0", "0" * 64, 1)}
    p.parent.mkdir()
    p.write_text(dump_pins(pins))
    assert load_pins(p) == pins
    assert p.read_text().index('"12.9.1"') < p.read_text().index('"12.10.0"')  # numeric order
    assert "Written by `bundlegraph lock-redist`" in p.read_text()


def test_every_bad_row_is_named_at_once(tmp_path):
    p = tmp_path / "lock.toml"
    p.write_text(
        "version = 1\nextra = 1\n"
        '[[manifest]]\nlabel = "12.8.0"\nsize = 3\n'
        '[[manifest]]\nlabel = "12.9.1"\nsha256 = "ABC"\nsize = 3\n'
        '[[manifest]]\nlabel = "latest"\nsha256 = "' + SHA + '"\nsize = 3\n'
        '[[manifest]]\nlabel = "13.0.2"\nsha256 = "' + SHA + '"\n'
        '[[manifest]]\nlabel = "13.0.3"\nsha256 = "' + SHA + '"\nsize = 3\nurl = "x"\n'
    )
    with pytest.raises(ToolkitError) as e:
        load_pins(p)
    lines = str(e.value).splitlines()
    assert lines == [
        f"{p}: extra: unknown key",
        f"{p}: manifest[0].sha256: expected 64 lowercase hex digits, got None; rerun `bundlegraph lock-redist`",
        f"{p}: manifest[1].sha256: expected 64 lowercase hex digits, got 'ABC'; rerun `bundlegraph lock-redist`",
        f"{p}: manifest[2].label: expected a redist release label such as 12.8.0, got 'latest'",
        f"{p}: manifest[3].size: expected a positive number of bytes, got None",
        f"{p}: manifest[4]: unknown key(s) url",
    ], lines


def test_the_refusals_are_one_line_with_their_exit_codes(tmp_path):
    u = unpinned("12.8.0", "bundles/windows-x64-cuda12-portable.toml", tmp_path)
    assert "\n" not in str(u) and "`bundlegraph lock-redist 12.8.0`" in str(u) and exit_code(u) == 2
    m = moved("https://pool/redistrib_12.8.0.json", "a" * 64, "b" * 64, "locks/x.toml", "12.8.0")
    assert "\n" not in str(m) and "a" * 64 in str(m) and "b" * 64 in str(m) and exit_code(m) == 3
    assert str(m).startswith("https://pool/redistrib_12.8.0.json: sha256 ")
