"""The Vulkan verify rows (:mod:`bundlegraph.backends.vulkan.verify`) and the closure's driver rule on
real files: ggml's Vulkan backend as npm ``@node-llama-cpp/linux-x64-vulkan`` and
``@node-llama-cpp/win-x64-vulkan`` 3.21.1 publish it (``libggml-vulkan.so`` 55 MB,
``ggml-vulkan.dll`` 55 MB, each beside its ``ggml-base``). A good one passes; each tampered one
(wrong machine, an import beyond the loader) fails with one line naming the file.

npm's Linux library carries ``RUNPATH $ORIGIN:/opt/vulkan-sdk/x86_64/lib:`` (its builder's SDK
path); the generic closure row refuses that, so the good Linux bundle is that file with its
RUNPATH cut to ``$ORIGIN`` (what ``patchelf --set-rpath '$ORIGIN'`` makes of it; the string is
shortened in place with NULs, no byte moves).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import npm_bins

from bundlegraph.verification import VerifyPolicy, verify_path

VC = ("MSVCP140.dll", "VCRUNTIME140.dll", "VCRUNTIME140_1.dll")
NPM_RUNPATH = b"$ORIGIN:/opt/vulkan-sdk/x86_64/lib:\x00"


@pytest.fixture(scope="module")
def linux_set() -> Path:
    return npm_bins("npm-linux-x64-vulkan", "linux-x64-vulkan")


@pytest.fixture(scope="module")
def win_set() -> Path:
    return npm_bins("npm-win-x64-vulkan", "win-x64-vulkan")


def _patch(path: Path, old: bytes, new: bytes) -> None:
    """Replace the one occurrence of ``old`` in ``path`` by ``new`` padded with NULs to the same
    length (a string table entry shortened in place)."""
    data = path.read_bytes()
    assert data.count(old) == 1, f"{path.name}: {old!r} occurs {data.count(old)} times"
    assert len(new) <= len(old)
    path.write_bytes(data.replace(old, new + b"\x00" * (len(old) - len(new))))


def _bundle(src: Path, dest: Path, *names: str) -> Path:
    dest.mkdir()
    for n in names:
        shutil.copyfile(src / n, dest / n)
    return dest


@pytest.fixture
def linux_bundle(linux_set, tmp_path) -> Path:
    d = _bundle(linux_set, tmp_path / "linux", "libggml-base.so", "libggml-vulkan.so")
    _patch(d / "libggml-vulkan.so", NPM_RUNPATH, b"$ORIGIN")
    return d


@pytest.fixture
def win_bundle(win_set, tmp_path) -> Path:
    return _bundle(win_set, tmp_path / "win", "ggml-base.dll", "ggml-vulkan.dll")


LINUX = VerifyPolicy(os="linux", arch="x64", backend="vulkan", required=("libggml-base.so",))
WINDOWS = VerifyPolicy(os="windows", arch="x64", backend="vulkan", external=VC, required=("ggml-base.dll",))


def test_the_real_linux_vulkan_backend_passes_and_needs_a_vulkan_leg(linux_bundle, linux_set, tmp_path):
    assert verify_path(linux_bundle, LINUX).lines() == []
    # the Vulkan rows ran: without the library the bundle fails, once
    (linux_bundle / "libggml-vulkan.so").unlink()
    assert verify_path(linux_bundle, LINUX).lines() == [
        "libggml-vulkan.so: vulkan-library: a Vulkan leg's bundle has no libggml-vulkan.so (ggml's Vulkan backend)"
    ]
    # as npm publishes it: the builder's SDK directory in RUNPATH
    npm = _bundle(linux_set, tmp_path / "npm", "libggml-base.so", "libggml-vulkan.so")
    assert verify_path(npm, LINUX).lines() == [
        "libggml-vulkan.so: elf-paths: RUNPATH entry '/opt/vulkan-sdk/x86_64/lib' is not relative to $ORIGIN "
        "(it would point into the build machine)"
    ]


def test_the_vulkan_loader_is_allowed_in_vulkan_legs_only(linux_bundle, win_bundle):
    want = {
        "linux": "libggml-vulkan.so: imports: libvulkan.so.1: the Vulkan loader library, which only Vulkan legs "
        "may need [chain: libggml-vulkan.so -> libvulkan.so.1 (unresolved)]",
        "windows": "ggml-vulkan.dll: imports: vulkan-1.dll: the Vulkan loader DLL, which only Vulkan legs may "
        "import [chain: ggml-vulkan.dll -> vulkan-1.dll (unresolved)]",
    }
    for b, p in ((linux_bundle, LINUX), (win_bundle, WINDOWS)):
        for other in ({"backend": "cpu"}, {"backend": None, "cuda": True}):
            q = VerifyPolicy(os=p.os, arch=p.arch, external=p.external, **other)
            assert verify_path(b, q).lines() == [want[p.os or ""]], (p.os, other)


def test_the_real_windows_vulkan_backend_passes(win_bundle):
    r = verify_path(win_bundle, WINDOWS)
    assert r.lines() == [] and r.files["ggml-vulkan.dll"]["machine"] == "x64"


def test_a_vulkan_library_of_the_wrong_machine_fails_once(linux_bundle, win_bundle):
    lib = linux_bundle / "libggml-vulkan.so"
    data = bytearray(lib.read_bytes())
    assert data[18:20] == (62).to_bytes(2, "little")  # e_machine EM_X86_64
    data[18:20] = (183).to_bytes(2, "little")  # EM_AARCH64
    lib.write_bytes(data)
    assert [(f.file, f.check) for f in verify_path(linux_bundle, LINUX).failures] == [("libggml-vulkan.so", "machine")]

    dll = win_bundle / "ggml-vulkan.dll"
    data = bytearray(dll.read_bytes())
    pe = int.from_bytes(data[0x3C:0x40], "little")
    assert data[pe + 4 : pe + 6] == (0x8664).to_bytes(2, "little")
    data[pe + 4 : pe + 6] = (0xAA64).to_bytes(2, "little")
    dll.write_bytes(data)
    lines = verify_path(win_bundle, WINDOWS).lines()
    assert len(lines) == 1 and lines[0].startswith("ggml-vulkan.dll: machine: "), lines
    assert "arm64" in lines[0] and "x64" in lines[0], lines


def test_an_import_beyond_the_loader_fails_once(linux_bundle, win_bundle):
    """The Vulkan library made to import a runtime the leg declares external (the CPU backend's
    libgomp.so.1, OpenCL.dll): the closure row lets a declared runtime through, the Vulkan row
    does not (one line); undeclared, the closure row refuses it instead (one line)."""
    _patch(linux_bundle / "libggml-vulkan.so", b"libgcc_s.so.1\x00", b"libgomp.so.1")
    declared = VerifyPolicy(**{**LINUX.__dict__, "external": ("libgomp.so.1",)})
    assert verify_path(linux_bundle, declared).lines() == [
        "libggml-vulkan.so: vulkan-loader: imports libgomp.so.1 from outside the bundle (declared external): the "
        "Vulkan backend may take only the Vulkan loader libvulkan.so.1 and the platform's own libraries from the host"
    ]
    assert verify_path(linux_bundle, LINUX).lines() == [
        "libggml-vulkan.so: imports: libgomp.so.1: GCC's OpenMP runtime, which counts only when the leg declares it "
        "(runtime.external / --runtime) [chain: libggml-vulkan.so -> libgomp.so.1 (unresolved)]"
    ]

    _patch(win_bundle / "ggml-vulkan.dll", b"MSVCP140.dll", b"OpenCL.dll")
    declared = VerifyPolicy(**{**WINDOWS.__dict__, "external": (*VC, "OpenCL.dll")})
    assert verify_path(win_bundle, declared).lines() == [
        "ggml-vulkan.dll: vulkan-loader: imports OpenCL.dll from outside the bundle (declared external): the "
        "Vulkan backend may take only the Vulkan loader vulkan-1.dll and the platform's own libraries from the host"
    ]
    lines = verify_path(win_bundle, WINDOWS).lines()
    assert len(lines) == 1 and lines[0].startswith("ggml-vulkan.dll: imports: OpenCL.dll: missing"), lines


def test_a_bundled_loader_fails_once(linux_bundle, linux_set):
    """A bundle that ships a file named as the loader (here npm's own libggml-base.so under
    that name, so the library's import of it resolves inside the bundle)."""
    shutil.copyfile(linux_set / "libggml-base.so", linux_bundle / "libvulkan.so.1")
    assert verify_path(linux_bundle, LINUX).lines() == [
        "libvulkan.so.1: vulkan-loader: the bundle ships the Vulkan loader: the host's must load (it finds the "
        "host's Vulkan drivers)"
    ]


def _info(bundle: Path, compiled_out: list[str]) -> None:
    """Write the bundle's info file with the configure record package puts in ``build.vulkan``."""
    import json

    doc = {"install_kind": "linux-vulkan", "build": {"vulkan": {"compiled_out": compiled_out}}}
    (bundle / "BUNDLE_INFO.json").write_text(json.dumps(doc), encoding="utf-8")


def test_a_shader_path_compiled_out_is_refused_unless_the_spec_waives_it_by_name(linux_bundle):
    """The real Vulkan backend with an info file (as ``package`` writes it): nothing compiled out
    passes; each extension glslc could not compile is one line naming it and the shader path lost;
    a waived one (``[vulkan] waive_compiled_out``) passes; without an info file nothing is said."""
    info = VerifyPolicy(**{**LINUX.__dict__, "info_file": "BUNDLE_INFO.json"})
    _info(linux_bundle, [])
    assert verify_path(linux_bundle, info).lines() == []
    _info(linux_bundle, ["GL_EXT_bfloat16", "GL_NV_cooperative_matrix2"])
    hint = "pin a glslc that can (the leg's Vulkan SDK) or waive it with a reason ([vulkan] waive_compiled_out)"
    assert verify_path(linux_bundle, info).lines() == [
        f"BUNDLE_INFO.json: vulkan-shaders: GL_EXT_bfloat16 compiled out: glslc could not compile it, so the bundle "
        f"lacks the bf16 shaders; {hint}",
        f"BUNDLE_INFO.json: vulkan-shaders: GL_NV_cooperative_matrix2 compiled out: glslc could not compile it, so "
        f"the bundle lacks NVIDIA's cooperative-matrix-2 (coopmat2) matmul and flash-attention shaders; {hint}",
    ]
    waived = VerifyPolicy(**{**info.__dict__, "vulkan_waived": (("GL_NV_cooperative_matrix2", "no driver of ours"),)})
    assert [line.split(":")[2].strip() for line in verify_path(linux_bundle, waived).lines()] == [
        "GL_EXT_bfloat16 compiled out"
    ]
    assert verify_path(linux_bundle, LINUX).lines() == []  # no info file read: nothing known, nothing said
