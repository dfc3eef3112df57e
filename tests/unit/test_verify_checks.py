"""Unit tests of the verify checks: no processes, no network. Fatbins are written with the
documented layout (struct.pack), PE/ELF facts are the typed records the readers produce."""

from __future__ import annotations

import io
import json
import struct
import tarfile
import zipfile
from pathlib import Path

import pytest

from bundlegraph.checks import Failure, NotParsable, claims_elf_library, claims_pe, closure, content, glibc, systemdlls
from bundlegraph.checks import fatbin as fb
from bundlegraph.checks.bundle import read_bundle
from bundlegraph.checks.elf import ELFInfo
from bundlegraph.checks.pe import PEImport, PEInfo, read_pe
from bundlegraph.core.errors import BundleGraphError, VerifyError
from bundlegraph.pipeline.verify import VerifyPolicy, policy_from_spec, verify_path
from bundlegraph.schemas.archs import parse_arch
from bundlegraph.specs.loader import load_matrix

ROOT = Path(__file__).resolve().parents[2]


# ---------------------------------------------------------------- fatbin


def entry(kind: int, sm: int, payload: bytes, hsize: int = 64, compressed: bool = True) -> bytes:
    padded = (len(payload) + 7) & ~7
    head = struct.pack(
        "<HHIQI4xHHI8xQ", kind, 0x0101, hsize, padded, len(payload), 1, 8, sm, 0x8041 if compressed else 0x41
    )
    head += b"\0" * (hsize - len(head))
    return head + payload + b"\0" * (padded - len(payload))


def container(*entries: bytes) -> bytes:
    body = b"".join(entries)
    return struct.pack("<IHHQ", fb.MAGIC, 1, 16, len(body)) + body


def test_fatbin_walks_containers_entries_and_padding():
    sec = b"".join(
        [
            container(entry(2, 86, b"x" * 13), entry(1, 75, b"ptx" * 5, hsize=80)),
            b"\0" * 8,  # padding between containers, as in the real ggml-cuda.dll
            container(entry(2, 120, b"y" * 9, hsize=104), entry(2, 86, b"z", compressed=False)),
        ]
    )
    data = b"HEAD" * 4 + sec + b"TAIL"
    inv = fb.parse(data, 16, len(sec))
    assert dict(inv.sass) == {86: 2, 120: 1}
    assert dict(inv.ptx) == {75: 1}
    assert inv.containers == 2 and inv.compressed == 3
    assert inv.summary() == "SASS 86,120; PTX 75"


def test_fatbin_rejects_garbage_and_overruns_with_offsets():
    good = container(entry(2, 90, b"a" * 8))
    with pytest.raises(NotParsable, match=rf"bytes at section offset 0x{len(good):x} are neither padding"):
        fb.parse(good + b"\x01garbage", 0, len(good) + 8)
    cut = good[:-8]
    with pytest.raises(NotParsable, match="container at section offset 0x0 runs past the section end"):
        fb.parse(cut, 0, len(cut))


def test_check_archs_maps_arch_specific_and_reports_missing_and_unexpected():
    inv = fb.Inventory()
    inv.sass.update({86: 1, 89: 1, 120: 1, 121: 1})
    inv.ptx.update({75: 1, 80: 1, 90: 1})
    promised = [
        parse_arch(a)
        for a in ("75-virtual", "80-virtual", "86-real", "89-real", "90-virtual", "120a-real", "121a-real")
    ]
    assert fb.check_archs(inv, promised) == []
    assert fb.check_archs(inv, [parse_arch("120a"), parse_arch("121"), parse_arch("100")]) == [
        "missing SASS for sm_100",
        "unexpected SASS for sm_86",
        "unexpected SASS for sm_89",
        "unexpected PTX for compute_75",
        "unexpected PTX for compute_80",
        "unexpected PTX for compute_90",
    ]
    only90 = fb.Inventory()
    only90.sass[90] = 2
    only90.ptx[90] = 1
    assert fb.check_archs(only90, [parse_arch("90"), parse_arch("121")]) == ["missing SASS for sm_121"]
    assert fb.check_archs(only90, [parse_arch("90-real")]) == ["unexpected PTX for compute_90"]


