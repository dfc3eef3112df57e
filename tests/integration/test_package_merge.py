"""merge + package on real files: node-llama-cpp's ARM64 DLL set as the Windows ARM64 base,
NVIDIA's win_arm64 cudart wheel as the shipped runtime, tiny aarch64 Linux builds compiled
here, and the real llama.cpp source tree for licenses and provenance."""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import subprocess
import tarfile
import zipfile
from pathlib import Path

import pytest
from bundlekit import (
    compile_cuda_backend,
    compile_linux,
    linux_cpu_tree,
    npm_bins,
    package,
    real_matrix,
    real_source,
    redist_root,
)

from bundlegraph.core.errors import BundleGraphError, VerifyError
from bundlegraph.pipeline.archivecheck import archive_verifier
from bundlegraph.pipeline.bundle.archive import member_names, read_member
from bundlegraph.pipeline.bundle.runtimes import pick_toolchain_runtime, resolve_shipped
from bundlegraph.pipeline.bundle.sign import SigningError
from bundlegraph.pipeline.merge import MergeError, backend_outputs, load_base, run_merge
from bundlegraph.schemas.manifest import BundleInfo

M = real_matrix()
REL = M.release


def sha(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def src(tmp_path_factory):
    return real_source(tmp_path_factory.mktemp("src"))


@pytest.fixture(autouse=True)
def _no_epoch(monkeypatch):
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)


def win_cpu_spec(**upd):
    """windows-arm64-cpu as specified, except what node-llama-cpp's set cannot hold
    (llama-server.exe etc.) and signing (tested separately)."""
    base = M.legs["windows-arm64-cpu"]
    return base.replace(**{"required": ["ggml-base.dll", "ggml-cpu.dll"], "signing": "optional", **upd})


def info_of(archive: Path) -> BundleInfo:
    return BundleInfo.model_validate_json(read_member(archive, REL.info_file))


def test_toolchain_runtime_is_the_newest_version_directory(tmp_path, real_input):
    bins = npm_bins(real_input)
    root = redist_root(tmp_path, bins)
    rf = pick_toolchain_runtime("libomp140.aarch64.dll", root)
    assert rf.info.version == "14.40.33807"  # not 14.9.1 (lexically last) nor 14.38 (first hit)
    assert rf.info.sha256 == sha(bins / "ggml-cpu.dll")
    assert rf.info.source.startswith("14.40.33807/debug_nonredist/arm64/")
    with pytest.raises(
        BundleGraphError, match=r"libomp140\.x64\.dll: not found .*14\.40\.33807, 14\.38\.33130, 14\.9\.1"
    ):
        pick_toolchain_runtime("libomp140.x64.dll", root)


def test_windows_package_twice_identical_with_info_and_licenses(tmp_path, real_input, src, capsys):
    bins = npm_bins(real_input)
    spec = win_cpu_spec()
    rt = resolve_shipped(spec, origin="toolchain", redist_root=redist_root(tmp_path, bins))
    dest = tmp_path / "dist" / spec.bundle_name(REL.tag)
    package(spec, REL, bins, dest, src, runtime=rt)
    first = sha(dest)
    package(spec, REL, bins, dest, src, runtime=rt)
    assert sha(dest) == first
    assert "signing is optional but BUNDLEGRAPH_SIGN_COMMAND is not set" in capsys.readouterr().err
    names = member_names(dest)
    assert names == sorted(names)
    assert {"ggml-base.dll", "ggml-cpu.dll", "libomp140.aarch64.dll", "THIRD_PARTY_LICENSES.txt", REL.info_file} <= set(
        names
    )
    info = info_of(dest)
    assert (info.leg, info.platform, info.bundle_profile, info.bundle_rank) == (
        "windows-arm64-cpu",
        "windows-arm64",
        "cpu",
        10,
    )
    assert (info.source_commit, info.source_digest, info.release_tag) == (src.commit, src.digest, REL.tag)
    assert info.verify.machine == "arm64" and info.verify.passed
    assert info.signing == "unsigned" and info.ggml_backend_dl is True
    assert info.supported_sms == [] and info.min_sm is None
    [omp] = info.runtime_files
    assert (omp.version, omp.origin) == ("14.40.33807", "toolchain")
    lic = read_member(dest, "THIRD_PARTY_LICENSES.txt").decode()
    assert "==== llama.cpp (LICENSE) ====" in lic and "llama.cpp licenses/LICENSE-jsonhpp" in lic
    assert "NVIDIA CUDA runtime" not in lic
    with zipfile.ZipFile(dest) as zf:
        assert {i.date_time for i in zf.infolist()} == {(2026, 10, 1) + zf.infolist()[0].date_time[3:]}


