"""The code-object check on real AMD GPU code: shared libraries Debian 12's hipcc (5.2, clang 15)
compiles here from two small HIP sources for several gfx targets (no GPU is needed to compile;
the offload bundles are real), and two ROCm-built libraries Debian 13 ships (rocFFT 6.1.2,
SpFFT 1.1.1; fetched by name and sha256, never installed). Each bad input fails with one line
naming the file and the targets; and the Windows DLLs of a ROCm 7.2.1 build that hip-quant's sdist
carries (the ``.hip_fat`` section, gfx1200/gfx1201 too). About 10 s with a warm cache (the hipcc
compiles)."""

from __future__ import annotations

import shutil
import struct
import zlib
from pathlib import Path

import binkit
import pytest
from conftest import require_tools

from bundlegraph import cli
from bundlegraph.backends.hip.gfx import DEFAULT_FAMILIES, GFX_FAMILIES, expand
from bundlegraph.checks.offload import MAGIC, check_file, check_targets, inventory, locate, parse
from bundlegraph.core.proc import run

# builtins only, so no ROCm device library is needed (Debian 12's has none for gfx11)
KERNEL = """#include <hip/hip_runtime.h>
__global__ void {name}(float *x, float a) {{
  x[__builtin_amdgcn_workgroup_id_x() * 256 + __builtin_amdgcn_workitem_id_x()] *= a;
}}
extern "C" int run_{name}(float *x, int n) {{
  hipLaunchKernelGGL({name}, dim3((n + 255) / 256), dim3(256), 0, 0, x, 2.0f);
  return 0;
}}
"""
FULL = ("gfx1100", "gfx1101", "gfx1102", "gfx1103", "gfx90a:xnack-", "gfx908")
"""The first source's targets: the fork's gfx110X, gfx90a (one target id with a feature) and gfx908."""
PARTIAL = ("gfx1100", "gfx1101", "gfx90a", "gfx908")
"""The second source's: gfx1102 and gfx1103 left out, as a build that drops targets per file would."""

ROCFFT_TARGETS = {
    "gfx803", "gfx900", "gfx906", "gfx908", "gfx90a", "gfx1010", "gfx1011", "gfx1030", "gfx1100", "gfx1101", "gfx1102",
}  # fmt: skip
SPFFT_TARGETS = ROCFFT_TARGETS - {"gfx1011"}


def _hipcc(src: Path, out: Path, archs: tuple[str, ...], *extra: str) -> Path:
    argv = ["hipcc", *[f"--offload-arch={a}" for a in archs], "-nogpulib", "-fPIC", *extra, "-o", str(out), str(src)]
    run(argv, cwd=src.parent, capture=True, echo=False, what="hipcc")
    return out


@pytest.fixture(scope="module")
def hip(tmp_path_factory) -> dict[str, Path]:
    """``one``: a .so from one source for :data:`FULL`; ``two``: a .so linked from that source's
    object and a second one compiled for :data:`PARTIAL` (two offload bundles)."""
    require_tools("hipcc", "clang")
    d = tmp_path_factory.mktemp("hip")
    (d / "a.hip").write_text(KERNEL.format(name="scale"))
    (d / "b.hip").write_text(KERNEL.format(name="shift"))
    a = _hipcc(d / "a.hip", d / "a.o", FULL, "-c")
    b = _hipcc(d / "b.hip", d / "b.o", PARTIAL, "-c")
    one = d / "libone.so"
    two = d / "libtwo.so"
    run(["hipcc", "-shared", "-o", str(one), str(a)], cwd=d, capture=True, echo=False, what="hipcc")
    run(["hipcc", "-shared", "-o", str(two), str(a), str(b)], cwd=d, capture=True, echo=False, what="hipcc")
    return {"one": one, "two": two}


def _section(path: Path) -> bytes:
    """The ``.hip_fatbin`` section of an ELF file, as the linker wrote it."""
    raw = path.read_bytes()
    loc = locate(raw)
    assert loc is not None and raw[loc[0] :].startswith(MAGIC), path
    return raw[loc[0] : loc[0] + loc[1]]


def _inv(path: Path):
    inv = inventory(path.read_bytes())
    assert inv is not None, path
    return inv


def test_family_table_is_the_forks():
    assert DEFAULT_FAMILIES == ("gfx1151", "gfx1150", "gfx120X", "gfx110X", "gfx103X", "gfx90a", "gfx908")
    assert expand(["gfx120X"]) == ("gfx1200", "gfx1201")
    assert expand(["gfx110X"]) == ("gfx1100", "gfx1101", "gfx1102", "gfx1103")
    assert expand(["gfx103X", "gfx1030"]) == ("gfx1030", "gfx1031", "gfx1032", "gfx1034")
    assert sum(len(v) for v in GFX_FAMILIES.values()) == 14
    with pytest.raises(ValueError, match="'gfx11' is neither a gfx processor"):
        expand(["gfx11"])


