"""smoke:<leg> through the real doit where the bundle cannot start (a Windows bundle on this
Linux host): skipped with the reason, recorded as skipped (never a pass), no stamp, evaluated
again on the next run; test-backend-ops not built where the GPU checks cannot run. And the tiny
GGUF writer with the real llama.cpp source's gguf-py and vocabulary."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from graphrun import doit

ROOT = Path(__file__).resolve().parents[2]
LEG = "linux-x64-cuda13-portable"
COMMIT = "0c1e57098bba43ac29e6e3b677cdceebdd22334f"


def _bundle(dist: Path, leg: str, os_name: str, arch: str) -> Path:
    """A real bundle archive (bundlegraph's writer) holding only an info JSON of ``leg``."""
    from bundlegraph.graph.context import Filters, load_graph
    from bundlegraph.pipeline.bundle.archive import Entry, write_archive
    from bundlegraph.schemas.manifest import BundleInfo, VerifyFindings

    g = load_graph(ROOT / "bundles", Filters(only_leg=leg))
    s, r = g.ctx.spec(leg), g.ctx.release
    name = s.bundle_name(r.tag, r.bundle_prefix)
    info = BundleInfo(
        asset_name=name,
        leg=leg,
        os=os_name,
        arch=arch,
        install_kind=s.install_kind,
        source_repo=r.source_repo,
        source_commit=COMMIT,
        source_digest="0" * 64,
        upstream_tag=r.upstream_tag,
        release_tag=r.tag,
        platform=f"{os_name}-{arch}",
        profile=s.profile.name,
        archs=[],
        bundle_profile=s.profile.name,
        runtime_line=None,
        coverage_class="cpu",
        bundle_rank=10,
        toolkit_version=None,
        supported_sms=[],
        min_sm=None,
        max_sm=None,
        ggml_backend_dl=True,
        signing="not-required",
        verify=VerifyFindings(machine=arch, fatbin_sms=[], passed=True),
    )
    dist.mkdir(parents=True, exist_ok=True)
    write_archive(dist / name, [Entry(r.info_file, data=info.model_dump_json().encode())], 0)
    return dist / name


def test_a_bundle_that_cannot_start_here_is_skipped_with_the_reason_and_never_passes(workdir):
    leg = "windows-x64-cpu"
    bundle = _bundle(workdir / "dist", leg, "windows", "x64")
    for attempt in range(2):
        r = doit(["-s", f"smoke:{leg}"], workdir=workdir, BUNDLEGRAPH_ONLY_LEG=leg)
        assert r.returncode == 0, r.stdout + r.stderr
        # executed every time (never "-- smoke:..." up to date), reason printed
        assert f".  smoke:{leg}" in r.stdout, r.stdout
        assert "SKIPPED (not a pass): a windows bundle does not run on a linux host" in r.stdout, r.stdout
        assert f"[smoke:{leg}] SKIPPED" in r.stdout
        rec = json.loads((workdir / "build" / leg / "smoke.json").read_text())
        assert rec["status"] == "skipped" and rec["reason"] == "a windows bundle does not run on a linux host"
        assert not list((workdir / ".bundlegraph" / "stamps").glob("smoke__*"))
    # nothing was unpacked for a host that cannot run it, and no result travels with the bundle
    assert not list((workdir / "build" / leg).glob("smoke-*"))
    assert not Path(f"{bundle}.smoke.json").exists()


@pytest.mark.skipif(
    shutil.which("nvidia-smi") is not None, reason="this host has an NVIDIA driver (the no-GPU path is not reachable)"
)
def test_test_backend_ops_is_not_built_where_no_gpu_can_run_it(workdir):
    leg = "linux-x64-cuda13-portable"
    r = doit(["-s", f"smoke:tools-{leg}"], workdir=workdir, BUNDLEGRAPH_ONLY_LEG=leg)
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"smoke:tools-{leg}: nothing to build here: no NVIDIA GPU: nvidia-smi is not on PATH" in r.stdout, r.stdout
    note = json.loads((workdir / "build" / leg / "smoke-tools" / "not-built.json").read_text())
    assert note["built"] is False and note["reason"].startswith("no NVIDIA GPU")
    assert not (workdir / "build" / leg / "smoke-tools" / "cmake").exists()
    # an up-to-date result for this host (the key holds its GPU probe): the next run does nothing
    r = doit(["-s", f"smoke:tools-{leg}"], workdir=workdir, BUNDLEGRAPH_ONLY_LEG=leg)
    assert r.returncode == 0 and f"-- smoke:tools-{leg}" in r.stdout, r.stdout


def test_tiny_gguf_reads_back_with_gguf_py(real_input, tmp_path):
    sdist = real_input("llama-sdist", unpack=True)
    src = next(sdist.glob("*/vendor/llama.cpp"), None) or next(sdist.glob("vendor/llama.cpp"))
    out = tmp_path / "tiny.gguf"
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "bundlegraph.pipeline.smoke.tinygguf",
            "--gguf-py",
            str(src / "gguf-py"),
            "--vocab",
            str(src / "models" / "ggml-vocab-llama-spm.gguf"),
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert r.returncode == 0, r.stderr
    assert not list(tmp_path.glob(".tiny.gguf.tmp*"))
    sys.path.insert(0, str(src / "gguf-py"))
    try:
        import gguf

        rd = gguf.GGUFReader(str(out))
        vocab = gguf.GGUFReader(str(src / "models" / "ggml-vocab-llama-spm.gguf"))
    finally:
        sys.path.remove(str(src / "gguf-py"))
    from bundlegraph.pipeline.smoke.tinygguf import HPARAMS, tensor_shapes

    assert rd.fields["general.architecture"].contents() == "llama"
    assert rd.fields["llama.block_count"].contents() == HPARAMS["n_layer"]
    assert rd.fields["llama.attention.head_count_kv"].contents() == HPARAMS["n_head_kv"]
    toks = rd.fields["tokenizer.ggml.tokens"]
    assert len(toks.data) == len(vocab.fields["tokenizer.ggml.tokens"].data) == 32000
    assert toks.contents(100) == vocab.fields["tokenizer.ggml.tokens"].contents(100)
    shapes = {t.name: tuple(int(x) for x in reversed(t.shape)) for t in rd.tensors}
    assert shapes == tensor_shapes(32000)
    assert {t.name: t.tensor_type.name for t in rd.tensors}["blk.1.ffn_down.weight"] == "F16"
    # deterministic: same vocabulary, same bytes
    out2 = tmp_path / "again.gguf"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "bundlegraph.pipeline.smoke.tinygguf",
            "--gguf-py",
            str(src / "gguf-py"),
            "--vocab",
            str(src / "models" / "ggml-vocab-llama-spm.gguf"),
            "--out",
            str(out2),
        ],
        check=True,
        capture_output=True,
        cwd=ROOT,
    )
    assert out2.read_bytes() == out.read_bytes()


