"""Benchmark: verify the real 145 MB x64 ``ggml-cuda.dll`` (PE machine, fatbin inventory,
import tables + closure) and compare with ``sha256sum`` of the same file.

Usage: ``.venv/bin/python bench/verify_ggml_cuda.py [--runs N] [FILE]`` (default FILE: the
cached ``@node-llama-cpp/win-x64-cuda@3.21.1`` input of the tests, fetched on first use).

Measured (Linux; other systems print times only):

- wall time, cold (the file's pages dropped from the page cache first with
  ``posix_fadvise(DONTNEED)`` — only this file, nothing else is evicted) and warm (median);
- bytes read from disk on the cold run (``/proc/self/io`` ``read_bytes``);
- bytes of the file mapped into the process (``Rss`` of the file's mapping in
  ``/proc/self/smaps``: every page any check touched, including the kernel's fault-around);
- ``sha256sum`` of the same file, cold and warm, for scale (it reads every byte).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from bundlegraph.checks.bundle import mapped
from bundlegraph.checks.closure import pe_closure
from bundlegraph.checks.inspect import inspect_file
from bundlegraph.core.proc import run

LINUX = sys.platform.startswith("linux")


def default_file() -> Path:
    import realinputs

    return realinputs.unpacked("npm-win-x64-cuda") / "package" / "bins" / "win-x64-cuda" / "ggml-cuda.dll"


def drop_cache(path: Path) -> None:
    """Evict this one file's clean pages from the page cache (Linux; no-op elsewhere)."""
    if hasattr(os, "posix_fadvise"):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def read_bytes() -> int:
    if not LINUX:
        return 0
    for line in Path("/proc/self/io").read_text().splitlines():
        if line.startswith("read_bytes:"):
            return int(line.split()[1])
    return 0


def mapped_rss(path: Path) -> int:
    """Rss (bytes) of this process's mapping of ``path``."""
    if not LINUX:
        return 0
    rss, inside = 0, False
    target = str(path.resolve())
    for line in Path("/proc/self/smaps").read_text().splitlines():
        first = line.split(maxsplit=1)[0]
        if "-" in first and not first.endswith(":"):
            inside = line.rstrip().endswith(target)
        elif inside and line.startswith("Rss:"):
            rss += int(line.split()[1]) * 1024
    return rss


def verify_once(path: Path) -> tuple[float, int, int, str]:
    """(seconds, disk bytes read, bytes mapped in, fatbin summary) for one verification."""
    rb = read_bytes()
    t = time.perf_counter()
    with mapped(path) as data:
        r = inspect_file(path.name, data, os_name="windows", arch="x64")
        fails = pe_closure(
            {path.name: r.pe},
            [path.name],
            external=("cublas64_13.dll", "ggml-base.dll", "MSVCP140.dll", "VCRUNTIME140.dll", "VCRUNTIME140_1.dll"),
        )
        rss = mapped_rss(path)
    dt = time.perf_counter() - t
    assert r.machine == "x64" and r.fatbin is not None and not r.failures and not fails, (r.failures, fails)
    return dt, read_bytes() - rb, rss, r.fatbin.summary()


def sha_once(path: Path) -> float:
    t = time.perf_counter()
    run(["sha256sum", str(path)], capture=True, echo=False)
    return time.perf_counter() - t


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("file", nargs="?")
    ap.add_argument("--runs", type=int, default=5)
    a = ap.parse_args()
    path = Path(a.file) if a.file else default_file()
    size = path.stat().st_size
    print(f"file: {path.name}, {size:,} bytes; cpus: {os.cpu_count()}")
    drop_cache(path)
    cold, cold_read, cold_rss, summary = verify_once(path)
    warm = [verify_once(path) for _ in range(a.runs)]
    print(f"fatbin: {summary}")
    print(f"verify cold: {cold:.3f} s, {cold_read:,} bytes read from disk, {cold_rss:,} bytes of the file mapped in")
    print(
        f"verify warm: median {statistics.median(w[0] for w in warm):.3f} s over {a.runs} runs, "
        f"{warm[0][2]:,} bytes mapped in ({100 * warm[0][2] / size:.2f} % of the file)"
    )
    drop_cache(path)
    sc = sha_once(path)
    sw = statistics.median(sha_once(path) for _ in range(a.runs))
    print(f"sha256sum cold: {sc:.3f} s, warm: median {sw:.3f} s (reads all {size:,} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
