"""Issue 44's ROCm and macOS legs on the backend registry: the hip and metal backends' facts, the
macOS platform row, the [hip]/[macos] spec rules (one line each), the TheRock SDK's pin (a moved
hash refused, an unpinned tarball refused before any download), the runtime-copy rules verify
holds a ROCm bundle to, and selection/coverage for AMD and Apple hosts on a manifest of our own
ROCm and macOS legs. The installer's own choice for the same hosts:
tests/integration/test_installer_rocm_macos.py. Nothing here compiles HIP or Metal code."""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import tarfile
from pathlib import Path

import pytest

from bundlegraph.backends import hip, metal
from bundlegraph.backends.hip import sdk as therock
from bundlegraph.checks.content import missing_required
from bundlegraph.core.errors import HashMismatch, SpecError, ToolkitError
from bundlegraph.core.platforms import platform
from bundlegraph.installer.selection import Host, claimed, coverage, coverage_problems, select
from bundlegraph.schemas.manifest import BundleInfo, IndexEntry, Manifest, ManifestArtifact, ShaIndex
from bundlegraph.specs.loader import load_matrix
from bundlegraph.verification.policy import policy_from_spec

ROOT = Path(__file__).resolve().parents[2]
COMMIT = "0c1e57098bba43ac29e6e3b677cdceebdd22334f"


@pytest.fixture(scope="module")
def matrix():
    return load_matrix(ROOT / "bundles")


# -- facts ----------------------------------------------------------------------------------------


def test_the_gfx_families_expand_as_the_fork_and_the_installer_say():
    assert list(hip.FAMILIES) == ["gfx1151", "gfx1150", "gfx120X", "gfx110X", "gfx103X", "gfx90a", "gfx908"]
    assert hip.FAMILIES["gfx110X"] == ("gfx1100", "gfx1101", "gfx1102", "gfx1103")
    assert hip.FAMILIES["gfx103X"] == ("gfx1030", "gfx1031", "gfx1032", "gfx1034")
    assert hip.archive_family("gfx120X") == "gfx120X-all" and hip.archive_family("gfx90a") == "gfx90a"
    # a host's gfx finds its family; an in-family target the fork does not build (gfx1033) none
    assert hip.family_of_target("GFX1101") == "gfx110X" and hip.family_of_target("gfx1033") is None
    with pytest.raises(KeyError, match="unknown gfx family 'gfx942'"):
        hip.family_targets("gfx942")


def test_the_macos_row_names_files_the_dyld_way_and_keeps_the_forks_asset_name(matrix):
    mac = platform("macos")
    assert (mac.library("ggml-metal"), mac.library_glob("llama"), mac.program("llama-server")) == (
        "libggml-metal.dylib",
        "libllama.dylib",
        "llama-server",
    )
    assert (mac.archive, mac.binary, mac.loader_var, mac.rpath) == (
        ".tar.gz",
        "Mach-O",
        "DYLD_LIBRARY_PATH",
        "@loader_path",
    )
    assert mac.system_dirs == ("/usr/lib/", "/System/Library/")
    tag = matrix.release.tag
    assert matrix.legs["macos-arm64"].bundle_name(tag) == f"llama-{tag}-bin-macos-arm64.tar.gz"
    assert matrix.legs["macos-x64"].bundle_name(tag) == f"llama-{tag}-bin-macos-x64.tar.gz"
    assert matrix.legs["linux-x64-rocm-gfx110x"].bundle_name(tag) == f"app-{tag}-linux-x64-rocm-gfx110x.tar.gz"


def test_the_real_rocm_and_macos_legs(matrix):
    rocm = {l: s for l, s in matrix.legs.items() if s.backend == "hip"}
    assert len(rocm) == 14
    for s in rocm.values():
        assert s.hip.mapped_targets == list(hip.FAMILIES[s.hip.gfx_target])
        assert s.cmake["GPU_TARGETS"] == s.hip.mapped_targets and s.smoke is not None and "AMD GPU" in s.smoke.waived
        assert s.merge.base == f"{s.os}-x64-cpu" and s.build.targets == ["ggml-hip"]
    arm, x64 = matrix.legs["macos-arm64"], matrix.legs["macos-x64"]
    assert (arm.backend, arm.install_kind, arm.runner, arm.toolchain) == (
        "metal",
        "macos-arm64",
        "macos-26",
        "apple-clang-macos-arm64",
    )
    assert (x64.backend, x64.install_kind, x64.runner, x64.cmake["GGML_METAL"]) == (
        "cpu",
        "macos-x64",
        "macos-15-intel",
        False,
    )
    for s in (arm, x64):
        assert s.macos.deployment_target == metal.DEPLOYMENT_TARGET == s.cmake["CMAKE_OSX_DEPLOYMENT_TARGET"]
    assert arm.cmake["GGML_METAL_EMBED_LIBRARY"] is True


# -- spec rules: one line each ----------------------------------------------------------------------


def _mini(tmp_path: Path, leg: str = "windows-x64-rocm-gfx110x") -> Path:
    """A bundles directory holding the release, one ROCm leg, its base and its lock."""
    b = tmp_path / "bundles"
    (b / "locks").mkdir(parents=True)
    for name in (
        "release.toml",
        f"{leg}.toml",
        "windows-x64-cpu.toml",
        "macos-arm64.toml",
        "locks/therock-7.14.0.toml",
    ):
        shutil.copy(ROOT / "bundles" / name, b / name)
    text = (b / "release.toml").read_text()
    (b / "release.toml").write_text(
        text.replace('default_legs = ["linux-arm64-cpu", "linux-arm64-cuda13-blackwell"]', f'default_legs = ["{leg}"]')
    )
    return b


