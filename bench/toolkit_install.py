"""Benchmark the toolkit stage: cold install vs sequential curl + unzip of the same archives from
the same local server; warm-cache install; no-op.

The pool is built once from NVIDIA's real wheels (fetched with ``pip download`` through the
project's lock, i.e. the shared blob cache): each wheel's ``nvidia/cu13/`` tree is repacked into
NVIDIA's redist layout (``<component>-<platform>-<version>-archive/``, zip, deflate level 1) and
listed in a ``redistrib_<label>.json`` in NVIDIA's schema, served by a static HTTP server on
127.0.0.1. Every measured run uses a fresh ``BUNDLEGRAPH_CACHE``.

    .venv/bin/python bench/toolkit_install.py [--cublas] [--runs N]

Prints one JSON object (seconds; bytes) and a Markdown table row.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
import zipfile
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bundlegraph.core import proc
from bundlegraph.toolkit.identity import ComponentSet
from bundlegraph.toolkit.lockfile import load_lock
from bundlegraph.toolkit.stub import build_stub, driver_symbols
from bundlegraph.toolkit.wheels import fetch_wheel

HOST = ("cuda_cccl", "cuda_crt", "cuda_nvcc", "libnvvm")


def build_pool(pool: Path, with_cublas: bool) -> tuple[list[Path], int]:
    lock = load_lock(ROOT / "bundles/locks/cuda-13.5-wheels.toml")
    rows = [lock.row(c, "linux-x86_64") for c in HOST] + [lock.row("cuda_cudart", "linux-sbsa")]
    if with_cublas:
        rows.append(lock.row("libcublas", "linux-sbsa"))
    manifest: dict = {"release_date": "2026-11-30", "release_label": "13.5.0", "release_product": "cuda"}
    archives = []
    for row in rows:
        top = f"{row.component}-{row.platform}-{row.version}-archive"
        rel = f"{row.component}/{row.platform}/{top}.zip"
        out = pool / rel
        if not out.exists():
            out.parent.mkdir(parents=True, exist_ok=True)
            with (
                zipfile.ZipFile(fetch_wheel(row)) as src,
                zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as dst,
            ):
                for info in src.infolist():
                    if not info.filename.startswith("nvidia/cu13/") or info.is_dir():
                        continue
                    zi = zipfile.ZipInfo(f"{top}/{info.filename[len('nvidia/cu13/') :]}", info.date_time)
                    zi.external_attr, zi.compress_type = info.external_attr, zipfile.ZIP_DEFLATED
                    with src.open(info) as f, dst.open(zi, "w") as g:
                        shutil.copyfileobj(f, g, 1 << 20)
                if row.component == "cuda_cudart":  # NVIDIA's redist cudart carries lib/stubs/libcuda.so
                    cuda_h = src.read("nvidia/cu13/include/cuda.h").decode()
                    dst.writestr(f"{top}/lib/stubs/libcuda.so", build_stub(driver_symbols(cuda_h), row.platform))
        data_sha = hashlib.sha256(out.read_bytes()).hexdigest()
        manifest.setdefault(row.component, {"name": row.component, "license": "CUDA Toolkit", "version": row.version})[
            row.platform
        ] = {"relative_path": rel, "sha256": data_sha, "md5": "0" * 32, "size": str(out.stat().st_size)}
        archives.append(out)
    (pool / "redistrib_13.5.0.json").write_text(json.dumps(manifest, indent=2))
    return archives, sum(a.stat().st_size for a in archives)


def serve(pool: Path) -> tuple[ThreadingHTTPServer, str]:
    class Quiet(SimpleHTTPRequestHandler):
        def log_message(self, *a):
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(pool)))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd, f"http://127.0.0.1:{httpd.server_address[1]}/"


def timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cublas", action="store_true", help="include the 560 MB aarch64 cublas")
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    os.environ["CI"] = "1"  # plain progress lines
    work = Path(tempfile.mkdtemp(prefix="bg-bench-"))
    pool = ROOT / ".bundlegraph" / "bench-pool"
    archives, total = build_pool(pool, args.cublas)
    httpd, base = serve(pool)
    from bundlegraph.toolkit.install import install
    from bundlegraph.toolkit.ref import ref_for_set

    target = ("cuda_cudart", "libcublas") if args.cublas else ("cuda_cudart",)
    cs = ComponentSet(
        "redist", "13.5", "linux-x86_64", "linux-sbsa", HOST, target, {"manifest": "13.5.0", "pool": base}, "bench"
    )
    res: dict[str, list[float]] = {"cold": [], "curl_unzip": [], "warm": [], "noop": []}
    try:
        for i in range(args.runs):
            cache = work / f"cache{i}"
            os.environ["BUNDLEGRAPH_CACHE"] = str(cache)
            ref = ref_for_set(cs)
            res["cold"].append(timed(lambda: install(cs, ref, ROOT / "bundles")))
            shutil.rmtree(ref.prefix)
            res["warm"].append(timed(lambda: install(cs, ref, ROOT / "bundles")))
            res["noop"].append(timed(lambda: install(cs, ref, ROOT / "bundles")))
            shutil.rmtree(cache)
            base_dir = work / f"curl{i}"
            base_dir.mkdir()

            def curl_unzip():
                for a in archives:
                    rel = a.relative_to(pool).as_posix()
                    f = base_dir / a.name
                    proc.run(["curl", "-sSfo", f, base + rel], echo=False)
                    proc.run(["unzip", "-q", "-o", f, "-d", base_dir / "tree"], echo=False)

            res["curl_unzip"].append(timed(curl_unzip))
            shutil.rmtree(base_dir)
    finally:
        httpd.shutdown()
        shutil.rmtree(work, ignore_errors=True)
    med = {k: statistics.median(v) for k, v in res.items()}
    out = {
        "archives": len(archives),
        "bytes": total,
        "runs": args.runs,
        "median_s": med,
        "all_s": res,
        "cold_over_curl_unzip": med["cold"] / med["curl_unzip"],
    }
    print(json.dumps(out, indent=2))
    print(
        f"| {len(archives)} archives, {total / 1e6:.0f} MB | {med['cold']:.2f} s | {med['curl_unzip']:.2f} s | "
        f"{out['cold_over_curl_unzip']:.2f} | {med['warm']:.2f} s | {med['noop'] * 1000:.0f} ms |"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
