"""The reference build of the throughput check (:mod:`.throughput`): the leg's own source built
with **upstream's release flags** for its backend, on the GPU it is measured on, in
``smoke:reference-<leg>`` (its own task, beside ``smoke:tools-<leg>``'s ``test-backend-ops``).

Where the flags come from: the source tree's ``.github/workflows/release.yml`` (llama.cpp's own
release workflow), read when the tools task runs:

- the job of the side's :attr:`~.side.GpuSide.REFERENCE_JOBS` for the bundle's os/arch (CUDA on
  Linux: ``ubuntu-cuda``);
- its ``strategy.matrix.include`` entry whose ``build`` is the bundle's arch (``x64``, ``arm64``)
  and whose ``label`` is of the leg's toolkit major (``13.4`` for a CUDA 13 leg, ``12.8`` for
  CUDA 12);
- the ``cmake -B build ...`` command of the step with ``id: cmake_build``, its line continuations
  joined, ``${{ env.NAME }}`` taken from the workflow's top-level ``env`` and
  ``${{ matrix.NAME }}`` from that entry; every ``-D`` of it, in order (:func:`upstream_flags`).
  Any other ``${{ ... }}`` is refused (a flag we cannot know).

To that we add only what makes it cheap and comparable: ``CMAKE_CUDA_ARCHITECTURES`` restricted to
the GPUs' own SMs (``<sm>-real``; ggml turns ``12X`` into ``12Xa`` itself), the leg's toolchain file
(the same compilers and toolkit as the bundle: the flags are the question, not the compiler), Ninja,
and one override (:data:`OVERRIDES`): ``GGML_CPU_ALL_VARIANTS=OFF``. With ``GGML_BACKEND_DL`` ggml
makes every backend module a dependency of ``ggml`` (``ggml/src/CMakeLists.txt``:
``add_dependencies(ggml ${backend})``), so upstream's flags would compile all 14 x64 CPU variants
(534 build steps with ggml-cuda, measured here) for a benchmark that runs every layer on the GPU
(``-ngl 99``: the CPU backend holds only the token-embedding lookup). Without it ggml builds one
CPU backend, ``ggml-cpu``, with upstream's ``GGML_NATIVE=OFF`` (ggml's default x86 instruction
set then: AVX2, FMA, F16C, BMI2). We build :data:`TARGETS` (``llama-bench``, whose ``ggml``
brings ``ggml-cuda``, ``ggml-cpu`` and ``ggml-rpc``), not upstream's every target.

Output: ``<tools_dir>/reference/cmake/bin`` (llama-bench, its libraries and backends beside it:
upstream's ``CMAKE_INSTALL_RPATH=$ORIGIN``), and ``<tools_dir>/reference/reference.json``
(:func:`build_reference`: the flags, where they came from, the archs, the targets, seconds).
A configure whose command is unchanged is not run again (``configure-key.txt``), as for
test-backend-ops.
"""

from __future__ import annotations

import re
import shlex
import time
from pathlib import Path
from typing import Any

from ...core import proc
from ...core.errors import BundleGraphError
from ...core.fsutil import atomic_write_bytes, atomic_write_json
from ...schemas.records import FetchContentPin

WORKFLOW = ".github/workflows/release.yml"
"""Upstream's release workflow, relative to the source tree."""
STEP_ID = "cmake_build"
"""The ``id`` of the release job's step that configures (``cmake -B build ...``)."""
OVERRIDES = {"GGML_CPU_ALL_VARIANTS": "OFF"}
"""What the reference changes of upstream's flags, after them (module docstring: one CPU backend
instead of every variant; the GPU code's flags are upstream's)."""


def targets(backend: str) -> tuple[str, ...]:
    """What the reference builds: ``llama-bench``, the backend's module and ``ggml-cpu``
    (``ggml-cuda`` / ``ggml-vulkan`` and ``ggml-cpu`` would come with ``llama-bench``'s ``ggml``
    anyway; named so the build says so)."""
    return ("llama-bench", f"ggml-{backend}", "ggml-cpu")


TARGETS = targets("cuda")
"""A CUDA reference's targets (:func:`targets`)."""

_EXPR = re.compile(r"\$\{\{\s*([A-Za-z_][\w.-]*)\s*\}\}")


def _load(text: str, where: str) -> dict[str, Any]:
    try:
        import yaml
    except ImportError as e:  # a dependency of the smoke's model too (gguf-py)
        raise BundleGraphError(f"{where}: reading upstream's release flags needs PyYAML (pip install pyyaml)") from e
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise BundleGraphError(f"{where}: not YAML: {str(e).splitlines()[0]}") from None
    if not isinstance(doc, dict):
        raise BundleGraphError(f"{where}: expected a workflow (a mapping at the top)")
    return doc


