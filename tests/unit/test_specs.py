"""Spec validation: the real matrix loads, and every rule refuses a bad spec with a message
naming the file and the TOML key, all problems reported at once."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from bundlegraph.core.errors import SpecError
from bundlegraph.schemas.archs import arch_supported, parse_arch
from bundlegraph.specs.derive import fill
from bundlegraph.specs.loader import load_matrix

ROOT = Path(__file__).resolve().parents[2]


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new, 1))


def problems(bundles: Path) -> list[str]:
    with pytest.raises(SpecError) as ei:
        load_matrix(bundles)
    return ei.value.problems


def test_real_matrix_loads_and_everything_is_promised():
    from bundlegraph.backends import hip

    m = load_matrix(ROOT / "bundles")
    assert set(m.legs) == {
        "windows-arm64-cuda13-portable",
        "windows-arm64-cpu",
        "windows-x64-cuda13-portable",
        "windows-x64-cpu",
        "linux-x64-cpu",
        "linux-x64-cuda13-portable",
        "linux-arm64-cpu",
        "linux-arm64-cuda13-portable",
        "linux-arm64-cuda13-blackwell",
        "linux-x64-vulkan",
        "linux-arm64-vulkan",
        "windows-x64-vulkan",
        # issue 43: the fork's x64 CUDA classes (tests/unit/test_cuda_legs.py checks them)
        *(
            f"{os_}-x64-{p}"
            for os_ in ("linux", "windows")
            for p in (
                "cuda12-legacy",
                "cuda12-older",
                "cuda12-newer",
                "cuda12-portable",
                "cuda13-older",
                "cuda13-newer",
            )
        ),
        "macos-arm64",
        "macos-x64",
        *(f"{o}-x64-rocm-{fam.lower()}" for o in ("linux", "windows") for fam in hip.FAMILIES),
        "linux-x64-opencl",  # issue 53: the backend added as one folder
    }
    # the Vulkan legs wait for an SDK their runners can install, the ROCm legs for pinned TheRock
    # tarballs, the macOS legs for a first release run, OpenCL for an install kind the installer
    # asks for (each spec says why)
    waiting = ("-vulkan", "-rocm-", "macos-", "-opencl")
    assert m.promised == [leg for leg in m.legs if not any(w in leg for w in waiting)]
    assert len(m.promised) == 24 - 3 and len(m.legs) == 24 + 17
    assert m.release.default_legs == ["linux-arm64-cpu", "linux-arm64-cuda13-blackwell"]
    w = m.legs["windows-arm64-cuda13-portable"]
    assert (w.cuda.cmake_archs, w.merge.base, w.install_kind, w.signing) == (
        ["120", "121"],
        "windows-arm64-cpu",
        "windows-arm64-cuda",
        "required",
    )
    assert (w.profile.line, w.profile.klass, w.profile.rank) == ("cuda13", "portable", 60)
    assert [r.name for r in w.runtime.ships] == ["cudart64_13.dll", "cublas64_13.dll", "cublasLt64_13.dll"]
    assert [p.name for p in w.runtime.paired] == ["cudart-llama-bin-win-cuda-13.4-arm64.zip"]
    b = m.legs["linux-arm64-cuda13-blackwell"]
    assert (b.cuda.cmake_archs, b.profile.klass, b.profile.rank) == (["120", "121"], "blackwell", 55)
    assert [(a.sm, a.feature, a.sass, a.ptx) for a in b.cuda.archs] == [(120, "", True, True), (121, "", True, True)]


def test_bundle_name_is_derived_per_os():
    m = load_matrix(ROOT / "bundles")
    tag = m.release.tag
    assert m.legs["windows-arm64-cuda13-portable"].bundle_name(tag) == f"app-{tag}-windows-arm64-cuda13-portable.zip"
    assert m.legs["linux-arm64-cuda13-blackwell"].bundle_name(tag) == f"app-{tag}-linux-arm64-cuda13-blackwell.tar.gz"


def test_misspelled_key_is_refused_with_did_you_mean(bundles_copy):
    f = bundles_copy / "linux-arm64-cpu.toml"
    edit(f, 'backend = "cpu"\n', 'backend = "cpu"\ninstal_kind = "linux-arm64"\n')
    ps = problems(bundles_copy)
    assert any(p.startswith(f"{f}: instal_kind: unknown key (did you mean 'install_kind'?)") for p in ps), ps
    assert not any("install_kind: required key is missing" in p for p in ps), ps  # derived: specs/derive.py


def test_misspelled_nested_key(bundles_copy):
    f = bundles_copy / "windows-arm64-cuda13-portable.toml"
    edit(f, "target_platform =", "target_platfrom =")
    ps = problems(bundles_copy)
    assert any(f"{f}: cuda.toolkit.target_platfrom: unknown key (did you mean 'target_platform'?)" in p for p in ps), ps


def test_arch_outside_cuda_range_names_file_and_key(bundles_copy):
    f = bundles_copy / "linux-arm64-cuda13-blackwell.toml"
    edit(f, 'archs = ["120", "121"]', 'archs = ["61", "120"]')
    ps = problems(bundles_copy)
    assert ps == [f"{f}: cuda.archs[0]: '61': sm_61 was dropped after CUDA 12.9, the leg uses CUDA 13.5"]


def test_arch_newer_than_toolkit(bundles_copy):
    f = bundles_copy / "linux-arm64-cuda13-blackwell.toml"
    edit(f, 'version = "13.5"', 'version = "12.6"')
    edit(f, 'line = "cuda13"', 'line = "cuda12"')
    ps = problems(bundles_copy)
    assert f"{f}: cuda.archs[0]: '120': sm_120 needs CUDA >= 12.8, the leg uses CUDA 12.6" in ps
    assert f"{f}: cuda.archs[1]: '121': sm_121 needs CUDA >= 12.9, the leg uses CUDA 12.6" in ps


def test_windows_arm64_cuda_needs_13_4(bundles_copy):
    f = bundles_copy / "windows-arm64-cuda13-portable.toml"
    edit(f, 'version = "13.4"', 'version = "13.0"')
    ps = problems(bundles_copy)
    assert any(p.startswith(f"{f}: cuda.version: a Windows ARM64 CUDA leg needs CUDA >= 13.4") for p in ps), ps


def test_cpu_off_needs_merge_base(bundles_copy):
    f = bundles_copy / "linux-arm64-cuda13-blackwell.toml"
    edit(f, '[merge]\nbase = "linux-arm64-cpu"\n', "")
    ps = problems(bundles_copy)
    assert any(p.startswith(f"{f}: cmake.GGML_CPU: OFF builds no CPU backend") for p in ps), ps


def test_merge_base_must_be_cpu_leg_of_same_os_arch(bundles_copy):
    f = bundles_copy / "linux-arm64-cuda13-blackwell.toml"
    edit(f, 'base = "linux-arm64-cpu"', 'base = "linux-x64-cpu"')
    ps = problems(bundles_copy)
    assert any(p.startswith(f"{f}: merge.base: 'linux-x64-cpu' is linux-x64 backend 'cpu'") for p in ps), ps


def test_merge_needs_backend_dl_on_both_legs(bundles_copy):
    base = bundles_copy / "linux-arm64-cpu.toml"
    edit(base, "GGML_BACKEND_DL = true", "GGML_BACKEND_DL = false")
    ps = problems(bundles_copy)
    # both legs merging into it are named, each with the base as the culprit
    for leg in ("linux-arm64-cuda13-blackwell", "linux-arm64-cuda13-portable"):
        f = bundles_copy / f"{leg}.toml"
        assert (
            f"{f}: cmake.GGML_BACKEND_DL: a merge needs GGML_BACKEND_DL=ON on both legs; base 'linux-arm64-cpu' (linux-arm64-cpu.toml) does not set it"
            in ps
        )


def test_install_kind_profile_pair_unique(bundles_copy):
    f = bundles_copy / "linux-arm64-cuda13-blackwell.toml"
    edit(f, 'name = "cuda13-blackwell"', 'name = "cuda13-portable"')
    ps = problems(bundles_copy)
    assert any("install_kind: ('linux-arm64-cuda', profile 'cuda13-portable') is also used by" in p for p in ps), ps


def test_all_errors_reported_at_once_across_files(bundles_copy):
    edit(bundles_copy / "linux-arm64-cpu.toml", "runner =", "runer =")
    edit(bundles_copy / "windows-x64-cuda13-portable.toml", '"75", ', '"61", ')
    edit(bundles_copy / "release.toml", 'tag = "b11642"', 'tag = "v1.0"')
    ps = problems(bundles_copy)
    files = {p.split(": ", 1)[0] for p in ps}
    assert {
        str(bundles_copy / n) for n in ("linux-arm64-cpu.toml", "windows-x64-cuda13-portable.toml", "release.toml")
    } <= files
    assert any(
        re.match(rf"{re.escape(str(bundles_copy / 'release.toml'))}: tag: String should match pattern", p) for p in ps
    ), ps


def test_default_legs_must_exist(bundles_copy):
    edit(bundles_copy / "release.toml", '"linux-arm64-cpu", "linux-arm64', '"linux-arm64-cpux", "linux-arm64')
    ps = problems(bundles_copy)
    assert (
        f"{bundles_copy / 'release.toml'}: default_legs[0]: no leg 'linux-arm64-cpux' (did you mean 'linux-arm64-cpu'?)"
        in ps
    )


def test_id_must_match_file_name(bundles_copy):
    (bundles_copy / "linux-x64-cpu.toml").rename(bundles_copy / "linux-x64-cpu2.toml")
    ps = problems(bundles_copy)
    assert any("id: 'linux-x64-cpu' must equal the file name stem 'linux-x64-cpu2'" in p for p in ps), ps


def test_unknown_toolchain_suggests(bundles_copy):
    f = bundles_copy / "linux-x64-cpu.toml"
    edit(f, 'toolchain = "gcc-linux-x86_64"', 'toolchain = "gcc-linux-x86-64"')
    ps = problems(bundles_copy)
    assert any(
        p.startswith(f"{f}: toolchain: unknown toolchain 'gcc-linux-x86-64' (did you mean 'gcc-linux-x86_64'?)")
        for p in ps
    ), ps


def test_toml_syntax_error_names_file(bundles_copy):
    f = bundles_copy / "linux-x64-cpu.toml"
    f.write_text(f.read_text() + "\n[broken\n")
    ps = problems(bundles_copy)
    assert any(p.startswith(f"{f}: (TOML syntax):") for p in ps), ps


@pytest.mark.parametrize(
    "text,cmake,sass,ptx",
    [
        ("120", "120", True, True),
        ("120a", "120a", True, True),
        ("86-real", "86-real", True, False),
        ("75-virtual", "75-virtual", False, True),
    ],
)
def test_arch_forms(text, cmake, sass, ptx):
    a = parse_arch(text)
    assert (a.cmake, a.sass, a.ptx) == (cmake, sass, ptx)


def test_arch_table_edges():
    assert arch_supported(parse_arch("101"), (13, 0)) == "sm_101 was dropped after CUDA 12.9, the leg uses CUDA 13.0"
    assert arch_supported(parse_arch("110"), (13, 0)) is None
    assert arch_supported(parse_arch("103"), (12, 8)) == "sm_103 needs CUDA >= 12.9, the leg uses CUDA 12.8"
    with pytest.raises(ValueError, match="not a CUDA arch in CMake form"):
        parse_arch("sm_120")


def test_a_key_typo_does_not_hide_an_impossible_arch_or_confuse_references(bundles_copy):
    f = bundles_copy / "linux-arm64-cuda13-blackwell.toml"
    edit(f, 'backend = "cuda"\n', 'backend = "cuda"\ninstal_kind = "linux-arm64-cuda"\n')
    edit(f, 'archs = ["120", "121"]', 'archs = ["61", "121"]')
    ps = problems(bundles_copy)
    assert f"{f}: cuda.archs[0]: '61': sm_61 was dropped after CUDA 12.9, the leg uses CUDA 13.5" in ps
    assert any(p.startswith(f"{f}: instal_kind: unknown key") for p in ps)
    # release.toml's default_legs names this (broken) file's leg: not reported a second time
    assert not any("default_legs" in p for p in ps), ps
    assert not any("Value error" in p for p in ps), ps


# -- the installer contract (bundlegraph.schemas.installer) --------------------------------------


def test_an_install_kind_the_installer_never_asks_for_is_refused(bundles_copy):
    f = bundles_copy / "windows-x64-cpu.toml"
    edit(f, 'backend = "cpu"\n', 'backend = "cpu"\ninstall_kind = "windows-x64-cpu"\n')  # derived unless written
    ps = problems(bundles_copy)
    assert any(
        p.startswith(
            f"{f}: install_kind: 'windows-x64-cpu' is not a kind the installer asks for "
            f"(a windows-x64 cpu leg is 'windows-cpu')"
        )
        and "unsloth==2026.10.9" in p
        for p in ps
    ), ps


def test_an_install_kind_of_another_host_is_refused(bundles_copy):
    f = bundles_copy / "linux-arm64-cuda13-blackwell.toml"
    edit(f, 'backend = "cuda"\n', 'backend = "cuda"\ninstall_kind = "linux-cuda"\n')
    ps = problems(bundles_copy)
    assert (
        f"{f}: install_kind: 'linux-cuda' serves linux-x64 cuda hosts; the leg is linux-arm64 backend 'cuda': "
        f"use 'linux-arm64-cuda'"
    ) in ps


def test_required_must_cover_what_the_installer_requires(bundles_copy):
    f = bundles_copy / "linux-arm64-cpu.toml"
    derived = fill(tomllib.loads(f.read_text()))["required"]  # written, as the derived list less one file
    without = ", ".join(f'"{r}"' for r in derived if r != "libmtmd.so*")
    edit(f, 'backend = "cpu"\n', f'backend = "cpu"\nrequired = [{without}]\n')
    ps = problems(bundles_copy)
    # the CPU leg and both CUDA legs merged into it (the base's list counts for them)
    for leg in ("linux-arm64-cpu", "linux-arm64-cuda13-blackwell", "linux-arm64-cuda13-portable"):
        assert any(p.startswith(f"{bundles_copy / (leg + '.toml')}: required: lacks 'libmtmd.so*'") for p in ps), (
            leg,
            ps,
        )
    w = bundles_copy / "windows-arm64-cuda13-portable.toml"
    edit(
        w,
        'backend = "cuda"\n',
        'backend = "cuda"\nrequired = ["ggml-cuda.dll", "cudart64_*.dll", "cublas64_*.dll", "cublasLt64_13.dll"]\n',
    )
    assert any(
        p.startswith(f"{w}: required: lacks 'cublasLt64_*.dll' (with base 'windows-arm64-cpu')")
        for p in problems(bundles_copy)
    )


def test_the_impl_libraries_are_required_from_the_split_build_on(bundles_copy):
    from bundlegraph.schemas.installer import required_patterns

    assert "libllama-server-impl.so*" in required_patterns("linux-arm64", 9283)
    assert "libllama-server-impl.so*" not in required_patterns("linux-arm64", 9282)
    assert "llama-quantize-impl.dll" in required_patterns("windows-arm64-cuda", None)  # unknown: required


def test_tag_must_start_with_the_upstream_build(bundles_copy):
    rel = bundles_copy / "release.toml"
    edit(rel, 'upstream_tag = "b11642"', 'upstream_tag = "b11643"')
    ps = problems(bundles_copy)
    assert any(p.startswith(f"{rel}: tag: 'b11642' must start with upstream_tag's build 'b11643'") for p in ps), ps


def test_source_stage_refuses_an_upstream_tag_below_the_tool_split(tmp_path):
    """The pinned tree builds llama-server-impl (upstream b9283 on): a release stating an older
    upstream build is refused by the source stage, naming the key."""
    from bundlegraph.core.errors import BundleGraphError
    from bundlegraph.pipeline.source import check_upstream_tag

    rel = load_matrix(ROOT / "bundles").release
    tree = tmp_path / "llama.cpp"
    (tree / "tools" / "server").mkdir(parents=True)
    (tree / "tools" / "server" / "CMakeLists.txt").write_text("set(TARGET llama-server-impl)\nadd_library(${TARGET})\n")
    check_upstream_tag(tree, rel)  # b11642: fine
    old = rel.replace(upstream_tag="b6990", tag="b6990")
    with pytest.raises(
        BundleGraphError,
        match=r"release.toml: upstream_tag: b6990 is below b9283, but the source "
        r"tree already builds llama-server-impl",
    ):
        check_upstream_tag(tree, old)
    (tree / "tools" / "server" / "CMakeLists.txt").write_text("add_executable(llama-server server.cpp)\n")
    check_upstream_tag(tree, old)  # a tree before the split: an old build number is right


def test_a_broken_base_spec_gives_no_follow_on_required_errors(bundles_copy):
    f = bundles_copy / "linux-arm64-cpu.toml"
    edit(f, "toolchain =", "toolchainn =")
    ps = problems(bundles_copy)
    assert all("required: lacks" not in p for p in ps), ps
    assert any(p.startswith(f"{f}: toolchainn: unknown key") for p in ps)


def test_a_misspelt_boolean_in_cmake_is_refused_when_the_specs_load(bundles_copy):
    """CMake reads any text but its own constants as true: "flase" would turn NCCL on (issue 41)."""
    f = bundles_copy / "linux-x64-cuda13-portable.toml"
    edit(f, "GGML_CUDA_NCCL = false", 'GGML_CUDA_NCCL = "flase"')
    edit(f, "LLAMA_CURL = false", 'LLAMA_CURL = "of"')
    edit(f, "GGML_BACKEND_DL = true", 'GGML_BACKEND_DL = "enabled"')
    edit(f, "LLAMA_BUILD_TESTS = false", 'LLAMA_BUILD_TESTS = "nope"')
    edit(f, "GGML_NATIVE = false", 'GGML_NATIVE = false\nGGML_CUDA_FA_ALL_QUANTS = "IGNORE"')
    ps = problems(bundles_copy)
    words = "ON/OFF/TRUE/FALSE/YES/NO/Y/N/1/0"
    for key, value, hint in (
        ("GGML_CUDA_NCCL", "flase", " (did you mean 'FALSE'?)"),
        ("LLAMA_CURL", "of", " (did you mean 'OFF'?)"),
        ("GGML_BACKEND_DL", "enabled", ""),  # an option bundlegraph reads: any text but a boolean word
        ("LLAMA_BUILD_TESTS", "nope", ""),  # issue 51: it passed load and configure as :BOOL=nope (true)
        ("GGML_CUDA_FA_ALL_QUANTS", "IGNORE", ""),  # false to if(), but no boolean word of a BOOL option
    ):
        want = (
            f"{f}: cmake.{key}: {value!r} is not a boolean: a BOOL option takes true or false, or one of CMake's "
            f"boolean words ({words}, any case){hint}; CMake reads other text as true"
        )
        assert want in ps, (want, ps)


@pytest.mark.parametrize("value", ['"ON"', '"off"', '"Yes"', '"n"', '"0"', '"TRUE"', '"y"', "1", "false"])
def test_cmake_boolean_words_and_booleans_pass(bundles_copy, value):
    f = bundles_copy / "linux-x64-cuda13-portable.toml"
    edit(f, "GGML_CUDA_NCCL = false", f"GGML_CUDA_NCCL = {value}")
    load_matrix(bundles_copy)


@pytest.mark.parametrize("value", ['"IGNORE"', '"Foo-NOTFOUND"', '"ON"'])
def test_cmake_constants_pass_for_a_key_not_known_as_bool(bundles_copy, value):
    """A key the load does not know as BOOL: CMake's constants pass to configure's check, which
    refuses what the configured tree declares BOOL (pipeline.compile.cmake_keys.judge)."""
    f = bundles_copy / "linux-x64-cuda13-portable.toml"
    edit(f, "GGML_CUDA_NCCL = false", f"GGML_CUDA_NCCL = false\nGGML_CUDA_SOMETHING_NEW = {value}")
    load_matrix(bundles_copy)


@pytest.mark.parametrize("value", ['"none"', '"speed"', '"native"', '"128"', "64"])
def test_other_text_for_other_keys_passes(bundles_copy, value):
    """A STRING option's value (ggml's GGML_CUDA_COMPRESSION_MODE = "none") is not a boolean."""
    f = bundles_copy / "linux-x64-cuda13-portable.toml"
    edit(f, "GGML_CUDA_NCCL = false", f"GGML_CUDA_NCCL = false\nGGML_CUDA_COMPRESSION_MODE = {value}")
    load_matrix(bundles_copy)


def test_the_one_edit_rule():
    from bundlegraph.schemas.cmake_rules import _one_edit

    for typo, word in (("FLASE", "FALSE"), ("OF", "OFF"), ("TURE", "TRUE"), ("YSE", "YES"), ("OFFF", "OFF")):
        assert _one_edit(typo, word), typo
    for other, word in (("NONE", "NO"), ("NONE", "ON"), ("SPEED", "YES"), ("FALSE", "FALSE"), ("FSALE", "FALSE")):
        assert not _one_edit(other, word), other