def test_lists_every_target_of_a_real_hip_library(hip):
    inv = _inv(hip["one"])
    assert len(inv.bundles) == 1
    assert dict(inv.targets()) == {"gfx1100": 1, "gfx1101": 1, "gfx1102": 1, "gfx1103": 1, "gfx90a": 1, "gfx908": 1}
    assert "gfx90a:xnack-" in inv.target_ids()
    # every entry's AMDGPU ELF header names the processor its triple does
    assert all(o.mach == o.processor for o in inv.bundles[0])
    assert check_file("libone.so", hip["one"].read_bytes(), expand(["gfx110X", "gfx90a", "gfx908"])) == []


def test_refuses_a_missing_and_an_unexpected_target_one_line_each(hip):
    data = hip["one"].read_bytes()
    lines = [f.line() for f in check_file("lib/libggml-hip.so", data, expand(["gfx103X", "gfx110X", "gfx90a"]))]
    found = "found gfx1100,gfx1101,gfx1102,gfx1103,gfx908,gfx90a in 1 bundles"
    promised = "promised gfx1030,gfx1031,gfx1032,gfx1034,gfx1100,gfx1101,gfx1102,gfx1103,gfx90a"
    assert lines == [
        f"lib/libggml-hip.so: gpu-code: missing gfx1030 ({promised}; {found})",
        f"lib/libggml-hip.so: gpu-code: missing gfx1031 ({promised}; {found})",
        f"lib/libggml-hip.so: gpu-code: missing gfx1032 ({promised}; {found})",
        f"lib/libggml-hip.so: gpu-code: missing gfx1034 ({promised}; {found})",
        f"lib/libggml-hip.so: gpu-code: unexpected gfx908 ({promised}; {found})",
    ]


def test_a_target_only_some_translation_units_hold_is_refused(hip):
    inv = _inv(hip["two"])
    assert len(inv.bundles) == 2
    assert inv.targets()["gfx1102"] == 1 and inv.targets()["gfx1100"] == 2
    assert check_targets(inv, expand(["gfx110X", "gfx90a", "gfx908"])) == [
        "gfx1102 in only 1 of 2 bundles",
        "gfx1103 in only 1 of 2 bundles",
    ]
    assert check_targets(inv, ("gfx1100", "gfx1101", "gfx90a", "gfx908")) == [
        "unexpected gfx1102",
        "unexpected gfx1103",
    ]


def test_a_library_without_hip_code_and_a_cut_section_fail_with_one_line(hip, tmp_path):
    so = binkit.gcc_so(tmp_path / "libplain.so", "int f(void) { return 1; }")
    assert [f.line() for f in check_file("libplain.so", so.read_bytes(), ("gfx1100",))] == [
        "libplain.so: gpu-code: no HIP offload bundle (.hip_fatbin/.hip_fat), promised gfx1100"
    ]
    data = bytearray(hip["one"].read_bytes())
    start = data.find(MAGIC)
    struct.pack_into("<Q", data, start + len(MAGIC), 1000)  # 1000 entries: the header runs past the section
    (line,) = [f.line() for f in check_file("libone.so", bytes(data), ("gfx1100",))]
    assert line.startswith("libone.so: gpu-code: offload bundle at section offset 0x0: entry ")
    assert line.endswith("(promised gfx1100)")


def test_a_pe_dll_with_a_hip_fat_section(hip, tmp_path):
    """The bundle bytes hipcc wrote, in a real x64 DLL (clang + lld-link) in the section a Windows
    HIP build has: lld-link cuts ``.hip_fatbin`` to 8 bytes in an image, measured here."""
    inv = _inv(hip["one"])
    array = ",".join(str(b) for b in _section(hip["one"]))
    dll = binkit.build_dll(
        binkit.Dll(
            "ggml-hip.dll",
            "x64",
            extra_c=f'__attribute__((section(".hip_fatbin"), used)) const unsigned char bg_hip[] = {{{array}}};',
        ),
        tmp_path,
    )
    import pefile

    names = [s.Name.rstrip(b"\0") for s in pefile.PE(str(dll), fast_load=True).sections]
    assert b".hip_fat" in names
    got = _inv(dll)
    assert got.targets() == inv.targets() and got.target_ids() == inv.target_ids()
    assert check_file("ggml-hip.dll", dll.read_bytes(), expand(["gfx110X", "gfx90a", "gfx908"])) == []


def test_a_zlib_compressed_bundle_reads_as_the_bundle(hip):
    """``CCOB`` version 2 around a real bundle (zlib); the same targets come out."""
    bundle = _section(hip["one"])
    body = zlib.compress(bundle)
    ccob = b"CCOB" + struct.pack("<HHIIQ", 2, 0, 24 + len(body), len(bundle), 0) + body
    data = ccob + b"\0" * 13 + ccob
    inv = parse(data, 0, len(data))
    assert inv.compressed == 2 and len(inv.bundles) == 2
    assert dict(inv.targets()) == dict.fromkeys(("gfx1100", "gfx1101", "gfx1102", "gfx1103", "gfx90a", "gfx908"), 2)