def test_required_signing_without_credentials_fails_and_leaves_nothing(tmp_path, real_input, src):
    bins = npm_bins(real_input)
    spec = win_cpu_spec(signing="required", runtime=M.legs["windows-arm64-cpu"].runtime.replace(ships=[]))
    dest = tmp_path / "dist" / spec.bundle_name(REL.tag)
    with pytest.raises(SigningError, match="signing is required but BUNDLEGRAPH_SIGN_COMMAND is not set"):
        package(spec, REL, bins, dest, src, env={"BUNDLEGRAPH_SIGN_SECRETS": "X"})
    assert list(dest.parent.iterdir()) == []


def test_signing_hook_signs_only_this_legs_pe_files_and_masks_secret(tmp_path, real_input, src, capfd):
    from conftest import require_tools

    require_tools("osslsigncode", "openssl")
    bins = npm_bins(real_input)
    key, crt, p12 = (tmp_path / n for n in ("k.pem", "c.pem", "c.p12"))
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            key,
            "-out",
            crt,
            "-days",
            "2",
            "-subj",
            "/CN=bundlegraph test signer",
            "-addext",
            "extendedKeyUsage=codeSigning",
            "-addext",
            "keyUsage=critical,digitalSignature",
        ],
        check=True,
        capture_output=True,
    )
    subprocess.run(
        ["openssl", "pkcs12", "-export", "-inkey", key, "-in", crt, "-out", p12, "-passout", "pass:s3cret-Pass"],
        check=True,
        capture_output=True,
    )
    env = dict(
        os.environ,
        SIGN_PFX_PASS="s3cret-Pass",
        BUNDLEGRAPH_SIGN_COMMAND=json.dumps(
            [
                "osslsigncode",
                "sign",
                "-pkcs12",
                str(p12),
                "-pass",
                "{env:SIGN_PFX_PASS}",
                "-in",
                "{file}",
                "-out",
                "{out}",
            ]
        ),
    )
    # optional signing, credentials present: this leg's PE files are signed, the toolchain's are not
    spec = win_cpu_spec(signing="optional")
    rt = resolve_shipped(spec, origin="toolchain", redist_root=redist_root(tmp_path, bins))
    dest = tmp_path / "dist" / spec.bundle_name(REL.tag)
    package(spec, REL, bins, dest, src, env=env, runtime=rt)
    out = capfd.readouterr().out
    assert "osslsigncode sign" in out and "s3cret-Pass" not in out and "-pass ***" in out
    assert info_of(dest).signing == "signed"
    with zipfile.ZipFile(dest) as zf:
        signed = zf.read("ggml-base.dll")
        omp = zf.read("libomp140.aarch64.dll")
    assert signed != (bins / "ggml-base.dll").read_bytes() and b"bundlegraph test signer" in signed
    assert omp == rt[0].path.read_bytes(), "a toolchain runtime file is not this leg's to sign"
    assert b"bundlegraph test signer" not in (bins / "ggml-base.dll").read_bytes(), "the input was modified"
    # required signing: verify's Authenticode check on the archive accepts them (test root trusted) ...
    req = win_cpu_spec(signing="required", runtime=spec.runtime.replace(ships=[]))
    package(req, REL, bins, dest, src, env=env, trust_roots=(str(crt),))
    assert info_of(dest).signing == "signed"
    # ... and refuses them when the root is not trusted: no archive is left
    with pytest.raises(VerifyError, match="ggml-base.dll: signature: untrusted"):
        package(req, REL, bins, dest, src, env=env)
    assert not dest.exists()


def win_base(tmp_path, real_input, src) -> Path:
    bins = npm_bins(real_input)
    spec = win_cpu_spec(runtime=M.legs["windows-arm64-cpu"].runtime.replace(ships=[]))
    dest = tmp_path / "dist" / spec.bundle_name(REL.tag)
    package(spec, REL, bins, dest, src)
    return dest


