"""smoke:<leg> decisions and judgements, the GPU coverage rule and the local-build overrides
(pure parts: no process, no network). Real specs from bundles/."""

from __future__ import annotations

import types
from pathlib import Path

import pytest

from bundlegraph.backends.cuda.overrides import LocalOverrides, is_local, parse_archs, parse_toolkit_source
from bundlegraph.backends.cuda.smoke import OP_NAMES as OPS
from bundlegraph.backends.cuda.smoke import decide
from bundlegraph.core.errors import BundleGraphError
from bundlegraph.core.gpus import Gpu, GpuProbe, covered, parse_query
from bundlegraph.graph.context import Filters, load_graph
from bundlegraph.pipeline.smoke import judge_devices, judge_op, plan_smoke
from bundlegraph.pipeline.smoke.judges import judge_gpu_generate as judge_generate

ROOT = Path(__file__).resolve().parents[2]
LEG = "linux-x64-cuda13-portable"
H200 = GpuProbe((Gpu(0, 90, "NVIDIA H200"),), None, "nvidia-smi ...")
NONE = GpuProbe((), "nvidia-smi is not on PATH (no NVIDIA driver on this host)", "nvidia-smi ...")


@pytest.fixture(autouse=True)
def _clean(workdir, monkeypatch):
    for v in ("BUNDLEGRAPH_ARCHS", "BUNDLEGRAPH_TOOLKIT_SOURCE"):
        monkeypatch.delenv(v, raising=False)


def test_parse_query_reads_nvidia_smi_csv():
    gpus = parse_query("0, 9.0, NVIDIA H200\n1, 12.1, NVIDIA GB10\n")
    assert [(g.index, g.sm, g.name) for g in gpus] == [(0, 90, "NVIDIA H200"), (1, 121, "NVIDIA GB10")]
    with pytest.raises(BundleGraphError, match="compute capability 'nine' is not 'major.minor'"):
        parse_query("0, nine, X")


@pytest.mark.parametrize(
    "sm,sass,ptx,want",
    [
        (90, [90], [], "SASS sm_90"),
        (89, [86], [], "SASS sm_86"),  # same major, higher minor: binary compatible
        (86, [89], [], None),  # lower minor: not
        (90, [86, 89], [], None),  # other major: not
        (90, [86], [80], "PTX compute_80 (JIT)"),
        (75, [], [80], None),  # PTX only JITs upwards
        (121, [120], [], "SASS sm_120"),
    ],
)
def test_coverage_rule(sm, sass, ptx, want):
    assert covered(sm, sass, ptx) == want


def test_decide_skips_with_reasons():
    d = decide("linux", "x64", ("linux", "x64"), NONE)
    assert not d.run and d.reason == "no NVIDIA GPU: nvidia-smi is not on PATH (no NVIDIA driver on this host)"
    d = decide("linux", "arm64", ("linux", "x64"), H200)
    assert not d.run and d.reason == "the bundle is linux arm64, this host is linux x64"
    d = decide("linux", "x64", ("linux", "x64"), H200, {120, 121}, set())
    assert not d.run and d.reason == (
        "no GPU the bundle's CUDA code covers: GPU 0 NVIDIA H200 (sm_90); the bundle has SASS 120,121, PTX none"
    )
    d = decide("linux", "x64", ("linux", "x64"), H200, {90}, {90})
    assert d.run and d.gpu == {"index": 0, "sm": 90, "name": "NVIDIA H200"} and d.coverage == "SASS sm_90"


