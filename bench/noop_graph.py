"""The no-op benchmark's trees: the stand-in release built on this machine (three legs of
``tests/data/minillama``, or nine: :func:`standin` ``copies=3``), a bare doit dodo with as many
trivial up-to-date tasks (:func:`bare_dodo`, chained per leg like the real graph, sqlite3
backend and verbosity 2 like bundlegraph's), and the helpers to run them.

Running it is the paired, alternated bench (issue 20): each bundlegraph command against its
floor in the same round, the order alternating round by round, CPU seconds (``os.wait4``'s
user + system of the child) and wall seconds, with and without ``PYTHONDONTWRITEBYTECODE=1``.
The figure is the median of the per-round ratios, so a slow moment of the machine hits both
sides of a pair. (An earlier unpaired bench here gave the same code 3.6x and 5.2x minutes
apart.) Pairs:

- ``noop``: ``doit`` over the built 9-leg stand-in release (the stand-in's three legs three
  times over, every leg built on this machine) vs a bare dodo with as many up-to-date tasks;
  ``noop3`` the same for the 3-leg stand-in. Both as a user meets a no-op: the second identical
  run, which recalls the no-op memo the first recorded (:func:`record_memo`);
  ``noop_full`` / ``noop3_full`` the same with ``BUNDLEGRAPH_NOOP_MEMO=0``: the graph loaded
  and every task checked; the 9-leg against the 3-leg no-op, paired, gives
  the cost per extra leg;
- ``list``: ``doit list --all`` of the real graph vs the bare dodo's with as many tasks;
- ``plan`` / ``matrix``: ``bundlegraph plan`` / ``bundlegraph matrix`` of the real graph vs
  ``python -c pass``.

Also the import time of every ``bundlegraph`` module on the no-op path (``python -X
importtime``, self and cumulative, median of five), so a regression shows.

    .venv/bin/python bench/noop_graph.py [--rounds 9] [--work DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import re
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
PY = sys.executable


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


def executed(stdout: str) -> list[str]:
    return [l[3:].strip() for l in stdout.splitlines() if l.startswith(".  ")]


def nothing_ran(stdout: str) -> None:
    ran = executed(stdout)
    if ran:
        raise SystemExit(f"not a no-op: executed {ran}")


def record_memo(dodo: list[str], env: dict[str, str]) -> None:
    """Run the no-op again, after the racy window of what the build just wrote, until it has
    recorded its no-op memo (bundlegraph.graph.noop_memo): the rounds then measure a no-op as a
    user meets it, the second identical run. The ``*_full`` pairs measure the run that loads the
    graph (``BUNDLEGRAPH_NOOP_MEMO=0``)."""
    from bundlegraph.core.fsutil import RACY_NS

    key = subprocess.run(
        [
            PY,
            "-c",
            "import sys; from pathlib import Path; from bundlegraph.graph import noop_memo; "
            "print(noop_memo.run_key(sys.argv[2:], Path(sys.argv[1])))",
            dodo[2],
            *dodo[1:],
        ],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    memo = Path(env["BUNDLEGRAPH_WORKDIR"]) / ".bundlegraph" / "noop" / f"{key}.json"
    for _ in range(3):
        if memo.is_file():
            return
        time.sleep(RACY_NS / 1e9 + 0.2)
        nothing_ran(timed(dodo, env)[1])
    raise SystemExit(f"no no-op memo was recorded: {memo} is missing")


def bare_dodo(d: Path, legs: int, per_leg: int, shared: int) -> int:
    """A dodo with ``legs`` chains of ``per_leg`` tasks plus ``shared`` tasks depending on
    every chain's last task; every task is up to date. Returns the task count."""
    d.mkdir(parents=True, exist_ok=True)
    (d / "dodo.py").write_text(
        textwrap.dedent(f"""
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
    """)
    )
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
    rel.write_text(text[: m.end(1)] + "".join(f', "{n}"' for n in names) + text[m.end(1) :], encoding="utf-8")


