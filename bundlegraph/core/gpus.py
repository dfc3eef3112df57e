"""Which NVIDIA GPUs this host has, and whether a bundle's GPU code can run on them.

The driver is asked through ``nvidia-smi --query-gpu=index,compute_cap,name --format=csv,noheader``
(NVIDIA's ``nvidia-smi`` documentation, "--query-gpu" and ``nvidia-smi --help-query-gpu``:
``compute_cap`` is the CUDA compute capability as ``major.minor``). A host with no
``nvidia-smi``, or whose ``nvidia-smi`` fails or lists nothing, has no usable GPU; the probe says
why instead of raising, because "no GPU" is an answer, not an error.

Coverage rule (CUDA C++ Programming Guide, "Binary Compatibility" and "PTX Compatibility"):

- SASS (a cubin) for ``sm_XY`` runs on a GPU of compute capability ``X.Z`` with ``Z >= Y`` (same
  major only); arch-specific cubins (``sm_90a``, ``sm_120a``) run on exactly ``X.Y`` — a fatbin
  records them with the plain SM (see :mod:`bundlegraph.checks.fatbin`), so this rule can only
  be more generous there, and a wrong guess shows up as a failed device check, never a pass;
- PTX for ``compute_XY`` is JIT-compiled by the driver for any GPU of capability ``>= X.Y``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from . import memo, proc
from .errors import BundleGraphError
from .lightclass import frozen

QUERY = ["nvidia-smi", "--query-gpu=index,compute_cap,name", "--format=csv,noheader"]


@frozen
class Gpu:
    """One GPU: ``index`` (the driver's), ``sm`` (compute capability as an SM number, 9.0 -> 90)
    and ``name``."""

    index: int
    sm: int
    name: str

    def describe(self) -> str:
        return f"GPU {self.index} {self.name} (sm_{self.sm})"


@frozen
class GpuProbe:
    """What the driver said: ``gpus`` (possibly empty) and ``problem`` (why there are none:
    no nvidia-smi, nvidia-smi failed), ``command`` as run."""

    gpus: tuple[Gpu, ...]
    problem: str | None
    command: str

    def key(self) -> dict[str, Any]:
        """JSON for action keys: which GPUs, so a GPU appearing changes the key."""
        return {"gpus": [[g.index, g.sm, g.name] for g in self.gpus], "problem": self.problem}


def parse_sm(text: str) -> int:
    """``"9.0"`` -> 90, ``"12.1"`` -> 121. Raises :class:`BundleGraphError` naming the text."""
    t = text.strip()
    major, dot, minor = t.partition(".")
    if not dot or not major.isdigit() or not minor.isdigit() or len(minor) != 1:
        raise BundleGraphError(f"nvidia-smi: compute capability {text!r} is not 'major.minor'")
    return int(major) * 10 + int(minor)


def parse_query(output: str) -> tuple[Gpu, ...]:
    """The GPUs of ``nvidia-smi --query-gpu=index,compute_cap,name --format=csv,noheader`` output."""
    gpus = []
    for line in output.splitlines():
        if not line.strip():
            continue
        parts = [p.strip() for p in line.split(",", 2)]
        if len(parts) != 3 or not parts[0].isdigit():
            raise BundleGraphError(f"nvidia-smi: unexpected line {line!r} (want 'index, compute_cap, name')")
        gpus.append(Gpu(int(parts[0]), parse_sm(parts[1]), parts[2]))
    return tuple(gpus)


_PROBED: dict[str | None, GpuProbe] = memo.table("gpus.probed")
"""Probes by the nvidia-smi they ran, once per process: every CUDA leg's smoke key asks, and the
GPUs of a host do not change during a run (issue 20)."""


def probe(env: Mapping[str, str] | None = None) -> GpuProbe:
    """Ask the driver (see module docstring), once per process for the same nvidia-smi. Never
    raises for a host without a GPU."""
    exe = proc.which(QUERY[0], env)
    if exe not in _PROBED:
        _PROBED[exe] = _probe(exe, env)
    return _PROBED[exe]


def _probe(exe: str | None, env: Mapping[str, str] | None) -> GpuProbe:
    cmd = proc.quote(QUERY)
    if exe is None:
        return GpuProbe((), "nvidia-smi is not on PATH (no NVIDIA driver on this host)", cmd)
    try:
        r = proc.run(QUERY, env=env, capture=True, echo=False, check=False, what="nvidia-smi")
    except BundleGraphError as e:
        return GpuProbe((), f"nvidia-smi could not run: {str(e).splitlines()[0]}", cmd)
    if r.returncode != 0:
        first = (r.output.strip().splitlines() or ["(no output)"])[0]
        return GpuProbe((), f"nvidia-smi failed with exit code {r.returncode}: {first}", cmd)
    try:
        gpus = parse_query(r.output)
    except BundleGraphError as e:
        return GpuProbe((), str(e), cmd)
    return GpuProbe(gpus, None if gpus else "nvidia-smi lists no GPU", cmd)


def covered(sm: int, sass: Iterable[int], ptx: Iterable[int]) -> str | None:
    """How a GPU of ``sm`` runs the code (``"SASS sm_90"``, ``"PTX compute_80 (JIT)"``), or None
    when neither the SASS nor the PTX covers it (rule in the module docstring)."""
    for s in sorted(set(sass), reverse=True):
        if s // 10 == sm // 10 and s % 10 <= sm % 10:
            return f"SASS sm_{s}"
    for p in sorted(set(ptx), reverse=True):
        if p <= sm:
            return f"PTX compute_{p} (JIT)"
    return None
