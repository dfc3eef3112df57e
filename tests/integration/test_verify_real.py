"""verify on real files: the npm ARM64 llama.cpp DLLs, the npm x64 ggml-cuda.dll (145 MB; the
139 MB package downloads once and is cached), NVIDIA's signed win_arm64 cudart64_13.dll, and
tiny DLLs / shared objects built here with clang+lld-link, gcc and nvcc. Each bad input must
fail with its own specific line naming the file. ``network`` tests need the pinned npm/pip inputs
(fetched once with the ordinary clients, then cached; they skip when the registry is
unreachable)."""

from __future__ import annotations

import shutil
import tarfile
import zipfile
from pathlib import Path

import binkit
import pytest

from bundlegraph import cli
from bundlegraph.checks.fatbin import Inventory
from bundlegraph.pipeline.verify import VerifyPolicy, verify_path

VC = ("MSVCP140.dll", "VCRUNTIME140.dll", "VCRUNTIME140_1.dll")
ARM64_REQUIRED = ("ggml-base.dll", "ggml-cpu.dll", "ggml.v0.4.0.dll", "llama.v0.4.0.dll", "llama-addon.node")
ARM64 = VerifyPolicy(os="windows", arch="arm64", external=(*VC, "cudart64_13.dll"), required=ARM64_REQUIRED)


def _unpacked(name: str) -> Path:
    from conftest import require_input

    return require_input(name, unpack=True)


@pytest.fixture(scope="session")
def arm64_set() -> Path:
    return _unpacked("npm-win-arm64") / "package" / "bins" / "win-arm64"


@pytest.fixture(scope="session")
def x64_cuda_dll() -> Path:
    return _unpacked("npm-win-x64-cuda") / "package" / "bins" / "win-x64-cuda" / "ggml-cuda.dll"


@pytest.fixture(scope="session")
def cudart_arm64() -> Path:
    return _unpacked("cudart-win-arm64") / "nvidia" / "cu13" / "bin" / "arm64" / "cudart64_13.dll"


@pytest.fixture(scope="session")
def kit(tmp_path_factory) -> Path:
    """Tiny real ARM64/x64 DLLs, built once per session."""
    d = tmp_path_factory.mktemp("pekit")
    a = "arm64"
    binkit.build_dll(
        binkit.Dll("prov.dll", a, exports=("bg_add", "bg_mul"), forwards=(("bg_tick", "kernel32.GetTickCount"),)), d
    )
    binkit.build_dll(
        binkit.Dll(
            "user.dll", a, imports=(("prov.dll", ("bg_add", "bg_tick", "#1")), ("KERNEL32.dll", ("GetTickCount",)))
        ),
        d,
    )
    binkit.build_dll(binkit.Dll("omp-user.dll", a, imports=(("libomp140.aarch64.dll", ("__kmpc_fork_call",)),)), d)
    binkit.build_dll(
        binkit.Dll(
            "delay-user.dll",
            a,
            imports=(("libomp140.aarch64.dll", ("__kmpc_fork_call",)),),
            delay=("libomp140.aarch64.dll",),
        ),
        d,
    )
    binkit.build_dll(binkit.Dll("libomp140.aarch64.dll", a, exports=("__kmpc_fork_call",)), d)
    binkit.build_dll(
        binkit.Dll(
            "ggml-cpu.dll", a, imports=(("libomp140.aarch64.dll", ("__kmpc_fork_call", "__kmpc_dispatch_deinit")),)
        ),
        d,
    )
    binkit.build_dll(binkit.Dll("cuda-user.dll", a, imports=(("nvcuda.dll", ("cuInit",)),)), d)
    (d / "x64").mkdir()
    binkit.build_dll(binkit.Dll("prov.dll", "x64", exports=("bg_add", "bg_mul")), d / "x64")
    return d


def bundle(tmp_path: Path, kit: Path, *names: str) -> Path:
    out = tmp_path / "bundle"
    out.mkdir(exist_ok=True)
    for n in names:
        shutil.copy2(kit / n, out / Path(n).name)
    return out


# ------------------------------------------------------------------ the real ARM64 set


