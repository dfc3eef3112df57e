"""verify: Authenticode (a test CA made with openssl, DLLs signed with osslsigncode, NVIDIA's
real signed cudart64_13.dll) and Linux ELF rules on shared objects built with gcc."""

from __future__ import annotations

import shutil
from pathlib import Path

import binkit
import pytest

from bundlegraph import cli
from bundlegraph.checks.bundle import mapped
from bundlegraph.checks.signatures import check_signature
from bundlegraph.pipeline.verify import VerifyPolicy, verify_path


@pytest.fixture(scope="session")
def signed(tmp_path_factory):
    """(directory with unsigned.dll, signed.dll, prov.dll signed; the test CA)."""
    d = tmp_path_factory.mktemp("signed")
    ca = binkit.make_ca(d / "ca")
    raw = binkit.build_dll(binkit.Dll("raw.dll", "arm64", exports=("bg_a", "bg_b")), d / "raw")
    binkit.sign(raw, d / "signed.dll", ca)
    shutil.copy2(raw, d / "unsigned.dll")
    return d, ca


def test_signature_outcomes_are_told_apart(signed, tmp_path):
    d, ca = signed
    roots = (str(ca.root_pem),)
    b = tmp_path / "b"
    b.mkdir()
    shutil.copy2(d / "signed.dll", b / "good.dll")
    shutil.copy2(d / "signed.dll", b / "tampered.dll")
    binkit.flip_code_byte(b / "tampered.dll")
    shutil.copy2(d / "unsigned.dll", b / "unsigned.dll")
    policy = VerifyPolicy(os="windows", arch="arm64", signing_required=True, trust_roots=roots)
    r = verify_path(b, policy)
    assert [(f.file, f.check, f.reason.split(":")[0]) for f in r.failures] == [
        ("tampered.dll", "signature", "tampered"),
        ("unsigned.dll", "signature", "unsigned"),
    ]
    assert r.failures[1].reason == "unsigned: no Authenticode signature (signing is required for this leg)"
    assert "does not match" in r.failures[0].reason
    assert r.files["good.dll"]["signature"] == "ok"
    # the same intact signature, without the test root: untrusted, not tampered
    lines = verify_path(b, VerifyPolicy(os="windows", arch="arm64", signing_required=True)).lines()
    assert lines[0].startswith(
        "good.dll: signature: untrusted: the signature is intact but its certificate chain is not trusted"
    )
    assert "bundlegraph test root" in lines[0]
    # signing not required: nothing is checked
    assert verify_path(b, VerifyPolicy(os="windows", arch="arm64")).lines() == []


def test_real_nvidia_signature(tmp_path, real_input):
    cudart = real_input("cudart-win-arm64", unpack=True) / "nvidia" / "cu13" / "bin" / "arm64" / "cudart64_13.dll"
    with mapped(cudart) as data:
        st = check_signature(data)
    assert st.status == "ok" and "NVIDIA" in st.signer
    b = tmp_path / "b"
    b.mkdir()
    shutil.copy2(cudart, b / "cudart64_13.dll")
    assert verify_path(b, VerifyPolicy(os="windows", arch="arm64", signing_required=True)).lines() == []
    binkit.flip_code_byte(b / "cudart64_13.dll")
    lines = verify_path(b, VerifyPolicy(os="windows", arch="arm64", signing_required=True)).lines()
    assert len(lines) == 1 and lines[0].startswith("cudart64_13.dll: signature: tampered: ")


def test_cli_signing_required_with_trust_root(signed, capsys, tmp_path):
    d, ca = signed
    b = tmp_path / "b"
    b.mkdir()
    shutil.copy2(d / "signed.dll", b / "signed.dll")
    args = ["verify", str(b), "--os", "windows", "--arch", "arm64", "--signing", "required"]
    assert cli.main([*args, "--trust-root", str(ca.root_pem)]) == 0
    assert cli.main(args) == 1
    assert capsys.readouterr().out.splitlines()[-2].startswith("signed.dll: signature: untrusted")


# ------------------------------------------------------------------ ELF (gcc)

PROV_V2 = "int bg_fn(int x) { return x + 1; }\n"
USER = "int bg_fn(int); int bg_use(int x) { return bg_fn(x) * 2; }\n"