def test_judgements_name_what_failed():
    ok = "Testing 2 devices\n\nBackend 1/2: CUDA0\n  1234/1234 tests passed\n  Backend CUDA0: \x1b[1;32mOK\x1b[0m\n"
    assert judge_op(ok, 0, "CUDA0") == (None, {"passed": 1234, "total": 1234, "failed_cases": []})
    bad = (
        "  MUL_MAT(type_a=q4_0,type_b=f32,m=16): [MUL_MAT] NMSE = 0.5 > 0.0005 \x1b[1;31mFAIL\x1b[0m\n"
        "  1233/1234 tests passed\n  Backend CUDA0: \x1b[1;31mFAIL\x1b[0m\n"
    )
    p, facts = judge_op(bad, 1, "CUDA0")
    assert p == "exit code 1" and facts["failed_cases"][0].startswith("MUL_MAT(type_a=q4_0")
    assert judge_op("  0/0 tests passed\n  Backend CUDA0: OK\n", 0, "CUDA0")[0] == "ran no test case"
    assert judge_op("  5/5 tests passed\n", 0, "CUDA0")[0] == "no 'Backend CUDA0: OK'"
    assert judge_devices("Available devices:\n  CUDA0: NVIDIA H200 (143771 MiB, 142000 MiB free)\n") is None
    assert "no CUDA<n> device" in judge_devices("Available devices:\n  (none)\n")
    gen = "load_tensors: offloaded 3/3 layers to GPU\nmain: decoded 8 tokens in 0.02 s\n"
    assert judge_generate(gen, 0) == (None, {"offloaded": "offloaded 3/3 layers to GPU", "decoded": 8})
    assert judge_generate(gen.replace("3/3", "2/3"), 0)[0] == "not every layer was offloaded to the GPU"
    assert judge_generate("offloaded 3/3 layers to GPU\n", 0)[0] == "no token was generated"


def test_smoke_plan_for_a_bundle():
    g = load_graph(ROOT / "bundles", Filters(only_leg=LEG))
    p = plan_smoke(g.ctx, LEG)
    assert p.bundle.name == "app-b11642-linux-x64-cuda13-portable.tar.gz"
    assert p.base == "linux-x64-cpu" and p.record.name == "smoke.json"
    names = [c.name for c in p.checks]
    # the host checks first (every host that can start the bundle), then the GPU checks
    assert names == [
        "version",
        "backends",
        "list-devices",
        "generate",
        "serve",
        "devices",
        "generate-gpu",
        *(f"op:{op}" for op in OPS),
        "throughput-reference",
        "throughput-line",  # the release's CUDA 12 bundle too (issue 52: unsloth#11349's A/B)
        "throughput",
    ]
    assert {"MUL_MAT", "MUL_MAT_ID", "FLASH_ATTN_EXT", "GET_ROWS", "SOFT_MAX", "RMS_NORM"} <= set(OPS)
    by = {c.name: c.argv for c in p.checks}
    assert by["version"] == ["{bundle}/llama-cli", "--version"]
    assert by["devices"] == ["{bundle}/llama-cli", "--list-devices"]
    assert by["op:FLASH_ATTN_EXT"] == [
        "{bundle}/test-backend-ops",
        "test",
        "-b",
        "{dev}",
        "-o",
        "FLASH_ATTN_EXT",
        "-j",
        "{jobs}",
    ]
    assert by["generate"][by["generate"].index("-ngl") + 1] == "0"  # the host generation runs on the CPU
    assert by["serve"][by["serve"].index("-ngl") + 1] == "0"
    assert by["generate-gpu"][by["generate-gpu"].index("-ngl") + 1] == "99"
    assert by["serve"][by["serve"].index("--host") + 1] == "127.0.0.1" and "{port}" in by["serve"]
    assert p.model_argv[1:3] == ["-m", "bundlegraph.pipeline.smoke.tinygguf"]
    assert p.build_number == g.ctx.release.build_number and p.work_dir.name == LEG
    sm = g.find(f"smoke:{LEG}")
    assert f"package:{LEG}" in sm.deps and f"smoke:tools-{LEG}" in sm.deps
    # builds beside the bundle's own build, with the leg's pinned compiler (issue 50)
    assert g.find(f"smoke:tools-{LEG}").deps == [f"source:{LEG}", g.ctx.leg(LEG).compiler.task]
    # a bare `doit` smoke-tests the default legs this host can start (the main job's aarch64
    # legs, under qemu-user here), right after their package and before the manifest
    full = load_graph(ROOT / "bundles")
    default = full.default_tasks()
    for leg in full.ctx.release.default_legs:
        assert default.index(f"smoke:{leg}") == default.index(f"package:{leg}") + 1
    assert default[-1] == "manifest"
    # a CPU leg has a smoke too, without the GPU tools
    cpu = load_graph(ROOT / "bundles", Filters(only_leg="linux-x64-cpu"))
    assert [p.full_name for p in cpu.plans if p.stage == "smoke"] == ["smoke:linux-x64-cpu"]


