"""Stage ``smoke:<leg>``: run the finished bundle before it is published.

**On every host that can start the bundle's programs** (natively, or a Linux bundle of another
CPU through qemu-user with the target's sysroot: :mod:`bundlegraph.emulation`) the host checks
run (:mod:`.smokechecks`), cheap first:

- ``version``: ``llama-cli --version``: its build number is the release's upstream build and
  its commit the source's;
- ``libraries`` (Linux): glibc's loader traces every ELF file of the bundle (``ldd``: the loader
  with ``LD_TRACE_LOADED_OBJECTS=1``): every dependency resolves (bundle, the toolkit's CUDA
  runtime, the target's system), except the driver (``libcuda.so.1``) for the CUDA backend;
- with a llama.cpp source (its ``gguf-py`` and vocab models): ``model`` (a tiny random-weight
  GGUF, :mod:`.tinygguf`); ``backends``: ``llama-simple -n 1``, judged from ggml's own
  ``load_backend`` messages: a CPU backend loads, and a CUDA backend (named by
  ``GGML_BACKEND_PATH``, so ggml says why it did not load) loads or lacks nothing but the
  driver, with the CUDA runtime the leg declares taken from its toolkit's target libraries (never
  the link-only stub); ``generate`` (``llama-simple``, N tokens, greedy) run twice, the same text
  both times; ``serve`` (``llama-server`` on a free loopback port: ``/health``, one
  ``/completion`` that must give llama-simple's text, clean exit on SIGTERM). With another source
  (the tests' stand-in) ``list-devices`` (``llama-cli --list-devices``, the stand-in logs its
  backend loading there) judges the backends, and model, generate and serve are recorded as not
  applicable.

A host that cannot start the bundle skips the task with the reason (a skip is never a pass, see
below). ``smoke:<leg>`` is a default task of every leg whose bundle this host can start, so the
main job smoke-tests its bundles before the manifest; for the others it is opt-in.

**On a host with an NVIDIA GPU, for a CUDA leg**, the GPU checks follow. Decision first
(:func:`decide`):

1. the bundle's os/arch (its info JSON) must be this host's;
2. the driver must list a GPU (``nvidia-smi``, :mod:`bundlegraph.gpus`);
3. the bundle's CUDA backend must cover one of those GPUs: its fatbin inventory (SASS and PTX
   per SM, :mod:`bundlegraph.checks.fatbin`, read from the unpacked ``libggml-cuda.so`` /
   ``ggml-cuda.dll``) against the GPU's compute capability (:func:`bundlegraph.gpus.covered`).

Otherwise the GPU checks are recorded as not applicable, with the reason (the probe result is
part of the action key, so a GPU appearing is noticed). A task whose bundle cannot start here at
all is **skipped**: ``build/<leg>/smoke.json`` records ``status: "skipped"`` and the reason, the
reason is printed, and :class:`~bundlegraph.core.errors.TaskSkipped` ends the task without a stamp, so
it is never shown as up to date and runs again on the next ``doit``. A skip is never a pass.

The GPU checks:

Checks, run in this order (cheap first), each recorded with its command, seconds and result (a
failure names the step or op):

- ``devices``: ``llama-cli --list-devices`` (common's ``common_print_available_devices``,
  ``common/arg.cpp``) from the unpacked bundle must list a ``CUDA<n>:`` device — the CUDA backend
  was loaded by ``GGML_BACKEND_DL`` and sees the GPU;
- ``test-backend-ops`` (built by its own task ``smoke:tools-<leg>``, which is skipped — nothing
  built — where the smoke test would be skipped): built from the same source with the merge
  base's generated toolchain and cache entries (``LLAMA_BUILD_TESTS=ON``; ``GGML_CPU``/``GGML_CPU_ALL_VARIANTS`` OFF because
  ggml makes every backend module a dependency of ``ggml``; tools, examples, server, app OFF) in
  ``build/<leg>/smoke-tools``, target ``test-backend-ops`` only; copied next to the bundle's
  libraries, where its ``$ORIGIN`` RUNPATH finds the bundle's ``libggml*``/``libllama*`` and
  ``ggml_backend_load_all`` the bundle's backends. ``test-backend-ops test -b CUDA<n> -o OP``
  compares CUDA with the CPU backend per op in :data:`OPS` (usage text in
  ``tests/test-backend-ops.cpp``); an op passes when it exits 0, prints ``Backend CUDA<n>: OK``
  and ``k/k tests passed`` with k > 0;
- ``model``: a tiny random-weight GGUF (:mod:`.tinygguf`, the source's ``gguf-py`` and its
  ``models/ggml-vocab-llama-spm.gguf``);
- ``generate``: ``llama-simple -m tiny.gguf -n 8 -ngl 99`` (or ``llama-completion``): exit 0, the
  loader's ``offloaded k/k layers to GPU`` (``src/llama-model.cpp``) and ``decoded N tokens``
  with N > 0.

The external CUDA runtime (``runtime.external``: ``libcudart.so.13``, cuBLAS) is taken from the
leg's toolkit (its target ``lib`` directory is put first on ``LD_LIBRARY_PATH``; ``PATH`` on
Windows), as an installer pairs it. Output: ``build/<leg>/smoke.json`` (atomic; one format for
both kinds of host: ``status``, ``how`` it ran, and per check its command, seconds, result and
what it printed that matters), copied beside the bundle as ``dist/<bundle>.smoke.json`` (it
travels with the bundle to the manifest job); full program output in
``build/<leg>/logs/smoke.log``.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from ..core import paths, proc
from ..core.errors import BundleGraphError, TaskSkipped
from ..core.fsutil import atomic_write_json, rmtree
from ..core.report import say
from ..smokestatus import sidecar
from ..toolchains.base import this_host
from ..toolchains.tools import build_tools
from .base import Context, Prepared, TaskPlan, upstream_digest
from .configure import check_host, plan_configure
from .smokegpu import (
    OPS,
    TOOLS_CACHE,
    Decision,
    SmokeToolsPlan,
    decide,
    gpu_checks,
    inventory,
    judge_devices,
    judge_gpu_generate,
    judge_op,
    run_tools,
    tools_argv,
    tools_program,
)
from .smokeplan import Check, SmokePlan
from .source import source_record_if_any

NAME = "smoke"
"""The stage's name: its tasks are ``smoke:<leg>`` (:mod:`bundlegraph.pipeline.stages`)."""
OPT_IN = True
"""Never part of a bare ``doit`` on its own (the graph adds the smoke of legs this host can start)."""

