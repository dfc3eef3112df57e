"""Upstream's speed flags, watched (issue 52 item 2, first bullet): for every CUDA leg, every
``GGML_CUDA_*`` CMake flag of upstream's release build of the same os, arch and CUDA major (the
pinned source's ``.github/workflows/release.yml``: job ``ubuntu-cuda`` on Linux, matrix
``build``/``label``; ``windows-cuda`` on Windows, matrix ``arch``/``cuda``), and for every CPU leg
every CPU flag (variants, native, OpenMP, ...) of upstream's CPU build of the same os and arch
(``ubuntu-cpu``, ``windows-cpu``), has our configure's value
(:func:`bundlegraph.pipeline.configure.plan_configure`), or the leg's spec states why not
(``upstream_differs``: NAME = reason). A flag one side leaves unset has ggml's default there
(``option(...)`` in ``ggml/CMakeLists.txt``). A reason for a flag that no longer differs is refused
too, so the list stays true.

Likewise ``GGML_VULKAN_*`` (``ubuntu-vulkan``, ``windows``), ``GGML_HIP_*`` (``ubuntu-24-rocm``,
``windows-rocm``) and ``GGML_METAL_*`` (``macos-cpu``), and the CPU flags of every leg that builds
the CPU backend. Not compared: non-flag differences (upstream's Windows CPU build compiles with
clang, ``cmake/x64-windows-llvm.cmake``; its Linux builds with GCC 14; its GPU archs)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import require_input

from bundlegraph.graph.context import Filters, load_graph
from bundlegraph.pipeline.configure import plan_configure

ROOT = Path(__file__).resolve().parents[2]
SPEED = {
    "cuda": re.compile(r"^GGML_CUDA_"),
    "cpu": re.compile(r"^GGML_(CPU_\w+|NATIVE|OPENMP\w*|AVX\w*|FMA|F16C|BMI2|LLAMAFILE|BLAS\w*)$"),
    "vulkan": re.compile(r"^GGML_VULKAN_"),
    "hip": re.compile(r"^GGML_HIP_"),
    "metal": re.compile(r"^GGML_METAL_"),
}
"""backend -> the flags compared: ggml's CUDA options (GGML_CUDA_CUB_3DOT2 among them), Vulkan's,
HIP's (rocWMMA among them), Metal's; the CPU backend's instruction-set, variant and threading
options, also for a GPU leg that builds the CPU backend (``GGML_CPU`` not OFF)."""
JOBS = {
    ("cuda", "linux"): ("ubuntu-cuda", "build", "label"),
    ("cuda", "windows"): ("windows-cuda", "arch", "cuda"),
    ("cpu", "linux"): ("ubuntu-cpu", "build", None),
    ("cpu", "windows"): ("windows-cpu", "arch", None),
    ("vulkan", "linux"): ("ubuntu-vulkan", "build", None),
    ("vulkan", "windows"): ("windows", "arch", None),
    ("hip", "linux"): ("ubuntu-24-rocm", "build", None),
    ("hip", "windows"): ("windows-rocm", "build", None),
    ("metal", "macos"): ("macos-cpu", "build", None),
    ("cpu", "macos"): ("macos-cpu", "build", None),
}
"""(backend, os) -> (upstream's job, the matrix key of the arch, the matrix key whose major is the
CUDA major, or None)."""
_EXPR = re.compile(r"\$\{\{\s*(env|matrix)\.([A-Za-z_][\w-]*)\s*\}\}")
_CHOICE = re.compile(r"\$\{\{\s*matrix\.(\w+)\s*==\s*'([^']*)'\s*&&\s*'([^']*)'\s*\|\|\s*'([^']*)'\s*\}\}")
"""``${{ matrix.arch == 'x64' && 'ON' || 'OFF' }}``: GitHub's if-then-else idiom."""