def test_arch_override_is_a_distinct_local_build():
    rel = load_graph(ROOT / "bundles", Filters(only_leg=LEG))
    loc = load_graph(ROOT / "bundles", Filters(only_leg=LEG, archs="90"))
    rs, ls = rel.ctx.spec(LEG), loc.ctx.spec(LEG)
    tag, prefix = rel.ctx.release.tag, rel.ctx.release.bundle_prefix
    assert ls.bundle_name(tag, prefix) == f"app-{tag}-linux-x64-cuda13-portable+sm90-local.tar.gz"
    assert rs.bundle_name(tag, prefix) == f"app-{tag}-linux-x64-cuda13-portable.tar.gz"
    assert ls.cuda.cmake_archs == ["90"] and rs.cuda.cmake_archs == ["75", "80", "86", "89", "90", "100", "120"]
    assert is_local(ls) and not is_local(rs)
    assert ls.local is not None and ls.local.tag == "sm90-local" and ls.local.origin == "archs=90"
    from bundlegraph.core.state import key_of
    from bundlegraph.pipeline.configure import plan_configure

    assert plan_configure(loc.ctx, LEG).cache["CMAKE_CUDA_ARCHITECTURES"] == "90"
    # merge's and package's keys hold the leg's spec (MergePlan.key, PackagePlan.key; their plans
    # need upstream records, so the spec part is what is compared here): it differs
    assert key_of({"spec": rs}) != key_of({"spec": ls})
    # the merge base (a CPU leg) is not touched
    both = load_graph(ROOT / "bundles", Filters(archs="90"))
    assert both.ctx.spec("linux-x64-cpu") == rel.ctx.matrix.legs["linux-x64-cpu"]
    assert both.ctx.spec("linux-arm64-cuda13-blackwell").profile_name == "cuda13-blackwell+sm90-local"
    # the legacy leg's stated SMs belong to its PTX archs: archs=90 drops them (SASS states its own)
    legacy = both.ctx.spec("linux-x64-cuda12-legacy")
    assert (legacy.cuda.cmake_archs, legacy.cuda.supported_sms) == (["90"], None)


def test_publish_gate_refuses_a_local_build(tmp_path):
    from bundlegraph.pipeline.publish import gate

    loc = load_graph(
        ROOT / "bundles", Filters(only_leg=LEG, archs="90,120")
    )  # the legacy legs (CUDA 12.4) build no 120
    probs, _ = gate(loc.ctx.matrix, tmp_path, filtered=None, source_commit=None)
    local = [p for p in probs if "is never published" in p]
    name = loc.ctx.spec(LEG).bundle_name(loc.ctx.release.tag, loc.ctx.release.bundle_prefix)
    assert name.endswith("+sm90_120-local.tar.gz")
    assert any(p.startswith(f"{name}: a local build of {LEG}") for p in local)
    rel = load_graph(ROOT / "bundles")
    probs, _ = gate(rel.ctx.matrix, tmp_path, filtered=None, source_commit=None)
    assert not [p for p in probs if "is never published" in p]


def test_override_values_are_checked():
    assert parse_archs("90") == ("90",) and parse_archs("90; 120a") == ("90", "120a")
    with pytest.raises(BundleGraphError, match=r"archs=9x: '9x' is not a CUDA arch in CMake form"):
        parse_archs("9x")
    with pytest.raises(BundleGraphError, match="archs=90,90: holds duplicates"):
        parse_archs("90,90")
    with pytest.raises(BundleGraphError, match=r"toolkit_source='wheels': only 'host' or 'host:PATH'"):
        parse_toolkit_source("wheels")
    with pytest.raises(BundleGraphError, match=r"linux-x64-cuda13-portable.toml: cuda.archs: sm_61 was dropped"):
        load_graph(ROOT / "bundles", Filters(only_leg=LEG, archs="61"))
    assert LocalOverrides(("90",), Path("/x"), "13.0").tag() == "sm90-host13.0-local"


