"""The smoke's throughput check (issue 43 item 6): the judge on real llama-bench output, the
flags read from a release workflow, the reference's configure command and targets, the plan's
commands and keys, the bench model's shape (pure parts: no process, no network; the bench model
itself and upstream's real release.yml are read in tests/integration/test_smoke_task.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bundlegraph.core.errors import BundleGraphError
from bundlegraph.graph import Filters, load_graph
from bundlegraph.pipeline.smoke import plan_smoke
from bundlegraph.pipeline.smoke.reference import OVERRIDES, TARGETS, reference_argv, upstream_flags
from bundlegraph.pipeline.smoke.throughput import BENCH_ARGS, THRESHOLD, judge_throughput, parse_bench
from bundlegraph.pipeline.smoke.tinygguf import BENCH_HPARAMS, HPARAMS, SHAPES, n_params, tensor_shapes

ROOT = Path(__file__).resolve().parents[2]
LEG = "linux-x64-cuda13-portable"
REAL = (ROOT / "tests/data/smoke/llama-bench-jsonl-cpu-x64.txt").read_text(encoding="utf-8")


@pytest.fixture(autouse=True)
def _clean(workdir, monkeypatch):
    for v in ("BUNDLEGRAPH_ARCHS", "BUNDLEGRAPH_TOOLKIT_SOURCE"):
        monkeypatch.delenv(v, raising=False)


def test_parse_bench_reads_real_llama_bench_jsonl_among_log_lines():
    got = parse_bench(REAL)
    assert set(got) == {"pp64", "tg8"}  # -p 64 -n 8: a prompt test and a generation test
    assert got["pp64"]["ts"] == 1810.72 and got["pp64"]["stddev"] == 8.85
    assert got["tg8"]["ts"] == 388.98 and got["tg8"]["samples"] == [392.166, 385.793]
    assert got["tg8"]["backends"] == "CPU" and got["tg8"]["build_commit"] == "0c1e570"
    assert parse_bench("load_backend: loaded CPU backend from x\n{not json\n") == {}


def test_judge_passes_parity_and_fails_the_fork_bundle_naming_both_figures():
    real = parse_bench(REAL)
    problem, facts = judge_throughput(real, real)
    assert problem is None and facts["tests"]["tg8"] == {"bundle": 388.98, "reference": 388.98, "ratio": 1.0}
    assert facts["threshold"] == THRESHOLD == 0.10
    # unsloth#11349: the fork's cuda13-newer bundle 8.4 tokens/s, upstream's build 56.8, same GPU
    slow = {"tg128": {"ts": 8.4}, "pp512": {"ts": 1000.0}}
    ref = {"tg128": {"ts": 56.8}, "pp512": {"ts": 1050.0}}
    problem, facts = judge_throughput(slow, ref)
    assert problem == (
        "tg128: the bundle ran 8.4 tokens/s, the reference build of the same source with upstream's flags 56.8 "
        "(85 % slower; more than 10 % fails: issue 43, unsloth#11349)"
    )
    assert "\n" not in problem and facts["tests"]["pp512"]["ratio"] == 0.952  # 4.8 % slower: within
    # just past the threshold fails, just inside passes
    assert judge_throughput({"pp512": {"ts": 89.9}}, {"pp512": {"ts": 100.0}})[0] is not None
    assert judge_throughput({"pp512": {"ts": 90.1}}, {"pp512": {"ts": 100.0}})[0] is None
    assert judge_throughput({}, {"pp512": {"ts": 100.0}})[0] == (
        "pp512: the bundle's llama-bench reported no result (the reference: 100.0 tokens/s)"
    )
    assert judge_throughput(real, {})[0] == "the reference llama-bench reported no test"


WORKFLOW = """
env:
  CMAKE_ARGS: "-DLLAMA_BUILD_TESTS=OFF -DGGML_RPC=ON"
jobs:
  ubuntu-cuda:
    strategy:
      matrix:
        include:
          - build: 'x64'
            label: '12.8'
            defines: '-DGGML_CUDA_CUB_3DOT2=ON'
          - build: 'x64'
            label: '13.4'
            defines: ''
    steps:
      - name: Build
        id: cmake_build
        run: |
          cmake -B build \\
            -DCMAKE_INSTALL_RPATH='$ORIGIN' \\
            -DGGML_CUDA=ON \\
            ${{ env.CMAKE_ARGS }} ${{ matrix.defines }}
          cmake --build build --config Release -j $(nproc)
