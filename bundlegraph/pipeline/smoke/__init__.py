"""Stage ``smoke:<leg>``: run the finished bundle before it is published. The package holds the
plan (:mod:`.plan`: the checks, the GPU decision), the run (:mod:`.run`: a step table walked in
order), the host steps (:mod:`.host`), the GPU steps and the tools build (:mod:`.gpu`), the
judges (:mod:`.judges`) and the tiny model (:mod:`.tinygguf`); this module is the stage (its tasks
and keys).

**On every host that can start the bundle's programs** (natively, or a Linux bundle of another
CPU through qemu-user with the target's sysroot: :mod:`bundlegraph.toolchains.emulation`) the host checks
run (:mod:`.host`), cheap first:

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

``smoke:<leg>`` is a default task of every leg whose bundle this host can start, so the main
job smoke-tests its bundles before the manifest; for the others it is opt-in (and skipped: below).

**For a GPU leg** the GPU checks follow, from the leg's side (:mod:`.sides`: one module per GPU
backend, the ``smoke`` module of its package (``bundlegraph.backends.vulkan.smoke``), keyed by
the spec's ``backend``; a :class:`~.side.GpuSide` probes, decides, names the
device and its environment, and lists its ops). **Vulkan**: on the driver
``BUNDLEGRAPH_VULKAN_ICD`` names, else Mesa's lavapipe, alone visible to the loader
(``VK_DRIVER_FILES``) with its first device named for ggml (``GGML_VK_VISIBLE_DEVICES=0``);
``test-backend-ops`` runs MUL_MAT with f32, f16, q4_0 and q8_0 weights only. **CUDA**,
on a host with an NVIDIA GPU: decision first (its side's ``decide``, from the probe the plan
took):

1. the bundle's os/arch (its info JSON) must be this host's;
2. the driver must list a GPU (``nvidia-smi``, :mod:`bundlegraph.core.gpus`);
3. the bundle's CUDA backend must cover one of those GPUs: its fatbin inventory (SASS and PTX
   per SM, :mod:`bundlegraph.checks.fatbin`, read from the unpacked ``libggml-cuda.so`` /
   ``ggml-cuda.dll``) against the GPU's compute capability (:func:`bundlegraph.core.gpus.covered`).

Otherwise the GPU checks are recorded as not applicable, with the reason (the probe result is
part of the action key, so a GPU appearing is noticed). A task whose bundle cannot start here at
all is **skipped**: ``build/<leg>/smoke.json`` records ``status: "skipped"`` and the reason, the
reason is printed, and :class:`~bundlegraph.core.errors.TaskSkipped` ends the task without a stamp, so
it is never shown as up to date and runs again on the next ``doit``. A skip is never a pass.

The GPU checks, run in this order (cheap first), each recorded with its command, seconds and
result (a failure names the step or op):

- ``devices``: ``llama-cli --list-devices`` (common's ``common_print_available_devices``,
  ``common/arg.cpp``) from the unpacked bundle must list a ``CUDA<n>:`` (``Vulkan<n>:``) device —
  the backend was loaded by ``GGML_BACKEND_DL`` and sees the GPU; otherwise the bundle would fall
  back to the CPU, and the smoke fails;
- ``test-backend-ops`` (built by its own task ``smoke:tools-<leg>``, which is skipped — nothing
  built — where the smoke test would be skipped): built from the same source with the merge
  base's generated toolchain and cache entries (``LLAMA_BUILD_TESTS=ON``; ``GGML_CPU``/``GGML_CPU_ALL_VARIANTS`` OFF because
  ggml makes every backend module a dependency of ``ggml``; tools, examples, server, app OFF) in
  ``build/<leg>/smoke-tools``, target ``test-backend-ops`` only; copied next to the bundle's
  libraries, where its ``$ORIGIN`` RUNPATH finds the bundle's ``libggml*``/``libllama*`` and
  ``ggml_backend_load_all`` the bundle's backends. ``test-backend-ops test -b CUDA0 -o OP``
  (``-b Vulkan0 -o OP -p PARAMS``) compares the GPU backend with the CPU backend per op of the
  side's ``OPS`` (usage text in
  ``tests/test-backend-ops.cpp``); an op passes when it exits 0, prints ``Backend CUDA<n>: OK``
  and ``k/k tests passed`` with k > 0;
- ``model``: a tiny random-weight GGUF (:mod:`.tinygguf`, the source's ``gguf-py`` and its
  ``models/ggml-vocab-llama-spm.gguf``);
- ``generate``: ``llama-simple -m tiny.gguf -n 8 -ngl 99`` (or ``llama-completion``): exit 0, the
  loader's ``offloaded k/k layers to GPU`` (``src/llama-model.cpp``) and ``decoded N tokens``
  with N > 0;
- ``bench-model``, ``throughput`` (a side whose ``REFERENCE_JOBS`` name the bundle's os: CUDA on
  Linux; :mod:`.throughput`): the bundle's ``llama-bench`` against a reference build of the same
  source with upstream's release flags (``smoke:reference-<leg>``, :mod:`.reference`: the flags
  read from the source's ``.github/workflows/release.yml``, archs the GPU's own SM, in
  ``build/<leg>/smoke-tools/reference``; nothing built where the GPU checks cannot run) on a
  1.1 G-parameter dense model and a small MoE (both Q4_K_M mix), four interleaved runs a side;
  slower than the reference by more than max(3 %, 3 standard errors) in prompt processing or
  generation fails, naming both figures; every figure goes into ``smoke.json``.

The external CUDA runtime (``runtime.external``: ``libcudart.so.13``, cuBLAS) is taken from the
leg's toolkit (its target ``lib`` directory is put first on ``LD_LIBRARY_PATH``; ``PATH`` on
Windows), as an installer pairs it. Output: ``build/<leg>/smoke.json`` (atomic; one format for
both kinds of host: ``status``, ``how`` it ran, and per check its command, seconds, result and
what it printed that matters), copied beside the bundle as ``dist/<bundle>.smoke.json`` (it
travels with the bundle to the manifest job); full program output in
``build/<leg>/logs/smoke.log``.
"""

