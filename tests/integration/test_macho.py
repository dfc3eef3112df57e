"""The Mach-O checks on real macOS llama.cpp binaries: npm's ``@node-llama-cpp/mac-arm64-metal``
and ``@node-llama-cpp/mac-x64`` 3.21.1 (the release of the Windows inputs), read through LIEF,
plus tampered copies (minimum OS raised, an ``@rpath`` dependency removed, the rpath made a build
machine's path, the signature stripped, the file cut), each refused with its own line naming the
file. About 3 s once the two packages (5 + 11 MB) are cached."""

from __future__ import annotations

import shutil
import struct
import tarfile
from pathlib import Path

import pytest
from conftest import npm_bins

from bundlegraph import cli
from bundlegraph.checks.bundle import read_bundle
from bundlegraph.checks.macho import check_bundle, closure, parse_version, read_macho

FLOOR_14 = (14, 0, 0)
FORK_FLOOR = (13, 3, 0)
"""The fork's ``CMAKE_OSX_DEPLOYMENT_TARGET``."""
LC_BUILD_VERSION = 0x32
LC_RPATH = 0x8000001C


@pytest.fixture(scope="module")
def arm64() -> Path:
    return npm_bins("npm-mac-arm64-metal", "mac-arm64-metal")


@pytest.fixture(scope="module")
def x64() -> Path:
    return npm_bins("npm-mac-x64", "mac-x64")


def _files(d: Path) -> list[tuple[str, bytes]]:
    return [(p.name, p.read_bytes()) for p in sorted(d.iterdir()) if p.is_file()]


def _lines(d: Path, **kw) -> list[str]:
    return [f.line() for f in check_bundle(_files(d), **kw)[1]]


def _copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


def _commands(data: bytes):
    """``(offset, cmd, cmdsize)`` of each load command of a thin 64-bit Mach-O (Apple
    ``<mach-o/loader.h>``: ``mach_header_64`` is 32 bytes, ``ncmds`` at byte 16)."""
    (ncmds,) = struct.unpack_from("<I", data, 16)
    pos = 32
    for _ in range(ncmds):
        cmd, size = struct.unpack_from("<II", data, pos)
        yield pos, cmd, size
        pos += size


def _set_minos(path: Path, major: int, minor: int = 0) -> None:
    data = bytearray(path.read_bytes())
    (at,) = [pos for pos, cmd, _ in _commands(data) if cmd == LC_BUILD_VERSION]
    struct.pack_into("<I", data, at + 12, major << 16 | minor << 8)  # build_version_command.minos: xxxx.yy.zz
    path.write_bytes(bytes(data))


def test_real_arm64_metal_bundle(arm64):
    infos, fails = check_bundle(_files(arm64), arch="arm64", minos_floor=FLOOR_14)
    assert fails == []
    assert len(infos) == 10
    common = infos["libllama-common.dylib"].slices[0]
    assert (common.arch, common.filetype, common.install_name) == ("arm64", "DYLIB", "@rpath/libllama-common.dylib")
    assert common.rpaths == ("@loader_path",)
    assert ("@rpath/libllama.metal.v0.4.0.dylib", False) in common.dylibs
    assert ("/usr/lib/libc++.1.dylib", False) in common.dylibs
    assert (common.minos, common.minos_from, common.sdk) == ((14, 0, 0), "LC_BUILD_VERSION", (26, 5, 0))
    metal = infos["libggml-metal.so"].slices[0]
    assert metal.filetype == "BUNDLE"
    assert ("/System/Library/Frameworks/Metal.framework/Versions/A/Metal", False) in metal.dylibs
    # every arm64 file is signed ad hoc by the linker, with its file name as identifier
    for name, info in infos.items():
        sig = info.slices[0].signature
        assert sig is not None and sig.kind == "linker-signed" and sig.identifier == name, name
        assert not sig.developer_id