# ---------------------------------------------------------------- names, system DLLs


def test_binary_names():
    assert claims_pe("bin/GGML-CUDA.DLL") and claims_pe("llama-addon.node") and not claims_pe("llama-addon.lib")
    assert claims_elf_library("lib/libggml.so") and claims_elf_library("libcudart.so.13.0.96")
    assert not claims_elf_library("libfoo.so.txt") and not claims_elf_library("notes.so.bak")


def test_windows_dll_list_is_case_insensitive_and_excludes_redistributables():
    assert systemdlls.is_windows_dll("KERNEL32.dll") and systemdlls.is_windows_dll("api-ms-win-crt-heap-l1-1-0.dll")
    assert not systemdlls.is_windows_dll("MSVCP140.dll") and systemdlls.is_vc_runtime("VCOMP140.DLL")
    assert not systemdlls.is_windows_dll("nvcuda.dll") and not systemdlls.is_windows_dll("libomp140.aarch64.dll")
    assert systemdlls.host_process("llama-addon.node") == "node.exe" and systemdlls.host_process("a.dll") is None


def test_read_pe_refuses_non_pe_bytes():
    with pytest.raises(NotParsable, match="not a PE file: DOS header magic 'MZ' not found"):
        read_pe(b"this is a text file\n")


# ---------------------------------------------------------------- PE closure


def pe(imports=(), exports=(), ordinals=(), forwarders=None) -> PEInfo:
    return PEInfo(0xAA64, "arm64", tuple(imports), frozenset(exports), frozenset(ordinals), dict(forwarders or {}))


def test_pe_chain_names_the_path_from_the_top_level_file():
    files = {
        "llama.dll": pe([PEImport("GGML.dll", ("ggml_init",), ())]),
        "ggml.dll": pe(
            [PEImport("libiomp5md.dll", ("__kmpc_fork_call",), ()), PEImport("KERNEL32.dll", ("Sleep",), ())],
            exports=["ggml_init"],
        ),
    }
    out = closure.pe_closure(files, list(files))
    assert [f.line() for f in out] == [
        "ggml.dll: imports: libiomp5md.dll: missing: not in the bundle, not a Windows DLL, not declared as an "
        "external runtime [chain: llama.dll -> ggml.dll -> libiomp5md.dll (missing)]"
    ]


def test_pe_rules_driver_host_external_and_directory():
    files = {
        "bin/ggml-cuda.dll": pe(
            [PEImport("nvcuda.dll", ("cuInit",), ()), PEImport("CUBLAS64_13.DLL", ("cublasCreate_v2",), ())]
        ),
        "bin/addon.node": pe([PEImport("NODE.EXE", ("napi_create_object",), (), delay=True)]),
        "bin/user.dll": pe([PEImport("helper.dll", ("h",), ())]),
        "lib/helper.dll": pe(exports=["h"]),
    }
    names = list(files)
    lines = [f.line() for f in closure.pe_closure(files, names, external=["cublas64_13.dll"])]
    assert (
        "bin/ggml-cuda.dll: imports: nvcuda.dll: the NVIDIA driver DLL, which only CUDA legs may import "
        "[chain: ggml-cuda.dll -> nvcuda.dll (unresolved)]" in lines
    )
    assert any(
        l.startswith("bin/user.dll: imports: helper.dll: in the bundle at lib/helper.dll but not beside the importer")
        for l in lines
    )
    assert len(lines) == 2  # node.exe for a .node addon and the declared cublas are fine
    assert [
        f.line()
        for f in closure.pe_closure(files, names + ["bin/helper.dll"], external=["cublas64_13.dll"], driver_of="cuda")
    ] == []