from __future__ import annotations

from dataclasses import replace
from functools import partial
from typing import Any

from ...core import paths
from ...core.errors import BundleGraphError
from ...toolchains.base import this_host
from ..base import Context, Prepared, TaskPlan, leg_task, run_plan, upstream_digest
from ..configure import plan_configure
from . import bench
from .gpu import run_reference, run_tools
from .judges import judge_devices, judge_op
from .line import find_archive
from .plan import (
    TOOLS_CACHE,
    ReferencePlan,
    SmokePlan,
    SmokeToolsPlan,
    plan_reference,
    plan_smoke,
    plan_tools,
    qemu_sysroot,
)
from .run import run_smoke
from .side import ops_key
from .sides import side_of

NAME = "smoke"
"""The stage's name: its tasks are ``smoke:<leg>`` (:mod:`bundlegraph.pipeline.stages`)."""
OPT_IN = True
"""Never part of a bare ``doit`` on its own (the graph adds the smoke of legs this host can start)."""


def smoke_inputs(ctx: Context, leg: str) -> dict[str, Any]:
    """What ``smoke:<leg>``'s action key consumed: the bundle and source digests, this host and
    how it starts the bundle (:func:`~bundlegraph.toolchains.emulation.launcher_for`); for a GPU leg also
    the test-backend-ops digest, the ops and the tools' cache. The plan's key adds each check's
    command (placeholders, no host paths) and, for a GPU leg, its side's probe key (CUDA: the
    GPUs; Vulkan: the driver)."""
    spec = ctx.spec(leg)
    how = leg_launcher(ctx, leg)
    consumed: dict[str, Any] = {
        "bundle": upstream_digest(f"package:{leg}"),
        "source": upstream_digest(f"source:{leg}"),
        "host": list(this_host()),
        "how": how if isinstance(how, str) else how.describe(),
    }
    side = side_of(spec.backend)
    if side is not None:  # the plan took its side's probe
        consumed |= {
            "test_backend_ops": upstream_digest(f"smoke:tools-{leg}"),
            "ops": ops_key(side),
            "tools": TOOLS_CACHE,
        }
        if has_reference(ctx, leg):
            consumed |= {"reference": upstream_digest(f"smoke:reference-{leg}"), "throughput": bench.key()}
            if (
                s := side.sibling(ctx, leg)
            ) is not None:  # a second bundle compared (.line): a new one reruns the smoke
                sib = s.leg
                consumed["line"] = upstream_digest(f"package:{sib}") if sib in ctx.legs else _archive_id(ctx, sib)
    return consumed