VOCABS = ("ggml-vocab-llama-spm.gguf", "ggml-vocab-llama-bpe.gguf")
N_PREDICT = 8


def host_platform() -> tuple[str, str]:
    """``(os, arch)`` of this host in spec terms (:func:`bundlegraph.toolchains.base.this_host`)."""
    return this_host()


def _source_tree(leg: str, ctx: Context) -> Path:
    from .source import plan_source

    rec = source_record_if_any(leg)
    if rec is not None:
        return Path(rec.tree)
    return plan_source(ctx.release, ctx.matrix.root).tree


def _source_commit(leg: str) -> str | None:
    rec = source_record_if_any(leg)
    return rec.commit if rec is not None else None


def plan_smoke(ctx: Context, leg: str) -> SmokePlan:
    """The smoke plan of ``leg`` (pure: no process, nothing written)."""
    from .toolkit import toolkit_for_leg

    spec = ctx.spec(leg)
    bdir = paths.build_dir(leg)
    exe = ".exe" if spec.os == "windows" else ""
    tree = _source_tree(leg, ctx)
    py = proc.python_exe()
    bundle = paths.dist_dir() / spec.bundle_name(ctx.release.tag, ctx.release.bundle_prefix)
    tbo = f"{{bundle}}/test-backend-ops{exe}"
    checks = [
        Check("version", [f"{{bundle}}/llama-cli{exe}", "--version"]),
        # ggml logs each backend it loads (or why not) when a program starts loading them:
        # llama-simple does, with a model; llama-cli --list-devices of a real llama.cpp
        # prints no log, so it is the check only where no model can be made (the stand-in)
        Check("backends", [f"{{bundle}}/llama-simple{exe}", "-m", "{model}", "-n", "1", "-ngl", "0", "Hello"]),
        Check("list-devices", [f"{{bundle}}/llama-cli{exe}", "--list-devices"]),
        # the host checks compute on the CPU (-ngl 0; llama-simple offloads 99 layers by
        # default): the same text on every host, and no GPU log lines inside it
        Check(
            "generate", [f"{{bundle}}/llama-simple{exe}", "-m", "{model}", "-n", str(N_PREDICT), "-ngl", "0", "Hello"]
        ),
        Check(
            "serve",
            [
                f"{{bundle}}/llama-server{exe}",
                "-m",
                "{model}",
                "--host",
                "127.0.0.1",
                "--port",
                "{port}",
                "-c",
                "256",
                "-t",
                "2",
                "-ngl",
                "0",
            ],
        ),
    ]
    if spec.cuda is not None:
        checks += [
            Check("devices", [f"{{bundle}}/llama-cli{exe}", "--list-devices"]),
            Check(
                "generate-gpu",
                [f"{{bundle}}/llama-simple{exe}", "-m", "{model}", "-n", str(N_PREDICT), "-ngl", "99", "Hello"],
            ),
        ]
        checks += [Check(f"op:{op}", [tbo, "test", "-b", "{dev}", "-o", op, "-j", "{jobs}"]) for op in OPS]
    rdir: Path | None = None
    if spec.cuda is not None:
        try:
            rdir = toolkit_for_leg(ctx, leg).bin_dir
        except BundleGraphError:
            rdir = None
    model_argv = [
        py,
        "-m",
        "bundlegraph.pipeline.tinygguf",
        "--gguf-py",
        (tree / "gguf-py").as_posix(),
        "--vocab",
        "{vocab}",
        "--out",
        "{model}",
    ]
    return SmokePlan(
        leg=leg,
        base=spec.merge.base if spec.merge else None,
        os=spec.os,
        arch=spec.arch,
        bundle=bundle,
        record=bdir / "smoke.json",
        log=ctx.log(leg, "smoke"),
        tools_dir=bdir / "smoke-tools",
        source_tree=tree,
        checks=checks,
        model_argv=model_argv,
        runtime_dir=rdir,
        exe=exe,
        info_file=ctx.release.info_file,
        work_dir=bdir,
        cuda=spec.cuda is not None,
        build_number=ctx.release.build_number,
        commit=_source_commit(leg),
    )


