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
from .bench import (
    ROUNDS,
    SHAPES,
    WARM_UP,
    backend_problem,
    judge_throughput,
    parse_bench,
    pool,
    schedule,
)
from .reference import reference_record

if TYPE_CHECKING:
    from .steps import Outcome, SmokeRun


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


def _interleaved(
    run: SmokeRun, ref_check: str, who_ref: str, envs: dict[str, dict[str, str]]
) -> tuple[str | None, dict[str, list[dict[str, dict[str, Any]]]], dict[str, str]]:
    """:data:`WARM_UP`'s runs (checked, not pooled), then :func:`schedule`'s runs of ``ref_check``
    and the bundle's ``throughput`` check, each side in its own environment; ``(problem or None,
    results per side, command per side)``."""
    runs: dict[str, list[dict[str, dict[str, Any]]]] = {"reference": [], "bundle": []}
    cmds: dict[str, str] = {}
    for i, who in enumerate([*WARM_UP, *schedule()]):
        warm_up = i < len(WARM_UP)
        check = ref_check if who == "reference" else "throughput"
        name = who_ref if who == "reference" else "bundle"
        what = "warm-up run, not counted" if warm_up else f"run {len(runs[who]) + 1} of {ROUNDS}"
        out, rc, cmd = run.program(check, f"llama-bench ({name}, {what})", envs[who])
        cmds[who] = cmd
        if rc != 0:
            return f"the {name}'s llama-bench: exit code {rc}", runs, cmds
        result = parse_bench(out)
        bad = backend_problem(f"the {name}", result, run.plan.backend)
        if bad:
            return bad, runs, cmds
        if not warm_up:
            runs[who].append(result)
    return None, runs, cmds


def _against_line(run: SmokeRun, env: dict[str, str]) -> tuple[str | None, dict[str, Any]]:
    """The bundle against the release's CUDA 12 bundle (:mod:`.line`), or why that cannot run here."""
    from ...core.extract import extract
    from ...core.platforms import platform

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
    facts: dict[str, Any] = {"warm_up": list(WARM_UP), "order": schedule()}
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


__all__ = ["bench_model", "throughput"]  # the method's names are :mod:`.bench`'s (imported here for the steps)