def test_real_rocm_libraries_debian_ships(tmp_path):
    from debkit import require_deb

    lib = "usr/lib/x86_64-linux-gnu"
    rocfft = require_deb("librocfft0") / lib / "librocfft.so.0.1"
    spfft = require_deb("libspfft1") / lib / "libspfft.so.1.1.1"
    r, s = _inv(rocfft), _inv(spfft)
    assert (len(r.bundles), set(r.targets())) == (1, ROCFFT_TARGETS)
    assert (len(s.bundles), set(s.targets())) == (5, SPFFT_TARGETS)
    assert all(o.mach == o.processor for inv in (r, s) for b in inv.bundles for o in b)
    assert check_targets(s, tuple(sorted(SPFFT_TARGETS))) == []
    # promised the fork's gfx110X + gfx103X: what Debian's build lacks and holds besides, by name
    fails = [f.reason.split(" (")[0] for f in check_file("libspfft.so.1.1.1", spfft.read_bytes(), expand(["gfx110X"]))]
    assert fails == ["missing gfx1103"] + [f"unexpected {t}" for t in sorted(SPFFT_TARGETS - set(expand(["gfx110X"])))]


HIP_QUANT = ("gfx1100", "gfx1101", "gfx1102", "gfx1103", "gfx1200", "gfx1201", "gfx90a", "gfx942")


def test_real_windows_hip_dlls_pypi_ships(real_input):
    """hip-quant 2.2.4's sdist carries DLLs a Windows ROCm 7.2.1 build made: the ``.hip_fat``
    section (``.hip_fatbin`` cut to 8 bytes) is where clang puts the bundles on Windows too."""
    root = real_input("hip-quant-sdist", unpack=True) / "hip_quant-2.2.4.post215"
    dll, pyd = root / "hip_quantize.dll", root / "_C.cp312-win_amd64.pyd"
    d, p = _inv(dll), _inv(pyd)
    assert (len(d.bundles), len(p.bundles)) == (1, 32)
    assert d.target_ids() == p.target_ids() == sorted(HIP_QUANT)
    assert all(o.mach == o.processor for inv in (d, p) for b in inv.bundles for o in b)
    # the fork's gfx120X bundle holds exactly gfx1200 and gfx1201
    fails = check_file("hip_quantize.dll", dll.read_bytes(), expand(["gfx120X"]))
    assert [f.reason.split(" (")[0] for f in fails] == [
        f"unexpected {t}" for t in sorted(set(HIP_QUANT) - {"gfx1200", "gfx1201"})
    ]
    assert (
        check_file("_C.cp312-win_amd64.pyd", pyd.read_bytes(), expand(["gfx110X", "gfx120X", "gfx90a", "gfx942"])) == []
    )


def test_real_zstd_compressed_bundles_of_rocm_6_4_to_7_2(real_input):
    """bitsandbytes 0.50.2 ships one HIP library per ROCm release, each with two compressed bundles:
    ``CCOB`` version 2 (ROCm 6.4, 7.0) and version 3 (7.1 on), zstd."""
    root = real_input("bitsandbytes-linux-x64", unpack=True) / "bitsandbytes"
    versions = {}
    for rocm in ("64", "70", "71", "714", "72"):
        data = (root / f"libbitsandbytes_rocm{rocm}.so").read_bytes()
        start, _size = locate(data)
        versions[rocm] = struct.unpack_from("<HH", data, start + 4)
        inv = inventory(data)
        assert (len(inv.bundles), inv.compressed) == (2, 2), rocm
        assert all(o.mach == o.processor for b in inv.bundles for o in b), rocm
        # every fork family of the Linux legs is in each build, except gfx103X's gfx1031/1032/1034 before 7.1.4
        fork = expand(DEFAULT_FAMILIES)
        lacking = [t for t in fork if t not in inv.targets()]
        assert lacking == ([] if rocm == "714" else ["gfx1031", "gfx1032", "gfx1034"]), rocm
    assert versions == {"64": (2, 1), "70": (2, 1), "71": (3, 1), "714": (3, 1), "72": (3, 1)}


def test_cli(hip, tmp_path, capsys):
    so = shutil.copy(hip["two"], tmp_path / "libggml-hip.so")
    assert cli.main(["codeobjects", str(so)]) == 0
    out = capsys.readouterr().out
    assert "libggml-hip.so: 2 offload bundles (0 compressed)" in out
    assert "gfx: gfx1100, gfx1101, gfx1102, gfx1103, gfx908, gfx90a" in out
    assert cli.main(["codeobjects", str(so), "--expect", "gfx110X", "gfx90a", "gfx908"]) == 1
    out = capsys.readouterr().out
    assert "libggml-hip.so: gpu-code: gfx1102 in only 1 of 2 bundles (expected " in out
    assert cli.main(["codeobjects", str(hip["one"]), "--expect", "gfx110X;gfx90a,gfx908"]) == 0
    capsys.readouterr()
    assert cli.main(["codeobjects", str(so), "--expect", "gfx11"]) == 2
    assert "--expect: 'gfx11' is neither a gfx processor" in capsys.readouterr().err