def test_toolkit_source_override_uses_the_host_toolkit(tmp_path):
    """``toolkit_source=host:PATH`` on a toolkit without version.json (like this machine's
    /usr/local/cuda): version from include/cuda.h, the host source with that path, its own
    toolkit task, a local bundle name; a cuda12 toolkit for a cuda13 leg is refused."""
    from bundlegraph.backends.cuda.sdk import toolkit_for_leg

    tk = tmp_path / "cuda"
    (tk / "include").mkdir(parents=True)
    (tk / "include" / "cuda.h").write_text("#ifndef __cuda_cuda_h__\n#define CUDA_VERSION 13000\n#endif\n")
    # a spec that does not pin GGML_CUDA_NCCL (the release specs do): the host override turns it off
    import shutil

    bundles = tmp_path / "bundles"
    shutil.copytree(ROOT / "bundles", bundles)
    f = bundles / f"{LEG}.toml"
    f.write_text(f.read_text().replace("GGML_CUDA_NCCL = false\n", ""))
    rel = load_graph(bundles, Filters(only_leg=LEG))
    loc = load_graph(bundles, Filters(only_leg=LEG, toolkit_source=f"host:{tk}"))
    s = loc.ctx.spec(LEG)
    assert (s.cuda.toolkit.source, s.cuda.toolkit.path, s.cuda.version) == ("host", tk.resolve().as_posix(), "13.0")
    assert s.profile_name == "cuda13-portable+host13.0-local"
    assert s.cmake["GGML_CUDA_NCCL"] is False and "GGML_CUDA_NCCL" not in rel.ctx.spec(LEG).cmake
    ref = toolkit_for_leg(loc.ctx, LEG)
    assert ref.source == "host" and ref.prefix == tk.resolve() and ref.version == "13.0"
    assert ref.task != toolkit_for_leg(rel.ctx, LEG).task
    compiler = loc.ctx.leg(LEG).compiler
    assert [p.full_name for p in loc.plans if p.stage == "toolkit"] == [compiler.task, ref.task]
    (tk / "include" / "cuda.h").write_text("#define CUDA_VERSION 12080\n")
    with pytest.raises(BundleGraphError, match=r"profile.line: cuda13, but toolkit_source=host is CUDA 12.8"):
        load_graph(bundles, Filters(only_leg=LEG, toolkit_source=f"host:{tk}"))


def test_host_toolkit_version_falls_back_to_cuda_h(tmp_path):
    from bundlegraph.core.errors import ToolkitError
    from bundlegraph.toolkit.hostsrc import read_version

    (tmp_path / "include").mkdir()
    with pytest.raises(ToolkitError, match=r"version.json: missing, and so is .*include/cuda.h"):
        read_version(tmp_path)
    (tmp_path / "include" / "cuda.h").write_text("/* no version here */\n")
    with pytest.raises(
        ToolkitError, match=r"version.json: missing, and .*include/cuda.h has no '#define CUDA_VERSION <n>'"
    ):
        read_version(tmp_path)
    (tmp_path / "include" / "cuda.h").write_text("#define CUDA_VERSION 13000\n")
    assert read_version(tmp_path) == "13.0"
    (tmp_path / "version.json").write_text('{"cuda": {"name": "CUDA SDK", "version": "13.0.2"}}')
    assert read_version(tmp_path) == "13.0.2"  # NVIDIA's version.json wins when present
    real = Path("/usr/local/cuda")
    if (real / "include" / "cuda.h").is_file() and not (real / "version.json").is_file():
        assert read_version(real).split(".")[0].isdigit()


# -- the host checks' judges, on real output of the main job's aarch64 bundle (tests/data/smoke)

SMOKE_DATA = ROOT / "tests" / "data" / "smoke"


def test_version_judge_reads_the_real_llama_cli_line():
    from bundlegraph.pipeline.smoke.judges import judge_version

    out = (SMOKE_DATA / "llama-cli-version-qemu-aarch64.txt").read_text(encoding="utf-8")
    commit = "0c1e57098bba43ac29e6e3b677cdceebdd22334f"
    p, facts = judge_version(out, 0, build_number=11642, commit=commit)
    assert p is None and facts["build"] == 11642 and facts["commit"] == "0c1e570" and facts["version"] == "0.5.0-dev"
    assert (
        judge_version(out, 0, build_number=11643, commit=commit)[0]
        == "llama-cli reports build 11642, the release's upstream build is 11643"
    )
    assert judge_version(out, 0, build_number=11642, commit="1" * 40)[0].startswith("llama-cli reports commit 0c1e570")
    assert judge_version("", 127, build_number=1, commit=None)[0] == "llama-cli --version: exit code 127: (no output)"


