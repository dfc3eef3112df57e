"""Benchmark the no-op run: bundlegraph's doit graph when everything is up to date, against a bare
doit dodo with the same number of trivial up-to-date tasks.

Three figures, each the median of ``--runs`` wall-clock runs of a fresh ``doit`` process:

1. ``doit list --all`` of the real release graph (every leg in ``bundles/``): loading and
   validating the specs and building every task. A no-op *run* of that graph cannot happen on
   one host (the Windows legs need an MSVC host; the real Linux legs take an hour to build), so:
2. a no-op ``doit`` of the stand-in graph (``tests/data/bundles``: three legs of
   ``tests/data/minillama`` through source .. package plus toolkit and manifest, the same
   pipeline modules), built once first; every task's up-to-date check reads its stamp,
   recomputes its action key and checks its outputs' fingerprints;
3. a bare dodo with the same number of tasks as (2) (and as (1)), each ``uptodate: [True]``,
   chained per leg like the real graph, sqlite3 backend and verbosity 2 like bundlegraph's.

    .venv/bin/python bench/noop_graph.py [--runs 7] [--work DIR]

Prints one JSON object (seconds) and Markdown table rows.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
DOIT = str(BIN / "doit")


def env_for(bundles: Path | None, work: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BUNDLEGRAPH_ONLY")}
    env["BUNDLEGRAPH_WORKDIR"] = str(work)
    if bundles is not None:
        env["BUNDLEGRAPH_BUNDLES"] = str(bundles)
    return env


def timed(argv: list[str], env: dict[str, str], cwd: Path | None = None) -> tuple[float, str]:
    t0 = time.perf_counter()
    r = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=cwd)
    dt = time.perf_counter() - t0
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({r.returncode}):\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
    return dt, r.stdout


def median_of(runs: int, argv: list[str], env: dict[str, str], check=None, cwd: Path | None = None) -> list[float]:
    out = []
    for _ in range(runs):
        dt, stdout = timed(argv, env, cwd)
        if check:
            check(stdout)
        out.append(dt)
    return out


def executed(stdout: str) -> list[str]:
    return [l[3:].strip() for l in stdout.splitlines() if l.startswith(".  ")]


def nothing_ran(stdout: str) -> None:
    ran = executed(stdout)
    if ran:
        raise SystemExit(f"not a no-op: executed {ran}")


def bare_dodo(d: Path, legs: int, per_leg: int, shared: int) -> int:
    """A dodo with ``legs`` chains of ``per_leg`` tasks plus ``shared`` tasks depending on
    every chain's last task; every task is up to date. Returns the task count."""
    d.mkdir(parents=True, exist_ok=True)
    (d / "dodo.py").write_text(textwrap.dedent(f"""
        per_leg = {per_leg}
        DOIT_CONFIG = {{"backend": "sqlite3", "dep_file": "doit.sqlite3", "verbosity": 2,
                       "default_tasks": [f"s{{per_leg - 1}}:leg{{i}}" for i in range({legs})] +
                                        [f"shared{{j}}" for j in range({shared})]}}

        def noop():
            return None

        def _stage(k):
            def gen():
                for i in range({legs}):
                    yield {{"name": f"leg{{i}}", "actions": [(noop,)], "uptodate": [True],
                           "task_dep": [f"s{{k - 1}}:leg{{i}}"] if k else [], "verbosity": 2}}
            return gen

        for _k in range(per_leg):
            globals()[f"task_s{{_k}}"] = _stage(_k)

        def _shared(j):
            def task():
                return {{"actions": [(noop,)], "uptodate": [True], "verbosity": 2,
                        "task_dep": [f"s{{per_leg - 1}}:leg{{i}}" for i in range({legs})]}}
            return task

        for _j in range({shared}):
            globals()[f"task_shared{{_j}}"] = _shared(_j)
    """))
    return legs * per_leg + shared


def standin(base: Path, copies: int = 1) -> tuple[Path, Path]:
    """The stand-in release under ``base`` (``bundles/``, ``work/``), laid out afresh unless
    ``work/dist`` shows it was built; returns ``(bundles, work)``.

    ``copies`` > 1 repeats its three legs that many times (issue 20's 9-leg graph is
    ``copies=3``): copy ``k`` gets ids ``<id>-r<k>``, profile names ``<name>-r<k>`` (so the
    bundle names and ``(install_kind, profile)`` pairs stay unique) and its CUDA leg merges into
    its own CPU copy. Every copy is a real leg of the one graph: its own configure, build and
    bundle from the shared source and toolkit."""
    bundles, work = base / "bundles", base / "work"
    if not (work / "dist").is_dir():
        shutil.rmtree(base, ignore_errors=True)
        base.mkdir(parents=True)
        shutil.copytree(ROOT / "tests" / "data" / "minillama", base / "minillama")
        shutil.copytree(ROOT / "tests" / "data" / "bundles", bundles)
        shutil.copytree(ROOT / "bundles" / "locks", bundles / "locks", dirs_exist_ok=True)
        if copies > 1:
            _repeat_legs(bundles, copies)
        work.mkdir()
    return bundles, work