def test_real_x64_bundle_is_unsigned_and_not_arm64(x64):
    infos, fails = check_bundle(_files(x64), arch="x64", minos_floor=FLOOR_14)
    assert fails == [] and len(infos) == 20
    assert all(i.slices[0].signature is None and i.archs == ("x64",) for i in infos.values())
    lines = _lines(x64, arch="arm64")
    assert len(lines) == 20
    assert "libggml-base.dylib: machine: Mach-O holds x64, the leg needs arm64" in lines


def test_the_forks_floor_refuses_npms_macos_14_binaries(arm64):
    """npm's build targets macOS 14; the fork promises 13.3: each file is refused, one line each."""
    lines = _lines(arm64, arch="arm64", minos_floor=FORK_FLOOR)
    assert len(lines) == 10
    assert lines[0] == (
        "libggml-base.dylib: minos: minimum macOS 14.0 (LC_BUILD_VERSION) is above the floor 13.3: "
        "it does not load on macOS 13.3"
    )


def test_a_raised_minos_is_refused(arm64, tmp_path):
    d = _copy(arm64, tmp_path / "b")
    _set_minos(d / "libllama.metal.v0.4.0.dylib", 26)
    assert _lines(d, arch="arm64", minos_floor=FLOOR_14) == [
        "libllama.metal.v0.4.0.dylib: minos: minimum macOS 26.0 (LC_BUILD_VERSION) is above the floor 14.0: "
        "it does not load on macOS 14.0"
    ]
    assert parse_version("26") == (26, 0, 0)


def test_a_removed_rpath_dependency_is_refused(arm64, tmp_path):
    d = _copy(arm64, tmp_path / "b")
    (d / "libllama-common.dylib").unlink()
    assert _lines(d, arch="arm64", minos_floor=FLOOR_14) == [
        "llama-addon.node: imports: loads @rpath/libllama-common.dylib, not in the bundle "
        "(looked for libllama-common.dylib)"
    ]


def test_an_rpath_of_the_build_machine_is_refused(x64, tmp_path):
    d = _copy(x64, tmp_path / "b")
    p = d / "libllama.v0.4.0.dylib"
    data = bytearray(p.read_bytes())
    (at,) = [pos for pos, cmd, _ in _commands(data) if cmd == LC_RPATH]
    (name_off,) = struct.unpack_from("<I", data, at + 8)
    assert data[at + name_off : at + name_off + 12] == b"@loader_path"
    data[at + name_off : at + name_off + 12] = b"/Users/ci/b0"  # same length: no command moves
    p.write_bytes(bytes(data))
    lines = _lines(d, arch="x64", minos_floor=FLOOR_14)
    assert lines[0] == "libllama.v0.4.0.dylib: host-path: LC_RPATH /Users/ci/b0 is a build machine's path"
    assert lines[1:] == [
        "libllama.v0.4.0.dylib: imports: loads @rpath/libggml.v0.4.0.dylib, which is neither in the bundle "
        "nor a system library (/usr/lib/, /System/Library/)",
        "libllama.v0.4.0.dylib: imports: loads @rpath/libggml-base.dylib, which is neither in the bundle "
        "nor a system library (/usr/lib/, /System/Library/)",
    ]


def test_signatures(arm64, x64, tmp_path):
    import lief

    d = _copy(arm64, tmp_path / "b")
    b = lief.MachO.parse(str(d / "libggml-base.dylib")).at(0)
    b.remove_signature()
    (d / "libggml-base.dylib").write_bytes(bytes(b.write_to_bytes()))
    assert _lines(d, arch="arm64") == [
        "libggml-base.dylib: signature: no LC_CODE_SIGNATURE: Apple Silicon runs no unsigned arm64 code"
    ]
    lines = _lines(arm64, developer_id=True)
    assert len(lines) == 10
    assert lines[0] == (
        "libggml-base.dylib: signature: signed ad hoc (linker-signed), a Developer ID Application certificate "
        "is required"
    )
    assert "llama-addon.node: signature: no LC_CODE_SIGNATURE: a Developer ID is required" in _lines(
        x64, developer_id=True
    )