def _problems(b: Path) -> list[str]:
    with pytest.raises(SpecError) as ei:
        load_matrix(b)
    return ei.value.problems


def _edit(p: Path, old: str, new: str) -> None:
    text = p.read_text()
    assert old in text, old
    p.write_text(text.replace(old, new, 1))


@pytest.mark.parametrize(
    ("file", "old", "new", "want"),
    [
        (
            "windows-x64-rocm-gfx110x.toml",
            'gfx_target = "gfx110X"',  # mapped_targets follow from it unless written (specs/derive.py)
            'gfx_target = "gfx110X"\nmapped_targets = ["gfx1100", "gfx1101", "gfx1102"]',
            "hip.mapped_targets: ['gfx1100', 'gfx1101', 'gfx1102'], but family gfx110X is",
        ),
        (
            "windows-x64-rocm-gfx110x.toml",
            "[cmake]\n",
            '[cmake]\nGPU_TARGETS = "gfx1100;gfx1101"\n',
            "cmake.GPU_TARGETS: ['gfx1100', 'gfx1101'], but hip.mapped_targets is",
        ),
        (
            "windows-x64-rocm-gfx110x.toml",
            'gfx_target = "gfx110X"',
            'gfx_target = "gfx1033"',
            "hip.gfx_target: 'gfx1033' is not one",
        ),
        ("windows-x64-rocm-gfx110x.toml", 'version = "7.14.0"', 'version = "7.13.0"', "hip.sdk.version: '7.13.0', but"),
        ("windows-x64-rocm-gfx110x.toml", 'version = "7.14.0"', 'version = "weekly"', "hip.sdk.version"),
        ("windows-x64-rocm-gfx110x.toml", "[hip.sdk]", "[nothip]", "hip"),
        (
            "macos-arm64.toml",
            'CMAKE_OSX_DEPLOYMENT_TARGET = "13.3"',
            'CMAKE_OSX_DEPLOYMENT_TARGET = "26.0"',
            "cmake.CMAKE_OSX_DEPLOYMENT_TARGET: '26.0'",
        ),
        ("macos-arm64.toml", '[macos]\ndeployment_target = "13.3"\n', "", "macos: a macOS leg needs a [macos] table"),
        (
            "windows-x64-cpu.toml",
            "[profile]",
            '[hip]\ngfx_target = "gfx90a"\nmapped_targets = ["gfx90a"]\n[hip.sdk]\nversion = "7.14.0"\nlock = "x"\n\n[profile]',
            "hip: backend 'cpu' must not have a [hip] table",
        ),
    ],
)
def test_a_bad_rocm_or_macos_spec_is_refused_in_one_line(tmp_path, file, old, new, want):
    b = _mini(tmp_path)
    _edit(b / file, old, new)
    probs = _problems(b)
    hits = [p for p in probs if want in p]
    assert hits and all(p.split(": ", 1)[0].endswith(file) for p in hits), probs
    assert all("\n" not in p for p in probs)


def test_a_lock_that_pins_badly_is_refused_in_one_line(tmp_path):
    b = _mini(tmp_path)
    lock = b / "locks/therock-7.14.0.toml"
    _edit(lock, 'sha256 = "e78a', 'sha256 = "E78A')
    probs = _problems(b)
    assert [p for p in probs if "hip.sdk.lock:" in p and "tarball[0].sha256: expected 64 lower-case hex digits" in p], (
        probs
    )


# -- the SDK: pinned by sha256, refused when it moved --------------------------------------------------


