"""The Debian-package lock (:mod:`bundlegraph.toolkit.debs`) without processes or network: every
refusal names the file and key, the digest follows the pins, apt's file names, the private apt
configuration derived from the machine's Debian source."""

from __future__ import annotations

from pathlib import Path

import pytest
from debskit import CUB_LOCK, CUB_SHA

from bundlegraph.core.errors import ToolkitError
from bundlegraph.toolkit import debs


def write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "lock.toml"
    p.write_text(text, encoding="utf-8")
    return p


def refusal(tmp_path: Path, text: str) -> str:
    p = write(tmp_path, text)
    with pytest.raises(ToolkitError) as e:
        debs.load_lock(p)
    return str(e.value)


def test_good_lock_loads_and_round_trips(tmp_path):
    lock = debs.load_lock(write(tmp_path, CUB_LOCK))
    (p,) = lock.packages
    assert (p.name, p.version, p.architecture, p.suite, p.sha256, p.size) == (
        "libcub-dev", "2.3.2-2", "all", "trixie", CUB_SHA, 290612,
    )  # fmt: skip
    assert p.spec == "libcub-dev:all=2.3.2-2" and p.filename == "libcub-dev_2.3.2-2_all.deb"
    (tmp_path / "again").mkdir()
    again = debs.load_lock(write(tmp_path / "again", debs.dump_lock(lock.packages, "written by a test")))
    assert again.packages == lock.packages and again.digest() == lock.digest()
    assert lock.total_size() == 290612


@pytest.mark.parametrize(
    ("old", "new", "key", "expect"),
    [
        (f'sha256 = "{CUB_SHA}"', f'sha256 = "{CUB_SHA[:-1]}"', "package.0.sha256", "64 lowercase hex"),
        (f'sha256 = "{CUB_SHA}"', f'sha256 = "{CUB_SHA.upper()}"', "package.0.sha256", "64 lowercase hex"),
        (f'sha256 = "{CUB_SHA}"\n', "", "package.0.sha256", "required key is missing"),
        ('suite = "trixie"', "suite = 13", "package.0.suite", "Debian suite name"),
        ('name = "libcub-dev"', 'name = "Lib Cub"', "package.0.name", "Debian package name"),
        ('version = "2.3.2-2"', 'version = "latest"', "package.0.version", "Debian version"),
        ("size = 290612", "size = 0", "package.0.size", "positive whole number"),
        ("size = 290612", 'mirror = "x"', "package.0.mirror", "unknown key"),
        ("version = 1", "version = 2", "version", "expected 1"),
    ],
)
def test_each_refusal_is_one_line_naming_file_and_key(tmp_path, old, new, key, expect):
    assert old in CUB_LOCK
    msg = refusal(tmp_path, CUB_LOCK.replace(old, new, 1))
    assert len(msg.splitlines()) == 1, msg
    assert msg.startswith(f"{tmp_path / 'lock.toml'}: {key}: ") and expect in msg, msg


def test_second_row_for_a_package_and_empty_and_broken_files_are_refused(tmp_path):
    msg = refusal(tmp_path, CUB_LOCK + CUB_LOCK.split("\n", 1)[1])
    assert "package.1.name: libcub-dev:all is already locked by package.0" in msg
    assert "package: expected one or more [[package]] tables" in refusal(tmp_path, "version = 1\n")
    assert "not valid TOML" in refusal(tmp_path, "[[package]\n")
    with pytest.raises(ToolkitError, match="debs lock file is missing"):
        debs.load_lock(tmp_path / "nope.toml")


def test_digest_changes_with_any_pin_and_not_with_size(tmp_path):
    base = debs.load_lock(write(tmp_path, CUB_LOCK)).digest()
    for old, new in ((CUB_SHA[:8], "00000000"), ("2.3.2-2", "2.3.2-3"), ('"trixie"', '"forky"'), ('"all"', '"amd64"')):
        d = tmp_path / old.strip('"')
        d.mkdir()
        assert debs.load_lock(write(d, CUB_LOCK.replace(old, new))).digest() != base, old
    d = tmp_path / "size"
    d.mkdir()
    assert debs.load_lock(write(d, CUB_LOCK.replace("290612", "1"))).digest() == base


def test_epoch_is_quoted_in_apt_file_names():
    p = debs.DebPackage(name="libfoo1", version="1:2.0-1", architecture="amd64", suite="trixie", sha256=CUB_SHA)
    assert p.filename == "libfoo1_1%3a2.0-1_amd64.deb" and p.spec == "libfoo1:amd64=1:2.0-1"


SOURCES = [("http://mirror.example/debian/", "bookworm"), ("http://mirror.example/debian/", "bookworm-updates"),
           ("http://mirror.example/debian-security/", "bookworm-security")]  # fmt: skip


def test_debian_archive_is_the_entry_of_the_hosts_own_suite():
    assert debs.debian_archive(SOURCES, "bookworm") == "http://mirror.example/debian/"
    with pytest.raises(ToolkitError, match=r"no deb entry for this host's Debian suite 'trixie' .*bookworm-security"):
        debs.debian_archive(SOURCES, "trixie")


def test_known_suite_uses_the_machines_apt_and_another_a_private_config(tmp_path, monkeypatch):
    monkeypatch.setenv("BUNDLEGRAPH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(debs, "_os_release", lambda: {"ID": "debian", "VERSION_CODENAME": "bookworm"})
    known = debs.apt_for("bookworm-updates", SOURCES)
    assert known.root is None and known.argv("download", "x") == ["apt-get", "download", "x"]
    apt = debs.apt_for("trixie", SOURCES)
    assert apt.root is not None and apt.root.parent == tmp_path / "cache" / "apt"
    src = (apt.root / "sources.list").read_text()
    assert "deb http://mirror.example/debian/ trixie main contrib non-free\n" in src
    opts = dict(o.split("=", 1) for o in apt.options[1::2])
    assert opts["Dir::Etc::SourceParts"] == "-" and opts["Dir::State::Status"] == str(apt.root / "status")
    assert (apt.root / "status").read_bytes() == b"" and (apt.root / "lists" / "partial").is_dir()
    assert debs.apt_for("trixie", SOURCES) == apt  # stable: the lists are reused


def test_a_host_that_is_not_debian_cannot_fetch_another_suite(monkeypatch, tmp_path):
    monkeypatch.setenv("BUNDLEGRAPH_CACHE", str(tmp_path))
    monkeypatch.setattr(debs, "_os_release", lambda: {"ID": "ubuntu", "VERSION_CODENAME": "noble"})
    with pytest.raises(
        ToolkitError, match=r"suite 'trixie' is not in this host's apt sources and this host is not Debian"
    ):
        debs.apt_for("trixie", SOURCES)
