"""The throughput check of ``smoke:<leg>`` (issue 43 item 6, "speed parity, not only
correctness"): the bundle's own ``llama-bench`` against a reference build of the same source with
upstream's release flags (:mod:`.reference`, built by ``smoke:tools-<leg>``), on the same GPU in
the same run, on a small real-shaped model (``tinygguf --shape bench``: 124.7 M parameters, Q8_0).

Why: unsloth#11349: the fork's ``cuda13-newer`` bundle ran 8.4 tokens/s where upstream's CUDA 12
build ran 56.8 on the same RTX 5070 Ti, and no hash or arch gate caught it. A bundle more than
:data:`THRESHOLD` slower than the reference in prompt processing (``pp``) or generation (``tg``)
fails its smoke, in one line naming both figures.

Steps (after the GPU ops, on a side with :attr:`~.side.GpuSide.REFERENCE_JOBS`, i.e. CUDA):

- ``bench-model``: writes the bench model with the source's ``gguf-py`` (not applicable without a
  llama.cpp source, as the tiny model);
- ``throughput``: ``llama-bench`` of the reference, then of the bundle, each :data:`BENCH_ARGS`
  (every layer on the GPU, :data:`N_PROMPT` prompt and :data:`N_GEN` generated tokens,
  :data:`REPETITIONS` repetitions, one JSON object per test: ``-o jsonl``,
  ``tools/llama-bench/README.md``), in the side's environment (the chosen GPU alone). Recorded:
  both sides' tokens/s (mean and standard deviation of the repetitions), the ratio, the threshold,
  the reference's flags and where they came from.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...core import proc
from ...core.buildenv import allowed_env
from ...core.errors import BundleGraphError
from .reference import reference_record

if TYPE_CHECKING:
    from .steps import Outcome, SmokeRun

THRESHOLD = 0.10
"""The most a bundle may be slower than the reference, as a fraction of the reference's
tokens/s, in prompt processing or generation. Source: issue 43 item 6 ("a bundle more than 10 %
slower fails its smoke", after unsloth#11349's 8.4 vs 56.8 tokens/s)."""
N_PROMPT = 512
"""Prompt tokens of the ``pp`` test (llama-bench's default)."""
N_GEN = 128
"""Generated tokens of the ``tg`` test (llama-bench's default)."""
REPETITIONS = 5
"""Runs of each test; llama-bench reports their mean and standard deviation (its default)."""
BENCH_ARGS = [
    "-m",
    "{bench_model}",
    "-ngl",
    "99",
    "-p",
    str(N_PROMPT),
    "-n",
    str(N_GEN),
    "-r",
    str(REPETITIONS),
    "-o",
    "jsonl",
]
"""``llama-bench`` arguments, both sides alike (``{bench_model}`` filled at run time)."""
SHAPE = "bench"
"""The :mod:`.tinygguf` shape measured."""


def key() -> dict[str, Any]:
    """What the throughput check adds to the smoke's and the tools task's action keys."""
    from .reference import OVERRIDES, TARGETS, WORKFLOW

    return {
        "bench": BENCH_ARGS,
        "threshold": THRESHOLD,
        "shape": SHAPE,
        "reference": {"workflow": WORKFLOW, "targets": list(TARGETS), "overrides": OVERRIDES},
    }


def parse_bench(out: str) -> dict[str, dict[str, Any]]:
    """llama-bench's ``-o jsonl`` results in ``out`` (stdout and stderr in one pipe: other lines
    are skipped) as ``{"pp512": {...}, "tg128": {...}}``: per test its mean ``ts`` and
    ``stddev`` (tokens/s), the ``samples`` and what ran it (``backends``, ``gpu_info``,
    ``build_commit``). A test is ``pp<n_prompt>`` when it generates nothing, else ``tg<n_gen>``."""
    tests: dict[str, dict[str, Any]] = {}
    for line in out.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            d = json.loads(line)
        except json.JSONDecodeError:
            continue
        if not isinstance(d, dict) or "avg_ts" not in d:
            continue
        name = f"pp{d.get('n_prompt')}" if not d.get("n_gen") else f"tg{d.get('n_gen')}"
        tests[name] = {
            "ts": round(float(d["avg_ts"]), 2),
            "stddev": round(float(d.get("stddev_ts", 0.0)), 2),
            "samples": d.get("samples_ts"),
            "backends": d.get("backends"),
            "gpu_info": d.get("gpu_info"),
            "build_commit": d.get("build_commit"),
        }
    return tests


def judge_throughput(
    bundle: dict[str, dict[str, Any]], reference: dict[str, dict[str, Any]], threshold: float = THRESHOLD
) -> tuple[str | None, dict[str, Any]]:
    """``(problem or None, facts)``: every test of the reference must be in the bundle's results,
    at no less than ``1 - threshold`` of the reference's tokens/s. The problem is one line naming
    both figures of each test that is too slow (or missing). Facts: per test both means, the
    ratio bundle/reference, and the threshold."""
    facts: dict[str, Any] = {"threshold": threshold, "tests": {}}
    if not reference:
        return "the reference llama-bench reported no test", facts
    probs = []
    for name, ref in sorted(reference.items()):
        got = bundle.get(name)
        if got is None:
            probs.append(f"{name}: the bundle's llama-bench reported no result (the reference: {ref['ts']} tokens/s)")
            continue
        ratio = got["ts"] / ref["ts"] if ref["ts"] > 0 else 0.0
        facts["tests"][name] = {"bundle": got["ts"], "reference": ref["ts"], "ratio": round(ratio, 3)}
        if ratio < 1.0 - threshold:
            probs.append(
                f"{name}: the bundle ran {got['ts']} tokens/s, the reference build of the same source with "
                f"upstream's flags {ref['ts']} ({(1.0 - ratio) * 100:.0f} % slower; more than "
                f"{threshold * 100:.0f} % fails: issue 43, unsloth#11349)"
            )
    return ("; ".join(probs) or None), facts


def bench_model(run: SmokeRun) -> Outcome:
    """Write the bench-shaped model (:mod:`.tinygguf`, :data:`SHAPE`) beside the tiny one."""
    from .host import vocab

    v = vocab(run)
    assert v is not None  # gated by the model step
    a = [
        x.replace("{vocab}", v.as_posix()).replace("{model}", run.bench_model.as_posix()) for x in run.plan.model_argv
    ] + ["--shape", SHAPE]
    penv = allowed_env(os.environ)  # the source's gguf-py runs: build code
    root = Path(__file__).resolve().parents[3]
    penv["PYTHONPATH"] = os.pathsep.join(x for x in (root.as_posix(), penv.get("PYTHONPATH", "")) if x)
    proc.run(a, env=penv, log=run.plan.log, what=f"smoke:{run.plan.leg}: bench model")
    return None, {"shape": SHAPE, "bytes": run.bench_model.stat().st_size}, proc.quote(a)


def throughput(run: SmokeRun) -> Outcome:
    """``llama-bench`` of the reference, then of the bundle, on the chosen GPU; judged by
    :func:`judge_throughput`."""
    side = run.side
    assert side is not None
    rec_file = reference_record(run.plan.tools_dir)
    if not rec_file.is_file():
        raise BundleGraphError(f"{rec_file} is missing; run smoke:tools-{run.plan.leg} (it builds the reference)")
    ref_rec = json.loads(rec_file.read_text(encoding="utf-8"))
    prog = run.bundle_dir / f"llama-bench{run.plan.exe}"
    if not prog.is_file():
        raise BundleGraphError(f"the bundle has no llama-bench{run.plan.exe}: its throughput cannot be measured")
    env = side.env(run)
    ref_out, ref_rc, ref_cmd = run.program("throughput-reference", "llama-bench (reference)", env)
    out, rc, cmd = run.program("throughput", "llama-bench (bundle)", env)
    reference, bundle = parse_bench(ref_out), parse_bench(out)
    facts: dict[str, Any] = {
        "bundle": bundle,
        "reference": reference,
        "reference_command": ref_cmd,
        "reference_build": {
            k: ref_rec.get(k) for k in ("flags", "flags_from", "overrides", "cuda_architectures", "targets")
        },
    }
    if ref_rc != 0:
        return f"the reference llama-bench: exit code {ref_rc}", facts, cmd
    if rc != 0:
        return f"the bundle's llama-bench: exit code {rc}", facts, cmd
    problem, verdict = judge_throughput(bundle, reference)
    facts |= verdict
    return problem, facts, cmd


__all__ = [
    "BENCH_ARGS",
    "N_GEN",
    "N_PROMPT",
    "REPETITIONS",
    "SHAPE",
    "THRESHOLD",
    "bench_model",
    "judge_throughput",
    "key",
    "parse_bench",
    "throughput",
]
