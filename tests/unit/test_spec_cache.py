"""The spec cache (bundlegraph.specs.loader): an unchanged bundles directory loads without
pydantic; any edit to a spec, the release or a lock the specs name is seen; a damaged entry is
ignored and written again; bundlegraph's own version is part of the key."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bundlegraph.core.errors import SpecError
from bundlegraph.specs import loader
from bundlegraph.specs.loader import load_matrix

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    d = tmp_path / "cache"
    monkeypatch.setenv("BUNDLEGRAPH_CACHE", str(d))
    return d


def _entry(bundles: Path) -> Path:
    p = loader._entry_path(bundles)
    assert p is not None
    return p


def test_unchanged_directory_is_not_validated_again(bundles_copy, cache, monkeypatch):
    """(tests/integration/test_spec_cache_process.py checks that such a load imports no pydantic.)"""
    first = load_matrix(bundles_copy)
    assert _entry(bundles_copy).is_file()

    def refuse(root):
        raise AssertionError(f"validated {root} again")

    import bundlegraph.specs.validation as validation

    monkeypatch.setattr(validation, "validate_matrix", refuse)
    again = load_matrix(bundles_copy)
    assert again == first and again.root == first.root and again.files == first.files
    with pytest.raises(AssertionError, match="validated"):  # another spelling of the path is another entry
        load_matrix(Path(os.path.relpath(bundles_copy)))


def test_every_edit_is_seen(bundles_copy, cache):
    base = load_matrix(bundles_copy)
    assert load_matrix(bundles_copy) == base
    # a spec edited
    f = bundles_copy / "linux-x64-cpu.toml"
    f.write_text(f.read_text().replace("rank = ", "rank = 1", 1))
    assert load_matrix(bundles_copy).legs["linux-x64-cpu"].profile.rank != base.legs["linux-x64-cpu"].profile.rank
    # the release edited
    rel = bundles_copy / "release.toml"
    rel.write_text(
        rel.read_text().replace('bundle_prefix = "', 'bundle_prefix = "x', 1)
        if 'bundle_prefix = "' in rel.read_text()
        else rel.read_text() + '\nbundle_prefix = "xapp"\n'
    )
    assert load_matrix(bundles_copy).release.bundle_prefix != base.release.bundle_prefix
    # a new spec file
    (bundles_copy / "new-leg.toml").write_text('id = "new-leg"\n')
    with pytest.raises(SpecError, match="new-leg.toml: os: required key is missing"):
        load_matrix(bundles_copy)
    (bundles_copy / "new-leg.toml").unlink()
    assert load_matrix(bundles_copy).legs.keys() == base.legs.keys()


def test_a_lock_the_specs_name_is_part_of_the_key(bundles_copy, cache):
    load_matrix(bundles_copy)
    lock = bundles_copy / "locks" / "cuda-13.5-wheels.toml"
    lock.write_text(lock.read_text().replace('cuda = "13.5"', 'cuda = "13.4"'))
    with pytest.raises(SpecError, match="the wheels lock cuda-13.5-wheels.toml is CUDA 13.4"):
        load_matrix(bundles_copy)


def test_an_invalid_directory_is_never_cached(bundles_copy, cache):
    f = bundles_copy / "linux-x64-cpu.toml"
    f.write_text(f.read_text() + "\nnope = 1\n")
    for _ in range(2):
        with pytest.raises(SpecError, match="nope: unknown key"):
            load_matrix(bundles_copy)
    assert not _entry(bundles_copy).exists()


@pytest.mark.parametrize("damage", ["truncate", "flip", "garbage", "empty", "other-shape"])
def test_a_damaged_entry_is_ignored_and_written_again(bundles_copy, cache, damage):
    good = load_matrix(bundles_copy)
    entry = _entry(bundles_copy)
    raw = entry.read_bytes()
    if damage == "truncate":
        entry.write_bytes(raw[: len(raw) // 2])
    elif damage == "flip":
        entry.write_bytes(raw[:-10] + bytes([raw[-10] ^ 0xFF]) + raw[-9:])
    elif damage == "garbage":
        entry.write_bytes(os.urandom(len(raw)))
    elif damage == "empty":
        entry.write_bytes(b"")
    else:  # whole and hashed, but not a matrix: still only a miss
        import hashlib
        import pickle

        payload = pickle.dumps({"key": loader._key(bundles_copy), "read": [], "matrix": "not a matrix"})
        entry.write_bytes(loader.MAGIC + hashlib.sha256(payload).hexdigest().encode() + b"\n" + payload)
    assert loader._read(entry, loader._key(bundles_copy) or "") is None
    assert load_matrix(bundles_copy) == good
    assert entry.read_bytes() == raw  # validated again and stored afresh (pickles are deterministic)


def test_bundlegraph_version_is_part_of_the_key(bundles_copy, cache, monkeypatch):
    k = loader._key(bundles_copy)
    monkeypatch.setattr(loader, "__version__", "99.0")
    assert loader._key(bundles_copy) != k


def test_a_backends_rules_and_spec_table_modules_are_part_of_the_key(bundles_copy, cache, tmp_path, monkeypatch):
    """A backend's package decides what specs validate to (its ``rules.py``, its ``spec.py``): a
    change to any of its modules misses the cache, as one to the schemas does."""
    assert "backends/cuda" in loader._CODE_DIRS and "backends/hip" in loader._CODE_DIRS
    rules = ROOT / "bundlegraph" / "backends" / "cuda" / "rules.py"
    k = loader._key(bundles_copy)
    st = rules.stat()
    try:
        os.utime(rules, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
        assert loader._key(bundles_copy) != k
    finally:
        os.utime(rules, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert loader._key(bundles_copy) == k
