"""Benchmark: the cold build of the ``linux-arm64-cuda13-blackwell`` ggml-cuda backend through
bundlegraph (``doit build:<leg>``) vs the same cmake and ninja commands typed by hand, same
machine, same ``-j``; plus the no-op rerun of the configured graph.

Usage::

    .venv/bin/python bench/build_blackwell.py [--jobs 2] [--leg LEG] [--targets T1,T2] [--rounds N]
                                              [--out DIR] [--skip-hand]

``--leg`` picks another CUDA leg (default ``linux-arm64-cuda13-blackwell``); the ``BUNDLEGRAPH_*``
variables of the environment (``BUNDLEGRAPH_ARCHS``, ``BUNDLEGRAPH_TOOLKIT_SOURCE``...) reach both
doit runs, so ``bench/device_build_bench.sh`` measures the x64 twin of the Blackwell leg
(``linux-x64-cuda13-portable`` with archs 120,121) on the 16-core GPU machine.

Steps (in ``--out``, default ``/tmp/bundlegraph-bench``: ``work/`` is bundlegraph's work
directory, ``hand/cmake`` the by-hand build directory):

1. untimed: ``doit configure:<leg>`` (source, toolkit, configure), then the very cmake configure
   command bundlegraph recorded in ``configure.json``, run by hand into ``hand/cmake``;
2. ``--rounds`` rounds, each timing one cold ``doit build:<leg>`` (``BUNDLEGRAPH_JOBS=<jobs>``)
   and one cold ``cmake --build hand/cmake --target <targets> -j <jobs>``; even rounds start
   with bundlegraph, odd ones by hand; before every round but the first, ``ninja -t clean
   <targets>`` in both directories and the build stamp dropped;
3. timed: ``doit build:<leg>`` again (nothing to do: the no-op time of the configured graph).

Measured per build: wall seconds, CPU seconds of the whole waited process tree (user + system,
``RUSAGE_CHILDREN`` deltas: bundlegraph's own processes are the difference between the two
kinds, far less noisy than wall time on a shared machine), the peak sum of RSS over the tree
(sampled every 0.5 s from ``/proc``). Summary: median wall and CPU ratios bundlegraph / by hand
(goal <= 1.02), the median extra CPU seconds, and the ratios of the totals (use an even
``--rounds``: the first build of a round was measured ~5 % slower whichever kind it was).
``--targets`` limits both builds to a few ninja outputs (the full ggml-cuda build takes ~56 min
on 2 cores). Results: JSON printed and written to
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
    ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
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
    ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if rc != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({rc}); see {log}")
    cpu = (ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime)
    return {
        "wall_s": round(wall, 2),
        "cpu_s": round(cpu, 2),
        "peak_tree_rss_mib": round(peak / 1024, 1),
        "log": str(log),
    }


def _clean(ninja: str, cmake_dir: Path, targets: list[str]) -> None:
    """Make the next build of ``targets`` cold: ``ninja -t clean`` them (or everything)."""
    subprocess.run([ninja, "-C", str(cmake_dir), "-t", "clean", *targets], check=True, stdout=subprocess.DEVNULL)


def _median(xs: list[float]) -> float:
    xs = sorted(xs)
    n = len(xs)
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--leg", default=LEG, help="the CUDA leg to build (default: %(default)s)")
    ap.add_argument("--targets", default="", help="comma-separated ninja outputs (default: the spec's targets)")
    ap.add_argument(
        "--rounds", type=int, default=1, help="cold builds of each kind, alternating which goes first (default: 1)"
    )
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
    doit = [sys.executable, "-m", "doit", "-f", str(ROOT / "dodo.py")]
    leg = a.leg
    targets_var = [f"build_targets={a.targets}"] if a.targets else []
    tg = a.targets.split(",") if a.targets else []
    res: dict = {
        "leg": leg,
        "archs": os.environ.get("BUNDLEGRAPH_ARCHS", "(spec)"),
        "jobs": a.jobs,
        "targets": a.targets or "(spec: ggml-cuda)",
        "cores": os.cpu_count(),
        "rounds": [],
    }

    timed([*doit, f"configure:{leg}"], env, out / "configure.log")
    conf = json.loads((wd / "build" / leg / "configure.json").read_text())
    bg_dir = wd / "build" / leg / "cmake"
    # the very ninja both builds run: the one bundlegraph's configure recorded
    ninja = next(x.split("=", 1)[1] for x in conf["argv"] if x.startswith("-DCMAKE_MAKE_PROGRAM="))
    stamp = wd / ".bundlegraph" / "stamps" / f"build__{leg}.json"
    hand_build = None
    if not a.skip_hand:
        argv = [x for x in conf["argv"] if x != "--fresh"]
        argv[argv.index("-B") + 1] = str(hand / "cmake")
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, cwd=ROOT)
        hand_build = [
            conf["argv"][0],
            "--build",
            str(hand / "cmake"),
            "--target",
            *(tg or ["ggml-cuda"]),
            "-j",
            str(a.jobs),
        ]

    def run_bundlegraph(i: int) -> dict:
        if i:  # a cold build again: objects cleaned, the build stamp dropped
            _clean(ninja, bg_dir, tg)
            stamp.unlink(missing_ok=True)
        return timed([*doit, f"build:{leg}", *targets_var], env, out / f"build-bundlegraph-{i}.log")

    def run_hand(i: int) -> dict:
        if i:
            _clean(ninja, hand / "cmake", tg)
        return timed(hand_build, dict(os.environ), out / f"build-hand-{i}.log")

    for i in range(a.rounds):
        order = [("bundlegraph", run_bundlegraph), ("by_hand", run_hand)]
        if hand_build is None:
            order = order[:1]
        elif i % 2:
            order.reverse()
        rnd = {"first": order[0][0]}
        for name, fn in order:
            rnd[name] = fn(i)
            print(f"round {i}: {name} {rnd[name]['wall_s']} s wall, {rnd[name]['cpu_s']} s CPU", flush=True)
        res["rounds"].append(rnd)
    if hand_build is not None:
        rs = res["rounds"]
        res["ratio_wall_median"] = round(_median([r["bundlegraph"]["wall_s"] / r["by_hand"]["wall_s"] for r in rs]), 3)
        res["ratio_cpu_median"] = round(_median([r["bundlegraph"]["cpu_s"] / r["by_hand"]["cpu_s"] for r in rs]), 4)
        res["extra_cpu_s_median"] = round(_median([r["bundlegraph"]["cpu_s"] - r["by_hand"]["cpu_s"] for r in rs]), 2)
        # the sums balance the order effect (the first build of a round runs slower) when rounds is even
        res["ratio_wall_total"] = round(
            sum(r["bundlegraph"]["wall_s"] for r in rs) / sum(r["by_hand"]["wall_s"] for r in rs), 3
        )
        res["ratio_cpu_total"] = round(
            sum(r["bundlegraph"]["cpu_s"] for r in rs) / sum(r["by_hand"]["cpu_s"] for r in rs), 4
        )

    res["noop_build_task"] = timed([*doit, f"build:{leg}", *targets_var], env, out / "noop-build.log")
    (out / "build_blackwell.json").write_text(json.dumps(res, indent=2) + "\n")
    print(json.dumps(res, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
