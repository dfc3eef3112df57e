"""The reason bundlegraph exists, everything after the compiler, on real files and the real specs:
``windows-arm64-cpu`` + ``windows-arm64-cuda13-portable`` (and the x64 pair, ``windows-x64-cpu`` +
``windows-x64-cuda13-portable``) through the real graph on Linux.

- toolkit: CUDA 13.4 for an x64 Windows host and ARM64 target, from a redist pool of NVIDIA's own
  wheels repacked in NVIDIA's redist layout and served on 127.0.0.1 (:mod:`winredist`);
- build output imported as a Windows runner hands it over (``built=DIR``, :mod:`winbuild`): the
  real ARM64 ggml DLLs of npm ``@node-llama-cpp/win-arm64``, small real ARM64 PE files for the
  required names no package has, and an ARM64 ``ggml-cuda.dll`` with a real sm_120/sm_121 fatbin;
- verify (built tree) -> merge into the base -> package with the toolkit's runtimes and each one's
  NVIDIA license -> signing through ``BUNDLEGRAPH_SIGN_COMMAND`` (osslsigncode, a throwaway CA
  trusted through ``BUNDLEGRAPH_TRUST_ROOTS``) -> archive verify -> manifest -> SHA index with the
  paired ``cudart-llama-bin-win-cuda-13.4-arm64.zip`` (built from the same wheels) -> ``doit publish``.

x64: the CPU side is the real x64 files of npm ``@node-llama-cpp/win-x64-cuda`` (every ggml-cpu
variant) and its real ``ggml-cuda.dll`` (SASS 86/89/120a/121a, PTX 75/80/90; cuBLAS imported, cudart
linked statically); the toolkit and paired runtime come from the x64 wheels.

The test copy of ``bundles/`` differs from the real one only in what is not reachable here: the
release's ``default_legs`` are the pair; ``windows-arm64-cpu`` does not ship
``libomp140.aarch64.dll`` (MSVC's redist; the npm DLLs do not import it); ``windows-x64-cuda13-portable``
promises the archs the real x64 DLL holds (``75-virtual, 80-virtual, 86-real, 89-real, 90-virtual,
120a-real, 121a-real`` instead of ``75, 80, 86, 89, 90, 100, 120``); the x64 pair's specs waive the
smoke (``[smoke] waived``: the release starts them on its windows-2022 runner, this Linux host
cannot; the ARM64 pair's real specs waive it already)."""

from __future__ import annotations

import json
import re
import shutil
import zipfile
from pathlib import Path

import binkit
import graphrun
import pytest
import winbuild
import winredist
from bundlekit import npm_bins
from conftest import linux_only, needs_host_cuda, require_input, require_tools
from redistserver import RedistServer

ROOT = Path(__file__).resolve().parents[2]
INDEX, MANIFEST = "llama-prebuilt-sha256.json", "llama-prebuilt-manifest.json"
PROVENANCE = "llama-prebuilt-provenance.json"
X64_ARCHS = ["75-virtual", "80-virtual", "86-real", "89-real", "90-virtual", "120a-real", "121a-real"]
"""What the real x64 ggml-cuda.dll of npm @node-llama-cpp/win-x64-cuda@3.21.1 holds."""

pytestmark = [linux_only, needs_host_cuda]


def _bundles(dest: Path, arch: str) -> Path:
    cpu, cuda = f"windows-{arch}-cpu", f"windows-{arch}-cuda13-portable"
    dest.mkdir(parents=True)
    shutil.copytree(ROOT / "bundles" / "locks", dest / "locks")
    for n in (f"{cpu}.toml", f"{cuda}.toml"):
        shutil.copyfile(ROOT / "bundles" / n, dest / n)
    rel = (ROOT / "bundles" / "release.toml").read_text()
    rel, n = re.subn(r"(?ms)^default_legs = \[.*?\]", f'default_legs = ["{cpu}", "{cuda}"]', rel)
    assert n == 1
    # the release's coverage rules ask for legs this two-leg release leaves out: not its subject
    rel = rel[: rel.index("\n[coverage]")] + "\n"
    (dest / "release.toml").write_text(rel)
    if arch == "arm64":
        text = (dest / f"{cpu}.toml").read_text()
        line = 'ships = [{ name = "libomp140.aarch64.dll", from = "toolchain" }]\n'
        assert line in text
        (dest / f"{cpu}.toml").write_text(text.replace(line, ""))
    else:
        text = (dest / f"{cuda}.toml").read_text()
        line = 'archs = ["75", "80", "86", "89", "90", "100", "120"]'
        assert line in text
        (dest / f"{cuda}.toml").write_text(text.replace(line, f"archs = {json.dumps(X64_ARCHS)}"))
        for leg in (cpu, cuda):  # the release smoke-tests these natively on windows-2022, not here
            f = dest / f"{leg}.toml"
            f.write_text(
                f.read_text()
                + '\n[smoke]\nwaived = "this test runs on Linux; the release starts them on windows-2022"\n'
            )
    return dest


