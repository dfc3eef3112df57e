"""Issue 42, the Vulkan legs' spec, SDK and toolchain (no process, no network):

- the spec is a tagged union on ``backend``: the backend comes from the registry, its table must be
  there and no other backend's; each bad case is one line naming the file and the key;
- the Vulkan SDK task: its name, key and the paths later stages read, for the ``debs``, ``host``
  and ``lunarg`` sources, and a cross leg's packages (target headers/loader, build-machine glslc);
- GPU compilers are machine-file ``[binaries]``: ``cuda = "nvcc"``, ``glslc = "glslc"``; the toolchain
  file pins the SDK's headers, loader and glslc; a CPU or CUDA leg's file is what it was."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from bundlegraph.backends.cuda.sdk import toolkit_for_leg
from bundlegraph.backends.vulkan import sdk as vk
from bundlegraph.backends.vulkan.sdk_ref import VulkanSdk
from bundlegraph.core.errors import HostMismatch, SpecError, ToolkitError, ToolMissing
from bundlegraph.pipeline.base import Context, Filters
from bundlegraph.pipeline.toolkit import plans
from bundlegraph.schemas.backend import BACKEND_NAMES
from bundlegraph.specs.loader import load_matrix
from bundlegraph.specs.validation import validate_matrix
from bundlegraph.toolchains import get
from bundlegraph.toolchains.registry import MACHINES_DIR, TOOLCHAINS, ToolchainFileError, load_machine

ROOT = Path(__file__).resolve().parents[2]
X64, ARM64, WIN = "linux-x64-vulkan", "linux-arm64-vulkan", "windows-x64-vulkan"


@pytest.fixture(scope="module")
def matrix():
    return load_matrix(ROOT / "bundles")


def _bad(tmp_path: Path, leg: str, edit) -> list[str]:
    """The spec error lines of the real bundles directory with ``leg``'s file edited."""
    bundles = tmp_path / "bundles"
    shutil.copytree(ROOT / "bundles", bundles)
    f = bundles / f"{leg}.toml"
    f.write_text(edit(f.read_text(encoding="utf-8")), encoding="utf-8")
    with pytest.raises(SpecError) as e:
        validate_matrix(bundles)
    return [line.strip() for line in str(e.value).splitlines() if str(f) in line]


UNION_CASES = {
    "backend not in the registry": (
        X64,
        lambda t: t.replace('backend = "vulkan"', 'backend = "vulcan"'),
        "backend: Input should be "
        + ", ".join(f"'{n}'" for n in BACKEND_NAMES[:-1])
        + f" or '{BACKEND_NAMES[-1]}'",  # the registry's names, in its order
    ),
    "vulkan leg without [vulkan]": (
        X64,
        lambda t: re.sub(r"\[vulkan\.sdk\]\n(?:[^\[].*\n|\n)*", "", t),
        "vulkan: backend 'vulkan' needs a [vulkan] table",
    ),
    "cpu leg with [vulkan]": (
        "linux-x64-cpu",
        lambda t: t + '\n[vulkan.sdk]\nsource = "host"\n',
        "vulkan: backend 'cpu' must not have a [vulkan] table",
    ),
    "vulkan leg with [cuda]": (
        X64,
        lambda t: (
            t + '\n[cuda]\nversion = "13.5"\narchs = ["90"]\n[cuda.toolkit]\nsource = "host"\n'
            'target_platform = "linux-x86_64"\n'
        ),
        "cuda: backend 'vulkan' must not have a [cuda] table",
    ),
    "debs without lock": (
        X64,
        lambda t: t.replace('lock = "locks/vulkan-1.4.309-debs.toml"\n', ""),
        "vulkan.sdk.lock: source 'debs' needs 'lock'",
    ),
    "host with a lock": (
        X64,
        lambda t: t.replace('source = "debs"', 'source = "host"'),
        "vulkan.sdk.lock: not a key of source 'host' (it takes: none)",
    ),
    "unknown sdk source": (
        X64,
        lambda t: t.replace('source = "debs"', 'source = "apt"'),
        "vulkan.sdk.source: Input should be 'debs', 'host' or 'lunarg'",
    ),
    "lunarg without version": (
        WIN,
        lambda t: t.replace('version = "1.4.357.0"\n', ""),
        "vulkan.sdk.version: source 'lunarg' needs 'version'",
    ),
    "lunarg with a bad sha256": (
        WIN,
        lambda t: t.replace('source = "lunarg"', 'source = "lunarg"\nsha256 = "abc"'),
        "vulkan.sdk.sha256: String should match pattern",
    ),
    "a waiver of no shader extension": (
        X64,
        lambda t: t.replace(
            "[vulkan.sdk]", '[vulkan]\nwaive_compiled_out = { GL_EXT_bfloat61 = "no glslc has it yet" }\n\n[vulkan.sdk]'
        ),
        "vulkan.waive_compiled_out.GL_EXT_bfloat61: not a shader extension ggml's CMake tests glslc for "
        "(did you mean 'GL_EXT_bfloat16'?)",
    ),
    "a waiver without a reason": (
        X64,
        lambda t: t.replace("[vulkan.sdk]", '[vulkan]\nwaive_compiled_out = { GL_EXT_bfloat16 = "" }\n\n[vulkan.sdk]'),
        "vulkan.waive_compiled_out.GL_EXT_bfloat16: String should have at least 10 characters",
    ),
    "typo in the sdk table": (
        X64,
        lambda t: t.replace('source = "debs"', 'source = "debs"\nlocks = "x"'),
        "vulkan.sdk.locks: unknown key (did you mean 'lock'?)",
    ),
    "runtime line on a vulkan leg": (
        X64,
        lambda t: t.replace('name = "vulkan"', 'name = "vulkan"\nline = "cuda13"'),
        "profile.line: only a CUDA leg has a runtime line; backend is 'vulkan'",
    ),
    "toolchain without glslc": (
        WIN,
        lambda t: t.replace('toolchain = "msvc-x64"', 'toolchain = "msvc-x64-cuda"'),
        "toolchain: 'msvc-x64-cuda' cannot compile Vulkan; backend is 'vulkan' (its machine file "
        "msvc-x64-cuda.toml names no [binaries] glslc)",
    ),
}


