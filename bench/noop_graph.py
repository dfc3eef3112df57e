"""The no-op benchmark's trees: the stand-in release built on this machine (three legs of
``tests/data/minillama``, or nine: :func:`standin` ``copies=3``), a bare doit dodo with as many
trivial up-to-date tasks (:func:`bare_dodo`, chained per leg like the real graph, sqlite3
backend and verbosity 2 like bundlegraph's), and the helpers to run them.

Running this file runs the paired, alternated bench (:mod:`noop_paired`, issue 20): every
figure against its floor in the same round. (An earlier unpaired bench here gave the same code
3.6x and 5.2x minutes apart: a slow moment of the machine hit one side only.)

    .venv/bin/python bench/noop_graph.py [--rounds 9] [--work DIR]
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
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
    """The paired bench (:func:`noop_paired.main`)."""
    import noop_paired

    return noop_paired.main()


if __name__ == "__main__":
    sys.exit(main())
