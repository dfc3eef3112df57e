"""configure/build plans of the real bundles (no process runs): golden files for the Windows
ARM64 legs, host-mismatch refusal, cache entries, the plan command output."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import pytest

from bundlegraph.core.errors import HostMismatch, SpecError
from bundlegraph.graph.context import Filters, load_graph
from bundlegraph.pipeline.build import plan_build, target_filter
from bundlegraph.pipeline.configure import plan_configure, run_configure
from bundlegraph.specs.loader import load_matrix
from bundlegraph.specs.validation import validate_leg

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "data" / "golden"


def _ctx(bundles: Path = ROOT / "bundles"):
    return load_graph(bundles, Filters()).ctx


def golden_text(ctx, leg: str) -> str:
    """Toolchain file + configure and build argv (one argument per line) with machine-specific
    paths replaced by placeholders, newlines normalised."""
    p = plan_configure(ctx, leg)
    b = plan_build(ctx, leg)
    text = (
        f"# toolchain file {leg}\n{p.toolchain_text}\n# configure\n"
        + "\n".join(p.argv)
        + "\n# build\n"
        + "\n".join([*b.argv, "-j", "<N>"])
        + "\n"
    )
    subs = [(p.source_tree.as_posix(), "<SOURCE>"), (str(Path(sys.executable).parent.as_posix()), "<BIN>")]
    if p.backend == "cuda" and p.sdk is not None:
        subs.append((p.sdk.root, "<CUDA_ROOT>"))
    subs.append((Path(os.environ["BUNDLEGRAPH_WORKDIR"]).as_posix(), "<WORKDIR>"))
    subs.append((ctx.cache.as_posix(), "<CACHE>"))
    # cl.exe's prefix maps spell each root with backslashes (escaped once more in CMake text)
    subs = [(a.replace("/", "\\\\"), b_) for a, b_ in subs] + subs
    for a, b_ in subs:
        text = text.replace(a, b_)
    text = text.replace("<BIN>/cmake.exe", "<BIN>/cmake").replace("<BIN>/ninja.exe", "<BIN>/ninja")
    # a flag naming a root that holds a space is quoted (prefix_maps.flag_text, tested on its own):
    # unquoted here, so that the golden does not depend on how the temp or cache folder is spelt
    text = re.sub(r'\\"(\S*<(?:SOURCE|CUDA_ROOT|WORKDIR|CACHE|BIN)>\S*?)\\"', r"\1", text)
    return text.replace("\r\n", "\n")


@pytest.mark.parametrize("leg", ["windows-arm64-cuda13-portable", "windows-arm64-cpu"])
def test_windows_arm64_golden(workdir, leg):
    got = golden_text(_ctx(), leg)
    f = GOLDEN / f"{leg}.txt"
    if os.environ.get("BUNDLEGRAPH_EXTRA_UPDATE_GOLDEN") == "1":
        f.write_text(got, encoding="utf-8", newline="\n")
    want = f.read_text(encoding="utf-8").replace("\r\n", "\n")
    assert got.splitlines() == want.splitlines()


def test_windows_cuda_toolchain_matches_upstream_settings(workdir):
    """Every setting of llama.cpp's cmake/arm64-windows-msvc-cuda.cmake is in ours, same value."""
    text = plan_configure(_ctx(), "windows-arm64-cuda13-portable").toolchain_text
    for line in [
        "set( CMAKE_SYSTEM_NAME Windows )",
        "set( CMAKE_SYSTEM_PROCESSOR arm64 )",
        'set( CMAKE_CUDA_HOST_COMPILER "${MSVC_TOOLS_ROOT}/bin/Hostx64/arm64/cl.exe" CACHE FILEPATH "" )',
        'set( CMAKE_CUDA_COMPILER "${CUDA_ROOT}/bin/nvcc.exe" CACHE FILEPATH "" )',
        'set( CUDA_CUDART              "${CUDA_ROOT}/lib/arm64/cudart.lib" CACHE FILEPATH "" )',
        'set( CUDA_cublasLt_LIBRARY    "${CUDA_ROOT}/lib/arm64/cublasLt.lib" CACHE FILEPATH "" )',
        'set( CUDA_cuda_driver_LIBRARY "${CUDA_ROOT}/lib/arm64/cuda.lib" CACHE FILEPATH "" )',
    ]:
        assert line in text.splitlines(), line
    # the upstream file's nvcc flag, then ours for reproducible bytes (-objtemp, the prefix maps)
    assert any(x.startswith('set( CMAKE_CUDA_FLAGS_INIT "-target-dir=arm64 -objtemp ') for x in text.splitlines())
    assert "allow-unsupported-compiler" not in text