def _repeat_legs(bundles: Path, copies: int) -> None:
    """Add copies 2..``copies`` of every leg spec in ``bundles`` (see :func:`standin`)."""
    import re

    legs = sorted(p for p in bundles.glob("*.toml") if p.name != "release.toml")
    ids = [p.stem for p in legs]
    names = []
    for k in range(2, copies + 1):
        for p in legs:
            text = p.read_text(encoding="utf-8")
            for i in ids:
                text = re.sub(rf'"{re.escape(i)}"', f'"{i}-r{k}"', text)
            text = re.sub(r'(?m)^(\[profile\]\nname = ")([^"]+)"', rf'\g<1>\g<2>-r{k}"', text)
            (bundles / f"{p.stem}-r{k}.toml").write_text(text, encoding="utf-8")
            names.append(f"{p.stem}-r{k}")
    rel = bundles / "release.toml"
    text = rel.read_text(encoding="utf-8")
    m = re.search(r"(?m)^default_legs = \[(.*)\]$", text)
    assert m, f"{rel}: no one-line default_legs"
    rel.write_text(text[:m.end(1)] + "".join(f', "{n}"' for n in names) + text[m.end(1):], encoding="utf-8")


def count_tasks(list_out: str) -> int:
    """Tasks in ``doit list --all`` output (opt-in ones included), without the per-stage groups."""
    names = [l.split()[0] for l in list_out.splitlines() if l.strip()]
    return sum(1 for n in names if ":" in n or n in ("manifest", "publish"))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--work", type=Path, help="keep the stand-in tree here (default: a temporary directory)")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bg-noop-"))
    base = args.work or tmp / "standin"
    res: dict = {"runs": args.runs, "cores": os.cpu_count(), "load_before": os.getloadavg()[0]}

    # 1. the real graph of every leg: load + list
    real_env = env_for(None, tmp / "real-work")
    (tmp / "real-work").mkdir()
    t, out = timed([DOIT, "-f", str(ROOT / "dodo.py"), "list", "--all"], real_env)
    res["real_tasks"] = count_tasks(out)
    res["real_legs"] = len([p for p in (ROOT / "bundles").glob("*.toml") if p.name != "release.toml"])
    res["real_list"] = median_of(args.runs, [DOIT, "-f", str(ROOT / "dodo.py"), "list", "--all"], real_env)

    # 2. the stand-in graph: build once, then no-op runs
    bundles, work = standin(base)
    env = env_for(bundles, work)
    t_build, out = timed([DOIT, "-f", str(ROOT / "dodo.py")], env)
    res["standin_first_run"] = t_build
    res["standin_first_run_executed"] = len(executed(out))
    _, out = timed([DOIT, "-f", str(ROOT / "dodo.py")], env)
    n = sum(1 for l in out.splitlines() if l.startswith("-- "))  # the tasks a bare doit checks
    res["standin_tasks"] = n
    res["standin_noop"] = median_of(args.runs, [DOIT, "-f", str(ROOT / "dodo.py")], env, nothing_ran)
    res["standin_list"] = median_of(args.runs, [DOIT, "-f", str(ROOT / "dodo.py"), "list"], env)  # load only

    # 3. bare doit with the same number of up-to-date tasks
    bare = tmp / "bare"
    m = bare_dodo(bare, legs=3, per_leg=(n - 2) // 3, shared=n - 3 * ((n - 2) // 3))
    assert m == n, (m, n)
    median_of(1, [DOIT], os.environ.copy(), cwd=bare)  # first run creates the db
    res["bare_noop"] = median_of(args.runs, [DOIT], os.environ.copy(), nothing_ran, cwd=bare)
    bare_real = tmp / "bare-real"
    per = 7
    legs = max(1, (res["real_tasks"] - 2) // per)
    k = bare_dodo(bare_real, legs=legs, per_leg=per, shared=res["real_tasks"] - legs * per)
    res["bare_real_tasks"] = k
    median_of(1, [DOIT], os.environ.copy(), cwd=bare_real)
    res["bare_real_noop"] = median_of(args.runs, [DOIT], os.environ.copy(), nothing_ran, cwd=bare_real)
    res["bare_real_list"] = median_of(args.runs, [DOIT, "list", "--all"], os.environ.copy(), cwd=bare_real)
    res["load_after"] = os.getloadavg()[0]
    if not args.work:
        shutil.rmtree(tmp, ignore_errors=True)

    med = {k: statistics.median(v) for k, v in res.items() if isinstance(v, list)}
    print(json.dumps({**res, "median": med}, indent=1))
    print()
    print("| graph | tasks | bundlegraph | bare doit | ratio |")
    print("|---|---|---|---|---|")
    print(f"| stand-in, no-op `doit` | {n} | {med['standin_noop']:.2f} s | {med['bare_noop']:.2f} s | "
          f"{med['standin_noop'] / med['bare_noop']:.1f} |")
    print(f"| stand-in, `doit list` (load only, no up-to-date check) | {n} | {med['standin_list']:.2f} s | - | - |")
    print(f"| real release ({res['real_legs']} legs), `doit list --all` | {res['real_tasks']} | "
          f"{med['real_list']:.2f} s | {med['bare_real_list']:.2f} s | {med['real_list'] / med['bare_real_list']:.1f} |")
    print(f"| bare doit, no-op run of {k} tasks | {k} | - | {med['bare_real_noop']:.2f} s | - |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
