"""The judges of ``smoke:<leg>``: pure functions from a program's output (and exit code) to a
verdict, for the host checks (:mod:`.host`) and the GPU checks (:mod:`.gpu`).

Formats read (llama.cpp's own; the stand-in ``tests/data/minillama`` prints the same lines):

- ``llama-cli --version``: ``version: <v> (build <N>, commit <sha>)`` (``common/build-info.cpp.in``,
  ``llama_print_build_info``);
- backend loading: ``load_backend: loaded <NAME> backend from <path>`` and
  ``<fn>: failed to load <path>: <dlerror>`` (``ggml/src/ggml-backend-reg.cpp``);
- the loader with ``LD_TRACE_LOADED_OBJECTS=1``: glibc's ``ldd`` lines, ``<soname> => not found``
  for what is missing;
- ``llama-simple``: the prompt and generated text on stdout, ``decoded <N> tokens`` on stderr
  (``examples/simple/simple.cpp``);
- ``llama-cli --list-devices``: ``  CUDA0: <name> (<MiB> MiB, <MiB> MiB free)`` (``common/arg.cpp``;
  ``Vulkan0`` for the Vulkan backend);
- ``test-backend-ops``: ``  <op>(...): OK`` / ``FAIL`` per case, ``<n>/<m> tests passed``,
  ``Backend <dev>: OK`` (``tests/test-backend-ops.cpp``);
- ``llama-simple`` on the GPU: ``offloaded N/M layers to GPU`` (``src/llama-model.cpp``).

Every judge returns ``(problem or None, facts)``; a problem names the file or program.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ...core.platforms import PLATFORMS
from ...schemas.backend import backend

_ANSI = re.compile(r"\x1b\[[0-9;]*m")

VERSION_RE = re.compile(
    r"^version: (?P<version>\S+) \(build (?P<build>\d+), commit (?P<commit>[0-9A-Za-z]+)\)", re.MULTILINE
)
LOADED_RE = re.compile(r"^\w+: loaded (?P<name>\S+) backend from (?P<path>.+?)\s*$", re.MULTILINE)
FAILED_RE = re.compile(r"^\w+: failed to load (?P<path>.+?): (?P<error>.+?)\s*$", re.MULTILINE)
NOT_FOUND_RE = re.compile(r"^\s*(?P<soname>\S+) => not found", re.MULTILINE)
DRIVERS = backend("cuda").DRIVERS
"""The CUDA driver's library per OS (:data:`bundlegraph.backends.cuda.DRIVERS`; Windows:
``nvcuda.dll``, installed with the display driver)."""
DRIVER = DRIVERS["linux"]
"""The NVIDIA driver's library on Linux: the one dependency a CUDA bundle may lack where no
driver is installed (never shipped, never stubbed: the toolkit's link-only ``stubs/libcuda.so``
crashes a process that loads it)."""
CPU_BACKENDS = {p.name: p.library(backend("cpu").LIBRARY) for p in PLATFORMS.values()}
"""The CPU backend's file names ggml looks for beside the programs (``GGML_BACKEND_DL``)."""


def judge_version(out: str, rc: int, *, build_number: int, commit: str | None) -> tuple[str | None, dict[str, Any]]:
    """``llama-cli --version``: exit 0, the version line, its build number ``build_number`` (the
    release's upstream build) and its commit a prefix of the source's ``commit``."""
    m = VERSION_RE.search(out)
    facts: dict[str, Any] = {"line": m.group(0) if m else None}
    if rc != 0:
        return f"llama-cli --version: exit code {rc}: {_last_line(out)}", facts
    if not m:
        return "llama-cli --version printed no 'version: <v> (build <N>, commit <sha>)' line", facts
    facts |= {"version": m.group("version"), "build": int(m.group("build")), "commit": m.group("commit")}
    if int(m.group("build")) != build_number:
        return f"llama-cli reports build {m.group('build')}, the release's upstream build is {build_number}", facts
    c = m.group("commit").lower()
    if commit and (len(c) < 7 or not commit.lower().startswith(c)):
        return f"llama-cli reports commit {m.group('commit')}, the release's source commit is {commit}", facts
    return None, facts


def judge_backends(
    out: str,
    rc: int,
    *,
    gpu_library: str | None,
    os_name: str = "linux",
    gpu: str = "cuda",
    driver: str | None = None,
) -> tuple[str | None, dict[str, Any]]:
    """Backend loading from ggml's own messages: a CPU backend loaded; any other failure is a
    problem naming the library and the loader's error, except the GPU backend ``gpu``'s library
    (``gpu_library``) whose only missing piece is its driver (``driver``; default the CUDA driver
    of ``os_name``, :data:`DRIVERS`; none on an OS without one: macOS). The GPU backend's fate is
    recorded under its name (``facts["cuda"]``: ``loaded`` or what it needs)."""
    driver = driver or DRIVERS.get(os_name)
    loaded = {m.group("name"): m.group("path") for m in LOADED_RE.finditer(out)}
    failed = {m.group("path"): m.group("error") for m in FAILED_RE.finditer(out)}
    facts: dict[str, Any] = {"loaded": loaded, "failed": failed}
    probs = []
    for path, err in failed.items():
        name = Path(path).name
        if gpu_library and name == gpu_library and driver and driver in err:
            facts[gpu] = f"needs the driver ({driver}), as it must where none is installed"
            continue
        probs.append(f"{name}: {err}")
    if not any(n.upper() == "CPU" for n in loaded):
        probs.append(
            f"{CPU_BACKENDS[os_name]}: no CPU backend was loaded (none beside the programs, or none that loads)"
        )
    if gpu_library and gpu not in facts:
        if any(Path(p).name == gpu_library for p in loaded.values()):
            facts[gpu] = "loaded"
        elif not any(Path(p).name == gpu_library for p in failed):
            probs.append(f"{gpu_library}: ggml neither loaded it nor reported why")
    if rc != 0:  # after what ggml said of the backends: that names the file
        probs.append(f"exit code {rc}: {_last_line(out)}")
    return ("; ".join(probs) or None), facts