def _tree() -> Path:
    found = sorted(require_input("llama-sdist", unpack=True).glob("*/vendor/llama.cpp"))
    assert len(found) == 1, found
    return found[0]


def ggml_defaults(tree: Path) -> dict[str, str]:
    """``option(NAME "doc" ON|OFF)`` of ggml's CMakeLists.txt: the value of a flag a configure leaves
    unset (an option whose default is a variable is left out: it depends on who includes ggml)."""
    text = (tree / "ggml" / "CMakeLists.txt").read_text(encoding="utf-8")
    return dict(re.findall(r'^option\((GGML_\w+)\s+"[^"]*"\s+(ON|OFF)\)', text, re.M))


def upstream_defines(
    doc: dict[str, Any], where: str, backend: str, os_: str, arch: str, major: int | None = None
) -> dict[str, str]:
    """``{NAME: VALUE}`` of every ``-D`` in the configure step (``id: cmake_build``, else the step
    named ``Build``) of upstream's job for ``backend`` on ``os_``, for its matrix entry of ``arch``
    (and CUDA ``major``); line continuations (``\\``, ``^``, a backtick) joined, ``${{ env.X }}``,
    ``${{ matrix.X }}`` and ``${{ matrix.X == 'v' && 'a' || 'b' }}`` filled in."""
    job, arch_key, cuda_key = JOBS[(backend, os_)]
    j = doc["jobs"][job]
    entries = [
        e
        for e in j["strategy"]["matrix"]["include"]
        if str(e.get(arch_key)) == arch and (cuda_key is None or str(e.get(cuda_key, "")).split(".")[0] == str(major))
    ]
    assert len(entries) == 1, f"{where}: jobs.{job}: {len(entries)} matrix entries for {arch} (CUDA {major})"
    steps = [s for s in j["steps"] if s.get("id") == "cmake_build"] or [
        s for s in j["steps"] if s.get("name") == "Build"
    ]
    assert len(steps) == 1, f"{where}: jobs.{job}: no single configure step"
    script = re.sub(r"(\\|\^|`)[ \t]*\r?\n", " ", steps[0]["run"])
    (line,) = [l for l in script.splitlines() if re.match(r"^\s*cmake\s.*-B\s", l)]
    env = {k: str(v) for k, v in (doc.get("env") or {}).items()}
    matrix = {k: str(v) for k, v in entries[0].items()}
    scopes = {"env": env, "matrix": matrix}
    line = _CHOICE.sub(lambda m: m[3] if matrix.get(m[1]) == m[2] else m[4], line)
    line = _EXPR.sub(lambda m: scopes[m[1]][m[2]], line)
    assert "${{" not in line, f"{where}: jobs.{job}: an expression this reader cannot fill: {line}"
    out = {}
    for a in shlex.split(line):
        if a.startswith("-D") and "=" in a:
            name, _, value = a[2:].partition("=")
            out[name.split(":")[0]] = value
    return out


def _norm(name: str, v: str | None, defaults: dict[str, str], options: set[str]) -> str:
    """CMake's truth spellings as ON/OFF; unset: the option's default, OFF for a variable that is no
    option (``GGML_CUDA_CUB_3DOT2``: an unset variable is false in ``if()``), else ``(ggml's default)``."""
    if v is None:
        return defaults.get(name) or ("(ggml's default)" if name in options else "OFF")
    u = v.upper()
    return "ON" if u in ("ON", "TRUE", "1", "YES") else "OFF" if u in ("OFF", "FALSE", "0", "NO") else v


@pytest.fixture(scope="module")
def upstream():
    tree = _tree()
    wf = tree / ".github" / "workflows" / "release.yml"
    text = (tree / "ggml" / "CMakeLists.txt").read_text(encoding="utf-8")
    options = set(re.findall(r"^option\((GGML_\w+)", text, re.M))
    return yaml.safe_load(wf.read_text(encoding="utf-8")), str(wf), ggml_defaults(tree), options