def _therock_tar(targets: tuple[str, ...], *, os_name: str = "linux", drop: str | None = None) -> bytes:
    """A tarball with TheRock's layout (its file names, tiny contents): what ``install`` checks."""
    lib = "bin" if os_name == "windows" else "lib"
    names = [f"lib/llvm/bin/clang++{'.exe' if os_name == 'windows' else ''}"]
    names += [
        f"{lib}/{n}"
        for n in (
            ("amdhip64_7.dll", "hipblas.dll", "rocblas.dll", "amd_comgr0705.dll")
            if os_name == "windows"
            else (
                "libamdhip64.so.7",
                "libhsa-runtime64.so.1",
                "libhipblas.so.3",
                "librocblas.so.5",
                "libamd_comgr.so.3",
            )
        )
    ]
    names += [f"{lib}/rocblas/library/TensileLibrary_lazy_{t}.dat" for t in targets]
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as t:
        for n in names:
            if n == drop:
                continue
            data = n.encode()
            info = tarfile.TarInfo(n)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def _lock(tmp_path: Path, name: str, blob: bytes) -> Path:
    f = tmp_path / "therock-7.14.0.toml"
    f.write_text(
        f'version = 1\ntherock = "7.14.0"\n[[tarball]]\nname = "{name}"\nurl = "https://example.invalid/{name}"\n'
        f'sha256 = "{hashlib.sha256(blob).hexdigest()}"\nsize = {len(blob)}\n'
    )
    return f


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("BUNDLEGRAPH_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_the_sdk_is_keyed_by_its_pin_and_an_unpinned_tarball_is_refused_before_any_download(matrix):
    s = matrix.legs["linux-x64-rocm-gfx110x"]
    p = therock.tarball_plan("linux", s.hip.gfx_target, s.hip.sdk.version, ROOT / "bundles" / s.hip.sdk.lock)
    assert p.name == "therock-dist-linux-gfx110X-all-7.14.0.tar.gz"
    assert p.task == "toolkit:therock-7.14.0-linux-gfx110X-all-e78a44"
    assert p.key() == {"sdk": "therock", "name": p.name, "sha256": p.pin.sha256, "size": 2313039793}
    assert p.receipt()["sha256"] == "e78a4445c52d879fbd0765f24e7fa9df1e262a8baf681b118a13e75340120127"
    w = therock.tarball_plan("windows", "gfx1151", "7.14.0", ROOT / "bundles" / s.hip.sdk.lock)
    assert w.pin is None and w.task.endswith("-unpinned")
    with pytest.raises(ToolkitError, match=r"therock-dist-windows-gfx1151-7\.14\.0\.tar\.gz is not pinned"):
        therock.fetch(w)


def test_a_tarball_from_the_hand_folder_is_adopted_by_hash_and_a_moved_one_refused(tmp_path, cache, monkeypatch):
    name = "therock-dist-linux-gfx110X-all-7.14.0.tar.gz"
    blob = _therock_tar(hip.FAMILIES["gfx110X"])
    lock = _lock(tmp_path, name, blob)
    hand = tmp_path / "hand"
    hand.mkdir()
    (hand / name).write_bytes(blob)
    monkeypatch.setenv(therock.DIR_VAR, str(hand))
    p = therock.tarball_plan("linux", "gfx110X", "7.14.0", lock)
    receipt = therock.install(p, hip.FAMILIES["gfx110X"])
    assert receipt.is_file() and '"sha256": "' + hashlib.sha256(blob).hexdigest() in receipt.read_text()
    prefix = therock.prefix_of(p)
    assert therock.layout_problems(prefix, "linux", hip.FAMILIES["gfx110X"]) == []
    # what the merge ships from it: the runtime flat, the kernel folder under its own path
    assert [n for n, _ in therock.runtime_files(prefix, "linux")] == [
        "libamd_comgr.so.3",
        "libamdhip64.so.7",
        "libhipblas.so.3",
        "libhsa-runtime64.so.1",
        "librocblas.so.5",
        *(f"rocblas/library/TensileLibrary_lazy_{t}.dat" for t in hip.FAMILIES["gfx110X"]),
    ]
    # the merge places them into the bundle tree, the kernels under rocblas/library/, each recorded
    # as a runtime file of the toolkit with its sha256
    from bundlegraph.pipeline import merge

    built = tmp_path / "built"
    built.mkdir()
    (built / "libggml-hip.so").write_bytes(b"built by the leg")
    from bundlegraph.backends.hip.sdk_ref import HipSdk

    sdk = HipSdk("t", "toolkit:t", "7.14.0", "linux", "gfx110X", (), "", "", prefix, prefix / "r.json")
    runtime = merge._sdk_runtime(sdk, "linux", prefix, "7.14.0")
    rec = merge.run_collect(
        spec=load_matrix(ROOT / "bundles").legs["linux-x64-rocm-gfx110x"],
        built_dir=built,
        runtime=runtime,
        dest_tree=tmp_path / "tree",
        record_path=tmp_path / "merge.json",
    )
    assert (tmp_path / "tree/rocblas/library/TensileLibrary_lazy_gfx1103.dat").is_file()
    assert rec.backend_files == ["libggml-hip.so"] and len(rec.runtime) == 9
    assert rec.runtime[0] == {
        "name": "libamd_comgr.so.3",
        "origin": "toolkit",
        "version": "7.14.0",
        "source": "lib/libamd_comgr.so.3",
        "sha256": hashlib.sha256(b"lib/libamd_comgr.so.3").hexdigest(),
    }
    # the same name, other bytes: the hash moved, refused in one line (the cache holds the good one,
    # so start from an empty cache)
    monkeypatch.setenv("BUNDLEGRAPH_CACHE", str(tmp_path / "cache2"))
    (hand / name).write_bytes(_therock_tar(("gfx1100",)))
    with pytest.raises((ToolkitError, HashMismatch), match="the tarball moved; refused") as ei:
        therock.fetch(p)
    assert "\n" not in str(ei.value)


def test_a_tree_without_the_kernels_of_a_target_or_without_hipblas_is_refused(tmp_path, cache, monkeypatch):
    name = "therock-dist-windows-gfx110X-all-7.14.0.tar.gz"
    blob = _therock_tar(("gfx1100", "gfx1101", "gfx1102"), os_name="windows", drop="bin/hipblas.dll")
    lock = _lock(tmp_path, name, blob)
    hand = tmp_path / "hand"
    hand.mkdir()
    (hand / name).write_bytes(blob)
    monkeypatch.setenv(therock.DIR_VAR, str(hand))
    p = therock.tarball_plan("windows", "gfx110X", "7.14.0", lock)
    with pytest.raises(ToolkitError, match=r"no hipblas\.dll in bin/ \(and 1 more\)"):
        therock.install(p, hip.FAMILIES["gfx110X"])
    probs = therock.layout_problems(therock.prefix_of(p), "windows", hip.FAMILIES["gfx110X"])
    assert probs[-1].endswith("bin/rocblas/library/ has no rocBLAS kernels for gfx1103")


# -- verify: the runtime copy and the code objects ------------------------------------------------------


def test_a_rocm_bundle_without_hipblas_or_a_targets_kernels_fails_verify_by_name(matrix):
    s = matrix.legs["windows-x64-rocm-gfx120x"]
    pol = policy_from_spec(s, matrix.release, base=matrix.legs["windows-x64-cpu"])
    good = [
        *("llama-server.exe", "llama-quantize.exe", "llama-cli.exe", "llama.dll", "llama-common.dll", "ggml.dll"),
        *("ggml-base.dll", "ggml-cpu-haswell.dll", "mtmd.dll", "llama-server-impl.dll", "llama-quantize-impl.dll"),
        *("ggml-hip.dll", "amdhip64_7.dll", "hipblas.dll", "rocblas.dll", "amd_comgr0705.dll"),
        "rocblas/library/TensileLibrary_lazy_gfx1200.dat",
        "rocblas/library/Kernels.so-000-gfx1201.hsaco",
    ]
    assert missing_required(good, pol.required, fold=True) == []
    bad = [n for n in good if n not in ("hipblas.dll", "rocblas/library/Kernels.so-000-gfx1201.hsaco")]
    assert [(f.file, f.check) for f in missing_required(bad, pol.required, fold=True)] == [
        ("hipblas.dll", "content"),
        ("rocblas/library/*gfx1201*", "content"),
    ]
    assert pol.gfx_targets == ("gfx1200", "gfx1201") and ("gfx_target", "gfx120X") in pol.info_expect
    # legs without [hip] or [macos] keep their verify key's form
    assert "gfx_targets" not in policy_from_spec(matrix.legs["windows-x64-cpu"], matrix.release).to_json()


def test_the_code_object_row_fails_closed_without_an_offload_bundle(matrix):
    """A ggml-hip the reader found no offload bundle in, and a bundle without ggml-hip, each fail
    the row in one line (the real code objects: tests/integration/test_verify_rocm_macos_real.py)."""
    from bundlegraph.backends.hip import verify as hiprows
    from bundlegraph.checks.inspect import FileResult
    from bundlegraph.verification.rows import Subject

    pol = policy_from_spec(matrix.legs["linux-x64-rocm-gfx110x"], matrix.release)
    assert pol.gfx_targets == ("gfx1100", "gfx1101", "gfx1102", "gfx1103") and "gfx_targets" in pol.to_json()
    assert "gfx_targets" not in policy_from_spec(matrix.legs["linux-x64-cpu"], matrix.release).to_json()
    fails, facts = hiprows.hip_code(
        Subject.of({"libggml-hip.so": FileResult("libggml-hip.so", "elf")}, ("libggml-hip.so",)), pol
    )
    assert [f.line() for f in fails] == [
        "libggml-hip.so: hip-code: no HIP offload bundle (.hip_fatbin/.hip_fat), promised gfx1100,gfx1101,gfx1102,gfx1103"
    ]
    assert facts == {"offload": {}}
    fails, _ = hiprows.hip_code(Subject.of({}, ()), pol)
    assert [f.reason for f in fails] == [
        "the leg promises gfx targets gfx1100,gfx1101,gfx1102,gfx1103 but the bundle has no libggml-hip.so"
    ]


# -- selection and coverage for AMD and Apple hosts --------------------------------------------------------


def manifest_of(matrix, legs) -> tuple[Manifest, ShaIndex]:
    """Our manifest's artifacts for ``legs``, as package writes them (from each spec)."""
    tag = matrix.release.tag
    arts = []
    for leg in legs:
        s = matrix.legs[leg]
        arts.append(
            ManifestArtifact(
                asset_name=s.bundle_name(tag),
                install_kind=s.install_kind,
                os=s.os,
                arch=s.arch,
                bundle_profile=s.profile_name,
                runtime_line=None,
                coverage_class=s.profile.klass,
                supported_sms=[],
                min_sm=None,
                max_sm=None,
                rank=s.profile.rank,
                toolkit_version=None,
                ggml_backend_dl=bool(s.cmake_bool("GGML_BACKEND_DL", False)),
                gfx_target=s.hip.gfx_target if s.hip else None,
                mapped_targets=list(s.hip.mapped_targets) if s.hip else None,
            )
        )
    arts.sort(key=lambda a: a.asset_name)
    head = {"source_repo": "ggml-org/llama.cpp", "source_commit": COMMIT, "upstream_tag": "b11642", "release_tag": tag}
    idx = ShaIndex(
        **head, artifacts={a.asset_name: IndexEntry(kind="bundle", sha256="0" * 64, source_commit=COMMIT) for a in arts}
    )
    return Manifest(**head, artifacts=arts), idx


def promising(matrix, legs):
    """``matrix`` with ``legs`` promised (the release they are written for, once pinned and built)."""
    from dataclasses import replace

    return replace(matrix, legs={k: replace(s, promised=True) if k in legs else s for k, s in matrix.legs.items()})


def test_amd_and_apple_hosts_get_their_bundles_and_coverage_holds(matrix):
    legs = [l for l, s in matrix.legs.items() if s.backend == "hip" or s.os == "macos"]
    m, idx = manifest_of(matrix, legs)
    tag = matrix.release.tag
    assert select(Host("linux", "x64", gfx="gfx1101"), m, idx).choice == f"app-{tag}-linux-x64-rocm-gfx110x.tar.gz"
    assert select(Host("windows", "x64", gfx="gfx1201"), m, idx).choice == f"app-{tag}-windows-x64-rocm-gfx120x.zip"
    assert select(Host("linux", "x64", gfx="gfx90a"), m, idx).install_kind == "linux-rocm"
    uncovered = select(Host("linux", "x64", gfx="gfx1033"), m, idx)
    assert uncovered.choice is None and uncovered.asked == ["linux-rocm"]  # a source build, never CPU
    assert select(Host("macos", "arm64"), m, idx).choice == f"llama-{tag}-bin-macos-arm64.tar.gz"
    assert select(Host("macos", "x64"), m, idx).choice == f"llama-{tag}-bin-macos-x64.tar.gz"
    # an AMD GPU where the installer has no ROCm kind asks as a host without a GPU bundle
    assert select(Host("macos", "arm64", gfx="gfx1100"), m, idx).asked == ["macos-arm64"]
    assert select(Host("linux", "arm64", gfx="gfx1100"), m, idx).asked == ["linux-arm64"]
    assert select(Host("macos", "arm64", sms=(90,), driver_cuda=(13, 0)), m, idx).asked == ["macos-arm64"]
    served = {r.host.gfx: r.choice for r in coverage(m, idx) if r.host.gfx and r.host.os == "linux"}
    assert set(served) == {t for fam in hip.FAMILIES.values() for t in fam} and all(served.values())
    # the ROCm and macOS legs are not promised yet (each spec says why): as a release that promises them
    assert not [h for h, _, _ in claimed(matrix) if h.gfx or h.os == "macos"]
    matrix = promising(matrix, legs)
    assert len([h for h, _, _ in claimed(matrix) if h.gfx]) == 2 * 14
    assert coverage_problems(matrix, m, idx, legs=set(legs)) == []
    # a dropped family is named by the gate, with why each other bundle does not serve it
    m2, idx2 = manifest_of(matrix, [l for l in legs if l != "linux-x64-rocm-gfx908"])
    (prob,) = coverage_problems(matrix, m2, idx2, legs=set(legs))
    assert prob.startswith(
        "linux x64 (AMD gfx908 with ROCm): gets no bundle, though linux-x64-rocm-gfx908 claims it "
        f"(app-{tag}-linux-x64-rocm-gfx103x.tar.gz: gfx908 is not in mapped_targets"
    )


# -- under act and in the release: the generated jobs --------------------------------------------


def test_the_release_matrix_emits_the_macos_and_rocm_jobs(matrix):
    """act cannot start macOS or Windows runners, so the jobs ``bundlegraph matrix`` hands
    release.yml are checked here: the macOS legs build, package and smoke on GitHub's macOS
    runners as base jobs; each ROCm leg compiles on its OS's runner and merges into its CPU base;
    every timeout fits GitHub's job limit with the derived cost records."""
    import argparse

    from bundlegraph.commands.matrix import job_matrices

    jobs = job_matrices(argparse.Namespace(bundles=ROOT / "bundles", only_profile=None, only_leg=None))
    base = {r["id"]: r for r in jobs["base"]["include"]}
    assert (base["macos-arm64"]["runner"], base["macos-x64"]["runner"]) == ("macos-26", "macos-15-intel")
    assert base["macos-arm64"]["role"] == "base" and base["macos-arm64"]["merge_base"] is None
    backend = {r["id"]: r for r in jobs["backend"]["include"]}
    compile_ = {r["id"]: r for r in jobs["compile"]["include"]}
    for fam in hip.FAMILIES:
        for os_name, runner in (("linux", "ubuntu-24.04"), ("windows", "windows-2022")):
            leg = f"{os_name}-x64-rocm-{fam.lower()}"
            assert (backend[leg]["runner"], backend[leg]["merge_base"]) == (runner, f"{os_name}-x64-cpu"), leg
            assert compile_[leg]["runner"] == runner and 0 < compile_[leg]["timeout"] <= 360
    assert all(0 < r["timeout"] <= 360 for j in jobs.values() for r in j["include"])
    # none of them is promised yet: each job runs with continue-on-error (release.yml's
    # `continue-on-error: ${{ matrix.optional == true }}`), so it never stops the promised legs
    ours = [r for j in jobs.values() for r in j["include"] if "-rocm-" in r["id"] or r["id"].startswith("macos-")]
    assert len({r["id"] for r in ours}) == 16 and all(r["optional"] is True for r in ours)
    assert not any(r.get("optional") for j in jobs.values() for r in j["include"] if r["id"] == "linux-x64-cpu")
    # the Linux ROCm legs' runners install no compiler through apt; macOS runners none (Xcode is there)
    # (no compiler: it is the pinned [compiler], issue 50)
    assert backend["linux-x64-rocm-gfx110x"]["packages"] == "" and base["macos-arm64"]["packages"] == ""


def test_a_mach_o_file_is_never_passed_unread():
    """A Mach-O file (its magic, whatever its name) is refused in a Linux bundle; in a macOS bundle
    a damaged one is a parse failure, never skipped, and a .dylib that is no Mach-O too."""
    from bundlegraph.checks.inspect import inspect_file

    macho = b"\xcf\xfa\xed\xfe" + bytes(60)
    r = inspect_file("libllama.dylib", macho, os_name="linux", arch="x64")
    assert (r.format, [(f.check, f.reason) for f in r.failures]) == (
        "macho",
        [("machine", "a Mach-O file in a Linux bundle")],
    )
    r = inspect_file("libggml-metal.so", macho, os_name="macos", arch="arm64")
    assert r.format == "macho" and [f.check for f in r.failures] == ["parse"] and r.macho is None
    r = inspect_file("libllama.dylib", b"not mach-o at all", os_name="macos", arch="arm64")
    assert [f.line() for f in r.failures] == [
        "libllama.dylib: parse: named like a Mach-O library but not a Mach-O file"
    ]
    assert inspect_file("README.md", b"# llama.cpp\n", os_name="macos", arch="arm64").failures == []


def test_the_info_file_records_the_gfx_targets_and_the_pinned_sdk_and_other_bundles_keep_their_form(matrix, tmp_path):
    from bundlegraph.pipeline.package import PackageInputs, build_info
    from bundlegraph.schemas.manifest import VerifyFindings

    def info(leg, sdk=None):
        inp = PackageInputs(
            spec=matrix.legs[leg],
            release=matrix.release,
            tree=tmp_path,
            dest=tmp_path / matrix.legs[leg].bundle_name(matrix.release.tag),
            source_tree=tmp_path,
            source_commit=COMMIT,
            source_digest="0" * 64,
            commit_epoch=None,
            sdk=sdk,
        )
        return build_info(inp, "not-required", [], VerifyFindings(machine="x64", passed=True)).model_dump(mode="json")

    s = matrix.legs["linux-x64-rocm-gfx110x"]
    receipt = therock.tarball_plan("linux", "gfx110X", "7.14.0", ROOT / "bundles" / s.hip.sdk.lock).receipt()
    rocm = info("linux-x64-rocm-gfx110x", receipt)
    assert (rocm["gfx_target"], rocm["mapped_targets"]) == ("gfx110X", ["gfx1100", "gfx1101", "gfx1102", "gfx1103"])
    assert rocm["sdk"] == {
        "source": "therock",
        "version": "7.14.0",
        "tarball": "therock-dist-linux-gfx110X-all-7.14.0.tar.gz",
        "sha256": "e78a4445c52d879fbd0765f24e7fa9df1e262a8baf681b118a13e75340120127",
    }
    art = ManifestArtifact.from_info(BundleInfo(**rocm))
    assert (art.gfx_target, art.mapped_targets) == ("gfx110X", ["gfx1100", "gfx1101", "gfx1102", "gfx1103"])
    cpu = info("linux-x64-cpu")
    assert not {"gfx_target", "mapped_targets", "sdk"} & set(cpu)
    assert not {"gfx_target", "mapped_targets"} & set(
        ManifestArtifact.from_info(BundleInfo(**cpu)).model_dump(mode="json")
    )


def test_select_and_coverage_commands_for_amd_and_apple_hosts(matrix, tmp_path, capsys):
    from bundlegraph.cli import main
    from bundlegraph.schemas.asset_names import INDEX_NAME, MANIFEST_NAME

    legs = [l for l, s in matrix.legs.items() if s.backend == "hip" or s.os == "macos"]
    m, idx = manifest_of(matrix, legs)
    (tmp_path / MANIFEST_NAME).write_text(m.model_dump_json())
    (tmp_path / INDEX_NAME).write_text(idx.model_dump_json())
    tag = matrix.release.tag
    assert main(["select", "--os", "windows", "--arch", "x64", "--gfx", "gfx1034", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("windows x64 (AMD gfx1034 with ROCm) asks for windows-rocm\n")
    assert f"  gets: app-{tag}-windows-x64-rocm-gfx103x.zip (windows-rocm; " in out
    assert main(["select", "--os", "linux", "--arch", "x64", "--gfx", "gfx1033", str(tmp_path)]) == 1
    capsys.readouterr()
    assert main(["select", "--os", "linux", "--arch", "x64", "--gfx", "gfx 11", str(tmp_path)]) == 2
    assert capsys.readouterr().err.strip() == (
        "bundlegraph: --gfx 'gfx 11': expected a gfx target as rocminfo reports it (gfx1100, gfx90a)"
    )
    assert main(["select", "--os", "macos", "--arch", "arm64", str(tmp_path)]) == 0
    assert f"gets: llama-{tag}-bin-macos-arm64.tar.gz (macos-arm64; " in capsys.readouterr().out
    assert main(["coverage", "--summary", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert (
        f"| linux-rocm | AMD (ROCm) | gfx1100,gfx1101,gfx1102,gfx1103 | `app-{tag}-linux-x64-rocm-gfx110x.tar.gz` | - | - |"
        in out
    )
    assert f"| macos-x64 | no GPU | - | `llama-{tag}-bin-macos-x64.tar.gz` | - | - |" in out


def test_planned_coverage_with_the_legs_not_promised_serves_every_amd_target_and_both_macs(capsys):
    """``coverage --planned`` asks the promised release (no ROCm or macOS bundle yet: each such host
    class gets nothing); ``--with-unpromised`` the release once they ship: every gfx target of the
    fork's families on both OSes, and both Macs, get their bundle."""
    from bundlegraph.cli import main

    assert main(["--bundles", str(ROOT / "bundles"), "coverage", "--planned", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert [r for r in rows if r.get("gfx") or r["os"] == "macos"] and not any(
        r["choice"] for r in rows if r.get("gfx") or r["os"] == "macos"
    )
    assert main(["--bundles", str(ROOT / "bundles"), "coverage", "--planned", "--with-unpromised", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    amd = {(r["os"], r["gfx"]): r["choice"] for r in rows if r.get("gfx")}
    targets = {t for fam in hip.FAMILIES.values() for t in fam}
    assert set(amd) == {(o, t) for o in ("linux", "windows") for t in targets} and all(amd.values())
    assert amd[("windows", "gfx1032")].endswith("windows-x64-rocm-gfx103x.zip")
    # a ROCm bundle's size is unknown (its TheRock runtime was never measured), not the CPU bundle's
    assert all(r["download_mb"] is None for r in rows if r.get("gfx"))
    macs = {r["arch"]: r["choice"] for r in rows if r["os"] == "macos"}
    assert macs == {"arm64": "llama-b11642-bin-macos-arm64.tar.gz", "x64": "llama-b11642-bin-macos-x64.tar.gz"}
    assert main(["--bundles", str(ROOT / "bundles"), "coverage", "--with-unpromised"]) == 2
    assert "--with-unpromised goes with --planned" in capsys.readouterr().err


def test_the_hip_and_metal_smoke_sides_say_where_their_gpu_steps_run(tmp_path):
    """A ROCm bundle's GPU steps run only where the amdgpu driver's /dev/kfd is (no hosted runner);
    a Metal bundle's only on an Apple silicon Mac (the macos-26 runner): elsewhere each says why,
    and the ROCm legs' specs waive the smoke with the same reason."""
    from bundlegraph.backends.hip import smoke as hip_side
    from bundlegraph.backends.metal import smoke as metal_side

    none = hip_side.probe(tmp_path / "kfd")
    assert none.kfd is None and none.key() == {"kfd": None}
    d = hip_side.decide("linux", "x64", ("linux", "x64"), none)
    assert not d.run and d.reason.startswith("no AMD GPU here") and "verify stands in" in d.reason
    (tmp_path / "kfd").write_text("")
    here = hip_side.probe(tmp_path / "kfd")
    assert hip_side.decide("linux", "x64", ("linux", "x64"), here).run
    assert not hip_side.decide("windows", "x64", ("linux", "x64"), here).run
    assert hip_side.DEV == "ROCm0" and hip_side.BACKEND == "hip"

    linux = metal_side.probe(("linux", "x64"))
    d = metal_side.decide("macos", "arm64", ("linux", "x64"), linux)
    assert not d.run and d.reason == "the bundle is macos arm64, this host is linux x64"
    mac = metal_side.probe(("macos", "arm64"))
    assert metal_side.decide("macos", "arm64", ("macos", "arm64"), mac).run
    intel = metal_side.probe(("macos", "x64"))
    assert not metal_side.decide("macos", "x64", ("macos", "x64"), intel).run
    assert metal_side.DEV == "MTL0"
    for leg, s in load_matrix(ROOT / "bundles").legs.items():
        if s.backend == "hip":
            assert s.smoke is not None and "no hosted runner has an AMD GPU" in s.smoke.waived, leg


def test_the_devices_step_knows_each_gpu_sides_device_by_the_name_ggml_prints():
    """``llama-cli --list-devices`` prints ``  <name>: <description> (<total> MiB, <free> MiB free)``
    (llama.cpp ``common/arg.cpp``) with ggml's device names: ``ROCm0`` (``GGML_CUDA_NAME`` of a HIP
    build, ``ggml/include/ggml-cuda.h``) and ``MTL0`` (``ggml-metal-device.m``), not the backends'
    titles; the judge looks for that name on every side and says the title when none is listed."""
    from bundlegraph.pipeline.smoke.gpu import device_name
    from bundlegraph.pipeline.smoke.judges import judge_devices
    from bundlegraph.pipeline.smoke.sides import sides
    from bundlegraph.schemas.backend import backend

    SIDES = sides()

    printed = {
        "cuda": "CUDA0: NVIDIA H100 80GB HBM3 (81090 MiB, 80575 MiB free)",
        "vulkan": "Vulkan0: llvmpipe (LLVM 15.0.6, 256 bits) (2048 MiB, 2048 MiB free)",
        "hip": "ROCm0: AMD Radeon RX 7900 XTX (24560 MiB, 24472 MiB free)",
        "metal": "MTL0: Apple M2 Pro (21845 MiB, 21845 MiB free)",
        # ggml-opencl names its one device GPUOpenCL (ggml_backend_opencl_device_get_name)
        "opencl": "GPUOpenCL: QUALCOMM Adreno(TM) 830 (0 MiB, 0 MiB free)",
    }
    sides = {name: side for name, side in SIDES.items() if side is not None}
    # the five GPU sides ggml's names are pinned for; a backend added later brings its own
    assert set(printed) <= set(sides)
    for name, side in ((n, sides[n]) for n in printed):
        title = backend(name).TITLE
        assert judge_devices(f"Available devices:\n  {printed[name]}\n", device_name(side), title) is None, name
        assert judge_devices("Available devices:\n  (none)\n", device_name(side), title) == (
            f"no {device_name(side)}<n> device listed: the {title} backend did not load or sees no GPU "
            "(a fallback to the CPU)"
        )
    # the backends' titles are not what ggml prints
    assert judge_devices(f"Available devices:\n  {printed['metal']}\n", backend("metal").TITLE) is not None


def test_the_backends_step_applies_only_where_ggml_loads_the_backends(tmp_path):
    """The macOS legs build without GGML_BACKEND_DL (the installer asks for ``libggml-cpu.dylib``),
    so ggml logs no backend it loads and the ``backends`` step is not applicable there (recorded
    with the reason); a bundle built with it still runs the step once the model is made."""
    import types

    from bundlegraph.pipeline.smoke.host import LINKED, STEPS
    from bundlegraph.pipeline.smoke.plan import VOCABS
    from bundlegraph.pipeline.smoke.steps import SmokeRun

    assert not any(matrix_leg.cmake_bool("GGML_BACKEND_DL", False) for matrix_leg in _macos_legs())
    src = tmp_path / "llama.cpp"
    (src / "gguf-py").mkdir(parents=True)
    (src / "models").mkdir()
    (src / "models" / VOCABS[0]).write_bytes(b"vocab")
    plan = types.SimpleNamespace(source_tree=src)
    (gate,) = [s.gate for s in STEPS if s.name == "backends"]
    run = SmokeRun(plan, None, tmp_path, tmp_path / "b", tmp_path / "m.gguf", "1", {})  # type: ignore[arg-type]
    run.backend_dl = False
    assert gate(run) == ("not applicable", LINKED)
    run.backend_dl = True
    assert gate(run) == ("", "")  # waits for the model
    run.passed.add("model")
    assert gate(run) is None
    # the judge itself knows macOS (no CUDA driver there): a missing CPU backend is named, never a KeyError
    from bundlegraph.pipeline.smoke.judges import judge_backends

    assert judge_backends("", 0, gpu_library=None, os_name="macos")[0] == (
        "libggml-cpu*.dylib: no CPU backend was loaded (none beside the programs, or none that loads)"
    )


def _macos_legs():
    return [s for s in load_matrix(ROOT / "bundles").legs.values() if s.os == "macos"]


def test_the_hip_compiler_is_the_machine_files_binary_under_the_sdk_first(matrix, tmp_path, monkeypatch):
    """``[binaries] hip`` resolves under the leg's TheRock prefix first, then on PATH; a toolchain
    without it names the entry; the toolchain file points CMake's HIP language and find_package
    at the prefix."""
    from bundlegraph.backends.hip.sdk_ref import HipSdk
    from bundlegraph.core.errors import ToolMissing
    from bundlegraph.toolchains import get

    monkeypatch.setenv("BUNDLEGRAPH_CACHE", str(tmp_path / "cache"))
    spec = matrix.legs["linux-x64-rocm-gfx110x"]
    sdk = therock.ref(spec, ROOT / "bundles", "linux-x64-rocm-gfx110x.toml")
    assert isinstance(sdk, HipSdk) and sdk.task.startswith("toolkit:therock-7.14.0-linux-gfx110X-all-")
    assert sdk.targets == ("gfx1100", "gfx1101", "gfx1102", "gfx1103") and sdk.info()[
        "tarball"
    ] == therock.tarball_name("linux", "gfx110X", "7.14.0")
    tc = get(spec.toolchain)
    with pytest.raises(
        ToolMissing, match=r"hip 'lib/llvm/bin/clang\+\+' \(\[binaries\] hip of rocm-gcc-linux-x86_64.toml\)"
    ):
        tc.gpu_binaries(sdk, {"PATH": str(tmp_path / "empty")})
    # (resolved under the prefix: the SDK task's test, tests/integration/test_rocm_sdk_graph.py)
    clang = sdk.prefix / "lib/llvm/bin/clang++"
    text = tc.render(
        "linux-x64-rocm-gfx110x", sdk, {"c": "/usr/bin/gcc", "cxx": "/usr/bin/g++", "hip": clang.as_posix()}
    )
    assert f'set( CMAKE_HIP_COMPILER "{clang.as_posix()}" CACHE FILEPATH "" )' in text
    assert f'set( CMAKE_PREFIX_PATH "{sdk.prefix.as_posix()}" CACHE PATH "" )' in text
    # the HIP language takes neither C nor C++ flags: its compiles get the prefix maps of their own
    from bundlegraph.toolchains.prefix_maps import PrefixMaps

    maps = PrefixMaps(source=Path("/c/src"), build=Path("/w/b"), work=Path("/w"), cache=Path("/c"))
    mapped = tc.render("linux-x64-rocm-gfx110x", sdk, {"c": "gcc", "cxx": "g++", "hip": clang.as_posix()}, maps)
    (hip_flags,) = [l for l in mapped.splitlines() if l.startswith("set( CMAKE_HIP_FLAGS_INIT ")]
    assert "-ffile-prefix-map=/c/src=llama.cpp" in hip_flags and "-ffile-prefix-map=/c=cache" in hip_flags
    assert "CMAKE_HIP_FLAGS_INIT" not in text  # no maps, no line
    with pytest.raises(ToolMissing, match=r"names no \[binaries\] hip; a leg of the HIP SDK needs it"):
        get("gcc-linux-x86_64").gpu_binaries(sdk, {})
