"""The host steps of ``smoke:<leg>``: what runs on every host that can start the bundle
(natively, or through qemu-user: :mod:`bundlegraph.toolchains.emulation`), in the order of :data:`STEPS`,
cheap first. Each step runs one program (or a few) and hands the output to its judge
(:mod:`.judges`).

- ``version``; ``libraries`` (Linux: every ELF file's dependencies resolve);
- with a llama.cpp source (its ``gguf-py`` and vocab models): ``model`` (the tiny GGUF of
  :mod:`.tinygguf`), ``backends`` (a bundle built with ``GGML_BACKEND_DL``: ggml's log of each
  backend it loads; not applicable to linked backends, :data:`LINKED`), ``generate`` and
  ``generate again`` (the same text),
  ``serve`` (``llama-server``: the same text again over HTTP);
- with another source (the tests' stand-in): ``list-devices`` judges the backends, and model,
  generate and serve are recorded as not applicable.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ...core import proc
from ...core.buildenv import allowed_env
from ...core.platforms import platform
from . import judges
from .plan import N_PREDICT, VOCABS
from .steps import Gate, Outcome, SmokeRun, Step


def version(run: SmokeRun) -> Outcome:
    """``llama-cli --version``: the release's build number and the source's commit."""
    out, rc, cmd = run.program("version", "version")
    return (*judges.judge_version(out, rc, build_number=run.plan.build_number, commit=run.plan.commit), cmd)


def libraries(run: SmokeRun) -> Outcome:
    """Every ELF file's dependencies resolve (bundle, CUDA runtime, system), except the driver
    for the GPU backend's library (``libcuda.so.1``, the Vulkan loader)."""
    plan = run.plan
    lib_path = [run.bundle_dir] + ([plan.runtime_dir] if plan.runtime_dir else [])
    probs, listed = [], {}
    for f in sorted(p for p in run.bundle_dir.rglob("*") if p.is_file() and p.open("rb").read(4) == b"\x7fELF"):
        argv, env = run.launcher.list_deps(f, lib_path)
        r = proc.run(
            argv, env=env, log=plan.log, capture=True, check=False, what=f"smoke:{plan.leg}: ldd {f.name}", cwd=run.tmp
        )
        allowed = frozenset({run.gpu_driver}) if run.gpu_driver and f.name == run.gpu_lib else frozenset()
        p, facts = judges.judge_deps(r.output, r.returncode, f.name, allowed_missing=allowed)
        listed[f.name] = facts.get("missing", [])
        if p:
            probs.append(p)
    return ("; ".join(probs) or None), {"files": len(listed), "missing": {k: v for k, v in listed.items() if v}}, None


def _backends(check: str) -> Callable[[SmokeRun], Outcome]:
    def one(run: SmokeRun) -> Outcome:
        env = dict(run.env)
        if run.gpu_lib:  # ggml then says why the GPU backend did not load, if it did not
            env["GGML_BACKEND_PATH"] = (run.bundle_dir / run.gpu_lib).as_posix()
        out, rc, cmd = run.program(check, check, env)
        p, facts = judges.judge_backends(
            out, rc, gpu_library=run.gpu_lib, os_name=run.plan.os, gpu=run.plan.backend, driver=run.gpu_driver
        )
        return p, facts, cmd

    return one


def vocab(run: SmokeRun) -> Path | None:
    """The source's first vocab model (:data:`VOCABS`), None when it has none."""
    models = run.plan.source_tree / "models"
    return next((models / v for v in VOCABS if (models / v).is_file()), None)


def not_llama(run: SmokeRun) -> str | None:
    """Why the source cannot make the tiny model (no ``gguf-py`` or vocab: not llama.cpp), or None."""
    if (run.plan.source_tree / "gguf-py").is_dir() and vocab(run) is not None:
        return None
    return f"the source ({run.plan.source_tree.name}) has no gguf-py and vocab models: not llama.cpp"


def make_model(run: SmokeRun) -> Outcome:
    """Write the tiny random-weight GGUF (:mod:`.tinygguf`) with the source's ``gguf-py``."""
    v = vocab(run)
    assert v is not None  # gated by not_llama
    a = [x.replace("{vocab}", v.as_posix()).replace("{model}", run.model.as_posix()) for x in run.plan.model_argv]
    penv = allowed_env(os.environ)  # the source's gguf-py runs: build code
    root = Path(__file__).resolve().parents[3]
    penv["PYTHONPATH"] = os.pathsep.join(x for x in (root.as_posix(), penv.get("PYTHONPATH", "")) if x)
    proc.run(a, env=penv, log=run.plan.log, what=f"smoke:{run.plan.leg}: tiny model")
    return None, {"vocab": v.name, "bytes": run.model.stat().st_size}, proc.quote(a)


def _generate(i: int) -> Callable[[SmokeRun], Outcome]:
    def one(run: SmokeRun) -> Outcome:
        out, rc, cmd = run.program("generate", f"generate #{i}")
        p, facts = judges.judge_generate(out, rc)
        text = judges.generated_text(out)
        facts["text"] = text
        if p is None and text is None:
            p = "llama-simple printed no generated text after the prompt"
        run.texts.append(text or "")
        if p is None and i == 2 and run.texts[0] != run.texts[1]:
            p = f"the repeat run generated {run.texts[1]!r}, the first {run.texts[0]!r} (greedy decoding of one model must repeat)"
        return p, facts, cmd

    return one