def upstream_flags(text: str, where: str, job: str, arch: str, toolkit_major: int) -> tuple[list[str], str]:
    """Upstream's CMake definitions for ``job``'s matrix entry of ``arch`` and ``toolkit_major``
    from the release workflow ``text`` (``where`` names the file in messages). Returns
    ``(["-DNAME=VALUE", ...] in upstream's order, where they came from in words)``. Raises
    :class:`BundleGraphError` naming the file and key when the job, the entry, the step or a
    value is not there."""
    doc = _load(text, where)
    jobs = doc.get("jobs") or {}
    if job not in jobs:
        raise BundleGraphError(f"{where}: jobs.{job}: no such job (expected upstream's release job for this backend)")
    j = jobs[job]
    include = ((j.get("strategy") or {}).get("matrix") or {}).get("include") or []
    entries = [
        e
        for e in include
        if isinstance(e, dict)
        and str(e.get("build")) == arch
        and (not toolkit_major or str(e.get("label", e.get("cuda", ""))).split(".")[0] == str(toolkit_major))
    ]
    if len(entries) != 1:
        labels = [f"{e.get('build')}/{e.get('label')}" for e in include if isinstance(e, dict)]
        raise BundleGraphError(
            f"{where}: jobs.{job}.strategy.matrix.include: expected one entry with build {arch}"
            f"{f' and a {toolkit_major}.x label' if toolkit_major else ''}, found {len(entries)} "
            f"(entries: {', '.join(labels) or 'none'})"
        )
    entry = entries[0]
    steps = [s for s in j.get("steps") or [] if isinstance(s, dict) and s.get("id") == STEP_ID]
    if len(steps) != 1 or not isinstance(steps[0].get("run"), str):
        raise BundleGraphError(f"{where}: jobs.{job}.steps: expected one step with id {STEP_ID} and a run script")
    script = steps[0]["run"].replace("\\\n", " ")
    lines = [l for l in script.splitlines() if re.match(r"^\s*cmake\s+-B\s", l)]
    if len(lines) != 1:
        raise BundleGraphError(f"{where}: jobs.{job}.steps[id={STEP_ID}].run: expected one 'cmake -B build ...' line")
    env = {k: str(v) for k, v in (doc.get("env") or {}).items()}

    def value(m: re.Match[str]) -> str:
        scope, _, name = m.group(1).partition(".")
        table = {"env": env, "matrix": {k: str(v) for k, v in entry.items()}}.get(scope)
        if table is None or name not in table:
            raise BundleGraphError(
                f"{where}: jobs.{job}.steps[id={STEP_ID}].run: ${{{{ {m.group(1)} }}}}: not a workflow env or "
                "matrix value; its flag cannot be known here"
            )
        return table[name]

    line = _EXPR.sub(value, lines[0])
    flags = [a for a in shlex.split(line) if a.startswith("-D")]
    source = f"{WORKFLOW} jobs.{job} (matrix build={entry.get('build')} label={entry.get('label')}), step {STEP_ID}"
    return flags, source


def reference_argv(
    cmake: str,
    ninja: str,
    source_tree: Path,
    ref_dir: Path,
    flags: list[str],
    sms: list[int],
    fetched: dict[str, str] | None = None,
) -> list[str]:
    """The reference's configure command: upstream's ``flags``, then ``fetched`` (the pinned local
    source of each download upstream's flags turn on, :func:`fetched_sources`), :data:`OVERRIDES`
    and, for CUDA, the GPUs' ``sms`` as ``CMAKE_CUDA_ARCHITECTURES`` (``<sm>-real``, last; none for
    a backend without device archs: Vulkan's SPIR-V runs on any driver), Ninja and the toolchain
    file in ``ref_dir``."""
    archs = ";".join(f"{sm}-real" for sm in sorted(set(sms)))
    return [
        cmake,
        "-S",
        source_tree.as_posix(),
        "-B",
        (ref_dir / "cmake").as_posix(),
        "-G",
        "Ninja",
        f"-DCMAKE_MAKE_PROGRAM={Path(ninja).as_posix()}",
        f"-DCMAKE_TOOLCHAIN_FILE={(ref_dir / 'toolchain.cmake').as_posix()}",
        *flags,
        *(f"-D{k}={v}" for k, v in (fetched or {}).items()),
        *(f"-D{k}={v}" for k, v in OVERRIDES.items()),
        *([f"-DCMAKE_CUDA_ARCHITECTURES={archs}"] if sms else []),
    ]


