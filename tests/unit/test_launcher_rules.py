"""The compiler-cache and reproducibility rules that need no process (issue 19): the checks on
a real ``compile_commands.json`` of the aarch64 CUDA leg (``tests/data/compile_commands/``: four
entries of the one CMake wrote for ``linux-arm64-cuda13-blackwell`` at this commit), the hooks
script, the remote-storage setting, the probe's nvcc line, and that MSVC-like compilers
(cl.exe, clang-cl) are probed in MSVC's dialect and get a launcher like every other leg."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bundlegraph.core import settings
from bundlegraph.core.errors import SettingError
from bundlegraph.pipeline.compile import compiler_cache, launcher
from bundlegraph.toolchains import get as get_toolchain
from bundlegraph.toolchains.cmake_hooks import hooks_script, reproducibility_problems

DATA = Path(__file__).resolve().parents[1] / "data" / "compile_commands"


def _real() -> list[dict]:
    return json.loads((DATA / "linux-arm64-cuda13-blackwell.json").read_text(encoding="utf-8"))


def test_the_real_legs_nvcc_commands_carry_objtemp_and_one_distinct_seed_each():
    cc = _real()
    assert reproducibility_problems(cc) == []
    seeds = [a for c in cc for a in c["command"].split() if a.startswith("-frandom-seed=")]
    assert seeds == [
        "-frandom-seed=ggml/src/ggml-cuda/argmax.cu",
        "-frandom-seed=ggml/src/ggml-cuda/template-instances/fattn-vec-instance-f16-f16.cu",
        "-frandom-seed=ggml/src/ggml-cuda/ggml-cuda.cu",
    ]


def test_a_command_without_objtemp_or_seed_or_with_a_shared_seed_is_named():
    cc = _real()
    no_objtemp = dict(cc[0], command=cc[0]["command"].replace(" -objtemp", ""))
    no_seed = dict(cc[1], command=cc[1]["command"].replace("-frandom-seed=", "-fno-such="))
    shared = dict(
        cc[2],
        command=cc[2]["command"].replace(
            "-frandom-seed=ggml/src/ggml-cuda/ggml-cuda.cu", "-frandom-seed=ggml/src/ggml-cuda/argmax.cu"
        ),
    )
    bad = reproducibility_problems([no_objtemp, no_seed, shared, cc[3]])
    assert len(bad) == 3, bad
    assert bad[0].endswith("argmax.cu: its nvcc command lacks -objtemp (tmpxft_<pid> names would land in the object)")
    assert "fattn-vec-instance-f16-f16.cu: -frandom-seed appears 0 times" in bad[1]
    assert bad[2].endswith(f"ggml-cuda.cu: shares -frandom-seed=ggml/src/ggml-cuda/argmax.cu with {cc[0]['file']}")


def test_the_hooks_script_holds_what_is_asked_and_nothing_else():
    both = hooks_script(seeds=True, host_flag="/Zc:preprocessor")
    assert "CALL _bundlegraph_cuda_seeds" in both and "CALL _bundlegraph_cuda_host_flag" in both
    assert "-Xcompiler=/Zc:preprocessor" in both and "@FLAG@" not in both
    seeds = hooks_script(seeds=True)
    assert "_bundlegraph_cuda_seeds" in seeds and "host_flag" not in seeds
    assert hooks_script(seeds=False) == ""


def test_every_cuda_toolchain_names_objects_after_themselves():
    for tid in ("gcc-cross-linux-aarch64", "msvc-amd64_arm64-cuda", "msvc-x64-cuda"):
        flags = get_toolchain(tid).nvcc_flags()
        assert "-objtemp" in flags and any(f.startswith("-target-dir=") for f in flags), (tid, flags)


def test_remote_storage_setting_read_only_and_bad_scheme():
    env = {"BUNDLEGRAPH_CACHE_REMOTE": "http://127.0.0.1:8080/cache|layout=flat"}
    assert compiler_cache.remote_storage(env) == "http://127.0.0.1:8080/cache|layout=flat"
    ro = env | {"BUNDLEGRAPH_CACHE_REMOTE_MODE": "read-only"}
    assert compiler_cache.remote_storage(ro) == "http://127.0.0.1:8080/cache|layout=flat|read-only=true"
    assert compiler_cache.remote_storage({}) == ""
    with pytest.raises(SettingError, match=r"BUNDLEGRAPH_CACHE_REMOTE='ftp://x': expected a URL starting with http://"):
        compiler_cache.remote_storage({"BUNDLEGRAPH_CACHE_REMOTE": "ftp://x"})
    with pytest.raises(SettingError, match="BUNDLEGRAPH_CACHE_REMOTE_MODE"):
        settings.check_environment({"BUNDLEGRAPH_CACHE_REMOTE_MODE": "write-only"})
    assert (
        compiler_cache.redact("http://ci:s3cret@cache.example:8080/c|layout=flat")
        == "http://***@cache.example:8080/c|layout=flat"
    )
    assert compiler_cache.redact("redis://cache:6379") == "redis://cache:6379"


def test_the_probe_compiles_the_legs_cuda_architectures():
    t = launcher.ProbeTools(
        "/usr/bin/cc",
        {},
        "/tk/bin/nvcc",
        "/usr/bin/aarch64-linux-gnu-g++",
        ("-target-dir=sbsa-linux", "-objtemp"),
        ("120", "121-real", "native"),
    )
    argv = t.cuda_argv(Path("/s/probe.cu"), Path("/s/probe.o"))
    assert argv == [
        "/tk/bin/nvcc",
        "-ccbin=/usr/bin/aarch64-linux-gnu-g++",
        "-target-dir=sbsa-linux",
        "-objtemp",
        "--generate-code=arch=compute_120,code=[compute_120,sm_120]",
        "--generate-code=arch=compute_121,code=[sm_121]",  # -real: SASS only, as CMake compiles it
        "-x",
        "cu",
        "-c",
        "/s/probe.cu",
        "-o",
        "/s/probe.o",
    ]


@pytest.mark.parametrize(
    "cc, like",
    [
        ("C:/VS/bin/Hostx64/arm64/cl.exe", True),
        ("C:\\VS\\bin\\Hostx64\\x64\\CL.EXE", True),
        ("/tmp/x/clang-cl", True),
        ("C:/LLVM/bin/clang-cl.exe", True),
        ("/usr/bin/gcc", False),
        ("C:/VS/Tools/Llvm/x64/bin/clang.exe", False),
        ("/usr/bin/aarch64-linux-gnu-gcc", False),
    ],
)
def test_the_probe_speaks_msvcs_dialect_to_msvc_like_compilers(cc, like):
    assert launcher.msvc_like(cc) is like
    argv = launcher.ProbeTools(cc, {}).c_argv(Path("/s/probe.c"), Path("/s/probe-1.obj"))
    if like:  # names relative to the scratch directory: clang-cl on POSIX reads "/s/..." as an option
        assert argv == [cc, "/nologo", "/c", "probe.c", "/Foprobe-1.obj"]
    else:
        assert argv == [cc, "-c", "/s/probe.c", "-o", "/s/probe-1.obj"]


def test_msvc_legs_get_a_launcher_once_the_probe_passes(monkeypatch):
    """No refusal by name any more (issue 39): cl.exe (and nvcc with cl.exe) goes through the probe,
    and a passing probe gives every language's CMAKE_<LANG>_COMPILER_LAUNCHER."""
    monkeypatch.delenv("BUNDLEGRAPH_LAUNCHER", raising=False)
    cl = launcher.ProbeTools(
        "C:/VS/bin/Hostx64/arm64/cl.exe", {}, "C:/cuda/bin/nvcc.exe", "C:/VS/bin/Hostx64/arm64/cl.exe"
    )
    probed = []

    def probe(name, exe, tools, scratch):
        probed.append((name, tools.cc, tools.ccbin))
        return "ccache version 4.14.2", "", "ran"

    monkeypatch.setattr(launcher, "find", lambda name, env: f"C:/venv/Scripts/{name}.exe")
    monkeypatch.setattr(launcher, "cached_probe", probe)
    got = launcher.compiler_launcher(cl, Path("unused"), ["C", "CXX", "CUDA"])
    assert probed == [("ccache", cl.cc, cl.ccbin)]
    assert got.name == "ccache" and got.why == "" and got.probe == "ran"
    assert got.args == [f"-DCMAKE_{lang}_COMPILER_LAUNCHER=C:/venv/Scripts/ccache.exe" for lang in ("C", "CXX", "CUDA")]
    monkeypatch.setattr(launcher, "find", lambda name, env: None)
    got = launcher.compiler_launcher(cl, Path("unused"), ["C"])
    assert got.name is None and got.why == "ccache not installed; sccache not installed"


