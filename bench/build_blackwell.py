"""Benchmark: the cold build of the ``linux-arm64-cuda13-blackwell`` ggml-cuda backend through
bundlegraph (``doit build:<leg>``) vs the same cmake and ninja commands typed by hand, same
machine, same ``-j``; plus the no-op rerun of the configured graph.

Usage::

    .venv/bin/python bench/build_blackwell.py [--jobs 2] [--targets T1,T2] [--out DIR] [--skip-hand]

Steps (each in its own work directory under ``--out``, default ``/tmp/bundlegraph-bench``):

1. untimed: ``doit configure:<leg>`` (source, toolkit, configure);
2. timed: ``doit build:<leg>`` with ``BUNDLEGRAPH_JOBS=<jobs>`` (cold: a freshly configured
   build directory);
3. untimed: the very cmake configure command bundlegraph recorded in ``configure.json``, run by
   hand into a second build directory; timed: ``cmake --build <dir> --target ggml-cuda -j <jobs>``;
4. timed: ``doit build:<leg>`` again (nothing to do: the no-op time of the configured graph).

Measured: wall seconds of each timed step, the ratio bundlegraph / by hand (goal <= 1.02),
peak memory (the largest resident set of any single process, ``ru_maxrss`` of the waited
children, and the peak sum of RSS over the build's process tree, sampled every 0.5 s from
``/proc``). ``--targets`` limits both builds to a few ninja outputs (a quick check of this
script; the full build takes ~40 min on 2 cores). Results: JSON printed and written to
``<out>/build_blackwell.json``. Linux only (``/proc``).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
LEG = "linux-arm64-cuda13-blackwell"


def _tree_rss_kb(pid: int) -> int:
    """Sum of VmRSS over ``pid`` and all its descendants (kB)."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            stat = (d / "stat").read_text()
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            children.setdefault(ppid, []).append(int(d.name))
            for line in (d / "status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    rss[int(d.name)] = int(line.split()[1])
        except (OSError, ValueError, IndexError):
            continue
    total, stack = 0, [pid]
    while stack:
        p = stack.pop()
        total += rss.get(p, 0)
        stack += children.get(p, [])
    return total


def timed(argv: list[str], env: dict[str, str], log: Path) -> dict:
    """Run ``argv``; wall seconds, peak tree RSS (MiB) and exit code."""
    peak = 0
    with open(log, "w") as f:
        t0 = time.monotonic()
        p = subprocess.Popen(argv, env=env, stdout=f, stderr=subprocess.STDOUT, cwd=ROOT)
        done = threading.Event()

        def sample() -> None:
            nonlocal peak
            while not done.wait(0.5):
                peak = max(peak, _tree_rss_kb(p.pid))

        th = threading.Thread(target=sample, daemon=True)
        th.start()
        rc = p.wait()
        wall = time.monotonic() - t0
        done.set()
        th.join()
    if rc != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({rc}); see {log}")
    return {"wall_s": round(wall, 2), "peak_tree_rss_mib": round(peak / 1024, 1), "log": str(log)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--targets", default="", help="comma-separated ninja outputs (quick check)")
    ap.add_argument("--out", type=Path, default=Path("/tmp/bundlegraph-bench"))
    ap.add_argument("--skip-hand", action="store_true")
    a = ap.parse_args()
    out = a.out.resolve()
    wd, hand = out / "work", out / "hand"
    for d in (wd, hand):
        shutil.rmtree(d, ignore_errors=True)
        d.mkdir(parents=True)
    env = dict(os.environ, BUNDLEGRAPH_WORKDIR=str(wd), BUNDLEGRAPH_JOBS=str(a.jobs))
    env.pop("BUNDLEGRAPH_BUILD_TARGETS", None)
    doit = [str(BIN / "doit"), "-f", str(ROOT / "dodo.py")]
    targets_var = [f"build_targets={a.targets}"] if a.targets else []
    res: dict = {"leg": LEG, "jobs": a.jobs, "targets": a.targets or "(spec: ggml-cuda)", "cores": os.cpu_count()}

    timed([*doit, f"configure:{LEG}"], env, out / "configure.log")
    res["bundlegraph"] = timed([*doit, f"build:{LEG}", *targets_var], env, out / "build-bundlegraph.log")
    res["bundlegraph"]["max_single_rss_mib"] = round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, 1)

    if not a.skip_hand:
        conf = json.loads((wd / "build" / LEG / "configure.json").read_text())
        argv = list(conf["argv"])
        argv[argv.index("-B") + 1] = str(hand / "cmake")
        argv = [x for x in argv if x != "--fresh"]
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, cwd=ROOT)
        tg = a.targets.split(",") if a.targets else ["ggml-cuda"]
        res["by_hand"] = timed([conf["argv"][0], "--build", str(hand / "cmake"), "--target", *tg, "-j", str(a.jobs)],
                               dict(os.environ), out / "build-hand.log")
        res["ratio_bundlegraph_over_hand"] = round(res["bundlegraph"]["wall_s"] / res["by_hand"]["wall_s"], 3)

    res["noop_build_task"] = timed([*doit, f"build:{LEG}", *targets_var], env, out / "noop-build.log")
    (out / "build_blackwell.json").write_text(json.dumps(res, indent=2) + "\n")
    print(json.dumps(res, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