def test_real_arm64_set_passes_with_runtimes_declared(arm64_set, capsys):
    r = verify_path(arm64_set, ARM64)
    assert r.failures == []
    pes = {p: f["machine"] for p, f in r.files.items() if f["format"] == "pe"}
    assert pes == dict.fromkeys(
        (
            "ggml-base.dll",
            "ggml-cpu.dll",
            "ggml.v0.4.0.dll",
            "llama-addon.node",
            "llama-common.dll",
            "llama.v0.4.0.dll",
        ),
        "arm64",
    )
    rc = cli.main(
        [
            "verify",
            str(arm64_set),
            "--os",
            "windows",
            "--arch",
            "arm64",
            "--runtime",
            *VC,
            "cudart64_13.dll",
            "--require",
            *ARM64_REQUIRED,
        ]
    )
    out = capsys.readouterr().out
    assert rc == 0 and out.strip().endswith("(directory; 6 PE, 0 ELF files): OK")


def test_vc_runtime_counts_only_when_declared(arm64_set, capsys):
    rc = cli.main(["verify", str(arm64_set), "--os", "windows", "--arch", "arm64"])
    lines = capsys.readouterr().out.splitlines()
    assert rc == 1
    assert (
        "ggml-base.dll: imports: MSVCP140.dll: the Visual C++ runtime, neither in the bundle nor declared as an "
        "external runtime (runtime.external / --runtime) [chain: ggml-cpu.dll -> ggml-base.dll -> MSVCP140.dll (unresolved)]"
    ) in lines
    assert len([l for l in lines if ": imports: " in l]) == 12  # 6 files x (MSVCP140, VCRUNTIME140)


def test_x64_ggml_cuda_dropped_into_arm64_set(arm64_set, x64_cuda_dll, tmp_path):
    b = binkit.copy_tree(arm64_set, tmp_path / "set")
    shutil.copy2(x64_cuda_dll, b / "ggml-cuda.dll")
    lines = verify_path(b, ARM64).lines()
    assert "ggml-cuda.dll: machine: PE machine is x64 (0x8664), the leg needs arm64 (0xAA64)" in lines
    assert any(l.startswith("ggml-cuda.dll: imports: cublas64_13.dll: missing") for l in lines)


def test_ggml_base_removed(arm64_set, tmp_path):
    b = binkit.copy_tree(arm64_set, tmp_path / "set")
    (b / "ggml-base.dll").unlink()
    lines = verify_path(b, ARM64).lines()
    missing = "ggml-base.dll: missing: not in the bundle, not a Windows DLL, not declared as an external runtime"
    assert f"ggml-cpu.dll: imports: {missing} [chain: ggml-cpu.dll -> ggml-base.dll (missing)]" in lines
    assert (
        f"llama.v0.4.0.dll: imports: {missing} [chain: llama-addon.node -> llama.v0.4.0.dll -> ggml-base.dll (missing)]"
        in lines
    )
    assert "ggml-base.dll: content: required file is missing from the bundle" in lines


def test_unmet_libomp_import_ordinary_and_delay_load(arm64_set, kit, tmp_path):
    b = binkit.copy_tree(arm64_set, tmp_path / "set")
    shutil.copy2(kit / "omp-user.dll", b)
    shutil.copy2(kit / "delay-user.dll", b)
    lines = verify_path(b, ARM64).lines()
    tail = "missing: not in the bundle, not a Windows DLL, not declared as an external runtime"
    assert lines == [
        f"delay-user.dll: imports: libomp140.aarch64.dll (delay-load): {tail} [chain: delay-user.dll -> libomp140.aarch64.dll (missing)]",
        f"omp-user.dll: imports: libomp140.aarch64.dll: {tail} [chain: omp-user.dll -> libomp140.aarch64.dll (missing)]",
    ]
    shutil.copy2(kit / "libomp140.aarch64.dll", b)
    assert verify_path(b, ARM64).lines() == []


def test_import_of_a_name_the_bundled_provider_lacks(kit, tmp_path):
    b = bundle(tmp_path, kit, "ggml-cpu.dll", "libomp140.aarch64.dll")
    assert verify_path(b, VerifyPolicy(os="windows", arch="arm64")).lines() == [
        "ggml-cpu.dll: symbols: imports 1 name(s) from libomp140.aarch64.dll that it does not export: __kmpc_dispatch_deinit"
    ]


def test_names_ordinals_and_forwarders_resolve(kit, tmp_path):
    b = bundle(tmp_path, kit, "prov.dll", "user.dll")
    assert verify_path(b, VerifyPolicy(os="windows", arch="arm64")).lines() == []
    shutil.copy2(kit / "x64" / "prov.dll", b / "prov.dll")  # x64 provider without the forwarder
    assert verify_path(b, VerifyPolicy(os="windows", arch="arm64")).lines() == [
        "prov.dll: machine: PE machine is x64 (0x8664), the leg needs arm64 (0xAA64)",
        "user.dll: symbols: imports 1 name(s) from prov.dll that it does not export: bg_tick",
    ]


