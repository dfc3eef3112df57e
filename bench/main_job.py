"""Benchmark: the main job (a bare `doit`: the release's default_legs through every stage,
then the manifest) from a cold work directory, with a per-stage breakdown, and the no-op
rerun time.

    .venv/bin/python bench/main_job.py --workdir /tmp/bg-main       # run it (over an hour on 2 cores)
    .venv/bin/python bench/main_job.py --log /tmp/bg-main/main-job.log  # only summarise a run's log

The per-task seconds come from the "[task] done in N s" lines bundlegraph prints after each
action; the no-op figure is the wall time of an immediate second bare `doit` (median of 3).
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOIT = Path(sys.executable).parent / "doit"
DONE = re.compile(r"^\[(?P<task>[^\]]+)\] done in (?P<s>[0-9.]+)s$")


def summarise(log: Path) -> list[tuple[str, float]]:
    rows = []
    for line in log.read_text(errors="replace").splitlines():
        m = DONE.match(line.strip())
        if m:
            rows.append((m.group("task"), float(m.group("s"))))
    return rows


def table(rows: list[tuple[str, float]]) -> str:
    out = ["| task | seconds |", "|---|---|"]
    out += [f"| `{t}` | {s:.1f} |" for t, s in rows]
    by_stage: dict[str, float] = {}
    for t, s in rows:
        by_stage[t.split(":")[0]] = by_stage.get(t.split(":")[0], 0.0) + s
    out += ["", "| stage | seconds (all legs) |", "|---|---|"]
    out += [f"| {k} | {v:.1f} |" for k, v in by_stage.items()]
    out.append(f"\ntotal of task times: {sum(s for _, s in rows):.1f} s")
    return "\n".join(out)


def noop(workdir: Path, runs: int = 3) -> tuple[float, str]:
    env = {**os.environ, "BUNDLEGRAPH_WORKDIR": str(workdir)}
    times, out = [], ""
    for _ in range(runs):
        t0 = time.perf_counter()
        r = subprocess.run([str(DOIT), "-f", str(ROOT / "dodo.py")], env=env, capture_output=True, text=True)
        times.append(time.perf_counter() - t0)
        out = r.stdout
        if r.returncode != 0:
            raise SystemExit(f"no-op run failed:\n{r.stdout}\n{r.stderr}")
    executed = [l for l in out.splitlines() if l.startswith(".  ")]
    return statistics.median(times), f"{len(executed)} tasks executed"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workdir", type=Path, help="run the main job in this (new) work directory")
    ap.add_argument("--log", type=Path, help="summarise an existing run's log instead")
    a = ap.parse_args()
    if a.log:
        print(table(summarise(a.log)))
        return 0
    if not a.workdir:
        ap.error("--workdir or --log")
    a.workdir.mkdir(parents=True, exist_ok=True)
    log = a.workdir / "main-job.log"
    env = {**os.environ, "BUNDLEGRAPH_WORKDIR": str(a.workdir)}
    t0 = time.perf_counter()
    with open(log, "w") as f:
        rc = subprocess.run(
            [str(DOIT), "-f", str(ROOT / "dodo.py")], env=env, stdout=f, stderr=subprocess.STDOUT
        ).returncode
    wall = time.perf_counter() - t0
    print(table(summarise(log)))
    print(f"wall: {wall:.0f} s, exit {rc}")
    if rc == 0:
        med, what = noop(a.workdir)
        print(f"no-op rerun (bare doit, median of 3): {med:.2f} s, {what}")
    return rc


if __name__ == "__main__":
    sys.exit(main())