def serving(run: SmokeRun) -> Outcome:
    """``llama-server`` on a free loopback port: the text of llama-simple's generation again."""
    from ..compile.launcher import free_port

    run.port = free_port()
    a = run.fill(run.plan.check("serve").argv)
    full = run.launcher.argv(a[0], a[1:], run.env)
    p, facts = serve(
        full,
        run.launcher.process_env(run.env),
        run.port,
        run.plan.log,
        timeout=240.0 if run.launcher.qemu else 60.0,
        n_predict=N_PREDICT,
        expect=run.texts[0] if "generate again" in run.passed else None,
    )
    return p, facts, proc.quote(full)


def serve(
    argv: list[str],
    env: dict[str, str],
    port: int,
    log: Path,
    *,
    timeout: float,
    n_predict: int = 8,
    expect: str | None = None,
) -> tuple[str | None, dict[str, Any]]:
    """Start ``llama-server`` (``argv``, listening on 127.0.0.1:``port``), wait for ``/health``,
    ask one ``/completion`` of ``Hello`` (greedy, ``n_predict`` tokens), then stop it with SIGTERM
    and wait for a clean exit. ``expect``: the text llama-simple generated from the same model
    and prompt; greedy decoding must give the server the same. Output goes to ``log``. Returns
    ``(problem or None, facts)`` with the seconds of each step."""
    import httpx

    from ...core.proc import Background

    facts: dict[str, Any] = {"port": port}
    t0 = time.monotonic()
    base = f"http://127.0.0.1:{port}"
    # (the server is ended with its process group whatever happens: Background's exit)
    with Background(argv, env=env, log=log) as server, httpx.Client(timeout=30.0, trust_env=False) as c:
        while True:
            if server.poll() is not None:
                return f"llama-server exited with code {server.poll()} before answering /health", facts
            try:
                if c.get(f"{base}/health").status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() - t0 > timeout:
                return f"llama-server did not answer /health within {timeout:.0f} s", facts
            time.sleep(0.25)
        facts["health_s"] = round(time.monotonic() - t0, 1)
        t1 = time.monotonic()
        r = c.post(
            f"{base}/completion",
            json={"prompt": "Hello", "n_predict": n_predict, "temperature": 0, "seed": 1},
            timeout=timeout,
        )
        facts["completion_s"] = round(time.monotonic() - t1, 1)
        if r.status_code != 200:
            return f"/completion answered HTTP {r.status_code}: {r.text[:200]}", facts
        body = r.json()
        facts |= {"content": body.get("content"), "tokens_predicted": body.get("tokens_predicted")}
        if not body.get("tokens_predicted"):
            return "/completion predicted no token", facts
        if expect is not None and body.get("content") != expect:
            return (
                f"/completion gave {body.get('content')!r}, llama-simple generated {expect!r} from the same model "
                "and prompt (both greedy)"
            ), facts
        rc = server.stop(30.0)
    facts["exit_code"] = rc
    if rc is None:
        return "llama-server did not stop within 30 s of SIGTERM", facts
    return None, facts


def _elf_only(run: SmokeRun) -> tuple[str, str] | None:
    # ``libraries`` lists ELF files' dependencies through the loader (a PE or Mach-O bundle's are verify's rows)
    return None if platform(run.plan.os).binary == "ELF" else ("", "")


def _llama_only(run: SmokeRun) -> tuple[str, str] | None:
    why = not_llama(run)
    return None if why is None else ("not applicable", why)


def _without_llama(run: SmokeRun) -> tuple[str, str] | None:
    return ("", "") if not_llama(run) is None else None


LINKED = (
    "the bundle is built without GGML_BACKEND_DL: its backends are linked into the programs, so ggml loads "
    "and logs none of them at run time (the fork's macOS bundles); generation judges them"
)
"""Why the ``backends`` step does not apply to a bundle whose backends are linked, not loaded:
ggml logs ``loaded <name> backend from <path>`` only from ``ggml_backend_load``
(``ggml/src/ggml-backend-reg.cpp``), and a release build's search for loadable backends is silent
and looks for ``*.so`` files, which a macOS bundle's ``libggml-*.dylib`` are not."""


def _loaded_backends(run: SmokeRun) -> tuple[str, str] | None:
    """The ``backends`` step's gate: after ``model`` (:func:`_after`), and only for a bundle built
    with ``GGML_BACKEND_DL`` (:data:`LINKED`)."""
    if not run.backend_dl and not_llama(run) is None:
        return ("not applicable", LINKED)
    return _after("model")(run)


def _after(step: str, otherwise_na: bool = False) -> Gate:
    """Runs once ``step`` passed (silently left out otherwise); ``otherwise_na``: without a
    llama.cpp source it is recorded as not applicable."""

    def gate(run: SmokeRun) -> tuple[str, str] | None:
        why = not_llama(run)
        if why is not None:
            return ("not applicable", why) if otherwise_na else ("", "")
        return None if step in run.passed else ("", "")

    return gate


STEPS: tuple[Step, ...] = (
    Step("version", version),
    Step("libraries", libraries, _elf_only),
    Step("model", make_model, _llama_only),
    Step("list-devices", _backends("list-devices"), _without_llama),
    Step("backends", _backends("backends"), _loaded_backends),
    Step("generate", _generate(1), _after("model", otherwise_na=True)),
    Step("generate again", _generate(2), _after("generate")),
    Step("serve", serving, _after("model", otherwise_na=True)),
)
"""The host steps, in order, each with its gate."""


__all__ = ["LINKED", "STEPS", "libraries", "make_model", "not_llama", "serve", "serving", "version", "vocab"]