def fetched_sources(
    flags: list[str], pins: tuple[FetchContentPin, ...], cache: Path | None, log: Path | None
) -> dict[str, str]:
    """For each release pin (``[[fetchcontent]]``) whose option upstream's ``flags`` turn on
    (``-DGGML_CUDA_CUB_3DOT2=ON``: its CUDA 12 entry fetches CCCL 3.2 with git), the local source,
    prepared now (:func:`bundlegraph.pipeline.compile.fetchcontent.prepare`), and
    ``FETCHCONTENT_FULLY_DISCONNECTED=ON``: the reference downloads nothing, as the bundle.
    Empty when upstream's flags fetch nothing pinned."""
    from ..compile import fetchcontent

    on = {f.partition("=")[0][2:] for f in flags if f.partition("=")[2].upper() in ("ON", "TRUE", "YES", "Y", "1")}
    used = [p for p in pins if p.option in on]
    if not used:
        return {}
    for p in used:
        fetchcontent.prepare(p, cache, log)
    return {"FETCHCONTENT_FULLY_DISCONNECTED": "ON", **fetchcontent.source_dirs(used, cache)}


def reference_bin(tools_dir: Path) -> Path:
    """Where the reference's ``llama-bench`` and its libraries are."""
    return tools_dir / "reference" / "cmake" / "bin"


def reference_record(tools_dir: Path) -> Path:
    """The reference build's record (``reference.json``)."""
    return tools_dir / "reference" / "reference.json"


def build_reference(
    *,
    leg: str,
    cmake: str,
    ninja: str,
    source_tree: Path,
    tools_dir: Path,
    toolchain_text: str,
    job: str,
    arch: str,
    toolkit_major: int,
    sms: list[int],
    jobs: int,
    env: dict[str, str],
    log: Path,
    exe: str = "",
    pins: tuple[FetchContentPin, ...] = (),
    cache: Path | None = None,
    backend: str = "cuda",
) -> dict[str, Any]:
    """Configure (when its command changed) and build the reference; returns its record (also
    written to :func:`reference_record`). Raises :class:`BundleGraphError` when the workflow is
    missing or unreadable, or the build produced no ``llama-bench``."""
    from ...core.state import key_of

    wf = source_tree / WORKFLOW
    if not wf.is_file():
        raise BundleGraphError(f"{wf}: missing; the reference build reads upstream's release flags there")
    flags, source = upstream_flags(wf.read_text(encoding="utf-8"), wf.as_posix(), job, arch, toolkit_major)
    ref = tools_dir / "reference"
    fetched = fetched_sources(flags, pins, cache, log)
    argv = reference_argv(cmake, ninja, source_tree, ref, flags, sms, fetched)
    tg = list(targets(backend))
    t0 = time.monotonic()
    stamp = ref / "configure-key.txt"
    key = key_of({"argv": argv, "toolchain": toolchain_text})
    cmake_dir = ref / "cmake"
    if not (stamp.is_file() and stamp.read_text(encoding="utf-8") == key and (cmake_dir / "CMakeCache.txt").is_file()):
        stamp.unlink(missing_ok=True)
        atomic_write_bytes(ref / "toolchain.cmake", toolchain_text.encode())
        proc.run([argv[0], "--fresh", *argv[1:]], env=env, log=log, what=f"smoke:{leg}: configure the reference build")
        atomic_write_bytes(stamp, key.encode())
    proc.run(
        [argv[0], "--build", cmake_dir.as_posix(), "--target", *tg, "-j", str(jobs)],
        env=env,
        log=log,
        what=f"smoke:{leg}: build the reference (upstream's flags)",
    )
    prog = reference_bin(tools_dir) / f"llama-bench{exe}"
    if not prog.is_file():
        raise BundleGraphError(f"smoke:{leg}: the reference build produced no {prog}")
    record = {
        "flags": flags,
        "flags_from": source,
        "overrides": OVERRIDES,
        **({"fetched": fetched} if fetched else {}),
        "cuda_architectures": argv[-1].split("=", 1)[1] if sms else None,
        "targets": tg,
        "configure": proc.quote(argv),
        "seconds": round(time.monotonic() - t0, 1),
    }
    atomic_write_json(reference_record(tools_dir), record)
    return record


__all__ = [
    "OVERRIDES",
    "STEP_ID",
    "TARGETS",
    "WORKFLOW",
    "build_reference",
    "fetched_sources",
    "reference_argv",
    "reference_bin",
    "reference_record",
    "targets",
    "upstream_flags",
]