@pytest.mark.parametrize("case", sorted(UNION_CASES))
def test_each_bad_vulkan_spec_is_one_line_naming_file_and_key(tmp_path, case):
    leg, edit, want = UNION_CASES[case]
    lines = _bad(tmp_path, leg, edit)
    assert len(lines) == 1, lines
    f = tmp_path / "bundles" / f"{leg}.toml"
    assert lines[0].startswith(f"{f}: {want}"), lines


def test_the_vulkan_legs_load_as_a_union_on_backend(matrix):
    for leg in (X64, ARM64, WIN):
        s = matrix.legs[leg]
        assert s.backend == "vulkan" and s.vulkan is not None and s.cuda is None
        assert "vulkan" in s.dump() and "cuda" in s.dump()  # a CUDA field stays (None), so CUDA keys keep their form
    assert "vulkan" not in matrix.legs["linux-x64-cpu"].dump()  # left out while None: no stamp of a leg changes
    assert matrix.legs[WIN].vulkan.sdk.source == "lunarg" and matrix.legs[WIN].promised is False


def _ctx(matrix) -> Context:
    return Context(matrix, list(matrix.legs), Filters())


def test_the_debs_sdk_takes_target_packages_for_the_leg_and_glslc_for_the_build_machine(matrix):
    f = str(ROOT / "bundles" / f"{X64}.toml")
    x64 = vk.sdk_set(matrix.legs[X64], ROOT / "bundles", f)
    arm = vk.sdk_set(matrix.legs[ARM64], ROOT / "bundles", f)
    assert re.fullmatch(r"vulkan-1\.4\.309-linux-x64-[0-9a-f]{6}", x64.name)
    assert re.fullmatch(r"vulkan-1\.4\.309-linux-arm64-[0-9a-f]{6}", arm.name)
    rows = {(r[0], r[2]) for r in dict(arm.pins)["packages"]}
    assert rows == {
        ("libvulkan-dev", "arm64"),
        ("libvulkan1", "arm64"),
        ("spirv-headers", "all"),
        ("glslc", "amd64"),
        ("libshaderc1", "amd64"),
        ("libc6", "amd64"),
        ("libstdc++6", "amd64"),
        ("libgcc-s1", "amd64"),
    }
    assert all(len(r[4]) == 64 for r in dict(x64.pins)["packages"])  # every row pinned by sha256
    ref = vk.ref_for(arm)
    assert ref.task == f"toolkit:{arm.name}" and ref.prefix.name == arm.name
    assert ref.cmake_cache()["Vulkan_LIBRARY"].endswith("/usr/lib/aarch64-linux-gnu/libvulkan.so")
    assert set(ref.cmake_cache()) == {"Vulkan_INCLUDE_DIR", "Vulkan_LIBRARY", "SPIRV-Headers_DIR"}