def test_windows_merge_clash_is_an_error_unless_prefer_says(tmp_path, real_input, src):
    base = load_base(win_base(tmp_path, real_input, src), REL.info_file)
    base_spec = win_cpu_spec()
    x64 = next((real_input("npm-win-x64-cuda", unpack=True) / "package" / "bins").iterdir())
    backend_dir = tmp_path / "backend-bin"
    backend_dir.mkdir()
    shutil.copyfile(x64 / "ggml-base.dll", backend_dir / "ggml-base.dll")  # a different ggml-base
    leg = M.legs["windows-arm64-cuda13-portable"]
    spec = leg.replace(build=leg.build.replace(targets=["ggml-base"]), required=[])
    cud = real_input("cudart-win-arm64", unpack=True) / "nvidia" / "cu13"
    spec_rt = spec.replace(runtime=spec.runtime.replace(ships=spec.runtime.ships[:1]))
    rt = resolve_shipped(spec_rt, origin="toolkit", toolkit_prefix=cud, toolkit_version="13.5")
    kw = {
        "base_spec": base_spec,
        "info_file": REL.info_file,
        "base": base,
        "backend_files": backend_outputs(backend_dir, spec),
        "runtime": rt,
        "source_commit": src.commit,
        "source_digest": src.digest,
    }
    tree, rec = tmp_path / "merged", tmp_path / "merge.json"
    with pytest.raises(
        MergeError, match=r"ggml-base\.dll: base file .* and backend file .* differ; set \[merge\] prefer"
    ):
        run_merge(spec=spec_rt, dest_tree=tree, record_path=rec, **kw)
    assert not tree.exists() and not rec.exists()
    pref = spec_rt.replace(merge=spec.merge.replace(prefer="base"))
    r = run_merge(spec=pref, dest_tree=tree, record_path=rec, **kw)
    assert sha(tree / "ggml-base.dll") == sha(npm_bins(real_input) / "ggml-base.dll")
    assert r.files["cudart64_13.dll"] == "runtime" and r.files["ggml-cpu.dll"] == "base"
    assert not (tree / REL.info_file).exists() and len(r.resolved) == 1
    assert sha(tree / "cudart64_13.dll") == sha(cud / "bin/arm64/cudart64_13.dll")


def test_windows_merge_refuses_a_base_from_another_commit_or_lacking_required_files(tmp_path, real_input, src):
    base = load_base(win_base(tmp_path, real_input, src), REL.info_file)
    spec = M.legs["windows-arm64-cuda13-portable"]
    with pytest.raises(MergeError) as e:
        run_merge(
            spec=spec,
            base_spec=M.legs["windows-arm64-cpu"],
            info_file=REL.info_file,
            base=base,
            backend_files=[],
            runtime=[],
            source_commit="1" * 40,
            source_digest="2" * 64,
            dest_tree=tmp_path / "m",
            record_path=tmp_path / "m.json",
        )
    msg = str(e.value)
    assert f"built from source commit {src.commit}, the backend from {'1' * 40}" in msg
    assert "source tree digest" in msg
    assert "lacks 'llama-server.exe', which windows-arm64-cpu requires" in msg
    assert "lacks 'llama-cli.exe'" in msg and not (tmp_path / "m").exists()


def linux_legs():
    cpu = M.legs["linux-arm64-cpu"]
    return cpu, M.legs["linux-arm64-cuda13-blackwell"]


def linux_base(tmp_path, src) -> Path:
    cpu, _ = linux_legs()
    dest = tmp_path / "dist" / cpu.bundle_name(REL.tag)
    package(cpu, REL, linux_cpu_tree(tmp_path / "cpu-bin"), dest, src)
    return dest


