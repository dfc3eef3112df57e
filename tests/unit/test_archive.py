"""Deterministic archive writers: same bytes from the same inputs regardless of mtimes, modes
the host gave, or the order files were created in; epochs from SOURCE_DATE_EPOCH."""

from __future__ import annotations

import gzip
import hashlib
import os
import tarfile
import zipfile
from pathlib import Path

import pytest

from bundlegraph.pipeline.bundle.archive import ArchiveError, Entry, archive_epoch, entries_from_tree, write_archive

EPOCH = 1790000000  # 2026-09-21


def sha(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def make_tree(root: Path, order: list[str]) -> Path:
    root.mkdir(parents=True)
    (root / "sub").mkdir()
    for name in order:
        (root / name).write_bytes(f"content of {name}\n".encode() * 50)
    if os.name != "nt" and (root / "b.bin").exists():
        os.chmod(root / "b.bin", 0o775)
        (root / "a.so.1").symlink_to("a.so")
    return root


@pytest.mark.parametrize("suffix", [".zip", ".tar.gz"])
def test_same_bytes_whatever_the_mtimes_and_creation_order(tmp_path, suffix, monkeypatch):
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    t1 = make_tree(tmp_path / "t1", ["a.so", "b.bin", "sub/c.txt"])
    t2 = make_tree(tmp_path / "t2", ["sub/c.txt", "b.bin", "a.so"])
    for p in t2.rglob("*"):
        if not p.is_symlink():
            os.utime(p, (1234567890, 1234567890))
    os.chmod(t2 / "sub/c.txt", 0o600)
    keep = (lambda rel: not rel.endswith(".so.1")) if suffix == ".zip" else None
    a = write_archive(tmp_path / f"one{suffix}", entries_from_tree(t1, keep=keep), EPOCH)
    b = write_archive(tmp_path / f"two{suffix}", entries_from_tree(t2, keep=keep), EPOCH)
    assert sha(a) == sha(b)
    c = write_archive(tmp_path / f"three{suffix}", entries_from_tree(t1, keep=keep), EPOCH + 2)
    assert sha(c) != sha(a), "the epoch must be what the timestamps come from"


def test_tar_gz_header_and_members_are_normalised(tmp_path):
    t = make_tree(tmp_path / "t", ["a.so", "b.bin", "sub/c.txt"])
    out = write_archive(tmp_path / "x.tar.gz", entries_from_tree(t), EPOCH)
    raw = out.read_bytes()
    assert raw[:2] == b"\x1f\x8b" and raw[4:8] == b"\0\0\0\0", "gzip header mtime must be 0"
    assert raw[3] & 0x08 == 0, "no file name in the gzip header"
    with tarfile.open(out) as tf:
        ms = tf.getmembers()
    assert [m.name for m in ms] == sorted(m.name for m in ms)
    assert {m.mtime for m in ms} == {EPOCH}
    assert {(m.uid, m.gid, m.uname, m.gname) for m in ms} == {(0, 0, "", "")}
    by = {m.name: m for m in ms}
    if os.name != "nt":
        assert by["a.so.1"].issym() and by["a.so.1"].linkname == "a.so"
        assert by["b.bin"].mode == 0o755
    assert by["sub/c.txt"].mode == 0o644


def test_zip_entries_sorted_with_one_timestamp_and_no_links(tmp_path):
    t = make_tree(tmp_path / "t", ["z.dll", "a.exe", "m.txt", "a.so"])
    out = write_archive(tmp_path / "x.zip", [Entry(n, path=t / n) for n in ("z.dll", "m.txt", "a.exe")], EPOCH)
    with zipfile.ZipFile(out) as zf:
        infos = zf.infolist()
    assert [i.filename for i in infos] == ["a.exe", "m.txt", "z.dll"]
    assert {i.date_time for i in infos} == {(2026, 9, 21, 14, 13, 20)}
    assert {i.filename: (i.external_attr >> 16) & 0o777 for i in infos} == {
        "a.exe": 0o755,
        "m.txt": 0o644,
        "z.dll": 0o755,
    }
    with pytest.raises(ArchiveError, match="symlink"):
        write_archive(tmp_path / "y.zip", [Entry("l.dll", link="z.dll")], EPOCH)
    assert not (tmp_path / "y.zip").exists()


def test_source_date_epoch_wins_and_bad_values_are_named(monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    assert archive_epoch(EPOCH) == 1700000000
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "yesterday")
    with pytest.raises(ArchiveError, match="SOURCE_DATE_EPOCH='yesterday'"):
        archive_epoch(EPOCH)
    monkeypatch.delenv("SOURCE_DATE_EPOCH")
    assert archive_epoch(EPOCH) == EPOCH
    with pytest.raises(ArchiveError, match="commit_date"):
        archive_epoch(None)


def test_failed_write_leaves_no_archive_and_no_temp(tmp_path):
    good = tmp_path / "good.bin"
    good.write_bytes(b"x" * 1000)
    with pytest.raises(FileNotFoundError):
        write_archive(tmp_path / "out" / "b.tar.gz", [Entry("a", path=good), Entry("b", path=tmp_path / "gone")], EPOCH)
    assert list((tmp_path / "out").iterdir()) == []
    with pytest.raises(ArchiveError, match="two entries named 'a'"):
        write_archive(tmp_path / "out" / "c.zip", [Entry("a", data=b"1"), Entry("a", data=b"2")], EPOCH)
    assert list((tmp_path / "out").iterdir()) == []
    with pytest.raises(ArchiveError, match="clean relative"):
        Entry("../evil", data=b"")
    assert gzip  # gzip format checked above through the raw header