def test_nvcuda_only_for_cuda_legs(kit, tmp_path):
    b = bundle(tmp_path, kit, "cuda-user.dll")
    assert verify_path(b, VerifyPolicy(os="windows", arch="arm64")).lines() == [
        "cuda-user.dll: imports: nvcuda.dll: the NVIDIA driver DLL, which only CUDA legs may import "
        "[chain: cuda-user.dll -> nvcuda.dll (unresolved)]"
    ]
    assert verify_path(b, VerifyPolicy(os="windows", arch="arm64", cuda=True)).lines() == []


def test_truncated_pe_and_text_named_dll(arm64_set, tmp_path):
    b = tmp_path / "b"
    b.mkdir()
    data = (arm64_set / "ggml-base.dll").read_bytes()
    (b / "ggml-base.dll").write_bytes(data[: len(data) // 2])
    (b / "notes.dll").write_text("this is a text file\n")
    lines = verify_path(b, VerifyPolicy(os="windows", arch="arm64")).lines()
    assert lines == [
        f"ggml-base.dll: parse: named like a Windows PE binary but truncated: section .rdata ends at byte "
        f"{_section_end(data, b'.rdata')}, the file has {len(data) // 2} bytes",
        "notes.dll: parse: named like a Windows PE binary but not a PE file: DOS header magic 'MZ' not found (20 bytes)",
    ]


def _section_end(data: bytes, name: bytes) -> int:
    import pefile

    pe = pefile.PE(data=data, fast_load=True)
    s = next(s for s in pe.sections if s.Name.rstrip(b"\0") == name)
    return s.PointerToRawData + s.SizeOfRawData


def test_archives_are_inspected_in_place(arm64_set, tmp_path):
    z = tmp_path / "app.zip"
    t = tmp_path / "app.tar.gz"
    with zipfile.ZipFile(z, "w", zipfile.ZIP_DEFLATED) as zf, tarfile.open(t, "w:gz") as tf:
        for p in sorted(arm64_set.iterdir()):
            zf.write(p, f"app/{p.name}")
            tf.add(p, f"app/{p.name}")
    for archive, kind in ((z, "zip"), (t, "tar")):
        r = verify_path(archive, ARM64)
        assert (r.kind, r.lines()) == (kind, [])
        assert r.files["app/ggml-cpu.dll"]["machine"] == "arm64"
    with zipfile.ZipFile(z, "a") as zf:
        zf.write(arm64_set / "ggml-base.dll", "../ggml-base.dll")
    assert verify_path(z, ARM64).lines() == [
        "app.zip: archive: entry '../ggml-base.dll' climbs out of the extraction root ('..')"
    ]


# ------------------------------------------------------------------ GPU code


def test_fatbin_command_lists_the_real_x64_backend(x64_cuda_dll, capsys):
    assert cli.main(["fatbin", str(x64_cuda_dll)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[-2:] == ["SASS: 86, 89, 120, 121", "PTX: 75, 80, 90"]
    assert out[0] == "ggml-cuda.dll: PE x64, 143 fatbin containers, 1001 entries (1001 compressed)"


def _archs(*forms: str) -> tuple:
    from bundlegraph.schemas.archs import parse_arch

    return tuple(parse_arch(a) for a in forms)


def test_real_x64_backend_against_promised_archs(x64_cuda_dll, tmp_path):
    b = tmp_path / "b"
    b.mkdir()
    shutil.copy2(x64_cuda_dll, b / "ggml-cuda.dll")
    ext = (*VC, "cublas64_13.dll", "ggml-base.dll")
    exact = ("75-virtual", "80-virtual", "86-real", "89-real", "90-virtual", "120a-real", "121a-real")
    r = verify_path(b, VerifyPolicy(os="windows", arch="x64", archs=_archs(*exact), cuda=True, external=ext))
    assert r.lines() == []
    assert r.bundle["fatbin"] == {"ggml-cuda.dll": "SASS 86,89,120,121; PTX 75,80,90"}
    found = "(promised 100,120,121; found SASS 86,89,120,121; PTX 75,80,90)"
    lines = verify_path(
        b, VerifyPolicy(os="windows", arch="x64", archs=_archs("100", "120", "121"), cuda=True, external=ext)
    ).lines()
    assert lines[:2] == [
        f"ggml-cuda.dll: gpu-code: missing SASS for sm_100 {found}",
        f"ggml-cuda.dll: gpu-code: unexpected SASS for sm_86 {found}",
    ]


@pytest.fixture(scope="session")
def sm90_so(tmp_path_factory) -> Path:
    """A real CUDA shared object for sm_90 only (nvcc, ~3 s), built once per session."""
    nvcc = Path("/usr/local/cuda/bin/nvcc")
    if not nvcc.exists():
        pytest.skip("this host has no CUDA toolkit at /usr/local/cuda")
    d = tmp_path_factory.mktemp("nvcc")
    (d / "k.cu").write_text(
        "__global__ void bg_scale(float *x, float s) { x[threadIdx.x] *= s; }\n"
        'extern "C" int bg_launch(float *x) { bg_scale<<<1, 32>>>(x, 2.0f); return (int)cudaGetLastError(); }\n'
    )
    binkit._run([nvcc, "-arch=sm_90", "-shared", "-Xcompiler", "-fPIC", "-o", d / "libggml-cuda.so", d / "k.cu"], d)
    return d / "libggml-cuda.so"


@pytest.mark.cuda
def test_linux_backend_without_promised_sm_121(sm90_so, tmp_path):
    b = tmp_path / "lib"
    b.mkdir()
    shutil.copy2(sm90_so, b / "libggml-cuda.so")
    linux = {"os": "linux", "arch": "x64", "cuda": True, "glibc_floor": "2.36", "glibcxx_floor": "3.4.30"}
    ok = verify_path(b, VerifyPolicy(archs=_archs("90"), **linux))
    assert ok.lines() == [] and ok.files["libggml-cuda.so"]["machine"] == "x64"
    assert ok.bundle["fatbin"] == {"libggml-cuda.so": "SASS 90; PTX 90"}
    assert verify_path(b, VerifyPolicy(archs=_archs("90", "121"), **linux)).lines() == [
        "libggml-cuda.so: gpu-code: missing SASS for sm_121 (promised 90,121; found SASS 90; PTX 90)"
    ]
    assert verify_path(b, VerifyPolicy(archs=_archs("90"), **{**linux, "arch": "arm64"})).lines() == [
        "libggml-cuda.so: machine: ELF e_machine is EM_X86_64 (x64), the leg needs EM_AARCH64 (arm64)"
    ]


def test_no_backend_in_a_cuda_bundle(kit, tmp_path):
    b = bundle(tmp_path, kit, "prov.dll")
    assert verify_path(b, VerifyPolicy(os="windows", arch="arm64", archs=_archs("120"), cuda=True)).lines() == [
        "ggml-cuda.dll: gpu-code: the leg promises CUDA archs 120 but the bundle has no ggml-cuda.dll"
    ]


def test_fatbin_inventory_type_is_json_ready():
    assert Inventory().to_json() == {
        "sass": {},
        "sass_archs": [],
        "ptx": {},
        "ptx_isa": {},
        "containers": 0,
        "compressed": 0,
    }


def test_fatbin_flags_tell_arch_specific_sass_from_plain(tmp_path):
    """nvcc's own objects: ``sm_100a`` SASS carries the arch-specific flag, ``sm_90`` and
    ``sm_100f`` do not (family-specific); supported SMs follow (100a -> 100 only, 90 -> 90)."""
    from bundlegraph.checks.bundle import mapped
    from bundlegraph.checks.inspect import inspect_file
    from bundlegraph.schemas.archs import supported_sms_of

    nvcc = Path("/usr/local/cuda/bin/nvcc")
    if not nvcc.exists():
        pytest.skip("this host has no CUDA toolkit at /usr/local/cuda")
    (tmp_path / "k.cu").write_text("__global__ void bg_k(float *x) { x[threadIdx.x] *= 2; }\n")
    so = tmp_path / "libggml-cuda.so"
    binkit._run(
        [
            nvcc,
            "-shared",
            "-Xcompiler",
            "-fPIC",
            "-gencode",
            "arch=compute_90,code=sm_90",
            "-gencode",
            "arch=compute_100a,code=sm_100a",
            "-gencode",
            "arch=compute_100f,code=sm_103f",
            "-o",
            so,
            tmp_path / "k.cu",
        ],
        tmp_path,
    )
    with mapped(so) as data:
        inv = inspect_file(so.name, data).fatbin
    assert inv is not None and inv.sass_archs() == ["90", "100a", "103f"], inv.sass_features
    assert supported_sms_of(inv.sass_archs(), (13, 0)) == [90, 100, 103]
    r = cli.main(["fatbin", "--json", str(so)])
    assert r == 0