def judge_deps(
    out: str, rc: int, file: str, *, allowed_missing: frozenset[str] = frozenset()
) -> tuple[str | None, dict[str, Any]]:
    """The loader's trace of FILE (``ldd``): every dependency resolves, except the sonames in
    ``allowed_missing``."""
    missing = sorted({m.group("soname") for m in NOT_FOUND_RE.finditer(out)})
    facts: dict[str, Any] = {"missing": missing} if missing else {}
    bad = [s for s in missing if s not in allowed_missing]
    if bad:
        return f"{file}: {', '.join(bad)} not found", facts
    if rc != 0 and not missing:
        return f"{file}: the loader cannot list it (exit code {rc}: {_last_line(out)})", facts
    return None, facts


def judge_generate(out: str, rc: int) -> tuple[str | None, dict[str, Any]]:
    """One ``llama-simple`` run on the CPU: exit 0 and ``decoded N tokens`` with N > 0; the text
    is kept to compare with the repeat run."""
    dec = re.search(r"decoded (\d+) tokens", out)
    facts = {"decoded": int(dec.group(1)) if dec else None}
    if rc != 0:
        return f"llama-simple: exit code {rc}: {_last_line(out)}", facts
    if not dec or int(dec.group(1)) == 0:
        return "llama-simple generated no token", facts
    return None, facts


GENERATED_RE = re.compile(r"(?s)Hello(?P<text>.*?)main: decoded (?P<n>\d+) tokens in")
"""llama-simple's prompt (the smoke's is ``Hello``), the tokens it generated, then its
``main: decoded N tokens in`` line (stdout and stderr share one pipe, flushed per token)."""


def generated_text(out: str) -> str | None:
    """The text llama-simple generated after the prompt (the last run in ``out``), or None
    when its output has no such passage."""
    found = list(GENERATED_RE.finditer(out))
    return found[-1].group("text") if found else None


def judge_devices(out: str, name: str = "CUDA", title: str | None = None) -> str | None:
    """None when ``--list-devices`` output lists a device named ``name<n>`` (ggml's device names:
    ``CUDA0``, ``Vulkan0``, ``ROCm0``, ``MTL0``) or ``name`` alone (ggml-opencl names its one
    device ``GPUOpenCL``, no index); ``title``: the backend's name in the message, default
    ``name``. Else what is wrong: its layers would run on the CPU. A device is a line as
    ``llama-cli --list-devices`` prints one (``common/arg.cpp``: ``"%s: %s (%zu MiB, %zu MiB
    free)"``), so ggml-vulkan's own ``Vulkan: 0 device(s)`` is not one."""
    if re.search(rf"^\s*{re.escape(name)}\d*: .*\(\d+ MiB, \d+ MiB free\)\s*$", out, re.MULTILINE):
        return None
    return (
        f"no {name}<n> device listed: the {title or name} backend did not load or sees no GPU (a fallback to the CPU)"
    )


def judge_op(out: str, rc: int, dev: str) -> tuple[str | None, dict[str, Any]]:
    """``(problem or None, facts)`` for one ``test-backend-ops test -b DEV -o OP`` run."""
    out = _ANSI.sub("", out)
    m = re.findall(r"^\s*(\d+)/(\d+) tests passed", out, re.MULTILINE)
    passed, total = (int(m[-1][0]), int(m[-1][1])) if m else (0, 0)
    facts = {
        "passed": passed,
        "total": total,
        "failed_cases": [l.strip() for l in out.splitlines() if re.search(r"\bFAIL\b", l)][:10],
    }
    if rc != 0:
        return f"exit code {rc}", facts
    if not re.search(rf"Backend {re.escape(dev)}: OK", out):
        return f"no 'Backend {dev}: OK'", facts
    if total == 0:
        return "ran no test case", facts
    if passed != total:
        return f"{passed}/{total} tests passed", facts
    return None, facts


def judge_gpu_generate(out: str, rc: int) -> tuple[str | None, dict[str, Any]]:
    """``(problem or None, facts)`` for the generation run."""
    off = re.search(r"offloaded (\d+)/(\d+) layers to GPU", out)
    dec = re.search(r"decoded (\d+) tokens", out)
    facts = {"offloaded": off.group(0) if off else None, "decoded": int(dec.group(1)) if dec else None}
    if rc != 0:
        return f"exit code {rc}", facts
    if not off or off.group(1) != off.group(2) or off.group(1) == "0":
        return "not every layer was offloaded to the GPU", facts
    if not dec or int(dec.group(1)) == 0:
        return "no token was generated", facts
    return None, facts


def _last_line(out: str) -> str:
    lines = [l.strip() for l in out.strip().splitlines() if l.strip()]
    return lines[-1][:300] if lines else "(no output)"


__all__ = [
    "CPU_BACKENDS",
    "DRIVER",
    "DRIVERS",
    "VERSION_RE",
    "generated_text",
    "judge_backends",
    "judge_deps",
    "judge_devices",
    "judge_generate",
    "judge_gpu_generate",
    "judge_op",
    "judge_version",
]