def _line_dep(ctx: Context, leg: str, ref: bool) -> list[str]:
    """``package:<sibling>`` when the throughput check will compare with it (:mod:`.line`: a CUDA 13
    leg's CUDA 12 sibling): the sibling is built in this run and this host can run the GPU steps
    (elsewhere the smoke runs no GPU step, and building a second bundle for it would be wasted)."""
    if not ref:
        return []
    spec = ctx.spec(leg)
    side = side_of(spec.backend)
    assert side is not None  # ref: a GPU leg
    if (s := side.sibling(ctx, leg)) is None or (sib := s.leg) not in ctx.legs:
        return []
    return [f"package:{sib}"] if side.decide(spec.os, spec.arch, this_host(), side.probe()).run else []


def _archive_id(ctx: Context, leg: str) -> dict[str, Any] | None:
    """Name, size and mtime of ``leg``'s bundle where the smoke would find it (:mod:`.line`), or None."""
    p = find_archive(ctx, leg)
    if p is None:
        return None
    st = p.stat()
    return {"name": p.name, "size": st.st_size, "mtime_ns": st.st_mtime_ns}


def has_reference(ctx: Context, leg: str) -> bool:
    """Whether ``leg``'s smoke has the throughput check (its side names upstream's release job
    for the bundle's os): then ``smoke:reference-<leg>`` builds its reference."""
    spec = ctx.spec(leg)
    side = side_of(spec.backend)
    return side is not None and spec.os in side.REFERENCE_JOBS


def reference_inputs(ctx: Context, leg: str) -> dict[str, Any]:
    """The action-key inputs of ``smoke:reference-<leg>``: the source and the leg's toolkit
    digests, the leg's toolchain text (as planned, before compilers resolve), the throughput
    check's constants (:func:`.bench.key`), this host, the GPUs (their SMs are the
    reference's archs) and the release's FetchContent pins."""
    spec = ctx.spec(leg)
    side = side_of(spec.backend)
    assert side is not None  # only GPU legs with a release job have a reference task
    sdk = ctx.leg(leg).sdk
    return {
        "source": upstream_digest(f"source:{leg}"),
        "toolkit": upstream_digest(sdk.task) if sdk else None,
        "toolchain": plan_configure(ctx, leg).toolchain_text,
        "throughput": bench.key(),
        "host": list(this_host()),
        "gpus": side.probe().key(),
        # the pins that serve a download upstream's flags turn on (CCCL for a CUDA 12 reference)
        "fetchcontent": [p.dump() for p in ctx.release.fetchcontent],
    }


def tools_inputs(ctx: Context, leg: str) -> dict[str, Any]:
    """The action-key inputs of ``smoke:tools-<leg>``: the source, the base's cache entries and
    toolchain text (as planned, before compilers resolve), the tools' cache, host and what the
    leg's GPU side found (GPUs, the Vulkan driver)."""
    spec = ctx.spec(leg)
    side = side_of(spec.backend)
    assert side is not None  # only GPU legs have a tools task
    base = plan_configure(ctx, spec.merge.base if spec.merge else leg)
    return {
        "source": upstream_digest(f"source:{leg}"),
        "base_cache": base.cache,
        "toolchain": base.toolchain_text,
        "tools": TOOLS_CACHE,
        "host": list(this_host()),
        "gpus": side.probe().key(),
    }


def _prepare_smoke(ctx: Context, leg: str) -> Prepared[SmokePlan]:
    return Prepared.of(replace(plan_smoke(ctx, leg), consumed=smoke_inputs(ctx, leg)))


def _prepare_tools(ctx: Context, leg: str) -> Prepared[SmokeToolsPlan]:
    return Prepared.of(replace(plan_tools(ctx, leg), consumed=tools_inputs(ctx, leg)))


def _prepare_reference(ctx: Context, leg: str) -> Prepared[ReferencePlan]:
    return Prepared.of(replace(plan_reference(ctx, leg), consumed=reference_inputs(ctx, leg)))


def leg_launcher(ctx: Context, leg: str) -> Any:
    """How this host starts ``leg``'s bundle (:func:`~bundlegraph.toolchains.emulation.launcher_for`, with
    :func:`qemu_sysroot`), or why it cannot. Pure, except for the sysroot's presence: before the
    compiler task ran, the plan says why (its ``sysroot has no`` line)."""
    from ...toolchains.emulation import launcher_for

    spec = ctx.spec(leg)
    root, label = qemu_sysroot(ctx, leg)
    return launcher_for(spec.os, spec.arch, sysroot=root, label=label)