def test_pe_symbols_by_name_ordinal_and_forwarder():
    files = {
        "ggml-cpu.dll": pe(
            [
                PEImport("libomp140.aarch64.dll", ("__kmpc_fork_call", "__kmpc_dispatch_deinit"), (7, 9)),
                PEImport("prov.dll", ("fwd_ok", "fwd_bad"), ()),
            ]
        ),
        "libomp140.aarch64.dll": pe(exports=["__kmpc_fork_call"], ordinals=[1, 7]),
        "prov.dll": pe(
            exports=["fwd_ok", "fwd_bad", "k32"],
            forwarders={
                "fwd_ok": "libomp140.aarch64.__kmpc_fork_call",
                "fwd_bad": "libomp140.aarch64.gone",
                "k32": "kernel32.Sleep",
            },
        ),
    }
    lines = [f.line() for f in closure.pe_closure(files, list(files))]
    assert lines == [
        "ggml-cpu.dll: symbols: imports 2 name(s) from libomp140.aarch64.dll that it does not export: __kmpc_dispatch_deinit, #9",
        "ggml-cpu.dll: symbols: imports 1 name(s) from prov.dll that it does not export: fwd_bad (forwarded to libomp140.aarch64.gone)",
    ]


# ---------------------------------------------------------------- ELF closure and glibc


def elf(needed=(), runpath=(), rpath=(), verneed=None, verdef=(), symbols=None, soname=None) -> ELFInfo:
    return ELFInfo(
        "EM_AARCH64",
        "arm64",
        "ET_DYN",
        soname,
        tuple(needed),
        tuple(rpath),
        tuple(runpath),
        {k: frozenset(v) for k, v in (verneed or {}).items()},
        dict(symbols or {}),
        frozenset(verdef),
    )


def test_elf_origin_resolution_paths_and_versions():
    files = {
        "bin/llama-server": elf(["libllama.so", "libc.so.6", "libgomp.so.1"], runpath=["$ORIGIN/../lib"]),
        "lib/libllama.so": elf(
            ["libggml.so", "libcuda.so.1"],
            runpath=["$ORIGIN"],
            verneed={"libggml.so": ["GGML_2"]},
            symbols={("libggml.so", "GGML_2"): "ggml_new"},
        ),
        "lib/libggml.so": elf(
            ["/opt/cuda/targets/sbsa-linux/lib/stubs/libcuda.so"], runpath=["/home/ci/build/bin"], verdef=["GGML_1"]
        ),
        "lib/libnorpath.so": elf(["libggml.so"]),
    }
    lines = [f.line() for f in closure.elf_closure(files, list(files))]
    assert lines == [
        "lib/libggml.so: elf-paths: RUNPATH entry '/home/ci/build/bin' is not relative to $ORIGIN (it would point into the build machine)",
        "lib/libggml.so: elf-paths: DT_NEEDED holds a path instead of a soname: '/opt/cuda/targets/sbsa-linux/lib/stubs/libcuda.so' (the linked library had no SONAME)",
        "bin/llama-server: imports: libgomp.so.1: GCC's OpenMP runtime, which counts only when the leg declares it (runtime.external / --runtime) [chain: llama-server -> libgomp.so.1 (unresolved)]",
        "lib/libllama.so: imports: libcuda.so.1: the NVIDIA driver library, which only CUDA legs may need [chain: llama-server -> libllama.so -> libcuda.so.1 (unresolved)]",
        "lib/libllama.so: symbols: needs version GGML_2 of libggml.so (symbol ggml_new), which lib/libggml.so does not define (it defines GGML_1)",
        "lib/libnorpath.so: imports: libggml.so: in the bundle at lib/libggml.so but not reachable through an $ORIGIN RPATH/RUNPATH (has: none) [chain: libnorpath.so -> libggml.so (unresolved)]",
    ]
    declared = closure.elf_closure(files, list(files), external=["libgomp.so.1"], driver_of="cuda")
    assert not any("libgomp" in f.reason or "libcuda.so.1:" in f.reason for f in declared)