def test_windows_leg_refused_on_linux(workdir):
    if os.name == "nt":
        pytest.skip("this host is Windows")
    with pytest.raises(HostMismatch, match=r"windows x64 build host; this host is linux"):
        run_configure(_ctx(), "windows-arm64-cuda13-portable")
    assert not (workdir / "build" / "windows-arm64-cuda13-portable" / "toolchain.cmake").exists()


def test_linux_cross_cache_entries(workdir):
    p = plan_configure(_ctx(), "linux-arm64-cuda13-blackwell")
    assert p.cache["CMAKE_CUDA_ARCHITECTURES"] == "120;121"
    assert p.cache["GGML_NATIVE"] == "OFF" and p.cache["GGML_CPU"] == "OFF"
    assert p.cache["CMAKE_INSTALL_RPATH"] == "$ORIGIN" and p.cache["LLAMA_BUILD_NUMBER"] == "11642"
    assert p.cache["FETCHCONTENT_FULLY_DISCONNECTED"] == "ON" and p.cache["LLAMA_USE_PREBUILT_UI"] == "OFF"
    assert "-target-dir=sbsa-linux" in p.toolchain_text
    assert '"${CUDA_ROOT}/targets/sbsa-linux/lib/stubs/libcuda.so"' in p.toolchain_text
    assert "aarch64-linux-gnu-g++" in p.toolchain_text.split("CMAKE_CUDA_HOST_COMPILER", 1)[1].splitlines()[0]


def test_download_option_refused_when_the_specs_load(workdir, bundles_copy):
    """Refused by the loader (so `bundlegraph matrix` fails before CI fans out and no task
    runs), and again by the configure plan for a caller that built a spec by hand."""
    from bundlegraph.pipeline.compile.cmake_cache import cache_entries

    f = bundles_copy / "linux-arm64-cpu.toml"
    good = load_matrix(bundles_copy).legs["linux-arm64-cpu"]
    text = f.read_text().replace("GGML_NATIVE = false", "GGML_NATIVE = true")
    f.write_text(text.replace("[cmake]\n", "[cmake]\nLLAMA_BUILD_BORINGSSL = true\n"))
    with pytest.raises(SpecError) as e:
        load_matrix(bundles_copy)
    msg = str(e.value)
    assert "linux-arm64-cpu.toml: cmake.LLAMA_BUILD_BORINGSSL: must be OFF (it downloads" in msg
    bad = good.replace(cmake={**good.cmake, "LLAMA_BUILD_BORINGSSL": True})
    with pytest.raises(SpecError, match="cmake.LLAMA_BUILD_BORINGSSL: must be OFF"):
        cache_entries(bad, "x.toml", commit=None, build_number=1)
    assert "linux-arm64-cpu.toml: cmake.LLAMA_BUILD_BORINGSSL: must be OFF (it downloads" in msg
    assert "linux-arm64-cpu.toml: cmake.GGML_NATIVE: must be OFF" in msg


def test_target_filter(monkeypatch, workdir):
    monkeypatch.setenv("BUNDLEGRAPH_BUILD_TARGETS", "a.o, b.o;c")
    assert target_filter(lambda k, d: None) == ["a.o", "b.o", "c"]
    assert target_filter(lambda k, d: "x") == ["x"]
    p = plan_build(_ctx(), "linux-arm64-cuda13-blackwell")
    assert p.filtered and p.argv[-4:] == ["--target", "a.o", "b.o", "c"]
    monkeypatch.delenv("BUNDLEGRAPH_BUILD_TARGETS")
    p = plan_build(_ctx(), "linux-arm64-cuda13-blackwell")
    assert not p.filtered and p.argv[-2:] == ["--target", "ggml-cuda"]