def test_the_real_x64_dll_cannot_be_promised_its_ptx_needs_a_newer_driver(tmp_path):
    """The x64 pair ran through the whole release here until issue 52 item 5: its real ``ggml-cuda.dll``
    (node-llama-cpp's, CUDA 13.1) holds PTX-only code for sm_75/80/90, of PTX ISA 9.1, and the
    drivers selection sends a cuda13 leg to start at CUDA 13.0, which JITs PTX ISA up to 9.0. A spec
    promising those archs from CUDA 13.4 is refused at load, in one line naming the archs, the ISA and
    the driver (an H100 with a 13.0 driver could not load those kernels)."""
    bundles = _bundles(tmp_path / "bundles", "x64")
    r = graphrun.cli(["plan", "windows-x64-cuda13-portable"], bundles=bundles, workdir=tmp_path / "work")
    assert r.returncode == 2, r.stdout + r.stderr
    assert "cuda.version: CUDA 13.4 writes PTX ISA 9.1 (which needs CUDA 13.1)" in r.stderr
    assert "75-virtual, 80-virtual, 90-virtual are JIT-compiled by drivers from CUDA 13.0" in r.stderr


@pytest.fixture(scope="module", params=["arm64"])
def pair(request, tmp_path_factory):
    arch = request.param
    require_tools("clang", "lld-link", "llvm-dlltool", "osslsigncode", "openssl")
    require_input("llama-sdist")
    root = tmp_path_factory.mktemp(f"win-{arch}-pair")
    bundles, work, built = _bundles(root / "bundles", arch), root / "work", root / "built"
    cpu, cuda = f"windows-{arch}-cpu", f"windows-{arch}-cuda13-portable"
    x64_bins = next((require_input("npm-win-x64-cuda", unpack=True) / "package" / "bins").iterdir())
    if arch == "arm64":
        winbuild.cpu_tree(built / cpu, npm_bins(require_input))
        winbuild.cuda_tree(built / f"built-{cuda}", x64_bins / "ggml-cuda.dll")  # as download-artifact lays it
    else:
        winbuild.cpu_tree(built / cpu, x64_bins, "x64")
        (built / f"built-{cuda}").mkdir(parents=True)
        shutil.copyfile(x64_bins / "ggml-cuda.dll", built / f"built-{cuda}" / "ggml-cuda.dll")
    ca = binkit.make_ca(root / "ca")
    (work / "dist").mkdir(parents=True)
    paired = winredist.paired_runtime_zip(work / "dist", arch)  # the upstream asset the SHA index pairs
    sign = [
        "osslsigncode",
        "sign",
        "-certs",
        str(ca.leaf_pem),
        "-key",
        str(ca.leaf_key),
        "-h",
        "sha256",
        "-in",
        "{file}",
        "-out",
        "{out}",
    ]
    with RedistServer() as server:
        server.files.update(winredist.windows_pool((f"windows-{'arm64' if arch == 'arm64' else 'x86_64'}",)))
        env = {
            "BUNDLEGRAPH_REDIST_URL": server.url("/"),
            "BUNDLEGRAPH_SIGN_COMMAND": json.dumps(sign),
            "BUNDLEGRAPH_TRUST_ROOTS": str(ca.root_pem),
        }
        # the stand-in pool's redistrib_13.4.2.json pinned as a maintainer pins NVIDIA's (issue 51)
        pin = graphrun.cli(["lock-redist", "13.4.2"], bundles=bundles, workdir=work, **env)
        assert pin.returncode == 0, pin.stdout + pin.stderr

        def doit(*args: str, **extra: str):
            return graphrun.doit([f"built={built}", *args], bundles=bundles, workdir=work, timeout=1200, **env, **extra)

        first = doit()
        gate = doit("publish")
        again = doit()
        yield {
            "arch": arch,
            "cpu": cpu,
            "cuda": cuda,
            "paired": paired.name,
            "work": work,
            "first": first,
            "gate": gate,
            "again": again,
            "doit": doit,
            "bundles": bundles,
            "built": built,
            "env": env,
            "ca": ca,
        }