def plan_tools(ctx: Context, leg: str) -> SmokeToolsPlan:
    """The :class:`SmokeToolsPlan` of ``leg`` now: probes the GPUs; when the smoke test can run
    here, checks the host and resolves tools and compilers (:class:`HostMismatch`,
    :class:`ToolMissing` otherwise)."""
    from ..gpus import probe

    smoke = plan_smoke(ctx, leg)
    d = decide(smoke.os, smoke.arch, host_platform(), probe())
    if not d.run:
        return SmokeToolsPlan(smoke, d)
    base = smoke.base or leg
    tc = check_host(ctx, base)
    tools = build_tools()
    resolved = tc.resolve(None)
    return SmokeToolsPlan(
        smoke,
        d,
        plan_configure(ctx, base, tools, resolved.binaries),
        resolved,
        cmake=str(tools.cmake.path),
        ninja=str(tools.ninja.path),
        commit=_source_commit(leg),
    )


def _skip(plan: SmokePlan, d: Decision) -> None:
    atomic_write_json(
        plan.record,
        {"leg": plan.leg, "status": "skipped", "reason": d.reason, "bundle": plan.bundle.name, "probe": d.probe},
    )
    say(f"smoke:{plan.leg}: SKIPPED (not a pass): {d.reason}")
    raise TaskSkipped(f"smoke:{plan.leg}: {d.reason}")