def count_tasks(list_out: str) -> int:
    """Tasks in ``doit list --all`` output (opt-in ones included), without the per-stage groups."""
    names = [l.split()[0] for l in list_out.splitlines() if l.strip()]
    return sum(1 for n in names if ":" in n or n in ("manifest", "publish"))


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
    return {
        "ratio_wall": round(med(ra_w), 2),
        "ratio_cpu": round(med(ra_c), 2),
        "a_wall": round(med(aw), 3),
        "a_cpu": round(med(ac), 3),
        "b_wall": round(med(bw), 3),
        "b_cpu": round(med(bc), 3),
    }


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
    rows = [
        (mod, int(statistics.median(s for s, _ in v)), int(statistics.median(c for _, c in v)))
        for mod, v in runs.items()
    ]
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
        bundles, work = standin(base / label, copies=copies)
        env = env_for(bundles, work)
        timed([DOIT, "-f", str(ROOT / "dodo.py")], env)  # build once (or check it is built)
        _, out = timed([DOIT, "-f", str(ROOT / "dodo.py")], env)
        nothing_ran(out)
        n = sum(1 for l in out.splitlines() if l.startswith("-- "))
        legs = 3 * copies
        bare = tmp / f"bare-{label}"
        bare_dodo(bare, legs=legs, per_leg=7, shared=n - 7 * legs)
        trees[label] = (env, n, legs, bare)
    real_env = env_for(None, tmp / "real-work")
    (tmp / "real-work").mkdir()
    _, lst = timed([DOIT, "-f", str(ROOT / "dodo.py"), "list", "--all"], real_env)
    k = count_tasks(lst)
    bare_real = tmp / "bare-real"
    legs = max(1, (k - 2) // 7)
    bare_dodo(bare_real, legs=legs, per_leg=7, shared=k - legs * 7)
    plain = os.environ.copy()
    for d in (*(t[3] for t in trees.values()), bare_real):
        timed([DOIT], plain, cwd=d)
    bg = str(BIN / "bundlegraph")
    res: dict = {
        "rounds": a.rounds,
        "cores": os.cpu_count(),
        "tasks": {l: t[1] for l, t in trees.items()},
        "real_tasks": k,
        "pairs": {},
    }
    dodo = [DOIT, "-f", str(ROOT / "dodo.py")]

    def mode(env: dict[str, str], extra: dict[str, str]) -> dict[str, str]:
        # "pyc": bytecode is written and used, whatever this shell says (a host that exports
        # PYTHONDONTWRITEBYTECODE=1 would otherwise compile every module on every run of both modes)
        out = {k: v for k, v in env.items() if k != "PYTHONDONTWRITEBYTECODE"}
        return out | extra

    for label, extra in (("pyc", {}), ("no-pyc", {"PYTHONDONTWRITEBYTECODE": "1"})):
        r_e, p_e = mode(real_env, extra), mode(plain, extra)
        e9, e3 = mode(trees["legs9"][0], extra), mode(trees["legs3"][0], extra)
        full9, full3 = e9 | {"BUNDLEGRAPH_NOOP_MEMO": "0"}, e3 | {"BUNDLEGRAPH_NOOP_MEMO": "0"}
        for env in (e9, e3):
            record_memo(dodo, env)
        res["pairs"][label] = {
            "noop": paired(a.rounds, (dodo, e9, None), ([DOIT], p_e, trees["legs9"][3])),
            "noop3": paired(a.rounds, (dodo, e3, None), ([DOIT], p_e, trees["legs3"][3])),
            "noop_full": paired(a.rounds, (dodo, full9, None), ([DOIT], p_e, trees["legs9"][3])),
            "noop3_full": paired(a.rounds, (dodo, full3, None), ([DOIT], p_e, trees["legs3"][3])),
            "list": paired(a.rounds, ([*dodo, "list", "--all"], r_e, None), ([DOIT, "list", "--all"], p_e, bare_real)),
            "plan": paired(a.rounds, ([bg, "plan"], r_e, None), ([PY, "-c", "pass"], p_e, None)),
            "matrix": paired(a.rounds, ([bg, "matrix"], r_e, None), ([PY, "-c", "pass"], p_e, None)),
        }
        # the cost of 6 more legs, 9-leg against 3-leg no-op in the same rounds (each side's median)
        legs9, legs3 = trees["legs9"][2], trees["legs3"][2]
        ours = paired(a.rounds, (dodo, e9, None), (dodo, e3, None))
        bare = paired(a.rounds, ([DOIT], p_e, trees["legs9"][3]), ([DOIT], p_e, trees["legs3"][3]))
        res["pairs"][label]["per_leg_ms"] = {
            "bundlegraph_cpu": round((ours["a_cpu"] - ours["b_cpu"]) / (legs9 - legs3) * 1000, 1),
            "bare_cpu": round((bare["a_cpu"] - bare["b_cpu"]) / (legs9 - legs3) * 1000, 1),
        }
    res["imports_noop_us"] = import_costs(trees["legs9"][0], ["-m", "doit", *dodo[1:]])
    print(json.dumps(res, indent=1))
    print("\n| pair | bytecode | ratio CPU | ratio wall | bundlegraph CPU / wall | floor CPU / wall |")
    print("|---|---|---|---|---|---|")
    for label, pairs in res["pairs"].items():
        for name, p in pairs.items():
            if name == "per_leg_ms":
                continue
            print(
                f"| {name} | {label} | {p['ratio_cpu']}x | {p['ratio_wall']}x | {p['a_cpu']} / {p['a_wall']} s "
                f"| {p['b_cpu']} / {p['b_wall']} s |"
            )
    for label, pairs in res["pairs"].items():
        pl = pairs["per_leg_ms"]
        print(
            f"\nper extra leg ({label}; 9 legs against 3, paired): bundlegraph {pl['bundlegraph_cpu']} ms CPU, "
            f"bare doit {pl['bare_cpu']} ms"
        )
    print("\n| module (no-op import) | self ms | cumulative ms |\n|---|---|---|")
    for mod, self_us, cum_us in res["imports_noop_us"]:
        print(f"| {mod} | {self_us / 1000:.1f} | {cum_us / 1000:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