"""


def test_upstream_flags_expand_env_and_matrix_and_refuse_what_they_cannot_know():
    flags, source = upstream_flags(WORKFLOW, "release.yml", "ubuntu-cuda", "x64", 13)
    assert flags == ["-DCMAKE_INSTALL_RPATH=$ORIGIN", "-DGGML_CUDA=ON", "-DLLAMA_BUILD_TESTS=OFF", "-DGGML_RPC=ON"]
    assert source == ".github/workflows/release.yml jobs.ubuntu-cuda (matrix build=x64 label=13.4), step cmake_build"
    assert upstream_flags(WORKFLOW, "release.yml", "ubuntu-cuda", "x64", 12)[0][-1] == "-DGGML_CUDA_CUB_3DOT2=ON"
    with pytest.raises(BundleGraphError, match=r"^release.yml: jobs.windows-cuda: no such job"):
        upstream_flags(WORKFLOW, "release.yml", "windows-cuda", "x64", 13)
    with pytest.raises(BundleGraphError, match=r"expected one entry with build arm64 and a 13.x label, found 0 "):
        upstream_flags(WORKFLOW, "release.yml", "ubuntu-cuda", "arm64", 13)
    secret = WORKFLOW.replace("${{ matrix.defines }}", "${{ secrets.FLAGS }}")
    with pytest.raises(BundleGraphError, match=r"\$\{\{ secrets.FLAGS \}\}: not a workflow env or matrix value"):
        upstream_flags(secret, "release.yml", "ubuntu-cuda", "x64", 13)
    with pytest.raises(BundleGraphError, match=r"^release.yml: not YAML"):
        upstream_flags("jobs: [", "release.yml", "ubuntu-cuda", "x64", 13)


def test_reference_configure_targets_the_gpus_own_sm_only():
    argv = reference_argv("cmake", "/t/ninja", Path("/src"), Path("/w/reference"), ["-DGGML_CUDA=ON"], [90, 90])
    assert argv == [
        "cmake",
        "-S",
        "/src",
        "-B",
        "/w/reference/cmake",
        "-G",
        "Ninja",
        "-DCMAKE_MAKE_PROGRAM=/t/ninja",
        "-DCMAKE_TOOLCHAIN_FILE=/w/reference/toolchain.cmake",
        "-DGGML_CUDA=ON",
        "-DGGML_CPU_ALL_VARIANTS=OFF",  # after upstream's flags: one CPU backend, not 14 variants
        "-DCMAKE_CUDA_ARCHITECTURES=90-real",
    ]
    assert OVERRIDES == {"GGML_CPU_ALL_VARIANTS": "OFF"}
    assert (
        reference_argv("c", "n", Path("/s"), Path("/r"), [], [120, 89])[-1]
        == "-DCMAKE_CUDA_ARCHITECTURES=89-real;120-real"
    )
    with pytest.raises(BundleGraphError, match="needs the GPU's SM"):
        reference_argv("c", "n", Path("/s"), Path("/r"), [], [])
    assert TARGETS == ("llama-bench", "ggml-cuda", "ggml-cpu")


def test_the_plan_benches_both_sides_alike_after_the_ops_and_keys_the_reference():
    g = load_graph(ROOT / "bundles", Filters(only_leg=LEG))
    p = plan_smoke(g.ctx, LEG)
    by = {c.name: c.argv for c in p.checks}
    assert [c.name for c in p.checks][-2:] == ["throughput-reference", "throughput"]
    assert by["throughput"] == ["{bundle}/llama-bench", *BENCH_ARGS]
    assert by["throughput-reference"] == ["{reference}/llama-bench", *BENCH_ARGS]
    assert BENCH_ARGS == ["-m", "{bench_model}", "-ngl", "99", "-p", "512", "-n", "128", "-r", "5", "-o", "jsonl"]
    ref = g.find(f"smoke:reference-{LEG}")
    sdk = g.ctx.leg(LEG).sdk
    # the leg's own toolkit and pinned compiler
    assert sdk is not None and ref.deps == [f"source:{LEG}", sdk.task, g.ctx.leg(LEG).compiler.task]
    assert f"smoke:reference-{LEG}" in g.find(f"smoke:{LEG}").deps
    # the Vulkan side has no throughput check (lavapipe is a CPU rasterizer); nor a CPU leg
    for leg in ("linux-x64-vulkan", "linux-x64-cpu"):
        gl = load_graph(ROOT / "bundles", Filters(only_leg=leg))
        assert not [t for t in gl.plans if t.name.startswith("reference-")]
        assert "throughput" not in {c.name for c in plan_smoke(gl.ctx, leg).checks}


def test_the_reference_task_key_holds_the_checks_constants(workdir):
    from bundlegraph.pipeline.smoke import reference_inputs
    from bundlegraph.pipeline.smoke.throughput import key

    g = load_graph(ROOT / "bundles", Filters(only_leg=LEG))
    k = reference_inputs(g.ctx, LEG)
    assert set(k) == {"source", "toolkit", "toolchain", "throughput", "host", "gpus"}
    assert k["throughput"] == key() and k["throughput"]["threshold"] == THRESHOLD
    assert k["throughput"]["reference"]["workflow"] == ".github/workflows/release.yml"
    assert "CMAKE_CUDA_COMPILER" in k["toolchain"]  # the leg's own toolchain: its nvcc


def test_the_bench_shape_is_a_real_shaped_small_llama():
    hp, wtype, _name = SHAPES["bench"]
    assert hp is BENCH_HPARAMS and wtype == "Q8_0" and SHAPES["tiny"][:2] == (HPARAMS, "F16")
    # llama-spm's 32,000 tokens: 124.7 M parameters, in the brief's 100-300 M
    assert n_params(32000, BENCH_HPARAMS) == 124_668_672
    assert n_params(32000) == 4_170_048
    s = tensor_shapes(32000, BENCH_HPARAMS)
    assert len(s) == 3 + 9 * 12
    assert s["blk.11.attn_k.weight"] == (256, 768)  # 4 KV heads of 64
    assert s["blk.0.ffn_down.weight"] == (768, 2048)
    # Q8_0 packs blocks of 32 along a row: every 2-D weight's row is a multiple of 32
    assert all(shape[-1] % 32 == 0 for shape in s.values() if len(shape) == 2)


def test_no_reference_is_built_where_no_gpu_can_run_the_check(workdir, monkeypatch):
    import json

    from bundlegraph.gpus import GpuProbe
    from bundlegraph.pipeline.smoke import cuda
    from bundlegraph.pipeline.smoke.gpu import run_reference
    from bundlegraph.pipeline.smoke.plan import plan_reference

    none = GpuProbe((), "nvidia-smi is not on PATH (no NVIDIA driver on this host)", "nvidia-smi ...")
    monkeypatch.setattr(cuda, "probe", lambda: none)
    g = load_graph(ROOT / "bundles", Filters(only_leg=LEG))
    p = plan_reference(g.ctx, LEG)
    assert p.job == "ubuntu-cuda" and not p.decision.run and p.configure is None
    (note,) = run_reference(p)
    assert note == workdir / "build" / LEG / "smoke-tools" / "reference" / "not-built.json"
    assert json.loads(note.read_text()) == {"leg": LEG, "built": False, "reason": f"no NVIDIA GPU: {none.problem}"}
    assert not (note.parent / "cmake").exists()


def test_a_runner_that_imports_the_build_installs_no_toolkit_for_the_reference(tmp_path):
    (tmp_path / LEG).mkdir()  # the leg's build output, made on another runner (built=DIR)
    g = load_graph(ROOT / "bundles", Filters(only_leg=LEG, built=tmp_path))
    # no CUDA toolkit; the pinned compiler, which the reference build compiles with, still
    compiler = g.ctx.leg(LEG).compiler
    assert g.find(f"smoke:reference-{LEG}").deps == [f"source:{LEG}", compiler.task]
    assert not [t for t in g.find(f"build:{LEG}").deps if t.startswith("toolkit:")]