def test_the_sdk_stage_makes_one_task_per_sdk_and_keys_every_pin(matrix):
    ctx = _ctx(matrix)
    tasks = {p.name: p for p in plans(ctx)}
    vk_tasks = sorted(n for n in tasks if n.startswith("vulkan-"))
    assert len(vk_tasks) == 3, vk_tasks  # linux x64, linux arm64, windows x64
    assert all(ctx.leg(leg).sdk.task in {f"toolkit:{n}" for n in vk_tasks} for leg in (X64, ARM64, WIN))
    plan = tasks[ctx.leg(X64).sdk.name].preview()
    key = plan.key()
    assert key["sdk"] == "vulkan" and key["layout"] == vk.LAYOUT_VERSION
    assert [r[0] for r in key["set"]["packages"]] == [
        "libvulkan-dev",
        "libvulkan1",
        "spirv-headers",
        "glslc",
        "libshaderc1",
        "libc6",
        "libstdc++6",
        "libgcc-s1",
    ]
    assert plan.legs == (X64,) and "host_files" not in key
    # CUDA's tasks keep their names (no stamp of a CUDA leg changes)
    assert sorted(n for n in tasks if n.startswith("cuda")) == sorted(
        {toolkit_for_leg(ctx, leg).name for leg in matrix.legs if matrix.legs[leg].cuda is not None}
    )


def test_a_cpu_leg_has_no_sdk(matrix):
    assert _ctx(matrix).leg("linux-x64-cpu").sdk is None


def test_a_host_sdk_keys_the_files_it_uses_and_pins_nothing(matrix):
    spec = matrix.legs[X64].replace(vulkan=matrix.legs[X64].vulkan.replace(sdk=vk.VulkanSdkSpec(source="host")))
    # refused with a pinned compiler (issue 50): the host's headers sit beside the host's C library
    with pytest.raises(ToolkitError, match=r"^x.toml: vulkan.sdk.source: 'host' takes the build machine's Vulkan"):
        vk.sdk_set(spec, ROOT / "bundles", "x.toml")
    s = vk.VulkanSdkSet("host", "host", "linux-x64", "amd64", "amd64", (), "", "x.toml")
    assert s.name.startswith("vulkan-host-linux-x64-") and s.pins == ()
    ref = vk.ref_for(s)
    assert ref.cmake_cache() == {} and ref.prefix == Path("/") and ref.receipt.name == "bundlegraph-vulkan-sdk.json"
    key = vk.plan(s, (X64,), ROOT / "bundles", None).key()
    assert set(key["host_files"]) == {"glslc", "vulkan_core.h", "libvulkan.so"}


def test_a_lunarg_sdk_is_planned_and_keyed_but_refused_unpinned_in_one_line(matrix):
    s = vk.sdk_set(matrix.legs[WIN], ROOT / "bundles", "bundles/windows-x64-vulkan.toml")
    assert s.name.startswith("vulkan-1.4.357-windows-x64-")
    pin = dict(s.pins)["lunarg"]
    assert pin == {"version": "1.4.357.0", "sha256": None, "url_name": "vulkansdk-windows-X64-1.4.357.0.exe"}
    ref = vk.ref_for(s)
    assert ref.cmake_cache()["Vulkan_LIBRARY"].endswith("/Lib/vulkan-1.lib") and ref.bin_dir == "Bin"
    p = vk.plan(s, (WIN,), ROOT / "bundles", None)
    assert p.key()["set"]["lunarg"] == pin
    with pytest.raises(ToolkitError) as e:
        vk.run(p)
    assert str(e.value).count("\n") == 0
    assert str(e.value).startswith("bundles/windows-x64-vulkan.toml: vulkan.sdk.sha256: the LunarG installer ")
    pinned = vk.plan(
        vk.VulkanSdkSet(**{**s.__dict__, "pins": (("lunarg", {**pin, "sha256": "0" * 64}),)}), (WIN,), ROOT, None
    )
    with pytest.raises(HostMismatch, match="runs only on a Windows build machine"):
        vk.run(pinned)  # this is a Linux machine: nothing is downloaded
    with pytest.raises(HostMismatch, match="^toolkit:vulkan-1.4.357-windows-x64-[0-9a-f]{6}: no windows here$"):
        vk.run(vk.plan(s, (WIN,), ROOT, "no windows here"))


