"""The throughput check of ``smoke:<leg>`` (issue 43 item 6, issue 52 item 3, "speed parity, not
only correctness"): the bundle's own ``llama-bench`` against a reference build of the same source
with upstream's release flags (:mod:`.reference`, built by ``smoke:reference-<leg>``), on the same GPU
in the same run, on two models of realistic shape (:mod:`.tinygguf`): ``dense-1b`` (1.1 G
parameters, Q4_K_M mix) and ``moe`` (8 experts, 2 used: ``MUL_MAT_ID`` and top-k).

Why: unsloth#11349: the fork's ``cuda13-newer`` bundle ran 8.4 tokens/s where upstream's CUDA 12
build ran 56.8 on the same RTX 5070 Ti, and no hash or arch gate caught it.

How (``throughput`` step, after the GPU ops, on a side with :attr:`~.side.GpuSide.REFERENCE_JOBS`):

- :data:`ROUNDS` rounds of ``llama-bench`` (:data:`BENCH_ARGS`: every layer on the GPU,
  :data:`N_PROMPT` prompt and :data:`N_GEN` generated tokens, :data:`REPS_PER_ROUND` repetitions,
  ``-o jsonl``, ``tools/llama-bench/README.md``), the two sides interleaved in the order
  reference, bundle, bundle, reference, ... (ABBA: a clock or thermal drift over the check
  weighs on both sides alike; the reference does not always run first);
- every repetition's tokens/s (``samples_ts``) pooled per side, model and test: mean ``m`` and
  sample standard deviation ``s`` over ``n`` samples;
- a test fails when the bundle is slower than the reference by more than
  ``max(MIN_MARGIN, SIGMAS * se / m_ref)``, ``se = sqrt(s_b^2/n_b + s_r^2/n_r)`` (the standard
  error of the difference of the means): a noisy machine widens the margin to what it can
  resolve, a quiet one holds the bundle to 3 %. One line names both figures, the spread and the
  margin.
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


def bench_model(run: SmokeRun) -> Outcome:
    """Write each shape of :data:`SHAPES` (:mod:`.tinygguf`) beside the tiny model."""
    from .host import vocab

    v = vocab(run)
    assert v is not None  # gated by the model step
    penv = allowed_env(os.environ)  # the source's gguf-py runs: build code
    root = Path(__file__).resolve().parents[3]
    penv["PYTHONPATH"] = os.pathsep.join(x for x in (root.as_posix(), penv.get("PYTHONPATH", "")) if x)
    sizes, cmds = {}, []
    for shape in SHAPES:
        out = run.bench_model(shape)
        if "," in out.as_posix():  # llama-bench splits -m at commas
            raise BundleGraphError(
                f"{out}: llama-bench cannot take a model path holding a comma; use another work directory"
            )
        a = [x.replace("{vocab}", v.as_posix()).replace("{model}", out.as_posix()) for x in run.plan.model_argv]
        a += ["--shape", shape]
        proc.run(a, env=penv, log=run.plan.log, what=f"smoke:{run.plan.leg}: bench model {shape}")
        sizes[shape] = out.stat().st_size
        cmds.append(proc.quote(a))
    return None, {"shapes": sizes}, "; ".join(cmds)


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


def _interleaved(
    run: SmokeRun, ref_check: str, who_ref: str, envs: dict[str, dict[str, str]]
) -> tuple[str | None, dict[str, list[dict[str, dict[str, Any]]]], dict[str, str]]:
    """:func:`schedule`'s runs of ``ref_check`` and the bundle's ``throughput`` check, each side in
    its own environment; ``(problem or None, results per side, command per side)``."""
    runs: dict[str, list[dict[str, dict[str, Any]]]] = {"reference": [], "bundle": []}
    cmds: dict[str, str] = {}
    for who in schedule():
        check = ref_check if who == "reference" else "throughput"
        name = who_ref if who == "reference" else "bundle"
        out, rc, cmd = run.program(check, f"llama-bench ({name}, run {len(runs[who]) + 1} of {ROUNDS})", envs[who])
        cmds[who] = cmd
        if rc != 0:
            return f"the {name}'s llama-bench: exit code {rc}", runs, cmds
        runs[who].append(parse_bench(out))
        bad = backend_problem(f"the {name}", runs[who][-1], run.plan.backend)
        if bad:
            return bad, runs, cmds
    return None, runs, cmds


def _against_line(run: SmokeRun, env: dict[str, str]) -> tuple[str | None, dict[str, Any]]:
    """The bundle against the release's CUDA 12 bundle (:mod:`.line`), or why that cannot run here."""
    from ...core.extract import extract
    from ...platforms import platform

    line = run.plan.line
    assert line is not None
    if line.problem is not None or line.archive is None or line.runtime is None:
        return None, {"leg": line.leg, "status": "not applicable", "reason": line.problem}
    if not run.line_dir.is_dir():
        extract(line.archive, run.line_dir)
    var = platform(run.plan.os).loader_var
    lenv = dict(env, **{var: os.pathsep.join([run.line_dir.as_posix(), line.runtime.as_posix()])})
    problem, runs, cmds = _interleaved(
        run, "throughput-line", f"CUDA 12 bundle {line.archive.name}'s", {"reference": lenv, "bundle": env}
    )
    facts: dict[str, Any] = {"leg": line.leg, "bundle": line.archive.name, "reference_command": cmds.get("reference")}
    if problem is not None:
        return f"against {line.archive.name}: {problem}", facts | {"status": "failed"}
    bad, verdict = judge_throughput(
        pool(runs["bundle"]),
        pool(runs["reference"]),
        reference_name=f"the release's CUDA 12 bundle {line.archive.name}",
    )
    return bad, facts | verdict | {"status": "failed" if bad else "passed"}