def _elf_files(bundle_dir: Path) -> list[Path]:
    return sorted(p for p in bundle_dir.rglob("*") if p.is_file() and p.open("rb").read(4) == b"\x7fELF")


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def run_smoke(plan: SmokePlan) -> list[Path]:
    """Run the host checks, then (CUDA leg, GPU here) the GPU checks (module docstring). Returns
    ``[smoke.json, sidecar]`` when every check that applies passed; raises :class:`TaskSkipped`
    (recorded) when the bundle cannot start here, or :class:`BundleGraphError` naming the failing
    checks (recorded)."""
    from ..core.extract import extract
    from ..emulation import launcher_for
    from ..gpus import probe
    from . import jobs as jobs_mod
    from . import smokechecks as sc

    leg = plan.leg
    if not plan.bundle.is_file():
        raise BundleGraphError(f"smoke:{leg}: {plan.bundle} is missing; run package:{leg}")
    from ..archive import read_bundle_info

    info = read_bundle_info(plan.bundle, plan.info_file)
    launcher = launcher_for(info.os, info.arch)
    if isinstance(launcher, str):
        _skip(plan, Decision(False, launcher))
    assert not isinstance(launcher, str)
    plan.log.parent.mkdir(parents=True, exist_ok=True)
    plan.log.write_text("", encoding="utf-8")
    results: list[dict[str, Any]] = []
    t_all = time.monotonic()
    plan.work_dir.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="smoke-", dir=plan.work_dir))
    d = Decision(False, "not a CUDA leg")
    summary: str | None = None
    try:
        bundle_dir = tmp / "bundle"
        extract(plan.bundle, bundle_dir)
        model = tmp / "tiny.gguf"
        jobs = str(jobs_mod.cores())
        prog_env: dict[str, str] = {}
        if plan.runtime_dir is not None:  # the CUDA runtime the leg declares, from its toolkit
            stubs = sorted(p.name for p in plan.runtime_dir.glob("libcuda.so*"))
            if stubs:  # the link-only driver stub crashes a process that loads it
                raise BundleGraphError(
                    f"smoke:{leg}: {plan.runtime_dir} holds {', '.join(stubs)}: the driver "
                    "(or its link-only stub) must never be on a bundle's runtime path"
                )
            var = "PATH" if plan.os == "windows" else "LD_LIBRARY_PATH"
            prog_env[var] = plan.runtime_dir.as_posix()
        cuda_lib = ("ggml-cuda.dll" if plan.os == "windows" else "libggml-cuda.so") if plan.cuda else None
        port = {"value": 0}

        def fill(argv: list[str], dev: str = "") -> list[str]:
            return [
                a.replace("{bundle}", bundle_dir.as_posix())
                .replace("{model}", model.as_posix())
                .replace("{dev}", dev)
                .replace("{jobs}", jobs)
                .replace("{port}", str(port["value"]))
                for a in argv
            ]

        def step(name: str, fn: Callable[[], tuple[Any, dict[str, Any], str | None]]) -> bool:
            t0 = time.monotonic()
            try:
                problem, facts, cmd = fn()
            except BundleGraphError as e:
                problem, facts, cmd = str(e).splitlines()[0], {}, None
            r = {
                "check": name,
                "status": "failed" if problem else "passed",
                "seconds": round(time.monotonic() - t0, 1),
                "command": cmd,
                **facts,
            }
            if problem:
                r["problem"] = problem
            results.append(r)
            atomic_write_json(
                plan.record,
                {
                    "leg": leg,
                    "status": "running",
                    "bundle": plan.bundle.name,
                    "how": launcher.describe(),
                    "checks": results,
                },
            )
            say(f"smoke:{leg}: {name}: {'FAILED: ' + problem if problem else 'passed'} ({r['seconds']} s)")
            return not problem

        def not_applicable(name: str, why: str) -> None:
            results.append({"check": name, "status": "not applicable", "reason": why})
            say(f"smoke:{leg}: {name}: not applicable: {why}")

        def run_prog(argv: list[str], what: str, env: dict[str, str], dev: str = "") -> tuple[str, int, str]:
            a = fill(argv, dev)
            full = launcher.argv(a[0], a[1:], env)
            r = proc.run(
                full,
                env=launcher.process_env(env),
                log=plan.log,
                capture=True,
                check=False,
                what=f"smoke:{leg}: {what}",
                cwd=tmp,
            )
            return r.output, r.returncode, proc.quote(full)

        by = {c.name: c for c in plan.checks}

        def version() -> tuple[Any, dict[str, Any], str | None]:
            out, rc, cmd = run_prog(by["version"].argv, "version", prog_env)
            p, facts = sc.judge_version(out, rc, build_number=plan.build_number, commit=plan.commit)
            return p, facts, cmd

        def backends(name: str) -> Callable[[], tuple[Any, dict[str, Any], str | None]]:
            def one() -> tuple[Any, dict[str, Any], str | None]:
                env = dict(prog_env)
                if cuda_lib:  # ggml then says why the CUDA backend did not load, if it did not
                    env["GGML_BACKEND_PATH"] = (bundle_dir / cuda_lib).as_posix()
                out, rc, cmd = run_prog(by[name].argv, name, env)
                p, facts = sc.judge_backends(out, rc, cuda_library=cuda_lib, os_name=plan.os)
                return p, facts, cmd

            return one

        def libraries() -> tuple[Any, dict[str, Any], str | None]:
            lib_path = [bundle_dir] + ([plan.runtime_dir] if plan.runtime_dir else [])
            probs, listed = [], {}
            for f in _elf_files(bundle_dir):
                argv, env = launcher.list_deps(f, lib_path)
                r = proc.run(
                    argv, env=env, log=plan.log, capture=True, check=False, what=f"smoke:{leg}: ldd {f.name}", cwd=tmp
                )
                allowed = frozenset({sc.DRIVER}) if f.name == cuda_lib else frozenset()
                p, facts = sc.judge_deps(r.output, r.returncode, f.name, allowed_missing=allowed)
                listed[f.name] = facts.get("missing", [])
                if p:
                    probs.append(p)
            return (
                ("; ".join(probs) or None),
                {"files": len(listed), "missing": {k: v for k, v in listed.items() if v}},
                None,
            )

        step("version", version)
        if plan.os == "linux":
            step("libraries", libraries)
        vocab = next(
            (plan.source_tree / "models" / v for v in VOCABS if (plan.source_tree / "models" / v).is_file()), None
        )
        llama = (plan.source_tree / "gguf-py").is_dir() and vocab is not None

        def make_model() -> tuple[Any, dict[str, Any], str | None]:
            assert vocab is not None
            a = [x.replace("{vocab}", vocab.as_posix()).replace("{model}", model.as_posix()) for x in plan.model_argv]
            penv = dict(os.environ)
            root = Path(__file__).resolve().parents[2]
            penv["PYTHONPATH"] = os.pathsep.join(x for x in (root.as_posix(), penv.get("PYTHONPATH", "")) if x)
            proc.run(a, env=penv, log=plan.log, what=f"smoke:{leg}: tiny model")
            return None, {"vocab": vocab.name, "bytes": model.stat().st_size}, proc.quote(a)

        have_model = False
        if not llama:
            why = f"the source ({plan.source_tree.name}) has no gguf-py and vocab models: not llama.cpp"
            not_applicable("model", why)
            step("list-devices", backends("list-devices"))
            for name in ("generate", "serve"):
                not_applicable(name, why)
        else:
            have_model = step("model", make_model)
            if have_model:
                step("backends", backends("backends"))
            texts: list[str] = []

            def gen(i: int) -> Callable[[], tuple[Any, dict[str, Any], str | None]]:
                def one() -> tuple[Any, dict[str, Any], str | None]:
                    out, rc, cmd = run_prog(by["generate"].argv, f"generate #{i}", prog_env)
                    p, facts = sc.judge_generate(out, rc)
                    text = sc.generated_text(out)
                    facts["text"] = text
                    if p is None and text is None:
                        p = "llama-simple printed no generated text after the prompt"
                    texts.append(text or "")
                    if p is None and i == 2 and texts[0] != texts[1]:
                        p = (
                            f"the repeat run generated {texts[1]!r}, the first {texts[0]!r} (greedy decoding of one "
                            "model must repeat)"
                        )
                    return p, facts, cmd

                return one

            if have_model:
                generated = step("generate", gen(1)) and step("generate again", gen(2))

                def serving() -> tuple[Any, dict[str, Any], str | None]:
                    port["value"] = _free_port()
                    a = fill(by["serve"].argv)
                    full = launcher.argv(a[0], a[1:], prog_env)
                    timeout = 240.0 if launcher.qemu else 60.0
                    p, facts = sc.serve(
                        full,
                        launcher.process_env(prog_env),
                        port["value"],
                        plan.log,
                        timeout=timeout,
                        n_predict=N_PREDICT,
                        expect=texts[0] if generated else None,
                    )
                    return p, facts, proc.quote(full)

                step("serve", serving)
        if plan.cuda:
            pr = probe()
            sass, ptx, summary = inventory(bundle_dir, info.os)
            d = decide(info.os, info.arch, host_platform(), pr, sass, ptx)
            if not d.run or d.gpu is None:
                not_applicable("gpu", d.reason)
            else:
                gpu_checks(plan, d, by, step, run_prog, prog_env, have_model, bundle_dir, results)
    finally:
        rmtree(tmp)
    failed = [r for r in results if r["status"] not in ("passed", "not applicable")]
    status = "failed" if failed else "passed"
    from ..core.fsutil import sha256_file

    record = {
        "leg": leg,
        "status": status,
        "bundle": plan.bundle.name,
        "bundle_sha256": sha256_file(plan.bundle),
        "how": launcher.describe(),
        "fatbin": summary,
        "gpu": d.gpu,
        "coverage": d.coverage,
        "probe": d.probe,
        "runtime_dir": plan.runtime_dir.as_posix() if plan.runtime_dir else None,
        "seconds": round(time.monotonic() - t_all, 1),
        "checks": results,
    }
    atomic_write_json(plan.record, record)
    if failed:  # the bundle leaves dist/: it never reaches the manifest or the SHA index
        sidecar(plan.bundle).unlink(missing_ok=True)
        kept = plan.work_dir / "smoke-failed" / plan.bundle.name
        kept.parent.mkdir(parents=True, exist_ok=True)
        os.replace(plan.bundle, kept)
        raise BundleGraphError(
            f"smoke:{leg}: {len(failed)} check(s) failed: "
            + "; ".join(f"{r['check']}: {r.get('problem', r['status'])}" for r in failed)
            + f"; {plan.bundle.name} moved out of dist/ to {kept} (details: {plan.record}, "
            f"log: {plan.log})"
        )
    atomic_write_json(sidecar(plan.bundle), record)
    ran = [r for r in results if r["status"] == "passed"]
    say(f"smoke:{leg}: {len(ran)} checks passed ({launcher.describe()}); {len(results) - len(ran)} not applicable here")
    return [plan.record, sidecar(plan.bundle)]