def test_spec_sets_derived_entry_refused(workdir):
    spec = validate_leg(
        {
            "id": "x",
            "os": "linux",
            "arch": "x64",
            "backend": "cpu",
            "install_kind": "k",
            "runner": "r",
            "toolchain": "gcc-linux-x86_64",
            "profile": {"name": "cpu", "klass": "cpu", "rank": 1},
            "cmake": {"CMAKE_CUDA_ARCHITECTURES": "90"},
        }
    )
    from bundlegraph.pipeline.compile.cmake_cache import cache_entries

    with pytest.raises(SpecError, match=r"x.toml: cmake.CMAKE_CUDA_ARCHITECTURES: set by bundlegraph"):
        cache_entries(spec, "x.toml", commit=None, build_number=1)


def test_local_is_never_written_in_a_spec_file(bundles_copy):
    """``local`` is the overrides' typed mark; a spec file that sets it is refused at load, and a
    release leg's dump (its action keys) has no ``local`` key at all."""
    f = bundles_copy / "linux-arm64-cpu.toml"
    good = load_matrix(bundles_copy).legs["linux-arm64-cpu"]
    assert good.local is None and "local" not in good.dump() and good.profile_name == good.profile.name
    f.write_text('local = { tag = "sm90-local", origin = "archs=90" }\n' + f.read_text())
    with pytest.raises(SpecError, match=r"linux-arm64-cpu.toml: local: is set by the archs=/toolkit_source= overrides"):
        load_matrix(bundles_copy)


def test_configure_refuses_a_bool_option_whose_value_is_no_boolean_word(tmp_path):
    """A key the configured tree declares BOOL (``option()``) but the load could not know: its
    value in ``CMakeCache.txt`` must be one of CMake's boolean words; ``"nope"`` (which CMake reads
    as true) fails configure naming the spec file and the key (issue 51)."""
    from bundlegraph.pipeline.compile.cmake_keys import judge, read_typed_cache

    (tmp_path / "CMakeCache.txt").write_text(
        "# This is the CMakeCache file.\n"
        "//build tests\nMINI_BUILD_EXTRAS:BOOL=nope\n"
        "//build tools\nLLAMA_BUILD_TOOLS:BOOL=off\n"
        "//ggml: cuda link binary compression mode\nGGML_CUDA_COMPRESSION_MODE:STRING=speed\n",
        encoding="utf-8",
    )
    cache = read_typed_cache(tmp_path)
    keys = ("MINI_BUILD_EXTRAS", "LLAMA_BUILD_TOOLS", "GGML_CUDA_COMPRESSION_MODE")
    problems, warnings = judge(keys, "bundles/x.toml", cache, "", {})
    assert problems == [
        "bundles/x.toml: cmake.MINI_BUILD_EXTRAS: the configured tree declares a BOOL option, and 'nope' is not one "
        "of CMake's boolean words (ON/OFF/TRUE/FALSE/YES/NO/Y/N/1/0, any case): CMake reads it as true; write true "
        "or false"
    ]
    assert warnings == []