def runs_here(ctx: Context, leg: str) -> bool:
    """Whether this host can start ``leg``'s bundle (then its smoke is a default task): a Linux
    bundle of this CPU, or one of another CPU with qemu-user here (its sysroot comes from the
    leg's compiler task, a dependency of the smoke)."""
    from ...toolchains.emulation import launcher_for

    spec = ctx.spec(leg)
    root, _label = qemu_sysroot(ctx, leg)
    how = launcher_for(spec.os, spec.arch, sysroot=root)
    # a missing sysroot is installed by the compiler task the smoke depends on
    return not isinstance(how, str) or (root is not None and "sysroot has no" in how)


def _smoke_doc(ctx: Context, leg: str, gpu_doc: str) -> str:
    """What ``doit list`` says of ``smoke:<leg>`` on this host: how the bundle starts here, or
    why it cannot (then the task is skipped, and the spec's ``[smoke] waived``, if any)."""
    spec = ctx.spec(leg)
    how = leg_launcher(ctx, leg)
    if isinstance(how, str):
        waived = f"; waived: {spec.smoke.waived}" if spec.smoke else "; publish needs a passed smoke from another host"
        return f"skipped here ({how}){waived}"
    return f"start {leg}'s bundle here ({how.describe()}): version, libraries, backends, generation, serving" + gpu_doc


def plans(ctx: Context) -> list[Any]:
    """``smoke:<leg>`` for every selected leg, after ``package:<leg>``, and for a GPU leg
    ``smoke:tools-<leg>`` (test-backend-ops for the GPU checks) before it, and, where the leg has
    the throughput check, ``smoke:reference-<leg>`` (its reference build)."""
    out = []
    for leg in ctx.legs:
        spec = ctx.spec(leg)
        side = side_of(spec.backend)
        gpu = side is not None
        # the tools are configured with the merge base's cache entries, whose build commit its
        # source task finds: that task first (when the base is selected too), or the key holds a
        # placeholder and the next run builds the tools again
        base = spec.merge.base if spec.merge is not None else None
        base_source = [f"source:{base}"] if base is not None and base in ctx.legs else []
        # the tools and the reference compile with the leg's pinned compiler (its toolchain file)
        compiler = [c.task] if (c := ctx.leg(leg).compiler) else []

        if gpu:
            doc = f"build test-backend-ops for smoke:{leg} (nothing built where no GPU can run its checks)"
            deps = [f"source:{leg}", *base_source, *compiler]
            out.append(
                leg_task(NAME, ctx, leg, name=f"tools-{leg}", doc=doc, deps=deps, prepare=_prepare_tools, run=run_tools)
            )
        ref = gpu and has_reference(ctx, leg)
        if ref:
            # after the leg's toolkit, whose compilers it uses, where the leg compiles here (then
            # its build needs that toolkit anyway); a runner that imports the leg's build output
            # (built=DIR) installs no toolkit for it, and the reference must not make it
            sdk = ctx.leg(leg).sdk
            toolkit = [sdk.task] if sdk is not None and ctx.imported_build(leg) is None else []
            doc = f"build llama-bench with upstream's release flags for smoke:{leg}'s throughput check "
            doc += "(nothing built where no GPU can run it)"
            deps = [f"source:{leg}", *toolkit, *compiler]
            name = f"reference-{leg}"
            out.append(
                leg_task(NAME, ctx, leg, name=name, doc=doc, deps=deps, prepare=_prepare_reference, run=run_reference)
            )
        out.append(
            TaskPlan(
                stage=NAME,
                name=leg,
                leg=leg,
                deps=[f"package:{leg}", f"source:{leg}"]
                + ([c.task] if (c := ctx.leg(leg).compiler) and qemu_sysroot(ctx, leg)[0] else [])
                + ([f"smoke:tools-{leg}"] if gpu else [])
                + ([f"smoke:reference-{leg}"] if ref else [])
                + _line_dep(ctx, leg, ref),
                prepare=partial(_prepare_smoke, ctx, leg),
                apply=partial(run_plan, run_smoke),
                preview=partial(plan_smoke, ctx, leg),
                doc=_smoke_doc(ctx, leg, side.DOC if side is not None else ""),
            )
        )
    return out


__all__ = [
    "NAME",
    "OPT_IN",
    "BundleGraphError",
    "has_reference",
    "judge_devices",
    "judge_op",
    "paths",
    "plan_smoke",
    "plans",
    "reference_inputs",
    "run_smoke",
    "runs_here",
]