def smoke_inputs(ctx: Context, leg: str, plan: SmokePlan | None = None) -> dict[str, Any]:
    """The action-key inputs of ``smoke:<leg>``: the bundle and source digests, this host and
    how it starts the bundle (:func:`~bundlegraph.emulation.launcher_for`), each check's command
    (placeholders, no host paths); for a CUDA
    leg also the test-backend-ops digest, the GPUs (probe key), the ops and the tools' cache."""
    from ..emulation import launcher_for

    spec = ctx.spec(leg)
    how = launcher_for(spec.os, spec.arch)
    key: dict[str, object] = {
        "bundle": upstream_digest(f"package:{leg}"),
        "source": upstream_digest(f"source:{leg}"),
        "host": list(host_platform()),
        "how": how if isinstance(how, str) else how.describe(),
        "checks": {c.name: c.argv for c in (plan or plan_smoke(ctx, leg)).checks},
    }  # a changed command reruns
    if spec.cuda is not None:
        from ..gpus import probe

        key |= {
            "test_backend_ops": upstream_digest(f"smoke:tools-{leg}"),
            "gpus": probe().key(),
            "ops": list(OPS),
            "tools": TOOLS_CACHE,
        }
    return key


def tools_inputs(ctx: Context, leg: str) -> dict[str, Any]:
    """The action-key inputs of ``smoke:tools-<leg>``: the source, the base's cache entries and
    toolchain text (as planned, before compilers resolve), the tools' cache, host and GPUs."""
    from ..gpus import probe

    spec = ctx.spec(leg)
    base = plan_configure(ctx, spec.merge.base if spec.merge else leg)
    return {
        "source": upstream_digest(f"source:{leg}"),
        "base_cache": base.cache,
        "toolchain": base.toolchain_text,
        "tools": TOOLS_CACHE,
        "host": list(host_platform()),
        "gpus": probe().key(),
    }