def test_backend_and_generation_judges_read_real_llama_simple_output():
    from bundlegraph.pipeline.smoke.judges import generated_text, judge_backends, judge_generate

    out = (SMOKE_DATA / "llama-simple-n8-qemu-aarch64.txt").read_text(encoding="utf-8")
    p, facts = judge_backends(out, 0, gpu_library=None)
    assert p is None and list(facts["loaded"]) == ["CPU"] and facts["loaded"]["CPU"].endswith("/libggml-cpu.so")
    assert judge_generate(out, 0) == (None, {"decoded": 8})
    assert generated_text(out) == "究 Из cryleb Prem maslebшення"
    # a CUDA leg whose backend ggml reported nothing about is refused, naming the library
    p, _ = judge_backends(out, 0, gpu_library="libggml-cuda.so")
    assert p == "libggml-cuda.so: ggml neither loaded it nor reported why"
    # ggml's own failure line (ggml-backend-reg.cpp): the driver alone may be missing
    cuda = out + (
        "load_backend: failed to load /b/libggml-cuda.so: libcuda.so.1: cannot open shared object file: "
        "No such file or directory\n"
    )
    p, facts = judge_backends(cuda, 0, gpu_library="libggml-cuda.so")
    assert p is None and facts["cuda"].startswith("needs the driver (libcuda.so.1)")
    runtime = cuda.replace("libcuda.so.1", "libcublas.so.13")
    assert (
        judge_backends(runtime, 0, gpu_library="libggml-cuda.so")[0]
        == "libggml-cuda.so: libcublas.so.13: cannot open shared object file: No such file or directory"
    )
    no_cpu = out.replace("load_backend: loaded CPU backend", "load_backend: skipped")
    assert judge_backends(no_cpu, 0, gpu_library=None)[0].startswith("libggml-cpu*.so: no CPU backend was loaded")


def test_loader_trace_judge_allows_only_what_it_is_told():
    from bundlegraph.pipeline.smoke.judges import judge_deps

    trace = (
        "\tlinux-vdso.so.1 (0x0000005502850000)\n\tlibcudart.so.13 => /t/lib/libcudart.so.13 (0x1)\n"
        "\tlibcuda.so.1 => not found\n\tlibc.so.6 => /lib/libc.so.6 (0x2)\n"
    )
    assert judge_deps(trace, 0, "libggml-cuda.so", allowed_missing=frozenset({"libcuda.so.1"})) == (
        None,
        {"missing": ["libcuda.so.1"]},
    )
    assert judge_deps(trace, 0, "libggml-cuda.so")[0] == "libggml-cuda.so: libcuda.so.1 not found"
    assert (
        judge_deps("not a dynamic executable\n", 1, "x.so")[0]
        == "x.so: the loader cannot list it (exit code 1: not a dynamic executable)"
    )


def test_the_vulkan_side_picks_the_driver_the_setting_names_else_lavapipe(tmp_path, monkeypatch):
    from bundlegraph.backends.vulkan import smoke as vulkan

    icd = tmp_path / "nvidia_icd.json"
    icd.write_text("{}")
    p = vulkan.probe({"BUNDLEGRAPH_VULKAN_ICD": str(icd)})
    assert (p.icd, p.problem) == (icd.as_posix(), None)
    gone = vulkan.probe({"BUNDLEGRAPH_VULKAN_ICD": str(tmp_path / "none.json")})
    assert gone.icd is None and gone.problem.startswith(
        f"BUNDLEGRAPH_VULKAN_ICD={tmp_path / 'none.json'}: no such file"
    )
    # unset: Mesa's lavapipe where it is installed, else not applicable with the reason
    monkeypatch.setattr(vulkan, "ICD_DIR", tmp_path)
    none = vulkan.probe({})
    assert (
        none.icd is None and "Mesa's lavapipe" in none.problem and "BUNDLEGRAPH_VULKAN_ICD is not set" in none.problem
    )
    (tmp_path / "lvp_icd.x86_64.json").write_text("{}")
    (tmp_path / "lvp_icd.aarch64.json").write_text("{}")
    assert vulkan.probe({}).icd in {(tmp_path / n).as_posix() for n in vulkan.LAVAPIPE.values()}
    d = vulkan.decide("linux", "x64", ("linux", "x64"), p)
    assert d.run and d.gpu == {"index": 0, "name": "nvidia_icd.json"} and d.probe["icd"] == icd.as_posix()
    assert not vulkan.decide("linux", "arm64", ("linux", "x64"), p).run
    no = vulkan.decide("linux", "x64", ("linux", "x64"), gone)
    assert not no.run and no.reason == gone.problem