def _info(archive: Path) -> dict:
    with zipfile.ZipFile(archive) as z:
        return json.loads(z.read("BUNDLE_INFO.json"))


def test_the_pair_goes_from_imported_builds_to_a_published_release(pair):
    CPU, CUDA, arch = pair["cpu"], pair["cuda"], pair["arch"]
    first = pair["first"]
    assert first.returncode == 0, first.stdout[-6000:] + first.stderr[-3000:]
    ran = graphrun.executed(first.stdout)
    for leg in (CPU, CUDA):
        for stage in ("source", "build", "verify", "merge", "package"):
            assert f"{stage}:{leg}" in ran, (stage, leg, ran)
        assert f"configure:{leg}" not in ran  # compiled on the Windows runner, not here
    target = "windows-arm64" if arch == "arm64" else "windows-x86_64"
    assert any(t.startswith(f"toolkit:cuda13.4-windows-x86_64+{target}") for t in ran) and "manifest" in ran
    gate = pair["gate"]
    assert gate.returncode == 0, gate.stdout[-4000:] + gate.stderr[-3000:]
    assert "every promised bundle, runtime and host class is covered" in gate.stdout
    assert graphrun.executed(pair["again"].stdout) == [], pair["again"].stdout[-3000:]  # a second run: nothing


def test_the_cuda_bundle_is_signed_with_the_promised_sass_and_its_runtimes_licensed(pair):
    CPU, CUDA, arch = pair["cpu"], pair["cuda"], pair["arch"]
    dist = pair["work"] / "dist"
    cuda = next(dist.glob(f"app-*-{CUDA}.zip"))
    info = _info(cuda)
    assert info["install_kind"] == ("windows-arm64-cuda" if arch == "arm64" else "windows-cuda")
    assert info["toolkit_version"] == "13.4"
    sms = info["supported_sms"]
    if arch == "arm64":
        assert sms == [120, 121] and (info["min_sm"], info["max_sm"]) == (120, 121)
    else:  # SASS 86, 89, 120a, 121a by NVIDIA's compatibility rule (no sm_75/80/90 SASS: PTX only)
        assert {86, 89, 120, 121} <= set(sms) and 75 not in sms and 90 not in sms, sms
    assert info["signing"] == "signed" and info["merged_from"].endswith(f"-{CPU}.zip")
    assert [i["leg"] for i in info["imported_builds"]] == [CPU, CUDA]  # the base's, then its own
    assert {r["name"] for r in info["runtime_files"]} == {"cudart64_13.dll", "cublas64_13.dll", "cublasLt64_13.dll"}
    with zipfile.ZipFile(cuda) as z:
        names = set(z.namelist())
        lic = z.read("THIRD_PARTY_LICENSES.txt").decode()
    assert {"ggml-cuda.dll", "ggml-base.dll", "llama-server.exe", "cudart64_13.dll"} <= names
    assert "==== NVIDIA cuda_cudart (shipped: cudart64_13.dll) ====" in lic
    assert "==== NVIDIA libcublas (shipped: cublas64_13.dll, cublasLt64_13.dll) ====" in lic
    # verify's findings recorded in the info file: every PE ARM64, SASS exactly the promised archs
    v = info["verify"]
    assert v["passed"] and v["machine"] == arch
    assert v["fatbin_sass"] == (["120", "121"] if arch == "arm64" else ["86", "89", "120a", "121a"]), v