def test_glibc_floor_names_file_version_and_symbol():
    files = {
        "lib/libggml-cpu.so": elf(
            verneed={
                "libc.so.6": ["GLIBC_2.17", "GLIBC_2.38", "GLIBC_PRIVATE"],
                "libstdc++.so.6": ["GLIBCXX_3.4.32", "CXXABI_1.3"],
            },
            symbols={
                ("libc.so.6", "GLIBC_2.38"): "__isoc23_strtol",
                ("libstdc++.so.6", "GLIBCXX_3.4.32"): "_ZSt21ios_base_library_initv",
            },
        )
    }
    fails, top = glibc.check_floors(files, glibc="2.36", glibcxx="3.4.30")
    assert [f.line() for f in fails] == [
        "lib/libggml-cpu.so: glibc: needs GLIBC_2.38 from libc.so.6 (symbol __isoc23_strtol), above the leg's floor GLIBC_2.36",
        "lib/libggml-cpu.so: glibc: needs GLIBCXX_3.4.32 from libstdc++.so.6 (symbol _ZSt21ios_base_library_initv), above the leg's floor GLIBCXX_3.4.30",
    ]
    assert top["GLIBC"]["version"] == "2.38"
    assert glibc.check_floors(files, glibc="2.38", glibcxx="3.4.32")[0] == []


# ---------------------------------------------------------------- content


def test_required_files_and_info_json():
    names = ["bin/GGML-BASE.dll", "bin/llama-server.exe"]
    assert content.missing_required(names, ["ggml-base.dll", "llama-server.exe"], fold=True) == []
    assert content.missing_required(names, ["ggml-cpu.dll"], fold=True) == [
        Failure("ggml-cpu.dll", "content", "required file is missing from the bundle")
    ]
    expect = {"install_kind": "windows-arm64-cuda", "profile": "cuda13-portable", "archs": ("120", "121")}
    good = json.dumps(
        {"install_kind": "windows-arm64-cuda", "profile": {"name": "cuda13-portable"}, "archs": ["120a", "sm_121"]}
    ).encode()
    assert content.check_info("BUNDLE_INFO.json", good, expect) == []
    bad = json.dumps({"install_kind": "windows-arm64-cpu", "archs": ["120"]}).encode()
    assert [f.line() for f in content.check_info("BUNDLE_INFO.json", bad, expect)] == [
        "BUNDLE_INFO.json: content: info file key 'install_kind' is 'windows-arm64-cpu', the spec says 'windows-arm64-cuda'",
        "BUNDLE_INFO.json: content: info file has no key 'profile' (the spec says 'cuda13-portable')",
        "BUNDLE_INFO.json: content: info file key 'archs' is ['120'], the spec says ('120', '121')",
    ]
    assert "not valid JSON" in content.check_info("BUNDLE_INFO.json", b"{", expect)[0].reason


# ---------------------------------------------------------------- policy


def test_policy_validation_names_the_field():
    from bundlegraph.commands.verify import _archs

    with pytest.raises(BundleGraphError, match=r"--archs: 'sm120' is not a CUDA arch"):
        _archs(("sm120",))  # parsed once, at the CLI's edge
    assert [a.cmake for a in _archs(("120a", "86-real"))] == ["120a", "86-real"]
    with pytest.raises(BundleGraphError, match=r"verify policy: archs: '120' is not a parsed arch"):
        VerifyPolicy(archs=("120",))  # type: ignore[arg-type]
    with pytest.raises(BundleGraphError, match="verify policy: glibc_floor"):
        VerifyPolicy(glibc_floor="two")


def test_policy_from_real_specs():
    m = load_matrix(ROOT / "bundles")
    cuda, cpu = m.legs["windows-arm64-cuda13-portable"], m.legs["windows-arm64-cpu"]
    p = policy_from_spec(cuda, m.release, base=cpu)
    assert (p.os, p.arch, tuple(p.cmake_archs), p.cuda, p.signing_required) == (
        "windows",
        "arm64",
        ("120", "121"),
        True,
        True,
    )
    assert "ggml-base.dll" in p.required and "ggml-cuda.dll" in p.required and "MSVCP140.dll" in p.external
    assert dict(p.info_expect) == {
        "install_kind": "windows-arm64-cuda",
        "profile": "cuda13-portable",
        "archs": ("120", "121"),
    }
    assert p.info_file == m.release.info_file
    built = policy_from_spec(cuda, m.release, base=cpu, built_tree=True)
    assert built.required == ("ggml-cuda.dll",) and not built.signing_required and built.info_file is None
    assert "cudart64_13.dll" in built.external and "ggml-base.dll" in built.external
    lin = policy_from_spec(m.legs["linux-arm64-cuda13-portable"], m.release)
    # the floors come from the leg's toolchain (its machine file's [compiler]), Ubuntu 22.04's
    assert (lin.glibc_floor, lin.glibcxx_floor) == ("2.35", "3.4.30") and lin.backends[0] == "libggml-cuda.so"