def _prepare_smoke(ctx: Context, leg: str) -> Prepared[SmokePlan]:
    plan = plan_smoke(ctx, leg)
    return Prepared(smoke_inputs(ctx, leg, plan), plan)


def _prepare_tools(ctx: Context, leg: str) -> Prepared[SmokeToolsPlan]:
    return Prepared(tools_inputs(ctx, leg), plan_tools(ctx, leg))


def _apply_smoke(p: Prepared[SmokePlan]) -> list[Path]:
    return run_smoke(p.plan)


def _apply_tools(p: Prepared[SmokeToolsPlan]) -> list[Path]:
    return run_tools(p.plan)


def runs_here(ctx: Context, leg: str) -> bool:
    """Whether this host can start ``leg``'s bundle (then its smoke is a default task)."""
    from ..emulation import launcher_for

    spec = ctx.spec(leg)
    return not isinstance(launcher_for(spec.os, spec.arch), str)


def _smoke_doc(ctx: Context, leg: str, cuda: bool) -> str:
    """What ``doit list`` says of ``smoke:<leg>`` on this host: how the bundle starts here, or
    why it cannot (then the task is skipped, and the spec's ``[smoke] waived``, if any)."""
    from ..emulation import launcher_for

    spec = ctx.spec(leg)
    how = launcher_for(spec.os, spec.arch)
    if isinstance(how, str):
        waived = f"; waived: {spec.smoke.waived}" if spec.smoke else "; publish needs a passed smoke from another host"
        return f"skipped here ({how}){waived}"
    return f"start {leg}'s bundle here ({how.describe()}): version, libraries, backends, generation, serving" + (
        "; on an NVIDIA GPU its CUDA kernels" if cuda else ""
    )