def test_manifest_and_sha_index_hold_the_pair_and_its_paired_runtime(pair):
    arch, PAIRED = pair["arch"], pair["paired"]
    dist = pair["work"] / "dist"
    m = json.loads((dist / MANIFEST).read_text())
    idx = json.loads((dist / INDEX).read_text())["artifacts"]
    kinds = {a["install_kind"]: a for a in m["artifacts"]}
    cuda_kind = "windows-arm64-cuda" if arch == "arm64" else "windows-cuda"
    assert set(kinds) == ({"windows-arm64", cuda_kind} if arch == "arm64" else {"windows-cpu", cuda_kind})
    assert kinds[cuda_kind]["supported_sms"] == _info(next(dist.glob(f"app-*-{pair['cuda']}.zip")))["supported_sms"]
    assert idx[PAIRED]["kind"] == "runtime"
    import hashlib

    assert idx[PAIRED]["sha256"] == hashlib.sha256((dist / PAIRED).read_bytes()).hexdigest()
    for a in m["artifacts"]:
        assert idx[a["asset_name"]]["sha256"] == hashlib.sha256((dist / a["asset_name"]).read_bytes()).hexdigest()


def test_a_consumer_verifies_the_release_from_an_empty_folder(pair, tmp_path):
    """``verify-release`` as a consumer runs it, in an empty folder with no ``bundles/``: the
    mission leg's waived smoke is judged by the release's own index and manifest, the paired
    runtime against upstream's releases API (GitHub's API stand-in on 127.0.0.1, serving the same
    bytes); from ``dist/`` and from the published release (``--repo``/``--tag``) alike."""
    from githubkit import Asset, FakeGitHub, Release

    dist, PAIRED = pair["work"] / "dist", pair["paired"]
    index = json.loads((dist / INDEX).read_text())
    smoke = {a["asset_name"]: a["smoke"] for a in json.loads((dist / MANIFEST).read_text())["artifacts"]}
    waived = {p["asset_name"]: p["smoke_waived"] for p in index["promised"]}
    assert smoke == {n: f"waived: {why}" for n, why in waived.items()} and all(waived.values()), smoke
    empty = tmp_path / "empty"
    empty.mkdir()
    tag, ours = index["release_tag"], "example-org/llama-prebuilt"
    with FakeGitHub(ours) as gh:
        upstream = index["artifacts"][PAIRED]["upstream_tag"]
        gh.publish_upstream(index["source_repo"], upstream, {PAIRED: (dist / PAIRED).read_bytes()})
        rel = Release(gh.new_id(), tag, False, tag)
        published = [n for n, e in index["artifacts"].items() if e["kind"] != "runtime"] + [INDEX, PROVENANCE]
        rel.assets = [Asset(gh.new_id(), n, (dist / n).read_bytes()) for n in published]
        gh.releases.append(rel)
        for args in ([str(dist)], ["--repo", ours, "--tag", tag]):
            r = graphrun.cli(
                ["verify-release", *args, "--no-authenticate"],
                bundles=empty / "no-bundles",
                workdir=empty,
                BUNDLEGRAPH_GITHUB_API=gh.api,
            )
            assert r.returncode == 0, r.stdout + r.stderr
            assert "  promised: passed\n" in r.stdout and "  smoke: passed\n" in r.stdout, r.stdout
            assert "  upstream: passed\n" in r.stdout, r.stdout


def test_publish_refuses_naming_a_missing_item(pair, tmp_path):
    PAIRED = pair["paired"]
    dist = pair["work"] / "dist"
    from githubkit import FakeGitHub

    keep = tmp_path / PAIRED
    shutil.move(dist / PAIRED, keep)
    try:  # nowhere to hash it from: the upstream release (on 127.0.0.1 here) lacks it too
        with FakeGitHub("ggml-org/llama.cpp") as gh:
            r = pair["doit"]("manifest", "publish", BUNDLEGRAPH_GITHUB_API=gh.api)
        assert r.returncode != 0
        assert PAIRED in r.stdout + r.stderr, (r.stdout + r.stderr)[-3000:]
    finally:
        shutil.move(keep, dist / PAIRED)
    assert pair["doit"]("manifest", "publish").returncode == 0