def test_header_and_glslc_versions_and_the_degraded_shader_set(tmp_path):
    h = tmp_path / "vulkan_core.h"
    h.write_text(
        "#define VK_HEADER_VERSION 309\n"
        "#define VK_HEADER_VERSION_COMPLETE VK_MAKE_API_VERSION(0, 1, 4, VK_HEADER_VERSION)\n",
        encoding="utf-8",
    )
    assert vk.header_version(h) == "1.4.309"
    h.write_text("#define VK_HEADER_VERSION 309\n", encoding="utf-8")
    with pytest.raises(ToolkitError, match="no VK_HEADER_VERSION / VK_HEADER_VERSION_COMPLETE define"):
        vk.header_version(h)
    log = (
        "-- Vulkan found\n-- GL_KHR_cooperative_matrix not supported by glslc\n"
        "-- GL_EXT_integer_dot_product supported by glslc\n-- GL_EXT_bfloat16 not supported by glslc\n"
    )
    assert vk.shader_extensions(log) == {
        "GL_KHR_cooperative_matrix": False,
        "GL_EXT_integer_dot_product": True,
        "GL_EXT_bfloat16": False,
    }


# --- toolchains: GPU compilers as [binaries] ---------------------------------------------------


def test_gpu_compilers_are_machine_file_binaries():
    assert {t: (i.has_binary("cuda"), i.has_binary("glslc")) for t, i in TOOLCHAINS.items()} == {
        "clang-arm64-windows": (False, False),
        "gcc-cross-linux-aarch64": (True, True),
        "gcc-linux-x86_64": (True, True),
        "msvc-amd64_arm64-cuda": (True, False),
        "msvc-x64-cuda": (True, False),
        "msvc-x64": (False, True),
        "apple-clang-macos-arm64": (False, False),
        "apple-clang-macos-x86_64": (False, False),
        "rocm-clang-windows-x64": (False, False),
        "rocm-gcc-linux-x86_64": (False, False),
    }
    assert [t for t, i in TOOLCHAINS.items() if i.has_binary("hip")] == [
        "rocm-clang-windows-x64",
        "rocm-gcc-linux-x86_64",
    ]
    assert all(i.cuda == i.has_binary("cuda") for i in TOOLCHAINS.values())
    assert TOOLCHAINS["gcc-linux-x86_64"].binary("glslc") == "glslc"


def test_a_cuda_flag_or_an_empty_gpu_binary_is_refused_naming_the_entry(tmp_path):
    good = (MACHINES_DIR / "gcc-linux-x86_64.toml").read_text(encoding="utf-8")
    f = tmp_path / "t.toml"
    f.write_text(good.replace('kind = "gcc"', 'kind = "gcc"\ncuda = true').replace('glslc = "glslc"', 'glslc = ""'))
    with pytest.raises(ToolchainFileError) as e:
        load_machine(f)
    assert e.value.problems == [
        f'{f}: cuda: a GPU compiler is a [binaries] entry now (cuda = "nvcc"), not a flag',
        f"{f}: binaries.glslc: expected a program name or path (the Vulkan shader compiler, found in the Vulkan "
        "SDK's bin directory first, then on PATH)",
    ]


def _sdk(tmp_path: Path, bin_dir: str = "bin") -> VulkanSdk:
    return VulkanSdk(
        name="vulkan-1.4.309-linux-x64-abcdef",
        task="toolkit:vulkan-1.4.309-linux-x64-abcdef",
        source="debs",
        version="1.4.309",
        platform="linux-x64",
        prefix=tmp_path,
        receipt=tmp_path / "r.json",
        include_dir="usr/include",
        library="usr/lib/x86_64-linux-gnu/libvulkan.so",
        spirv_headers_dir="usr/share/cmake/SPIRV-Headers",
        bin_dir=bin_dir,
    )