# ---------------------------------------------------------------- archives (written in-process)


def test_zip_with_parent_entry_is_reported_not_extracted(tmp_path):
    z = tmp_path / "app.zip"
    with zipfile.ZipFile(z, "w") as zf:
        zf.writestr("notes.txt", "hello")
        zf.writestr("../evil.dll", b"MZ")
    report = verify_path(z, VerifyPolicy(os="windows", arch="arm64"))
    assert report.lines() == ["app.zip: archive: entry '../evil.dll' climbs out of the extraction root ('..')"]
    assert not (tmp_path.parent / "evil.dll").exists()
    with pytest.raises(VerifyError, match="verify failed for .*app.zip: 1 problem"):
        report.raise_for_failures()


def test_tar_listing_links_and_outside_link(tmp_path):
    t = tmp_path / "app.tar.gz"
    with tarfile.open(t, "w:gz") as tf:
        data = b"not an elf"
        info = tarfile.TarInfo("app/readme.txt")
        info.size = len(data)
        tf.addfile(info, io.BytesIO(data))
        link = tarfile.TarInfo("app/libx.so")
        link.type, link.linkname = tarfile.SYMTYPE, "../../etc/libx.so"
        tf.addfile(link)
    bundle, files = read_bundle(t)
    assert [p for p, _ in files] == ["app/readme.txt"]
    assert bundle.kind == "tar" and bundle.names == ["app/readme.txt"]
    assert [f.line() for f in bundle.failures] == [
        "app.tar.gz: archive: link 'app/libx.so' -> '../../etc/libx.so' points outside the extraction root"
    ]


def test_report_json_shape(tmp_path):
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "fake.dll").write_text("text, not a DLL\n")
    r = verify_path(tmp_path / "b", VerifyPolicy(os="windows", arch="x64"))
    doc = json.loads(json.dumps(r.to_json(), default=list))
    assert doc["ok"] is False and doc["kind"] == "directory"
    assert doc["failures"] == [
        {
            "file": "fake.dll",
            "check": "parse",
            "reason": "named like a Windows PE binary but not a PE file: DOS header magic 'MZ' not found (16 bytes)",
        }
    ]
    assert doc["files"]["fake.dll"]["format"] == "pe"


# ---------------------------------------------------------------- graph stage


def test_verify_stage_plans_and_runs_on_the_built_tree(workdir):
    from bundlegraph.core import paths
    from bundlegraph.graph.context import Context, Filters
    from bundlegraph.pipeline import verify as vstage

    m = load_matrix(ROOT / "bundles")
    ctx = Context(m, ["windows-arm64-cuda13-portable", "linux-arm64-cpu"], Filters())
    plans = {p.full_name: p for p in vstage.plans(ctx)}
    p = plans["verify:windows-arm64-cuda13-portable"]
    assert p.deps == ["build:windows-arm64-cuda13-portable"] and p.leg == "windows-arm64-cuda13-portable"
    pol = p.key()["policy"]
    assert pol["archs"] == ["120", "121"] and pol["signing_required"] is False and "ggml-base.dll" in pol["external"]
    assert p.describe()["tree"].endswith("windows-arm64-cuda13-portable/cmake/bin")
    tree = paths.build_dir("windows-arm64-cuda13-portable") / "cmake" / "bin"
    with pytest.raises(BundleGraphError, match="does not exist; run build:windows-arm64-cuda13-portable"):
        p.apply(p.prepared())
    tree.mkdir(parents=True)
    (tree / "ggml-cuda.dll").write_text("not a DLL")
    with pytest.raises(VerifyError) as e:
        p.apply(p.prepared())
    assert e.value.failures == [
        "ggml-cuda.dll: parse: named like a Windows PE binary but not a PE file: DOS header magic 'MZ' not found (9 bytes)"
    ]
    report = json.loads((paths.build_dir("windows-arm64-cuda13-portable") / "verify.json").read_text())
    assert report["ok"] is False and report["failures"][0]["file"] == "ggml-cuda.dll"