def test_bench_gguf_and_upstream_release_flags_from_the_real_source(real_input, tmp_path):
    """The throughput check's inputs from the release's real llama.cpp source: the MoE bench
    model (0.29 G parameters, 8 experts, Q4_K_M mix; about 5 s and 189 MB here) reads back with
    gguf-py as llama.cpp's MoE loader expects it, and the reference's flags come out of the
    source's own release workflow (issue 43 item 6, issue 52 item 3; the 1 B dense model is the
    same code with other sizes, 0.71 GB, written on the GPU machine)."""
    from bundlegraph.pipeline.smoke.reference import WORKFLOW, upstream_flags
    from bundlegraph.pipeline.smoke.tinygguf import MOE_HPARAMS, n_params, tensor_shapes

    sdist = real_input("llama-sdist", unpack=True)
    src = next(sdist.glob("*/vendor/llama.cpp"), None) or next(sdist.glob("vendor/llama.cpp"))
    flags, where = upstream_flags((src / WORKFLOW).read_text(encoding="utf-8"), WORKFLOW, "ubuntu-cuda", "x64", 13)
    assert flags == [
        "-DCMAKE_INSTALL_RPATH=$ORIGIN",
        "-DCMAKE_BUILD_WITH_INSTALL_RPATH=ON",
        "-DGGML_BACKEND_DL=ON",
        "-DGGML_NATIVE=OFF",
        "-DGGML_CPU_ALL_VARIANTS=ON",
        "-DGGML_CUDA=ON",
        "-DGGML_CUDA_NCCL=OFF",
        "-DLLAMA_BUILD_EXAMPLES=OFF",
        "-DLLAMA_BUILD_TESTS=OFF",
        "-DLLAMA_BUILD_TOOLS=ON",
        "-DLLAMA_BUILD_SERVER=ON",
        "-DGGML_RPC=ON",
    ]
    assert where == f"{WORKFLOW} jobs.ubuntu-cuda (matrix build=x64 label=13.4), step cmake_build"
    # the CUDA 12 entry adds CCCL 3.2 (fetched with git at configure time)
    assert (
        upstream_flags((src / WORKFLOW).read_text(encoding="utf-8"), WORKFLOW, "ubuntu-cuda", "x64", 12)[0][-1]
        == "-DGGML_CUDA_CUB_3DOT2=ON"
    )
    out = tmp_path / "bench-moe.gguf"
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "bundlegraph.pipeline.smoke.tinygguf",
            "--gguf-py",
            str(src / "gguf-py"),
            "--vocab",
            str(src / "models" / "ggml-vocab-llama-spm.gguf"),
            "--out",
            str(out),
            "--shape",
            "moe",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert r.returncode == 0, r.stderr
    assert "287917056 parameters" in r.stdout and out.stat().st_size == 189_257_824
    sys.path.insert(0, str(src / "gguf-py"))
    try:
        import gguf

        rd = gguf.GGUFReader(str(out))
    finally:
        sys.path.remove(str(src / "gguf-py"))
    assert rd.fields["general.name"].contents() == "bundlegraph-bench-moe"
    assert rd.fields["llama.block_count"].contents() == MOE_HPARAMS["n_layer"]
    assert rd.fields["llama.attention.head_count_kv"].contents() == MOE_HPARAMS["n_head_kv"]
    assert rd.fields["llama.expert_count"].contents() == 8 and rd.fields["llama.expert_used_count"].contents() == 2
    types = {t.name: t.tensor_type.name for t in rd.tensors}
    assert types["blk.7.ffn_down_exps.weight"] == types["output.weight"] == "Q6_K"
    assert types["blk.7.ffn_up_exps.weight"] == types["token_embd.weight"] == "Q4_K"
    assert types["output_norm.weight"] == types["blk.0.ffn_gate_inp.weight"] == "F32"
    shapes = {t.name: tuple(int(x) for x in reversed(t.shape)) for t in rd.tensors}
    assert shapes == tensor_shapes(32000, MOE_HPARAMS)
    assert sum(int(t.n_elements) for t in rd.tensors) == n_params(32000, MOE_HPARAMS) == 287_917_056
    # the k-quant blocks carry the fixed scale (f16 0.0005) where ggml-common.h puts d: no inf/nan
    import numpy as np

    q6 = next(t for t in rd.tensors if t.name == "output.weight")
    d = np.frombuffer(np.asarray(q6.data).reshape(-1, 210)[:, 208:210].tobytes(), dtype=np.float16)
    assert np.all(d == np.float16(0.0005)), d[:4]