def test_a_download_option_turns_on_only_where_the_release_pins_its_source(bundles_copy):
    """Issue 52 item 2: the cuda12 legs turn GGML_CUDA_CUB_3DOT2 on as upstream does; the CCCL it
    would download comes from release.toml's [[fetchcontent]] pin (FETCHCONTENT_SOURCE_DIR_CCCL)."""
    from bundlegraph.pipeline.compile.cmake_cache import cache_entries

    m = load_matrix(bundles_copy)
    (pin,) = m.release.fetchcontent
    leg = m.legs["linux-x64-cuda12-newer"]
    assert leg.cmake["GGML_CUDA_CUB_3DOT2"] is True
    dirs = {"GGML_CUDA_CUB_3DOT2": {"FETCHCONTENT_SOURCE_DIR_CCCL": "/c/fetchcontent/CCCL-f71b5dbc8388/src"}}
    got = cache_entries(leg, "x.toml", commit=None, build_number=1, fetched=dirs)
    assert got["GGML_CUDA_CUB_3DOT2"] == "ON" and got["FETCHCONTENT_FULLY_DISCONNECTED"] == "ON"
    assert got["FETCHCONTENT_SOURCE_DIR_CCCL"] == "/c/fetchcontent/CCCL-f71b5dbc8388/src"
    # without the pin the same spec is refused, naming what to pin
    with pytest.raises(
        SpecError, match=r"x\.toml: cmake\.GGML_CUDA_CUB_3DOT2: must be OFF \(it downloads CCCL at configure; pin"
    ):
        cache_entries(leg, "x.toml", commit=None, build_number=1)
    rel = bundles_copy / "release.toml"
    text = rel.read_text(encoding="utf-8")
    rel.write_text(
        text[: text.index("# ggml's GGML_CUDA_CUB_3DOT2")] + text[text.index("[source]") :], encoding="utf-8"
    )
    with pytest.raises(SpecError) as e:
        load_matrix(bundles_copy)
    assert "linux-x64-cuda12-newer.toml: cmake.GGML_CUDA_CUB_3DOT2: must be OFF (it downloads CCCL at configure" in str(
        e.value
    )
    # a leg that leaves it off gets it OFF and no source folder, pin or not
    cu13 = m.legs["linux-x64-cuda13-portable"]
    plain = cache_entries(cu13, "y.toml", commit=None, build_number=1)
    assert plain["GGML_CUDA_CUB_3DOT2"] == "OFF" and not any(k.startswith("FETCHCONTENT_SOURCE_DIR") for k in plain)
    assert pin.sha256.startswith("f71b5dbc8388")


def test_a_served_download_option_must_have_loaded_the_pinned_package(workdir):
    """GGML_CUDA_CUB_3DOT2 is a plain CMake variable (no option() declares it), so the key check
    cannot judge it by the cache: the configure log must show CMake loading CCCL from the pin's
    folder instead (fetch_problems), else one line names the spec file, key and pin."""
    from bundlegraph.pipeline.configure import fetch_problems

    g = load_graph(ROOT / "bundles", Filters(only_leg="linux-x64-cuda12-newer"))
    p = plan_configure(g.ctx, "linux-x64-cuda12-newer")
    assert [x.name for x in p.fetch] == ["CCCL"]
    folder = p.cache["FETCHCONTENT_SOURCE_DIR_CCCL"]
    assert folder.endswith("/fetchcontent/CCCL-f71b5dbc8388/src")
    wheel = folder.rsplit("/", 1)[0] + "/wheel/nvidia/cu13/lib/cmake/cccl/cccl-config.cmake"
    found = f'-- Found CCCL: {wheel} (found suitable exact version "3.2.0.0")\n'
    assert fetch_problems(p, "-- Finding CCCL components: Thrust;CUB;libcudacxx\n" + found) == []
    other = '-- Found CCCL: /usr/local/cuda/lib64/cmake/cccl/cccl-config.cmake (found version "2.7.0")\n'
    for log in ("", other):
        (problem,) = fetch_problems(p, log)
        assert problem.endswith(
            "linux-x64-cuda12-newer.toml: cmake.GGML_CUDA_CUB_3DOT2: on, but the configure never loaded "
            "CCCL 3.2.0 from release.toml's pin (nvidia_cuda_cccl-13.2.27-py3-none-manylinux2014_x86_64."
            "manylinux_2_17_x86_64.whl): does the tree still fetch CCCL under that option?"
        )
        assert "nvidia_cuda_cccl-13.2.27-py3-none-manylinux2014_x86_64" in problem
    # a leg that leaves it off has nothing to check
    assert fetch_problems(plan_configure(_ctx(), "linux-arm64-cuda13-blackwell"), "") == []