def test_launcher_none_and_no_c_compiler_get_no_launcher(monkeypatch):
    monkeypatch.delenv("BUNDLEGRAPH_LAUNCHER", raising=False)
    got = launcher.compiler_launcher(None, Path("unused"), ["C"])
    assert got.name is None and got.args == [] and got.why == "the leg has no C compiler to probe a launcher with"
    monkeypatch.setenv("BUNDLEGRAPH_LAUNCHER", "none")
    got = launcher.compiler_launcher(launcher.ProbeTools("/usr/bin/gcc", {}), Path("unused"), ["C"])
    assert got.name is None and got.why == "BUNDLEGRAPH_LAUNCHER=none"


def test_the_work_directorys_prefix_maps_are_left_out_of_the_hash_in_every_spelling():
    """Two runners' work directories differ; what the maps do there is the same, so ccache must
    not hash them (GCC's and clang's -ffile-prefix-map, cl.exe's /d1trimfile:, nvcc's -Xcompiler= of each).
    A fixed path (the function only spells it): the run's own temp folder may hold spaces."""
    from pathlib import PureWindowsPath

    work = Path("/home/runner/work/bundlegraph/bundlegraph")
    got = compiler_cache.ignored_prefix_maps(work)
    w, win = work.as_posix(), str(PureWindowsPath(work))
    assert got == [
        f"-ffile-prefix-map={w}*",
        f"-Xcompiler=-ffile-prefix-map={w}*",
        f"/d1trimfile:{win}*",
        f"-Xcompiler=/d1trimfile:{win}*",
    ]
    assert compiler_cache.ignored_prefix_maps(work / "a b") == []