def test_linux_merge_and_package_blackwell_twice_identical(tmp_path, src):
    cpu, bw = linux_legs()
    base_archive = linux_base(tmp_path, src)
    with tarfile.open(base_archive) as tf:
        link = tf.getmember("libllama.so.0")
    assert link.issym() and link.linkname == "libllama.so"
    backend = compile_cuda_backend(tmp_path / "cuda-bin", "aarch64-linux-gnu-gcc", [120, 121], [121])
    compile_linux(backend, "aarch64-linux-gnu-gcc", {"libggml-base.so": 1}, {})
    files = backend_outputs(backend, bw)
    assert [p.name for p in files] == ["libggml-cuda.so"], "only the build target's output is the backend's"
    base = load_base(base_archive, REL.info_file)
    run_merge(
        spec=bw,
        base_spec=cpu,
        info_file=REL.info_file,
        base=base,
        backend_files=files,
        runtime=[],
        source_commit=src.commit,
        source_digest=src.digest,
        dest_tree=tmp_path / "merged",
        record_path=tmp_path / "merge.json",
    )
    dest = tmp_path / "dist" / bw.bundle_name(REL.tag)
    assert dest.name == f"app-{REL.tag}-linux-arm64-cuda13-blackwell.tar.gz"
    package(
        bw, REL, tmp_path / "merged", dest, src, base=cpu, merged_from=base_archive.name, own_files=["libggml-cuda.so"]
    )
    first = sha(dest)
    package(
        bw, REL, tmp_path / "merged", dest, src, base=cpu, merged_from=base_archive.name, own_files=["libggml-cuda.so"]
    )
    assert sha(dest) == first
    info = info_of(dest)
    assert (info.supported_sms, info.min_sm, info.max_sm) == ([120, 121], 120, 121)
    assert (info.runtime_line, info.coverage_class, info.bundle_rank, info.toolkit_version) == (
        "cuda13",
        "blackwell",
        55,
        "13.5",
    )
    assert info.verify.fatbin_sms == [120, 121] and info.verify.machine == "arm64"
    assert info.merged_from == base_archive.name and info.signing == "not-required"
    assert {"libggml-cuda.so", "llama-server", "libllama.so.0"} <= set(member_names(dest))
    with tarfile.open(dest) as tf:
        assert tf.getmember("llama-server").mode == 0o755 and tf.getmember("libllama.so.0").issym()


def test_failed_package_leaves_no_archive(tmp_path, src):
    """A real failing input: an x86_64 libggml-cuda.so in an aarch64 bundle fails verify on the
    archive; the previous bundle and every temp file are gone."""
    cpu, bw = linux_legs()
    base_archive = linux_base(tmp_path, src)
    bad = compile_cuda_backend(tmp_path / "bad-bin", "gcc", [120, 121], [])
    run_merge(
        spec=bw,
        base_spec=cpu,
        info_file=REL.info_file,
        base=load_base(base_archive, REL.info_file),
        backend_files=backend_outputs(bad, bw),
        runtime=[],
        source_commit=src.commit,
        source_digest=src.digest,
        dest_tree=tmp_path / "merged",
        record_path=tmp_path / "merge.json",
    )
    dest = tmp_path / "dist" / bw.bundle_name(REL.tag)
    dest.write_bytes(b"an older bundle")
    with pytest.raises(
        VerifyError,
        match=r"verify failed for app-.*-linux-arm64-cuda13-blackwell\.tar\.gz: 1 problem.*\n.*libggml-cuda\.so: machine: .*x64.*arm64",
    ):
        package(bw, REL, tmp_path / "merged", dest, src, base=cpu)
    assert sorted(p.name for p in dest.parent.iterdir()) == [base_archive.name]
    with pytest.raises(VerifyError, match=r"libggml-cpu\.so: machine: .*x64"):
        archive_verifier(cpu, REL)(_retarget(base_archive, tmp_path))


def _retarget(archive: Path, tmp: Path) -> Path:
    """The Linux base re-packed with one x86_64 file: the verifier must name it."""
    out = tmp / "mixed.tar.gz"
    x86 = compile_linux(tmp / "x86", "gcc", {"libggml-cpu.so": 4}, {})
    with tarfile.open(archive) as src, tarfile.open(out, "w:gz") as dst:
        for m in src.getmembers():
            if m.name == "libggml-cpu.so":
                data = (x86 / "libggml-cpu.so").read_bytes()
                m.size = len(data)
                dst.addfile(m, io.BytesIO(data))
            else:
                dst.addfile(m, src.extractfile(m) if m.isfile() else None)
    return out


def test_collect_for_a_leg_without_base_then_package(tmp_path, src):
    """merge:<leg> of a base-less leg collects the build output (links kept); package packs it."""
    from bundlegraph.pipeline.merge import run_collect

    cpu, _ = linux_legs()
    built = linux_cpu_tree(tmp_path / "cmake" / "bin")
    rec = run_collect(
        spec=cpu, built_dir=built, runtime=[], dest_tree=tmp_path / "merged", record_path=tmp_path / "m.json"
    )
    assert (tmp_path / "merged" / "libllama.so.0").is_symlink() and rec.files["llama-server"] == "backend"
    dest = tmp_path / "dist" / cpu.bundle_name(REL.tag)
    package(cpu, REL, tmp_path / "merged", dest, src, own_files=rec.backend_files)
    assert info_of(dest).verify.machine == "arm64" and "libllama.so.0" in member_names(dest)