def test_signing_is_its_own_step_package_unsigned_then_sign_bundles(pair, tmp_path):
    """Issue 51: the build jobs package with ``BUNDLEGRAPH_SIGN=later`` and no signer at all; the
    manifest refuses what awaits signing; ``sign-bundles`` (no doit, no build) signs the base first,
    gives the merged bundle the signed base's files, verifies with signatures required, and
    changes nothing outside the Authenticode signatures: the same files as the pair signed at
    package time, up to the signatures."""
    from bundlegraph.checks.pe_unsigned import content_outside_signature
    from bundlegraph.pipeline.archivecheck import archive_verifier
    from bundlegraph.pipeline.bundle.archive import read_member
    from bundlegraph.specs.loader import load_matrix

    CPU, CUDA, env = pair["cpu"], pair["cuda"], pair["env"]
    work = tmp_path / "work"
    (work / "dist").mkdir(parents=True)
    shutil.copyfile(pair["work"] / "dist" / pair["paired"], work / "dist" / pair["paired"])
    later = {k: v for k, v in env.items() if not k.startswith("BUNDLEGRAPH_SIGN")} | {"BUNDLEGRAPH_SIGN": "later"}
    r = graphrun.doit(
        [f"built={pair['built']}", f"package:{CPU}", f"package:{CUDA}"],
        bundles=pair["bundles"],
        workdir=work,
        timeout=1200,
        **later,
    )
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-3000:]
    names = {leg: next((work / "dist").glob(f"*-{leg}.zip")).name for leg in (CPU, CUDA)}
    for leg in (CPU, CUDA):
        assert _info(work / "dist" / names[leg])["signing"] == "pending"
        with zipfile.ZipFile(work / "dist" / names[leg]) as z:
            assert all(b"bundlegraph test" not in z.read(n) for n in z.namelist() if n.endswith(".dll"))
    # a bundle that awaits signing never reaches the manifest
    m = graphrun.doit(["manifest"], bundles=pair["bundles"], workdir=work, timeout=600, **later)
    assert m.returncode != 0 and f"{names[CPU]}: awaits signing" in m.stdout + m.stderr, m.stdout[-3000:]
    # a merged bundle without its base is refused in one line, nothing signed
    alone = tmp_path / "alone"
    alone.mkdir()
    shutil.copyfile(work / "dist" / names[CUDA], alone / names[CUDA])
    a = graphrun.cli(
        ["sign-bundles", str(alone), "--out", str(tmp_path / "nothing")], bundles=pair["bundles"], workdir=work, **env
    )
    assert a.returncode == 2 and "Traceback" not in a.stderr, a.stdout + a.stderr
    assert f"{names[CUDA]}: merged from {names[CPU]}, which is not among the bundles signed here" in a.stderr
    assert not (tmp_path / "nothing" / names[CUDA]).exists()
    # the signing step: the project's command, the signer's secret, nothing built
    out = tmp_path / "signed"
    s = graphrun.cli(
        ["sign-bundles", str(work / "dist"), "--out", str(out)], bundles=pair["bundles"], workdir=work, **env
    )
    assert s.returncode == 0, s.stdout[-3000:] + s.stderr[-3000:]
    print(s.stdout)
    rec = {b["leg"]: b for b in json.loads((out / "signed-bundles.json").read_text())["bundles"]}
    assert rec[CPU]["signing"] == rec[CUDA]["signing"] == "signed"
    assert rec[CPU]["signed_files"] and "ggml-cuda.dll" in rec[CUDA]["signed_files"]
    assert rec[CUDA]["from_signed_base"] and "ggml-base.dll" in rec[CUDA]["from_signed_base"]
    assert (out / pair["paired"]).read_bytes() == (work / "dist" / pair["paired"]).read_bytes()
    matrix = load_matrix(pair["bundles"])
    for leg in (CPU, CUDA):
        signed = out / names[leg]
        assert _info(signed)["signing"] == "signed" and rec[leg]["sha256"] != rec[leg]["unsigned_sha256"]
        spec = matrix.legs[leg]
        base = matrix.legs.get(spec.merge.base) if spec.merge else None
        archive_verifier(spec, matrix.release, base=base, trust_roots=(str(pair["ca"].root_pem),))(signed)
        now = pair["work"] / "dist" / names[leg]  # the same pair, signed at package time
        with zipfile.ZipFile(signed) as a, zipfile.ZipFile(now) as b:
            assert a.namelist() == b.namelist()
            for n in a.namelist():
                x, y = a.read(n), b.read(n)
                if x[:2] == b"MZ" and n in rec[leg]["signed_files"] + rec[leg]["from_signed_base"]:
                    assert content_outside_signature(x) == content_outside_signature(y), n
                else:
                    assert x == y, n
    # the merged bundle's base files are the signed base bundle's, byte for byte
    for n in rec[CUDA]["from_signed_base"]:
        assert read_member(out / names[CUDA], n) == read_member(out / names[CPU], n), n