@pytest.fixture(scope="session")
def elfkit(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("elfkit")
    (d / "v2.map").write_text("BG_2.0 { global: bg_fn; local: *; };\n")
    (d / "v1.map").write_text("BG_1.0 { global: bg_fn; local: *; };\n")
    (d / "v2").mkdir()
    (d / "v1").mkdir()
    binkit.gcc_so(d / "v2" / "libprov.so", PROV_V2, "-Wl,-soname,libprov.so", f"-Wl,--version-script={d / 'v2.map'}")
    binkit.gcc_so(d / "v1" / "libprov.so", PROV_V2, "-Wl,-soname,libprov.so", f"-Wl,--version-script={d / 'v1.map'}")
    binkit.gcc_so(d / "libuser.so", USER, "-Wl,-soname,libuser.so", f"-L{d / 'v2'}", "-lprov", "-Wl,-rpath,$ORIGIN")
    binkit.gcc_so(d / "libnorpath.so", USER, f"-L{d / 'v2'}", "-lprov")
    # a link-only stub without a soname, linked by path, and a build-directory RUNPATH
    binkit.gcc_so(d / "libcuda.so", "int cuInit(unsigned f) { return 0; }\n")
    binkit.gcc_so(
        d / "libbad.so",
        "int cuInit(unsigned); int bg_bad(void) { return cuInit(0); }\n",
        str(d / "libcuda.so"),
        f"-Wl,-rpath,{d}",
        "-Wl,--enable-new-dtags",
    )
    binkit.gcc_so(
        d / "libthreads.so",
        "#include <pthread.h>\nstatic void *f(void *a) { return a; }\n"
        "int bg_t(void) { pthread_t t; return pthread_create(&t, 0, f, 0); }\n",
        "-pthread",
    )
    return d


def test_elf_origin_closure_and_symbol_versions(elfkit, tmp_path):
    b = tmp_path / "lib"
    b.mkdir()
    shutil.copy2(elfkit / "v2" / "libprov.so", b)
    shutil.copy2(elfkit / "libuser.so", b)
    linux = VerifyPolicy(os="linux", arch="x64")
    assert verify_path(b, linux).lines() == []
    shutil.copy2(elfkit / "v1" / "libprov.so", b)  # an older provider: BG_1.0 only
    assert verify_path(b, linux).lines() == [
        "libuser.so: symbols: needs version BG_2.0 of libprov.so (symbol bg_fn), which libprov.so does not define (it defines BG_1.0)"
    ]
    shutil.copy2(elfkit / "libnorpath.so", b)
    assert (
        "libnorpath.so: imports: libprov.so: in the bundle at libprov.so but not reachable through an $ORIGIN "
        "RPATH/RUNPATH (has: none) [chain: libnorpath.so -> libprov.so (unresolved)]" in verify_path(b, linux).lines()
    )


def test_elf_path_in_dt_needed_and_build_dir_runpath(elfkit, tmp_path):
    b = tmp_path / "lib"
    b.mkdir()
    shutil.copy2(elfkit / "libbad.so", b)
    assert verify_path(b, VerifyPolicy(os="linux", arch="x64", cuda=True)).lines() == [
        f"libbad.so: elf-paths: RUNPATH entry '{elfkit}' is not relative to $ORIGIN (it would point into the build machine)",
        f"libbad.so: elf-paths: DT_NEEDED holds a path instead of a soname: '{elfkit / 'libcuda.so'}' (the linked library had no SONAME)",
    ]


def test_glibc_floor_reports_file_and_symbol(elfkit, tmp_path):
    b = tmp_path / "lib"
    b.mkdir()
    shutil.copy2(elfkit / "libthreads.so", b)
    assert verify_path(b, VerifyPolicy(os="linux", arch="x64", glibc_floor="2.36")).lines() == []
    lines = verify_path(b, VerifyPolicy(os="linux", arch="x64", glibc_floor="2.17")).lines()
    assert lines == [
        "libthreads.so: glibc: needs GLIBC_2.34 from libc.so.6 (symbol pthread_create), above the leg's floor GLIBC_2.17"
    ]


def test_windows_file_in_linux_bundle(elfkit, tmp_path):
    b = tmp_path / "mixed"
    b.mkdir()
    shutil.copy2(elfkit / "libuser.so", b)
    shutil.copy2(elfkit / "v2" / "libprov.so", b)
    binkit.build_dll(binkit.Dll("stray.dll", "x64"), b)
    shutil.rmtree(b / ".build-x64-stray.dll")
    assert verify_path(b, VerifyPolicy(os="linux", arch="x64")).lines() == [
        "stray.dll: machine: a Windows PE file (x64) in a Linux bundle"
    ]