def test_the_vulkan_side_shows_the_programs_its_driver_alone():
    from bundlegraph.backends.vulkan import smoke as vulkan
    from bundlegraph.pipeline.smoke.side import Decision

    run = types.SimpleNamespace(env={"LD_LIBRARY_PATH": "/x"}, decision=Decision(True, probe={"icd": "/i.json"}))
    assert vulkan.env(run) == {  # type: ignore[arg-type]
        "LD_LIBRARY_PATH": "/x",
        "VK_DRIVER_FILES": "/i.json",
        "VK_ICD_FILENAMES": "/i.json",
        "GGML_VK_VISIBLE_DEVICES": "0",
    }


def test_every_gpu_backend_has_a_smoke_side():
    import importlib

    from bundlegraph.backends.cuda import smoke as cuda
    from bundlegraph.backends.hip import smoke as hip
    from bundlegraph.backends.metal import smoke as metal
    from bundlegraph.backends.vulkan import smoke as vulkan
    from bundlegraph.pipeline.smoke.sides import side_problems, sides
    from bundlegraph.schemas import backend as backends

    SIDES = sides()

    # derived from the registry: a backend added as one folder needs no edit here
    expected = {
        b.NAME: (importlib.import_module(f"{backends.module_name(b)}.smoke") if b.GPU else None)
        for b in backends.BACKENDS
    }
    assert SIDES == expected
    assert {"cpu": None, "cuda": cuda, "vulkan": vulkan, "hip": hip, "metal": metal}.items() <= SIDES.items()
    assert side_problems(SIDES) == []
    from bundlegraph.pipeline.smoke.sides import load_sides

    assert load_sides() == SIDES  # each backend names its own side (SMOKE)
    others = {n: s for n, s in SIDES.items() if n not in ("cuda", "vulkan")}
    assert side_problems({**others, "cuda": vulkan}) == [
        f"smoke sides for {sorted(set(SIDES) - {'vulkan'})}: expected one entry per backend {sorted(SIDES)}",
        "smoke side vulkan is registered as cuda",
        "GPU backend vulkan has no smoke side",
    ]
    # a side module missing a member of the protocol is named with what it lacks, not found later
    # as an AttributeError in some stage
    import types

    half = types.ModuleType("half_side")
    half.BACKEND = "metal"  # type: ignore[attr-defined]
    assert side_problems({**SIDES, "metal": half}) == [  # type: ignore[dict-item]
        "smoke side of metal (half_side) lacks ['DEV', 'DOC', 'OPS', 'PARALLEL_OPS', 'REFERENCE_JOBS', "
        "'decide', 'decide_here', 'describe', 'env', 'probe', 'reference_problem', 'reference_sms', 'runtime_dir', "
        "'sibling']: expected "
        "every member of GpuSide"
    ]
    # the CUDA ops and commands are what they were: a bare op name, every case
    assert [op for op, params in cuda.OPS if params is None] == list(OPS)
    assert (
        judge_devices(
            "Available devices:\n  Vulkan0: llvmpipe (LLVM 15.0.6, 256 bits) (2048 MiB, 2048 MiB free)\n", "Vulkan"
        )
        is None
    )
    # a backend whose one device has no index (ggml-opencl's GPUOpenCL) is found by its name alone
    assert (
        judge_devices("Available devices:\n  GPUOpenCL: QUALCOMM Adreno(TM) (0 MiB, 0 MiB free)\n", "GPUOpenCL") is None
    )
    assert judge_devices("Available devices:\n  GPUOpenCLx: other\n", "GPUOpenCL") is not None
    # ggml-vulkan's own count line (a host whose driver finds no GPU) is not a device
    assert judge_devices("Vulkan: 0 device(s)\nAvailable devices:\n", "Vulkan") is not None
    assert judge_devices("Available devices:\n  (none)\n", "Vulkan") == (
        "no Vulkan<n> device listed: the Vulkan backend did not load or sees no GPU (a fallback to the CPU)"
    )
