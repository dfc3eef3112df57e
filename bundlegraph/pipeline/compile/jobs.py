"""How many compile jobs a build runs: ``N = min(cores, available memory / peak memory of one
job)``, at least 1; ``BUNDLEGRAPH_JOBS`` overrides it.

Peak memory of one job, measured on this project's Linux x86_64 build host (nvcc 13, GCC 12
aarch64 cross host compiler, ``/usr/bin/time -v`` max RSS of the whole nvcc process tree,
see ``shared/FINDINGS.md``): the heaviest ggml-cuda translation units (``fattn-mma-*``,
``mmq-instance-*``) peak at 904 MB for two architectures (120a;121a); small ones at ~0.5 GB.
Each additional architecture adds one more ``cicc``/``ptxas`` pass, about 200 MB. Upstream
measured ~3 GB per job with MSVC on Windows, so hosts whose nvcc runs MSVC
(:attr:`bundlegraph.core.platforms.Platform.msvc_host`) use 3 GB. CPU-only legs: 512 MB
(the largest llama.cpp C++ TUs with GCC -O3).

:data:`PER_JOB_MB` holds these; the budget is 90 % of the available memory.
"""

from __future__ import annotations

import os

from ...core import settings
from ...core.lightclass import frozen

PER_JOB_MB = {"cuda_linux_2arch": 904, "cuda_extra_arch": 200, "cuda_windows": 3072, "cpu": 512}


@frozen
class Jobs:
    """``n`` jobs and ``why`` (the numbers that decided it)."""

    n: int
    why: str


def available_memory_mb() -> int | None:
    """MemAvailable (Linux ``/proc/meminfo``) or ullAvailPhys (Windows), in MiB; None if unknown."""
    if os.name == "nt":  # pragma: no cover - Windows path
        import ctypes

        class MS(ctypes.Structure):
            _fields_ = [
                ("dwLength", ctypes.c_ulong),
                ("dwMemoryLoad", ctypes.c_ulong),
                ("ullTotalPhys", ctypes.c_ulonglong),
                ("ullAvailPhys", ctypes.c_ulonglong),
                ("ullTotalPageFile", ctypes.c_ulonglong),
                ("ullAvailPageFile", ctypes.c_ulonglong),
                ("ullTotalVirtual", ctypes.c_ulonglong),
                ("ullAvailVirtual", ctypes.c_ulonglong),
                ("ullAvailExtendedVirtual", ctypes.c_ulonglong),
            ]

        st = MS()
        st.dwLength = ctypes.sizeof(MS)
        if ctypes.windll.kernel32.GlobalMemoryStatusEx(ctypes.byref(st)):  # type: ignore[attr-defined]  # Windows only: ctypes.windll exists there
            return int(st.ullAvailPhys // (1 << 20))
        return None
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            return next((int(line.split()[1]) // 1024 for line in f if line.startswith("MemAvailable:")), None)
    except OSError:
        return None


def per_job_mb(cuda_archs: int, msvc_host: bool) -> int:
    """Peak MiB of one compile job for a leg with ``cuda_archs`` architectures (0: CPU leg)."""
    if cuda_archs == 0:
        return PER_JOB_MB["cpu"]
    if msvc_host:
        return PER_JOB_MB["cuda_windows"]
    return PER_JOB_MB["cuda_linux_2arch"] + PER_JOB_MB["cuda_extra_arch"] * max(0, cuda_archs - 2)


def cores() -> int:
    """CPU cores this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def decide(cuda_archs: int, msvc_host: bool, env: dict[str, str] | None = None) -> Jobs:
    """The job count (see module docstring). ``BUNDLEGRAPH_JOBS`` must be a positive integer."""
    n = settings.get("JOBS", env)
    if n is not None:
        return Jobs(n, f"BUNDLEGRAPH_JOBS={n}")
    c = cores()
    mem = available_memory_mb()
    per = per_job_mb(cuda_archs, msvc_host)
    if mem is None:
        return Jobs(c, f"{c} cores (available memory unknown)")
    by_mem = max(1, int(mem * 0.9) // per)
    return Jobs(max(1, min(c, by_mem)), f"min({c} cores, {mem} MiB available * 0.9 / {per} MiB per job = {by_mem})")