def throughput(run: SmokeRun) -> Outcome:
    """``llama-bench`` of the reference and of the bundle, interleaved (:func:`schedule`), on the
    chosen GPU; judged by :func:`judge_throughput`. A CUDA 13 bundle is then compared the same way
    with the release's CUDA 12 bundle where it is here (:mod:`.line`, under ``cuda12`` in the facts).
    Figures from a side whose GPU backend did not load fail the check (:func:`backend_problem`)."""
    side = run.side
    assert side is not None
    rec_file = reference_record(run.plan.tools_dir)
    if not rec_file.is_file():
        raise BundleGraphError(f"{rec_file} is missing; run smoke:reference-{run.plan.leg} (it builds the reference)")
    ref_rec = json.loads(rec_file.read_text(encoding="utf-8"))
    prog = run.bundle_dir / f"llama-bench{run.plan.exe}"
    if not prog.is_file():
        raise BundleGraphError(f"the bundle has no llama-bench{run.plan.exe}: its throughput cannot be measured")
    env = side.env(run)
    failed, runs, cmds = _interleaved(run, "throughput-reference", "reference", {"reference": env, "bundle": env})
    facts: dict[str, Any] = {"order": schedule()}
    if failed is not None:
        return failed, facts, cmds.get("bundle", "")
    facts |= {
        "bundle": runs["bundle"][-1],
        "reference": runs["reference"][-1],
        "reference_command": cmds["reference"],
        "reference_build": {
            k: ref_rec.get(k) for k in ("flags", "flags_from", "overrides", "cuda_architectures", "targets")
        },
    }
    problem, verdict = judge_throughput(pool(runs["bundle"]), pool(runs["reference"]))
    facts |= verdict
    if run.plan.line is not None:
        line_problem, facts["cuda12"] = _against_line(run, env)
        problem = "; ".join(p for p in (problem, line_problem) if p) or None
    return problem, facts, cmds["bundle"]


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
    "bench_model",
    "judge_throughput",
    "key",
    "parse_bench",
    "pool",
    "schedule",
    "throughput",
]
