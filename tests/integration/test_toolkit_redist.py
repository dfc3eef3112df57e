"""The redist source end to end against a real HTTP server on 127.0.0.1: archives made at test
time in NVIDIA's layout, a manifest in NVIDIA's schema. Layout, receipt, incrementality, a
concurrent second installer, and every fault refused with its own error, leaving no prefix,
no temp directory and no unverified blob behind."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from redistkit import LINK, build_pool, linux_components, windows_components
from redistserver import RedistServer

from bundlegraph.core import paths
from bundlegraph.core.errors import DownloadError, HashMismatch, ToolkitError, UnsafeArchive
from bundlegraph.toolkit.identity import ComponentSet
from bundlegraph.toolkit.install import install
from bundlegraph.toolkit.ref import ref_for_set

HOST = ("cuda_cccl", "cuda_crt", "cuda_nvcc", "libnvvm")


@pytest.fixture
def env(tmp_path, monkeypatch):
    monkeypatch.setenv("BUNDLEGRAPH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("CI", "1")
    monkeypatch.setenv("BUNDLEGRAPH_READ_TIMEOUT", "0.5")
    monkeypatch.setenv("BUNDLEGRAPH_CONNECT_TIMEOUT", "2")
    monkeypatch.setenv("BUNDLEGRAPH_RETRIES", "1")
    monkeypatch.setenv("BUNDLEGRAPH_BACKOFF", "0.01")
    return tmp_path


def make_set(
    server, host="linux-x86_64", target="linux-sbsa", target_comps=("cuda_cudart", "libcublas"), label="13.9.1"
) -> ComponentSet:
    return ComponentSet(
        "redist",
        "13.9",
        host,
        target,
        HOST,
        tuple(sorted(target_comps)),
        {"manifest": label, "pool": server.url("/"), "manifest_sha256": served_sha(server, label)},
        "bundles/test-leg.toml",
    )


def served_sha(server, label: str = "13.9.1") -> str | None:
    """The sha256 of the manifest the test pool serves: what ``bundlegraph lock-redist`` pins."""
    data = server.files.get(f"/redistrib_{label}.json")
    return hashlib.sha256(data).hexdigest() if data is not None else None


def serve(server, comps, **kw):
    files, manifest = build_pool(comps, **kw)
    server.files.update(files)
    return files, manifest


def assert_clean(env, cs, bad_sha=None):
    ref = ref_for_set(cs)
    assert not ref.prefix.exists(), "a failed install must leave no prefix"
    root = paths.cache_root() / "toolkits"
    assert not [p.name for p in root.glob(".*.tmp")] if root.is_dir() else True
    if bad_sha:
        assert not paths.blob_path(bad_sha).exists()
        assert not list((paths.cache_root() / "partial").glob("*.part"))


def test_install_layout_receipt_and_noop(env, tmp_path):
    with RedistServer() as s:
        files, manifest = serve(s, linux_components(), nested={("cuda_cudart", "linux-sbsa")})
        cs = make_set(s)
        ref = ref_for_set(cs)
        receipt = install(cs, ref, tmp_path)
        p = ref.prefix
        assert receipt == ref.receipt and receipt.is_file()
        assert os.access(p / "bin/nvcc", os.X_OK)
        assert (p / "nvvm/bin/cicc").is_file()
        # headers in both targets' include (host and target), the host target as include/ and lib64/
        for d in ("x86_64-linux", "sbsa-linux"):
            assert (p / f"targets/{d}/include/cccl/cuda/std/version").is_file()
            assert (p / f"targets/{d}/include/crt/host_config.h").is_file()
        assert (p / "include").resolve() == (p / "targets/x86_64-linux/include").resolve()
        assert (p / "lib64").resolve() == (p / "targets/x86_64-linux/lib").resolve()
        lib = p / "targets/sbsa-linux/lib"
        assert (lib / "libcudart.so").read_bytes() == b"\x7fELF-rt"  # archive's links kept
        assert os.readlink(lib / "libcublas.so") == "libcublas.so.13"  # unversioned link added
        assert (lib / "stubs/libcuda.so").read_bytes() == b"\x7fELF-stub"  # the redist stub, not ours
        # redist ships its standard nvcc.profile: kept as is
        assert (p / "bin/nvcc.profile").read_bytes().startswith(b"TOP")
        r = json.loads(receipt.read_text())
        assert r["source"] == "redist" and r["generated"] == [] and r["profile"] is None
        assert r["manifest"]["origin"] == s.url("/redistrib_13.9.1.json")
        by = {(c["component"], c["platform"]): c for c in r["components"]}
        assert set(by) == {(c, "linux-x86_64") for c in HOST} | {
            ("cuda_cudart", "linux-sbsa"),
            ("libcublas", "linux-sbsa"),
        }
        assert by[("cuda_cccl", "linux-x86_64")]["manifest_key"] == "cccl"  # cuda_cccl vs cccl
        for (comp, plat), c in by.items():
            key = "cccl" if comp == "cuda_cccl" else comp
            art = manifest[key][plat]
            art = art.get("cuda13", art)
            assert c["sha256"] == art["sha256"] and c["size"] == int(art["size"]) and c["version"] == "13.9.1"
            assert c["sha256"] == hashlib.sha256(files["/" + art["relative_path"]]).hexdigest()
        # unchanged set: no-op, no request at all
        n = len(s.requests)
        assert install(cs, ref, tmp_path) == receipt
        assert len(s.requests) == n
        # prefix gone, cache warm: rebuilt with no archive download and no manifest fetch
        import shutil

        shutil.rmtree(p)
        install(cs, ref, tmp_path)
        assert len(s.requests) == n and (p / "bin/nvcc").is_file()


def test_an_interrupted_reinstall_leaves_the_previous_toolkit_in_place(env, tmp_path, monkeypatch):
    """A damaged toolkit is rebuilt beside the old one and swapped in only when complete: an
    install interrupted after it assembled (a cancelled job) leaves the previous prefix as it
    was, and no temporary directory."""
    import bundlegraph.toolkit.install as inst

    with RedistServer() as s:
        serve(s, linux_components())
        cs = make_set(s)
        ref = ref_for_set(cs)
        receipt = install(cs, ref, tmp_path)
        before = receipt.read_bytes()
        (ref.prefix / "bin/nvcc").unlink()  # damaged: the next install rebuilds the prefix
        real = inst._assemble

        def interrupted(*args, **kwargs):
            real(*args, **kwargs)
            raise KeyboardInterrupt

        monkeypatch.setattr(inst, "_assemble", interrupted)
        with pytest.raises(KeyboardInterrupt):
            install(cs, ref, tmp_path)
        assert receipt.read_bytes() == before and (ref.prefix / "nvvm/bin/cicc").is_file()
        assert not (ref.prefix / "bin/nvcc").exists()  # the old prefix, untouched
        assert not list((paths.cache_root() / "toolkits").glob(".*.tmp"))
        monkeypatch.setattr(inst, "_assemble", real)
        install(cs, ref, tmp_path)
        assert (ref.prefix / "bin/nvcc").is_file()


def test_windows_arm64_layout(env, tmp_path):
    with RedistServer() as s:
        serve(s, windows_components())
        cs = make_set(s, host="windows-x86_64", target="windows-arm64")
        ref = ref_for_set(cs)
        install(cs, ref, tmp_path)
        p = ref.prefix
        for n in ("cudart", "cudart_static", "cudadevrt", "cuda", "cublas", "cublasLt"):
            assert (p / f"lib/arm64/{n}.lib").is_file()
        for n in ("cudart", "cublas", "cublasLt"):
            assert ref.runtime(n) == p / f"bin/arm64/{n}64_13.dll" and ref.runtime(n).is_file()
        assert ref.nvcc == p / "bin/nvcc.exe" and ref.nvcc.is_file()
        assert ref.library("cuda_driver") == p / "lib/arm64/cuda.lib"
        assert (p / "include/cccl/cuda/std/version").is_file() and not (p / "targets").exists()


def test_each_shipped_runtime_gets_the_license_nvidia_put_beside_its_component(env, tmp_path):
    """A redist archive's LICENSE (at its root) is kept under share/<component>/ and named by the
    receipt; package takes each shipped file's license from its own component, and refuses a file
    whose component came without one, naming it."""
    from bundlegraph.core.errors import ToolkitError
    from bundlegraph.pipeline.bundle.runtimes import toolkit_licenses
    from bundlegraph.schemas.manifest import RuntimeFileInfo

    comps = windows_components()
    comps[("cuda_cudart", "windows-arm64")]["LICENSE"] = b"NVIDIA cudart license text"
    with RedistServer() as s:
        serve(s, comps)
        cs = make_set(s, host="windows-x86_64", target="windows-arm64")
        ref = ref_for_set(cs)
        install(cs, ref, tmp_path)
    p = ref.prefix
    assert (p / "share/cuda_cudart/LICENSE").read_bytes() == b"NVIDIA cudart license text"
    by = {c["component"]: c for c in json.loads(ref.receipt.read_text())["components"]}
    assert by["cuda_cudart"]["license"] == "share/cuda_cudart/LICENSE"
    assert "bin/arm64/cudart64_13.dll" in by["cuda_cudart"]["files"] and by["libcublas"]["license"] is None

    def info(name: str, rel: str) -> RuntimeFileInfo:
        return RuntimeFileInfo(name=name, origin="toolkit", version="13.9", source=rel, sha256="0" * 64)

    got = toolkit_licenses(p, [info("cudart64_13.dll", "bin/arm64/cudart64_13.dll")])
    assert got == [("NVIDIA cuda_cudart (shipped: cudart64_13.dll)", p / "share/cuda_cudart/LICENSE")]
    with pytest.raises(
        ToolkitError,
        match=r"bin/arm64/cublas64_13.dll: its component libcublas .* came without a "
        r"license file",
    ):
        toolkit_licenses(p, [info("cublas64_13.dll", "bin/arm64/cublas64_13.dll")])


def test_wrong_sha256(env, tmp_path):
    with RedistServer() as s:
        files, manifest = serve(s, linux_components())
        rel = manifest["cuda_cudart"]["linux-sbsa"]["relative_path"]
        good = files["/" + rel]
        s.files["/" + rel] = good[:-1] + bytes([good[-1] ^ 1])  # same size, other content
        cs = make_set(s)
        with pytest.raises(HashMismatch) as e:
            install(cs, ref_for_set(cs), tmp_path)
        assert s.url("/" + rel) in str(e.value) and manifest["cuda_cudart"]["linux-sbsa"]["sha256"] in str(e.value)
        assert s.hits("/" + rel) == 2
        assert_clean(env, cs, manifest["cuda_cudart"]["linux-sbsa"]["sha256"])


def test_truncated_body(env, tmp_path):
    with RedistServer() as s:
        files, manifest = serve(s, linux_components())
        rel = manifest["libcublas"]["linux-sbsa"]["relative_path"]
        s.files["/" + rel] = files["/" + rel][:92]
        cs = make_set(s)
        with pytest.raises(
            HashMismatch, match=rf"size {manifest['libcublas']['linux-sbsa']['size']}, got sha256 \w+ size 92"
        ):
            install(cs, ref_for_set(cs), tmp_path)
        assert_clean(env, cs, manifest["libcublas"]["linux-sbsa"]["sha256"])


def test_500_then_200_succeeds(env, tmp_path):
    with RedistServer() as s:
        _files, manifest = serve(s, linux_components())
        rel = "/" + manifest["cuda_nvcc"]["linux-x86_64"]["relative_path"]
        s.faults[rel] = [500]
        cs = make_set(s)
        install(cs, ref_for_set(cs), tmp_path)
        assert s.hits(rel) == 2 and (ref_for_set(cs).prefix / "bin/nvcc").is_file()


def test_404(env, tmp_path):
    with RedistServer() as s:
        _files, manifest = serve(s, linux_components())
        rel = "/" + manifest["libnvvm"]["linux-x86_64"]["relative_path"]
        del s.files[rel]
        cs = make_set(s)
        with pytest.raises(DownloadError, match=r"libnvvm-linux-x86_64-13.9.1-archive.tar.xz: HTTP 404"):
            install(cs, ref_for_set(cs), tmp_path)
        assert s.hits(rel) == 1
        assert_clean(env, cs, manifest["libnvvm"]["linux-x86_64"]["sha256"])


def test_stall_past_timeout(env, tmp_path):
    with RedistServer(stall_s=1.5) as s:
        _files, manifest = serve(s, linux_components())
        rel = "/" + manifest["cuda_crt"]["linux-x86_64"]["relative_path"]
        s.faults[rel] = ["stall", "stall"]
        cs = make_set(s)
        with pytest.raises(
            DownloadError,
            match=r"cuda_crt-linux-x86_64-13.9.1-archive.tar.xz: failed after 2 attempt\(s\): ReadTimeout",
        ):
            install(cs, ref_for_set(cs), tmp_path)
        assert_clean(env, cs, manifest["cuda_crt"]["linux-x86_64"]["sha256"])


def test_zip_slip_entry(env, tmp_path):
    comps = windows_components()
    comps[("cuda_cudart", "windows-arm64")]["../../evil.dll"] = b"MZ"
    with RedistServer() as s:
        serve(s, comps)
        cs = make_set(s, host="windows-x86_64", target="windows-arm64")
        with pytest.raises(UnsafeArchive, match=r"cuda_cudart-windows-arm64.*'\.\./\.\./evil\.dll' climbs out"):
            install(cs, ref_for_set(cs), tmp_path)
        assert_clean(env, cs)
        assert not (tmp_path / "evil.dll").exists()


def test_symlink_escape(env, tmp_path):
    comps = linux_components()
    comps[("cuda_cudart", "linux-sbsa")]["lib/libcudart.so"] = (LINK, "../../../../../../etc/passwd")
    with RedistServer() as s:
        serve(s, comps)
        cs = make_set(s)
        with pytest.raises(UnsafeArchive, match=r"link '.*lib/libcudart.so' -> '\.\./.*etc/passwd' points outside"):
            install(cs, ref_for_set(cs), tmp_path)
        assert_clean(env, cs)


def test_missing_component_for_platform(env, tmp_path):
    comps = linux_components()
    del comps[("libcublas", "linux-sbsa")]
    comps[("libcublas", "linux-x86_64")] = {"lib/libcublas.so.13": b"x"}
    with RedistServer() as s:
        serve(s, comps)
        cs = make_set(s)
        with pytest.raises(ToolkitError) as e:
            install(cs, ref_for_set(cs), tmp_path)
        msg = str(e.value)
        assert "bundles/test-leg.toml: cuda.toolkit" in msg
        assert "component libcublas (target) has no archive for platform linux-sbsa" in msg
        assert s.url("/redistrib_13.9.1.json") in msg and "(it has: linux-x86_64)" in msg
        assert [p for p, _ in s.requests if p.endswith(".tar.xz")] == []  # nothing fetched
        assert_clean(env, cs)


def test_validation_names_file_and_component(env, tmp_path):
    comps = linux_components()
    del comps[("libcublas", "linux-sbsa")]["lib/libcublasLt.so.13"]
    with RedistServer() as s:
        serve(s, comps)
        cs = make_set(s)
        with pytest.raises(
            ToolkitError,
            match=r"missing targets/sbsa-linux/lib/libcublasLt.so \(should come from "
            r"component libcublas for linux-sbsa\)",
        ):
            install(cs, ref_for_set(cs), tmp_path)
        assert_clean(env, cs)


_CHILD = """
import sys, json
sys.path.insert(0, {tests!r})
from bundlegraph.toolkit.ref import ref_for_set
from bundlegraph.toolkit.identity import ComponentSet
from bundlegraph.toolkit.install import install
from pathlib import Path
cs = ComponentSet("redist", "13.9", "linux-x86_64", "linux-sbsa", {host!r}, ("cuda_cudart", "libcublas"),
                  {{"manifest": "13.9.1", "pool": {pool!r}, "manifest_sha256": {sha!r}}}, "t")