@pytest.fixture(scope="module")
def ctx():
    return load_graph(ROOT / "bundles", Filters()).ctx


def differences(ctx, leg: str, upstream) -> dict[str, tuple[str, str]]:
    """Flag -> (upstream's value, ours) for every speed flag of the leg's backend where they differ."""
    doc, where, defaults, options = upstream
    s = ctx.matrix.legs[leg]
    theirs = upstream_defines(doc, where, s.backend, s.os, s.arch, s.cuda.version.major if s.cuda else None)
    ours = plan_configure(ctx, leg).cache
    cpu = s.cmake_bool("GGML_CPU", True) is not False
    names = sorted({n for n in (*theirs, *ours) if SPEED[s.backend].match(n) or (cpu and SPEED["cpu"].match(n))})
    pairs = {n: (_norm(n, theirs.get(n), defaults, options), _norm(n, ours.get(n), defaults, options)) for n in names}
    return {n: p for n, p in pairs.items() if p[0] != p[1]}


def test_every_cuda_and_cpu_legs_speed_flags_are_upstreams_or_say_why_not(ctx, upstream):
    problems, found = [], {}
    for leg in ctx.legs:
        s = ctx.matrix.legs[leg]
        if (s.backend, s.os) not in JOBS:
            continue
        diff = differences(ctx, leg, upstream)
        found[leg] = diff
        stated = s.upstream_differs or {}
        problems += [
            f"bundles/{leg}.toml: upstream_differs.{n}: upstream builds {u}, this leg {o}: say why (or match it)"
            for n, (u, o) in diff.items()
            if not stated.get(n, "").strip()
        ]
        problems += [
            f"bundles/{leg}.toml: upstream_differs.{n}: no longer differs from upstream's release build; remove it"
            for n in stated
            if n not in diff
        ]
    assert not problems, "\n".join(problems)
    # what the comparison finds (issue 52's findings): NCCL is off where upstream's Windows build leaves
    # ggml's default; CUB 3.2's top-k is on as upstream's, its CCCL from the release's pinned wheel
    assert found["linux-x64-cuda12-newer"] == {}
    assert found["windows-x64-cuda12-newer"] == {"GGML_CUDA_NCCL": ("ON", "OFF")}
    assert found["linux-x64-cuda13-portable"] == {}
    # upstream's Linux arm64 CPU build has every CPU variant (armv8.x-armv9.2, with GCC 14); ours one generic
    assert found["linux-arm64-cpu"] == {"GGML_CPU_ALL_VARIANTS": ("ON", "OFF")}
    # upstream's HIP build of the pinned commit leaves rocWMMA's flash attention at ggml's OFF, as ours
    assert found["linux-x64-rocm-gfx1151"] == {} and found["windows-x64-rocm-gfx1151"] == {}
    # its macOS builds are native builds (GGML_NATIVE at ggml's default: tuned for the runner's CPU)
    assert found["macos-arm64"] == {"GGML_NATIVE": ("(ggml's default)", "OFF")}


def test_the_reader_fills_matrix_and_env_values(upstream):
    doc, where, defaults, _options = upstream
    assert defaults["GGML_CUDA_NCCL"] == "ON" and defaults["GGML_CUDA_FA"] == "ON"
    linux = upstream_defines(doc, where, "cuda", "linux", "x64", 12)
    assert linux["GGML_CUDA_CUB_3DOT2"] == "ON" and linux["GGML_RPC"] == "ON"  # matrix.defines, env.CMAKE_ARGS
    assert upstream_defines(doc, where, "cuda", "windows", "x64", 12)["GGML_CUDA"] == "ON"
    win = {a: upstream_defines(doc, where, "cpu", "windows", a)["GGML_CPU_ALL_VARIANTS"] for a in ("x64", "arm64")}
    assert win == {"x64": "ON", "arm64": "OFF"}  # the && || idiom
