"""Paired, alternated no-op figures (issue 20, item 1, first part): each bundlegraph command
against its floor in the same round, the order alternating round by round, CPU seconds
(``os.wait4``'s user + system of the child) and wall seconds, with and without
``PYTHONDONTWRITEBYTECODE=1``. The figure is the median of the per-round ratios, so a slow
moment of the machine hits both sides of a pair.

Pairs:

- ``noop``: ``doit`` over the built 9-leg stand-in release (the stand-in's three legs three
  times over, :func:`noop_graph.standin` ``copies=3``, every leg built on this machine) vs a
  bare dodo with as many up-to-date tasks;
- ``list``: ``doit list --all`` of the real graph vs the bare dodo's with as many tasks;
- ``plan`` / ``matrix``: ``bundlegraph plan`` / ``bundlegraph matrix`` of the real graph vs
  ``python -c pass``.

Also the import time of each ``bundlegraph`` module on the no-op path (``python -X importtime``,
cumulative microseconds of its first import), the ten costliest, so a regression shows.

    .venv/bin/python bench/noop_paired.py [--rounds 9] [--work DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import noop_graph as ng  # noqa: E402  (the bare dodo and the stand-in tree)

ROOT = ng.ROOT
PY = sys.executable


def measure_cpu(argv: list[str], env: dict[str, str], cwd: Path | None = None) -> tuple[float, float]:
    """(wall s, CPU s) of one run: the child is reaped with ``os.wait4`` for its rusage."""
    t0 = time.perf_counter()
    p = subprocess.Popen(argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({p.returncode})")
    return wall, ru.ru_utime + ru.ru_stime


def paired(rounds: int, a: tuple, b: tuple) -> dict:
    """Median of per-round ratios a/b (wall, CPU) and each side's median; ``a``/``b``:
    ``(argv, env, cwd)``."""
    ra_w, ra_c, aw, ac, bw, bc = [], [], [], [], [], []
    for r in range(rounds):
        first, second = (a, b) if r % 2 == 0 else (b, a)
        x = measure_cpu(*first)
        y = measure_cpu(*second)
        (wa, ca), (wb, cb) = (x, y) if r % 2 == 0 else (y, x)
        aw.append(wa), ac.append(ca), bw.append(wb), bc.append(cb)
        ra_w.append(wa / wb), ra_c.append(ca / cb)
    med = statistics.median
    return {"ratio_wall": round(med(ra_w), 2), "ratio_cpu": round(med(ra_c), 2),
            "a_wall": round(med(aw), 3), "a_cpu": round(med(ac), 3), "b_wall": round(med(bw), 3),
            "b_cpu": round(med(bc), 3)}


def import_costs(env: dict[str, str], argv: list[str]) -> list[tuple[str, int, int]]:
    """Every ``bundlegraph`` module ``argv`` imports: ``(module, self µs, cumulative µs)`` of
    its first import (``python -X importtime``; median of 5 runs), costliest first."""
    runs: dict[str, list[tuple[int, int]]] = {}
    for _ in range(5):
        r = subprocess.run([PY, "-X", "importtime", *argv], env=env, capture_output=True, text=True)
        for line in r.stderr.splitlines():
            m = re.match(r"import time:\s+(\d+) \|\s+(\d+) \|(\s*)(\S+)", line)
            if m and m.group(4).startswith("bundlegraph"):
                runs.setdefault(m.group(4), []).append((int(m.group(1)), int(m.group(2))))
    rows = [(mod, int(statistics.median(s for s, _ in v)), int(statistics.median(c for _, c in v)))
            for mod, v in runs.items()]
    return sorted(rows, key=lambda x: -x[2])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--work", type=Path, help="keep the built stand-in trees here (legs9/, legs3/)")
    a = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bg-paired-"))
    base = a.work or tmp
    trees = {}
    for label, copies in (("legs9", 3), ("legs3", 1)):
        bundles, work = ng.standin(base / label, copies=copies)
        env = ng.env_for(bundles, work)
        ng.timed([ng.DOIT, "-f", str(ROOT / "dodo.py")], env)  # build once (or check it is built)
        _, out = ng.timed([ng.DOIT, "-f", str(ROOT / "dodo.py")], env)
        ng.nothing_ran(out)
        n = sum(1 for l in out.splitlines() if l.startswith("-- "))
        legs = 3 * copies
        bare = tmp / f"bare-{label}"
        ng.bare_dodo(bare, legs=legs, per_leg=7, shared=n - 7 * legs)
        trees[label] = (env, n, legs, bare)
    real_env = ng.env_for(None, tmp / "real-work")
    (tmp / "real-work").mkdir()
    _, lst = ng.timed([ng.DOIT, "-f", str(ROOT / "dodo.py"), "list", "--all"], real_env)
    k = ng.count_tasks(lst)
    bare_real = tmp / "bare-real"
    legs = max(1, (k - 2) // 7)
    ng.bare_dodo(bare_real, legs=legs, per_leg=7, shared=k - legs * 7)
    plain = os.environ.copy()
    for d in (*(t[3] for t in trees.values()), bare_real):
        ng.timed([ng.DOIT], plain, cwd=d)
    bg = str(ng.BIN / "bundlegraph")
    res: dict = {"rounds": a.rounds, "cores": os.cpu_count(), "tasks": {l: t[1] for l, t in trees.items()},
                 "real_tasks": k, "pairs": {}}
    dodo = [ng.DOIT, "-f", str(ROOT / "dodo.py")]
    for label, extra in (("pyc", {}), ("no-pyc", {"PYTHONDONTWRITEBYTECODE": "1"})):
        r_e, p_e = real_env | extra, plain | extra
        e9, e3 = trees["legs9"][0] | extra, trees["legs3"][0] | extra
        res["pairs"][label] = {
            "noop": paired(a.rounds, (dodo, e9, None), ([ng.DOIT], p_e, trees["legs9"][3])),
            "noop3": paired(a.rounds, (dodo, e3, None), ([ng.DOIT], p_e, trees["legs3"][3])),
            "list": paired(a.rounds, ([*dodo, "list", "--all"], r_e, None), ([ng.DOIT, "list", "--all"], p_e, bare_real)),
            "plan": paired(a.rounds, ([bg, "plan"], r_e, None), ([PY, "-c", "pass"], p_e, None)),
            "matrix": paired(a.rounds, ([bg, "matrix"], r_e, None), ([PY, "-c", "pass"], p_e, None)),
        }
        # the cost of 6 more legs, 9-leg against 3-leg no-op in the same rounds (each side's median)
        legs9, legs3 = trees["legs9"][2], trees["legs3"][2]
        ours = paired(a.rounds, (dodo, e9, None), (dodo, e3, None))
        bare = paired(a.rounds, ([ng.DOIT], p_e, trees["legs9"][3]), ([ng.DOIT], p_e, trees["legs3"][3]))
        res["pairs"][label]["per_leg_ms"] = {
            "bundlegraph_cpu": round((ours["a_cpu"] - ours["b_cpu"]) / (legs9 - legs3) * 1000, 1),
            "bare_cpu": round((bare["a_cpu"] - bare["b_cpu"]) / (legs9 - legs3) * 1000, 1)}
    res["imports_noop_us"] = import_costs(trees["legs9"][0], ["-m", "doit", *dodo[1:]])
    print(json.dumps(res, indent=1))
    print("\n| pair | bytecode | ratio CPU | ratio wall | bundlegraph CPU / wall | floor CPU / wall |")
    print("|---|---|---|---|---|---|")
    for label, pairs in res["pairs"].items():
        for name, p in pairs.items():
            if name == "per_leg_ms":
                continue
            print(f"| {name} | {label} | {p['ratio_cpu']}x | {p['ratio_wall']}x | {p['a_cpu']} / {p['a_wall']} s "
                  f"| {p['b_cpu']} / {p['b_wall']} s |")
    for label, pairs in res["pairs"].items():
        pl = pairs["per_leg_ms"]
        print(f"\nper extra leg ({label}; 9 legs against 3, paired): bundlegraph {pl['bundlegraph_cpu']} ms CPU, "
              f"bare doit {pl['bare_cpu']} ms")
    print("\n| module (no-op import) | self ms | cumulative ms |\n|---|---|---|")
    for mod, self_us, cum_us in res["imports_noop_us"]:
        print(f"| {mod} | {self_us / 1000:.1f} | {cum_us / 1000:.1f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
