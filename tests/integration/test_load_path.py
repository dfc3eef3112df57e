"""The graph's load path imports none of bundlegraph.graph.context.NOT_ON_THE_LOAD_PATH and defines no
dataclass whose methods are exec-ed (bundlegraph.core.lightclass): loading the
real release's graph from the spec cache, choosing its default tasks and doit's configuration,
in a fresh process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from bundlegraph.graph.context import NOT_ON_THE_LOAD_PATH

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import json, sys
from bundlegraph.graph.context import NOT_ON_THE_LOAD_PATH, load_graph
g = load_graph(sys.argv[1])
g.default_tasks(); g.doit_config
for p in g.plans:
    p.describe()
import dataclasses
exec_made = sorted(  # dataclasses whose methods were exec-ed at import (issue 30: 0.7 ms a class)
    f"{m.__name__}.{k}"
    for m in list(sys.modules.values())
    if getattr(m, "__name__", "").startswith("bundlegraph")
    for k, c in vars(m).items()
    if isinstance(c, type) and c.__module__ == m.__name__ and dataclasses.is_dataclass(c)
    and "__lightclass_init__" not in vars(c) and "FIELDS" not in vars(c)
)
print(json.dumps({"tasks": len(g.plans), "imported": sorted(m for m in NOT_ON_THE_LOAD_PATH if m in sys.modules),
                  "exec_made": exec_made}))
"""


def test_loading_the_graph_imports_nothing_a_task_needs(tmp_path):
    assert "pydantic" in NOT_ON_THE_LOAD_PATH and "pefile" in NOT_ON_THE_LOAD_PATH and "httpx" in NOT_ON_THE_LOAD_PATH
    env = {**os.environ, "BUNDLEGRAPH_CACHE": str(tmp_path / "cache"), "BUNDLEGRAPH_WORKDIR": str(tmp_path / "work")}
    runs = []
    for _ in range(2):  # the first run validates (a spec-cache miss: pydantic), the second loads the cache
        r = subprocess.run(
            [sys.executable, "-c", PROBE, str(ROOT / "bundles")], capture_output=True, text=True, env=env, cwd=tmp_path
        )
        assert r.returncode == 0, r.stderr[-3000:]
        runs.append(json.loads(r.stdout.strip().splitlines()[-1]))
    assert runs[0]["imported"] == ["pydantic"]  # validation: the cache was empty
    assert runs[1]["tasks"] == runs[0]["tasks"] > 40
    assert runs[1]["imported"] == [], runs[1]
    # every dataclass the load path defines shares its methods (bundlegraph.core.lightclass, or a
    # spec record): a plain @dataclass execs six methods per class on every doit start
    assert runs[1]["exec_made"] == [], runs[1]["exec_made"]