install(cs, ref_for_set(cs), Path("."))
"""


def test_two_concurrent_installs_do_not_corrupt(env, tmp_path):
    with RedistServer() as s:
        serve(s, linux_components())
        code = _CHILD.format(tests=str(Path(__file__).parents[1]), host=HOST, pool=s.url("/"), sha=served_sha(s))
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", code],
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                env=os.environ.copy(),
            )
            for _ in range(2)
        ]
        outs = [p.communicate(timeout=120)[0] for p in procs]
        assert [p.returncode for p in procs] == [0, 0], outs
        joined = "\n".join(outs)
        assert joined.count("installed 6 components") == 1 and joined.count("already installed") == 1
        cs = make_set(s)
        r = json.loads(ref_for_set(cs).receipt.read_text())
        assert len(r["components"]) == 6


def test_host_toolkit_source_read_only_with_receipt(env, tmp_path):
    """The host source on a real toolkit tree (one installed above from the redist pool):
    version from version.json, same required files, receipt beside our cache entry, a change
    to a used file changes the task's inputs; the host tree itself is never written."""
    import shutil

    from bundlegraph.toolkit.hostsrc import fingerprint
    from bundlegraph.toolkit.key import key_inputs

    with RedistServer() as s:
        serve(s, linux_components())
        cs0 = make_set(s)
        install(cs0, ref_for_set(cs0), tmp_path)
    host_root = tmp_path / "host-cuda"
    shutil.copytree(ref_for_set(cs0).prefix, host_root, symlinks=True)
    (host_root / "bundlegraph-toolkit.json").unlink()
    before = sorted(p.relative_to(host_root).as_posix() for p in host_root.rglob("*"))
    cs = ComponentSet(
        "host",
        "13.9",
        "linux-x86_64",
        "linux-sbsa",
        HOST,
        ("cuda_cudart", "libcublas"),
        {"path": host_root.as_posix(), "version_json": "x"},
        "bundles/dev.toml",
    )
    ref = ref_for_set(cs)
    assert ref.prefix == host_root and ref.receipt.parent.parent == paths.cache_root() / "toolkits"
    receipt = install(cs, ref, tmp_path)
    r = json.loads(receipt.read_text())
    assert r["source"] == "host" and r["version"] == "13.9.1" and r["path"] == host_root.as_posix()
    assert r["files"]["bin/nvcc"] == hashlib.sha256((host_root / "bin/nvcc").read_bytes()).hexdigest()
    assert "targets/sbsa-linux/lib/libcublas.so" in r["files"] and len(r["files_digest"]) == 64
    assert sorted(p.relative_to(host_root).as_posix() for p in host_root.rglob("*")) == before
    k1 = key_inputs(cs, tmp_path)
    (host_root / "targets/sbsa-linux/lib/libcudart_static.a").write_bytes(b"!<arch>\nchanged")
    assert key_inputs(cs, tmp_path) != k1 and fingerprint(cs)["targets/sbsa-linux/lib/libcudart_static.a"][0] == 15
    # wrong version, missing version.json, missing file: each named
    bad = ComponentSet(
        "host",
        "13.5",
        "linux-x86_64",
        "linux-sbsa",
        HOST,
        ("cuda_cudart",),
        {"path": host_root.as_posix()},
        "bundles/dev.toml",
    )
    with pytest.raises(
        ToolkitError, match=r"version.json: CUDA 13.9.1, but bundles/dev.toml asks for cuda.version 13.5"
    ):
        install(bad, ref_for_set(bad), tmp_path)
    (host_root / "nvvm/bin/cicc").unlink()
    with pytest.raises(
        ToolkitError, match=r"missing nvvm/bin/cicc \(should come from component libnvvm for linux-x86_64\)"
    ):
        install(cs, ref, tmp_path)
    (host_root / "version.json").unlink()
    with pytest.raises(ToolkitError, match=r"host-cuda/version.json: missing"):
        install(cs, ref, tmp_path)
