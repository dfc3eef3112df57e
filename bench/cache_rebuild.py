"""Compiler-cache and reproducibility figures of the real aarch64 CUDA leg (issue 19).

Runs the real graph (``doit package:linux-arm64-cuda13-blackwell``: the aarch64 CPU leg, its
merge base, and the CUDA leg) in fresh work directories under ``--root`` against one ccache
remote storage (a WsgiDAV server on 127.0.0.1, ``layout=flat``), each with an empty local
ccache directory:

- ``cold``: nothing cached (the remote is empty);
- ``warm``: another work directory, empty local cache, the remote warm;
- ``change``: one file of the llama.cpp tree changed (a statement added to
  ``ggml/src/ggml-cuda/argmax.cu``), another work directory, empty local cache: what a fresh runner
  recompiles; then ``change-local``: the same change in ``warm``'s build directory (ninja's own
  incremental rebuild);
- ``miss`` (``--miss-twin``): the file restored, ``BUNDLEGRAPH_LAUNCHER=none``, another work
  directory: a second build with no cache at all, to compare bytes with ``cold``.

The source is a copy of the pinned sdist's ``vendor/llama.cpp`` used as a ``path`` pin (commit
and date as the sdist's gitdir gives them), so the one-file change is a real new source. Each
run records wall seconds, each build's compiler-cache statistics
(``build/<leg>/compiler-cache.json``), ninja's step counts, the bundles' and
``libggml-cuda.so``'s sha256. Where two builds' ``libggml-cuda.so`` differ, diffoscope (if on
PATH) writes its report beside the results. Results: ``<root>/results.json`` (rewritten after
each run).

    python bench/cache_rebuild.py --root /work/bench [--miss-twin]

On the GPU machine (16 cores, CUDA 13.0, no registry): the x64 twin, with ``--leg
linux-x64-cuda13-portable --base-leg linux-x64-cpu --src <carried tree> --bundles <carried
bundles>`` and the host toolkit (``BUNDLEGRAPH_TOOLKIT_SOURCE=host``, ``BUNDLEGRAPH_ARCHS=120,121``
in the environment): ``bench/device_cache_run.sh``. ``--miss-build-only`` makes the no-cache run
build the CUDA leg alone (its ``libggml-cuda.so`` is compared, not the bundle).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
LEGS = {"cuda": "linux-arm64-cuda13-blackwell", "cpu": "linux-arm64-cpu"}
SDIST_TREE = "vendor/llama.cpp"
COMMIT = "0c1e57098bba43ac29e6e3b677cdceebdd22334f"
CHANGED = "ggml/src/ggml-cuda/argmax.cu"
CHANGE = "\n// bundlegraph bench: a one-file change\n__device__ int bundlegraph_bench_change = 1;\n"


def sha(p: Path) -> str:
    h = hashlib.sha256()
    with open(p, "rb") as f:
        for b in iter(lambda: f.read(1 << 20), b""):
            h.update(b)
    return h.hexdigest()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def sdist_tree() -> Path:
    cache = Path(os.environ.get("BUNDLEGRAPH_CACHE") or Path.home() / ".cache" / "bundlegraph")
    hits = sorted(cache.glob("sources/pip-sdist-*/tree/" + SDIST_TREE))
    if not hits:
        raise SystemExit("the pinned sdist is not in the source cache: run `doit source:linux-arm64-cpu` once")
    return hits[0]


def setup(root: Path, src: Path | None, given: Path | None) -> tuple[Path, Path]:
    if src is None:
        src = root / "src" / "llama.cpp"
        if not src.is_dir():
            shutil.copytree(sdist_tree(), src, symlinks=True)
    bundles = root / "bundles"
    if bundles.exists():
        shutil.rmtree(bundles)
    shutil.copytree(given or REPO / "bundles", bundles)
    rel = (bundles / "release.toml").read_text(encoding="utf-8")
    block = re.search(r"^\[source\]\n(?:(?!^\[).*\n?)*", rel, re.M)
    assert block, "release.toml has no [source] table"
    pin = (
        f'[source]\nkind = "path"\npath = "{src.as_posix()}"\ncommit = "{COMMIT}"\n'
        f"commit_date = 2026-10-01T02:11:48Z\n\n"
    )
    (bundles / "release.toml").write_text(rel[: block.start()] + pin + rel[block.end() :], encoding="utf-8")
    return src, bundles


def ninja_steps(log: Path) -> int:
    steps = (
        re.findall(r"^\[(\d+)/(\d+)\]", log.read_text(encoding="utf-8", errors="replace"), re.M)
        if log.is_file()
        else []
    )
    return int(steps[-1][1]) if steps else 0


def run(
    name: str, work: Path, bundles: Path, env_extra: dict[str, str], results: dict, root: Path, task: str = "package"
) -> dict:
    cuda_leg, cpu_leg = LEGS["cuda"], LEGS["cpu"]
    work.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BUNDLEGRAPH_ONLY", "CCACHE_"))}
    env |= {
        "BUNDLEGRAPH_WORKDIR": str(work),
        "BUNDLEGRAPH_BUNDLES": str(bundles),
        "PATH": f"{BIN}{os.pathsep}{env.get('PATH', '')}",
    } | env_extra
    t0 = time.monotonic()
    with open(root / f"{name}.log", "w", encoding="utf-8") as log:
        p = subprocess.run(
            [sys.executable, "-m", "doit", "-f", str(REPO / "dodo.py"), f"{task}:{cuda_leg}"],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    wall = time.monotonic() - t0
    r: dict = {"work": str(work), "rc": p.returncode, "wall_s": round(wall, 1), "env": env_extra, "legs": {}}
    for leg in (cpu_leg, cuda_leg):
        b = work / "build" / leg
        cc = b / "compiler-cache.json"
        r["legs"][leg] = {
            "compiler_cache": json.loads(cc.read_text(encoding="utf-8")) if cc.is_file() else None,
            "ninja_steps": ninja_steps(b / "logs" / "build.log"),
        }
    so = work / "build" / cuda_leg / "cmake" / "bin" / "libggml-cuda.so"
    r["libggml-cuda.so"] = sha(so) if so.is_file() else None
    r["bundles"] = {
        f.name: sha(f)
        for f in sorted((work / "dist").glob("*"))
        if f.is_file() and (f.name.endswith((".tar.gz", ".zip")))
    }
    results["runs"][name] = r
    (root / "results.json").write_text(json.dumps(results, indent=2), encoding="utf-8")
    cs = r["legs"][cuda_leg]["compiler_cache"] or {}
    print(
        f"{name}: rc {p.returncode}, {wall:.0f}s, {cuda_leg}: {cs.get('hits')} hits "
        f"({cs.get('remote_hits')} remote), {cs.get('misses')} misses, {r['legs'][cuda_leg]['ninja_steps']} "
        f"ninja steps, build {cs.get('seconds')}s",
        flush=True,
    )
    return r


def diff(a: Path, b: Path, out: Path) -> str:
    tool = shutil.which("diffoscope") or (str(BIN / "diffoscope") if (BIN / "diffoscope").is_file() else None)
    if not tool:
        return "diffoscope not installed"
    subprocess.run([tool, "--text", str(out), str(a), str(b)], stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    return str(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", type=Path, required=True)
    ap.add_argument("--miss-twin", action="store_true", help="also build once more with no cache at all")
    ap.add_argument("--only", nargs="*", default=None, help="run only these steps (cold warm change miss)")
    ap.add_argument("--leg", default=LEGS["cuda"])
    ap.add_argument("--base-leg", default=LEGS["cpu"])
    ap.add_argument("--src", type=Path, default=None, help="a llama.cpp tree to use (default: a copy of the sdist's)")
    ap.add_argument("--bundles", type=Path, default=None, help="the bundles directory to copy (default: bundles/)")
    ap.add_argument("--miss-build-only", action="store_true", help="the no-cache run builds the CUDA leg alone")
    ap.add_argument("--task", default="package", help="what the cached runs ask doit for: package (default) or build")
    a = ap.parse_args()
    LEGS.update(cuda=a.leg, cpu=a.base_leg)
    root = a.root.resolve()
    root.mkdir(parents=True, exist_ok=True)
    src, bundles = setup(root, a.src.resolve() if a.src else None, a.bundles)
    dav = root / "dav"
    (dav / "cache").mkdir(parents=True, exist_ok=True)
    port = free_port()
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "wsgidav.server.server_cli",
            "-H",
            "127.0.0.1",
            "-p",
            str(port),
            "-r",
            str(dav),
            "--auth",
            "anonymous",
            "--no-config",
            "-q",
        ],
        stdout=open(root / "wsgidav.log", "w"),
        stderr=subprocess.STDOUT,
    )
    time.sleep(2)
    remote = {"BUNDLEGRAPH_CACHE_REMOTE": f"http://127.0.0.1:{port}/cache|layout=flat"}
    results: dict = {
        "machine": f"{os.cpu_count()} cores",
        "commit": subprocess.run(
            ["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True
        ).stdout.strip(),
        "runs": {},
    }
    steps = a.only or ["cold", "warm", "change"] + (["miss"] if a.miss_twin else [])
    changed = src / CHANGED
    original = changed.read_bytes()
    try:
        if "cold" in steps:
            run("cold", root / "a", bundles, remote | {"CCACHE_DIR": str(root / "a-ccache")}, results, root, a.task)
        if "warm" in steps:
            run("warm", root / "b", bundles, remote | {"CCACHE_DIR": str(root / "b-ccache")}, results, root, a.task)
        if "change" in steps:
            changed.write_bytes(original + CHANGE.encode())
            run("change", root / "c", bundles, remote | {"CCACHE_DIR": str(root / "c-ccache")}, results, root, a.task)
            run(
                "change-local",
                root / "b",
                bundles,
                remote | {"CCACHE_DIR": str(root / "b-ccache")},
                results,
                root,
                a.task,
            )
            changed.write_bytes(original)
        if "miss" in steps:
            run(
                "miss",
                root / "d",
                bundles,
                {"BUNDLEGRAPH_LAUNCHER": "none"},
                results,
                root,
                "build" if a.miss_build_only else "package",
            )
        runs = results["runs"]
        base = runs.get("cold", {}).get("libggml-cuda.so")
        for other in ("warm", "miss"):
            o = runs.get(other, {}).get("libggml-cuda.so")
            if base and o:
                same = o == base
                results[f"cold_vs_{other}"] = (
                    "identical"
                    if same
                    else diff(
                        root / "a" / "build" / LEGS["cuda"] / "cmake" / "bin" / "libggml-cuda.so",
                        root
                        / ("b" if other == "warm" else "d")
                        / "build"
                        / LEGS["cuda"]
                        / "cmake"
                        / "bin"
                        / "libggml-cuda.so",
                        root / f"diffoscope-cold-vs-{other}.txt",
                    )
                )
        (root / "results.json").write_text(json.dumps(results, indent=2), encoding="utf-8")
    finally:
        changed.write_bytes(original)
        server.terminate()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