def plans(ctx: Context) -> list[Any]:
    """``smoke:<leg>`` for every selected leg, after ``package:<leg>``, and for a CUDA leg
    ``smoke:tools-<leg>`` (test-backend-ops for the GPU checks) before it."""
    out = []
    for leg in ctx.legs:
        cuda = ctx.spec(leg).cuda is not None

        def details(leg: str = leg) -> dict[str, Any]:
            p = plan_smoke(ctx, leg)
            return {
                "bundle": p.bundle.as_posix(),
                "record": p.record.as_posix(),
                "tools_dir": p.tools_dir.as_posix(),
                "checks": {c.name: proc.quote(c.argv) for c in p.checks},
                "model": proc.quote(p.model_argv),
            }

        if cuda:
            out.append(
                TaskPlan(
                    stage=NAME,
                    name=f"tools-{leg}",
                    leg=leg,
                    deps=[f"source:{leg}"],
                    prepare=partial(_prepare_tools, ctx, leg),
                    apply=_apply_tools,
                    doc=f"build test-backend-ops for smoke:{leg} (nothing built where no GPU can run its checks)",
                )
            )
        out.append(
            TaskPlan(
                stage=NAME,
                name=leg,
                leg=leg,
                deps=[f"package:{leg}", f"source:{leg}"] + ([f"smoke:tools-{leg}"] if cuda else []),
                prepare=partial(_prepare_smoke, ctx, leg),
                apply=_apply_smoke,
                details=details,
                doc=_smoke_doc(ctx, leg, cuda),
            )
        )
    return out


__all__ = [
    "NAME",
    "OPS",
    "OPT_IN",
    "TOOLS_CACHE",
    "Check",
    "Decision",
    "SmokePlan",
    "SmokeToolsPlan",
    "decide",
    "gpu_checks",
    "host_platform",
    "inventory",
    "judge_devices",
    "judge_gpu_generate",
    "judge_op",
    "plan_smoke",
    "plan_tools",
    "plans",
    "run_smoke",
    "run_tools",
    "runs_here",
    "sidecar",
    "tools_argv",
    "tools_program",
]