def test_a_cut_file_and_a_universal_file(arm64, x64, tmp_path):
    data = (arm64 / "libggml-base.dylib").read_bytes()
    assert [f.line() for f in check_bundle([("libggml-base.dylib", data[:4096])])[1]] == [
        f"libggml-base.dylib: parse: named like a Mach-O library but truncated: segment __TEXT ends at byte "
        f"{_segment_end(data, b'__TEXT')}, the file has 4096 bytes"
    ]
    # a universal file of the two real slices (fat_header + fat_arch per <mach-o/fat.h>, big-endian)
    a, x = data, (x64 / "libggml-base.dylib").read_bytes()
    off_x, off_a = 0x4000, 0x4000 + ((len(x) + 0x3FFF) & ~0x3FFF)
    fat = bytearray(off_a + len(a))
    struct.pack_into(">II", fat, 0, 0xCAFEBABE, 2)
    struct.pack_into(">iiIII", fat, 8, 0x01000007, 3, off_x, len(x), 14)  # CPU_TYPE_X86_64, ALL
    struct.pack_into(">iiIII", fat, 28, 0x0100000C, 0, off_a, len(a), 14)  # CPU_TYPE_ARM64, ALL
    fat[off_x : off_x + len(x)] = x
    fat[off_a:] = a
    info = read_macho(bytes(fat))
    assert info.fat and info.archs == ("x64", "arm64")
    assert info.slices[1].signature is not None and info.slices[0].signature is None
    assert closure({"libggml-base.dylib": info}) == []


def _segment_end(data: bytes, name: bytes) -> int:
    for pos, cmd, _ in _commands(data):
        if cmd == 0x19 and data[pos + 8 : pos + 24].rstrip(b"\0") == name:  # LC_SEGMENT_64: fileoff, filesize
            fileoff, filesize = struct.unpack_from("<QQ", data, pos + 40)
            return fileoff + filesize
    raise AssertionError(name)


def test_a_tar_gz_bundle_reads_the_same(arm64, tmp_path):
    """The release's macOS archive shape (``llama-<tag>-bin-macos-arm64.tar.gz``), read in place."""
    tgz = tmp_path / "llama-b1-bin-macos-arm64.tar.gz"
    with tarfile.open(tgz, "w:gz") as t:
        t.add(arm64, arcname="build/bin")
    _listing, files = read_bundle(tgz)
    infos, fails = check_bundle(((p, bytes(d)) for p, d in files), arch="arm64", minos_floor=FLOOR_14)
    assert fails == [] and len(infos) == 10 and "build/bin/libggml-metal.so" in infos


def test_cli(arm64, tmp_path, capsys):
    assert cli.main(["macho", str(arm64), "--arch", "arm64", "--minos", "14"]) == 0
    out = capsys.readouterr().out
    assert "libggml-metal.so: arm64 BUNDLE, minos 14.0, sdk 26.5, linker-signed" in out
    assert cli.main(["macho", str(arm64 / "libllama-common.dylib"), "--minos", "13.3"]) == 1
    assert capsys.readouterr().out.splitlines()[-1] == (
        "libllama-common.dylib: minos: minimum macOS 14.0 (LC_BUILD_VERSION) is above the floor 13.3: "
        "it does not load on macOS 13.3"
    )
    d = _copy(arm64, tmp_path / "b")
    (d / "libggml-base.dylib").unlink()
    assert cli.main(["macho", str(d)]) == 1
    assert (
        sum("loads @rpath/libggml-base.dylib, not in the bundle" in ln for ln in capsys.readouterr().out.splitlines())
        == 9
    )
    assert cli.main(["macho", str(arm64), "--minos", "13.x"]) == 2
    assert "--minos: '13.x' is not a macOS version" in capsys.readouterr().err
