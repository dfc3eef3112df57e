"""The throughput check's method (:mod:`.throughput` runs it): what ``llama-bench`` is asked,
in which order the two sides run, how its output is read, pooled and judged. Pure: no step, no
process (the numbers and the rule are issue 52 item 3's; the module docstring of :mod:`.throughput`
says why each is so).

- :data:`ROUNDS` rounds of ``llama-bench`` (:data:`BENCH_ARGS`: every layer on the GPU,
  :data:`N_PROMPT` prompt and :data:`N_GEN` generated tokens, :data:`REPS_PER_ROUND` repetitions,
  ``-o jsonl``, ``tools/llama-bench/README.md``), the two sides interleaved (:func:`schedule`)
  after one discarded warm-up run of each (:data:`WARM_UP`);
- every repetition's tokens/s (``samples_ts``) pooled per side, model and test (:func:`pool`);
- :func:`judge_throughput`: slower than the reference by more than
  ``max(MIN_MARGIN, SIGMAS * se / m_ref)`` fails, one line naming both figures;
- :func:`backend_problem`: figures from a side whose GPU backend did not load are no GPU's.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

MIN_MARGIN = 0.03
"""The smallest margin: a bundle more than 3 % slower than the reference fails even on a quiet
machine (issue 52 item 3)."""
SIGMAS = 3.0
"""Standard errors of the difference of the means a margin spans on a noisy machine (issue 52
item 3: "max(3 %, 3 sigma)")."""
N_PROMPT = 512
"""Prompt tokens of the ``pp`` test (llama-bench's default)."""
N_GEN = 128
"""Generated tokens of the ``tg`` test (llama-bench's default)."""
ROUNDS = 4
"""llama-bench runs per side, interleaved (ABBA, :func:`schedule`)."""
REPS_PER_ROUND = 3
"""Repetitions of each test in one llama-bench run (after its warm-up run)."""
WARM_UP = ("reference", "bundle")
"""One run of each side before :func:`schedule`'s, whose figures are not pooled: the first
process on a machine pays the driver's one-time work (the Vulkan driver compiles ggml's
pipelines into its cache; measured on an H100: 15.0 s against 1.3 s for each later run, and the
reference, always first, had a standard deviation of 40 % of its mean instead of 3 %,
BENCHMARKS.md), which llama-bench's own warm-up repetition does not absorb."""
SHAPES = ("dense-1b", "moe")
"""The :mod:`.tinygguf` shapes measured, each its own model file (``bench-<shape>.gguf``)."""
BENCH_ARGS = [
    *(a for shape in SHAPES for a in ("-m", f"{{bench_model:{shape}}}")),
    "-ngl",
    "99",
    "-p",
    str(N_PROMPT),
    "-n",
    str(N_GEN),
    "-r",
    str(REPS_PER_ROUND),
    "-o",
    "jsonl",
]
"""``llama-bench`` arguments, both sides alike (``{bench_model:<shape>}`` filled at run time; one
``-m`` per model, which llama-bench appends to its list)."""


def key() -> dict[str, Any]:
    """What the throughput check adds to the smoke's and the tools task's action keys."""
    from .reference import OVERRIDES, WORKFLOW, targets

    return {
        "bench": BENCH_ARGS,
        "rounds": ROUNDS,
        "warm_up": list(WARM_UP),
        "margin": {"min": MIN_MARGIN, "sigmas": SIGMAS},
        "shapes": list(SHAPES),
        "reference": {"workflow": WORKFLOW, "targets": list(targets("<backend>")), "overrides": OVERRIDES},
    }


def schedule(rounds: int = ROUNDS) -> list[str]:
    """The order of the runs: ``reference``/``bundle`` pairs, every second pair reversed
    (ABBA), ``2 * rounds`` entries."""
    pair = ["reference", "bundle"]
    return [side for i in range(rounds) for side in (pair if i % 2 == 0 else pair[::-1])]


def _model_label(d: dict[str, Any]) -> str:
    """``dense-1b`` for ``.../bench-dense-1b.gguf``: the shape a result's model file holds (its
    file name without ``bench-`` and ``.gguf``; other names as they are)."""
    name = Path(str(d.get("model_filename") or "model")).name
    name = name.removesuffix(".gguf")
    return name.removeprefix("bench-")


def parse_bench(out: str) -> dict[str, dict[str, Any]]:
    """llama-bench's ``-o jsonl`` results in ``out`` (stdout and stderr in one pipe: other lines
    are skipped) as ``{"<model>/pp512": {...}, "<model>/tg128": {...}}`` (``<model>``:
    :func:`_model_label`): per test its mean ``ts`` and ``stddev`` (tokens/s), every repetition's
    tokens/s in ``samples`` (``[ts]`` when llama-bench gave none) and what ran it
    (``backends``, ``gpu_info``, ``build_commit``). A test is ``pp<n_prompt>`` when it
    generates nothing, else ``tg<n_gen>``."""
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
        test = f"pp{d.get('n_prompt')}" if not d.get("n_gen") else f"tg{d.get('n_gen')}"
        samples = d.get("samples_ts")
        tests[f"{_model_label(d)}/{test}"] = {
            "ts": round(float(d["avg_ts"]), 2),
            "stddev": round(float(d.get("stddev_ts", 0.0)), 2),
            "samples": [float(x) for x in samples] if isinstance(samples, list) and samples else [float(d["avg_ts"])],
            "backends": d.get("backends"),
            "gpu_info": d.get("gpu_info"),
            "build_commit": d.get("build_commit"),
        }
    return tests


def pool(runs: list[dict[str, dict[str, Any]]]) -> dict[str, list[float]]:
    """Every repetition's tokens/s per test over several :func:`parse_bench` results."""
    out: dict[str, list[float]] = {}
    for r in runs:
        for name, t in r.items():
            out.setdefault(name, []).extend(t["samples"])
    return out


def _stats(xs: list[float]) -> tuple[float, float, int]:
    """Mean, sample standard deviation (0 for one sample) and count."""
    import statistics

    return statistics.fmean(xs), (statistics.stdev(xs) if len(xs) > 1 else 0.0), len(xs)


def judge_throughput(
    bundle: dict[str, list[float]],
    reference: dict[str, list[float]],
    min_margin: float = MIN_MARGIN,
    sigmas: float = SIGMAS,
    reference_name: str = "the reference build of the same source with upstream's flags",
) -> tuple[str | None, dict[str, Any]]:
    """``(problem or None, facts)`` from each side's pooled samples (tokens/s per test,
    :func:`pool`): every test of the reference must be in the bundle's, and no more than its
    margin ``max(min_margin, sigmas * se / m_ref)`` slower (module docstring). The problem is one
    line naming both means, the spread and the margin of each test that is too slow (or
    missing). Facts: per test both means, standard deviations and sample counts, the ratio
    bundle/reference and the margin used."""
    import math

    facts: dict[str, Any] = {"margin": {"min": min_margin, "sigmas": sigmas}, "tests": {}}
    if not reference:
        return "the reference llama-bench reported no test", facts
    probs = []
    for name, ref in sorted(reference.items()):
        got = bundle.get(name)
        mr, sr, nr = _stats(ref)
        if not got:
            probs.append(f"{name}: the bundle's llama-bench reported no result (the reference: {mr:.2f} tokens/s)")
            continue
        mb, sb, nb = _stats(got)
        se = math.sqrt(sb * sb / nb + sr * sr / nr)
        margin = max(min_margin, sigmas * se / mr) if mr > 0 else min_margin
        ratio = mb / mr if mr > 0 else 0.0
        facts["tests"][name] = {
            "bundle": {"mean": round(mb, 2), "stddev": round(sb, 2), "n": nb},
            "reference": {"mean": round(mr, 2), "stddev": round(sr, 2), "n": nr},
            "ratio": round(ratio, 4),
            "margin": round(margin, 4),
        }
        if 1.0 - ratio > margin:
            probs.append(
                f"{name}: the bundle ran {mb:.2f} tokens/s (sd {sb:.2f}, n {nb}), {reference_name} "
                f"{mr:.2f} (sd {sr:.2f}, n {nr}): {(1.0 - ratio) * 100:.1f} % "
                f"slower, more than the margin of {margin * 100:.1f} % (max of {min_margin * 100:.0f} % and "
                f"{sigmas:g} standard errors; issue 52, unsloth#11349)"
            )
    return ("; ".join(probs) or None), facts


BACKEND_NAMES = {"cuda": "CUDA", "vulkan": "Vulkan"}
"""What llama-bench reports in ``backends`` for a bundle whose GPU backend loaded (its ``-o jsonl``)."""


def backend_problem(who: str, result: dict[str, dict[str, Any]], backend: str) -> str | None:
    """Why ``who``'s llama-bench figures are not the GPU's: a backend module that failed to load
    leaves ggml on the CPU, whose figures would compare as if they were (one line), or None."""
    want = BACKEND_NAMES.get(backend)
    ran = sorted({str(t.get("backends") or "") for t in result.values()})
    if want is None or all(want in r.split(",") for r in ran):
        return None
    return f"{who}'s llama-bench ran on {', '.join(ran) or 'nothing'}, not {want}: its {want} backend did not load"


__all__ = [
    "BACKEND_NAMES",
    "BENCH_ARGS",
    "MIN_MARGIN",
    "N_GEN",
    "N_PROMPT",
    "REPS_PER_ROUND",
    "ROUNDS",
    "SHAPES",
    "SIGMAS",
    "backend_problem",
    "judge_throughput",
    "key",
    "parse_bench",
    "pool",
    "schedule",
]