def test_the_toolchain_file_pins_the_vulkan_sdk_and_glslc(tmp_path):
    tc = get("gcc-linux-x86_64")
    sdk = _sdk(tmp_path)
    text = tc.render(X64, sdk, {"c": "/usr/bin/gcc", "cxx": "/usr/bin/g++", "glslc": f"{tmp_path}/bin/glslc"})
    root = tmp_path.as_posix()
    assert f'set( Vulkan_INCLUDE_DIR "{root}/usr/include" CACHE PATH "" )' in text
    assert f'set( Vulkan_LIBRARY "{root}/usr/lib/x86_64-linux-gnu/libvulkan.so" CACHE FILEPATH "" )' in text
    assert f'set( SPIRV-Headers_DIR "{root}/usr/share/cmake/SPIRV-Headers" CACHE PATH "" )' in text
    assert f'set( Vulkan_GLSLC_EXECUTABLE "{root}/bin/glslc" CACHE FILEPATH "" )' in text
    assert "CUDA" not in text
    # a CPU leg's file names no SDK
    cpu = tc.render("linux-x64-cpu", None, {"c": "/usr/bin/gcc", "cxx": "/usr/bin/g++"})
    assert "Vulkan" not in cpu and "CUDA" not in cpu


def test_glslc_is_found_in_the_sdk_first_then_on_path_else_refused(tmp_path, monkeypatch):
    from bundlegraph.toolchains import tools

    # no process in a unit test: the version is what `glslc --version` would say
    monkeypatch.setattr(tools, "_version_by_run", lambda path, name: "2023.2")
    tc = get("gcc-linux-x86_64")
    sdk = _sdk(tmp_path)
    (tmp_path / "bin").mkdir()
    own = tmp_path / "bin" / "glslc"
    own.write_text("#!/bin/sh\necho shaderc v2023.2\n", encoding="utf-8")
    own.chmod(0o755)
    other = tmp_path / "path"
    other.mkdir()
    (other / "glslc").write_bytes(own.read_bytes())
    (other / "glslc").chmod(0o755)
    env = {"PATH": str(other)}
    bins, key = tc.gpu_binaries(sdk, env)
    assert bins == {"glslc": own.as_posix()} and key == {"glslc": "2023.2"}
    bins, _ = tc.gpu_binaries(_sdk(tmp_path, bin_dir=""), env)
    assert bins == {"glslc": (other / "glslc").as_posix()}
    with pytest.raises(ToolMissing) as e:
        tc.gpu_binaries(_sdk(tmp_path / "nowhere"), {"PATH": str(tmp_path / "empty")})
    assert str(e.value).count("\n") == 0 and "([binaries] glslc of gcc-linux-x86_64.toml) is neither in " in str(
        e.value
    )
    assert tc.gpu_binaries(None, env) == ({}, {})


def test_the_glslc_wrapper_runs_the_pinned_glslc_through_its_own_c_librarys_loader():
    text = vk.wrapper_text("amd64")
    assert 'lib="$here/glslc/usr/lib/x86_64-linux-gnu"' in text
    assert (
        'exec "$lib/ld-linux-x86-64.so.2" --inhibit-cache --library-path "$lib" "$here/glslc/usr/bin/glslc" "$@"'
        in text
    )
    assert "LD_LIBRARY_PATH" not in text.split("\n", 3)[-1]  # the host's library path plays no part
    assert "ld-linux-aarch64.so.1" in vk.wrapper_text("arm64")
    assert {"glslc", "libshaderc1", "libc6", "libstdc++6", "libgcc-s1"} == vk.BUILD_PACKAGES


def test_a_waiver_reaches_the_verify_policy_and_stays_out_of_other_legs_keys(matrix):
    from bundlegraph.verification.policy import policy_from_spec

    spec = matrix.legs[X64]
    assert policy_from_spec(spec).vulkan_waived == ()
    assert "vulkan_waived" not in policy_from_spec(spec).to_json()  # verify keys keep their form
    assert "waive_compiled_out" not in spec.vulkan.dump()  # and so do the spec's
    why = "no glslc of the pinned SDK has it yet"
    waiving = spec.replace(vulkan=spec.vulkan.replace(waive_compiled_out={"GL_EXT_float_e2m1": why}))
    p = policy_from_spec(waiving)
    assert p.vulkan_waived == (("GL_EXT_float_e2m1", why),)
    assert p.to_json()["vulkan_waived"] == (("GL_EXT_float_e2m1", why),)  # a waiver changes the verify key
