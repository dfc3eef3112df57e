"""The toolchains are data: one machine file per id (bundlegraph/toolchains/machines/<id>.toml),
checked against the tables of known values when it loads; the classes take everything from it."""

from __future__ import annotations

from pathlib import Path

import pytest

from bundlegraph.toolchains import get
from bundlegraph.toolchains.registry import MACHINES_DIR, TOOLCHAINS, ToolchainFileError, load_machine, load_machines


def test_every_toolchain_is_a_checked_machine_file():
    files = sorted(p.stem for p in MACHINES_DIR.glob("*.toml"))
    assert files == sorted(TOOLCHAINS) and len(files) == 10
    arm64_cuda = TOOLCHAINS["msvc-amd64_arm64-cuda"]
    assert (arm64_cuda.build_os, arm64_cuda.build_arch, arm64_cuda.target_os, arm64_cuda.target_arch) == (
        "windows",
        "x64",
        "windows",
        "arm64",
    )
    assert arm64_cuda.cross and arm64_cuda.cuda and arm64_cuda.redist_host == "windows-x86_64"
    cross = get("gcc-cross-linux-aarch64")
    # the pinned cross compiler's wrappers (issue 50), where toolkit:gcc-... installs them
    names = cross.names()  # type: ignore[attr-defined]
    c = cross.compiler  # type: ignore[attr-defined]
    assert names == {"c": c.wrapper("c").as_posix(), "cxx": c.wrapper("cxx").as_posix()}
    assert names["cxx"].endswith("/bin/aarch64-linux-gnu-g++") and c.task.startswith("toolkit:gcc-12.2.0-linux-arm64-")
    # every Linux GCC machine file pins its compiler and states the floors once
    for tid in ("gcc-linux-x86_64", "gcc-cross-linux-aarch64", "rocm-gcc-linux-x86_64"):
        assert TOOLCHAINS[tid].floors() == ("2.35", "3.4.30"), tid
    assert cross.system_processor == "aarch64" and get("msvc-x64").cl_rel == "bin/Hostx64/x64/cl.exe"  # type: ignore[attr-defined]
    # the ROCm legs' HIP compiler is a machine-file binary (relative to the TheRock prefix)
    assert TOOLCHAINS["rocm-gcc-linux-x86_64"].binary("hip") == "lib/llvm/bin/clang++"
    assert TOOLCHAINS["rocm-clang-windows-x64"].binary("hip") == "lib/llvm/bin/clang++.exe"
    # Apple clang on the macOS runners: no NVIDIA redist platform, Darwin for CMake
    mac = get("apple-clang-macos-arm64")
    assert (mac.info.build_os, mac.info.redist_host, mac.system_name) == ("macos", "", "Darwin")  # type: ignore[attr-defined]
    assert 'set( CMAKE_OSX_ARCHITECTURES "arm64" CACHE STRING "" )' in mac.render(
        "macos-arm64", None, {"c": "clang", "cxx": "clang++"}
    )


def _write(tmp_path: Path, text: str) -> Path:
    f = tmp_path / "my-toolchain.toml"
    f.write_text(text, encoding="utf-8")
    return f


def test_a_bad_machine_file_is_refused_naming_file_key_and_what_was_expected(tmp_path):
    good = (MACHINES_DIR / "gcc-cross-linux-aarch64.toml").read_text(encoding="utf-8")
    assert load_machine(_write(tmp_path, good)).id == "my-toolchain"
    bad = (
        good.replace('cpu = "arm64"', 'cpu = "aarch64"')
        .replace('cxx = "aarch64-linux-gnu-g++"', 'cxxx = "aarch64-linux-gnu-g++"')
        .replace('redist_host = "linux-x86_64"', 'redist_host = "linux-x64"')
        .replace('kind = "gcc"', 'kind = "gcc"\nflavour = 1')
    )
    f = _write(tmp_path, bad)
    with pytest.raises(ToolchainFileError) as e:
        load_machine(f)
    got = e.value.problems
    assert f"{f}: host_machine.cpu: 'aarch64' is not one of x64, arm64" in got
    assert f"{f}: binaries.cxx: required for kind 'gcc' (a program name or path)" in got
    assert f"{f}: binaries.cxxx: unknown for kind 'gcc'; known: c, cxx, cuda, glslc, hip" in got
    assert any(p.startswith(f"{f}: properties.redist_host: 'linux-x64' is not one of linux-x86_64") for p in got)
    assert any(p.startswith(f"{f}: flavour: unknown key") for p in got)
    assert "toolchain machine files" in str(e.value)
    with pytest.raises(ToolchainFileError, match="properties.vcvars_arch: required for kind 'msvc'"):
        load_machines(_machines(tmp_path, (MACHINES_DIR / "msvc-x64.toml").read_text().replace("vcvars_arch", "#")))


def _machines(tmp_path: Path, text: str) -> Path:
    d = tmp_path / "machines"
    d.mkdir()
    (d / "x.toml").write_text(text, encoding="utf-8")
    return d
