"""Issue 42 item 6: a fake GPU backend, registered from outside the package (a ``sitecustomize``
that appends a module to :mod:`bundlegraph.backends`' tuples before the schemas freeze the
backend names), runs through ``bundlegraph plan`` and the doit graph's listing (verify and smoke
tasks), the verify rows and the smoke planner of a copy of the stand-in release, with no stage
module edited. Finding (asserted first): the smoke sides table (:mod:`bundlegraph.pipeline.smoke.sides`)
refuses, at import, a GPU backend with no entry there, and every command imports it, so a new GPU
backend needs a line in that table; the test gives the fake ``None`` from outside to reach the rest.
Time: about 2 s (15 s on a cold, busy 2-core host)."""

from __future__ import annotations

import _ctypes
import json
import shutil
import subprocess
import sys
import textwrap

import pytest
from graphrun import BIN, ROOT, env_for

SITE = textwrap.dedent(
    """
    import sys, types
    assert "bundlegraph.schemas.records" not in sys.modules, "schemas imported before the fake backend"
    import bundlegraph.backends as b
    assert "bundlegraph.schemas.records" not in sys.modules, "the registry imported the schemas"
    m = types.ModuleType("bundlegraph.backends.fakegpu")
    m.NAME = "fakegpu"
    m.TITLE = "FakeGPU"
    m.GPU = True
    m.LIBRARY = "ggml-fakegpu"
    m.DRIVERS = {"linux": "libfakedrv.so.1"}
    m.DRIVER_WHAT = "the FakeGPU driver"
    m.INSTALL_KINDS = {("linux", "x64"): "linux-fakegpu"}
    m.RUNTIME_GLOBS = {}
    m.CPU_FALLBACK = frozenset({("linux", "x64")})
    m.SPEC_TABLE = None
    m.SDK = None
    m.COMPILER = None
    m.REQUIRED_PROGRAMS = ()
    m.HOST_GPUS = ()
    sys.modules[m.__name__] = m
    t = (*b.BACKENDS, m)
    assert b.registry_problems(t) == [], b.registry_problems(t)
    b.BACKENDS = t
    b.BY_NAME = {x.NAME: x for x in t}
    b.BACKEND_NAMES = tuple(b.BY_NAME)
    b.GPU_BACKENDS = tuple(x for x in t if x.GPU)
    """
)

NO_SIDE = """
import os
if os.environ.get("FAKEGPU_NO_SIDE"):
    # the smoke sides table refuses a GPU backend without a side; to reach the later stages, load
    # it while the registry hides the fake, then give the fake no side (its GPU steps: none)
    import bundlegraph.schemas.records
    full = (b.BACKENDS, b.BY_NAME, b.BACKEND_NAMES, b.GPU_BACKENDS)
    b.BACKEND_NAMES = tuple(n for n in full[2] if n != "fakegpu")
    b.GPU_BACKENDS = tuple(x for x in full[3] if x.NAME != "fakegpu")
    import bundlegraph.pipeline.smoke.sides as sides
    b.BACKENDS, b.BY_NAME, b.BACKEND_NAMES, b.GPU_BACKENDS = full
    sides.SIDES["fakegpu"] = None
"""

LEG = "mini-linux-x64-fakegpu"

PROBE = """\
import json, shutil, sys
from pathlib import Path

from bundlegraph.graph import load_graph
from bundlegraph.pipeline.smoke.plan import plan_smoke
from bundlegraph.pipeline.smoke.sides import side_of
from bundlegraph.pipeline.verify import BACKENDS, built_tree_policy, verify_path

bundles, leg, tree, elf = sys.argv[1:5]
ctx = load_graph(Path(bundles)).ctx
sp = plan_smoke(ctx, leg)
pol = built_tree_policy(ctx, leg)
facts = {
    "backend": sp.backend,
    "gpus": repr(sp.gpus),
    "decision": repr(sp.decision),
    "checks": [c.name for c in sp.checks],
    "side": repr(side_of(sp.backend)),
    "verify_backends": BACKENDS,
    "policy": repr(pol),
}
print(json.dumps(facts, indent=1))
Path(tree).mkdir()
shutil.copyfile(elf, Path(tree) / "libggml-fakegpu.so")
rep = verify_path(Path(tree), pol)
print("FILES", [str(f) for f in rep.files])
for f in rep.failures:
    print("FAIL", f)
"""
"""Run in the subprocess: the smoke plan and verify policy of the leg, and verify on a tree
holding only ``libggml-fakegpu.so`` (a copy of a real ELF shared object)."""


def _standin(tmp_path):
    bundles = tmp_path / "stand-in"
    shutil.copytree(ROOT / "tests" / "data" / "bundles", bundles)
    shutil.copytree(ROOT / "bundles" / "locks", bundles / "locks", dirs_exist_ok=True)
    shutil.copytree(ROOT / "tests" / "data" / "minillama", tmp_path / "minillama")
    cpu = (bundles / "mini-linux-x64-cpu.toml").read_text()
    spec = (
        cpu.replace('id = "mini-linux-x64-cpu"', f'id = "{LEG}"')
        .replace('backend = "cpu"', 'backend = "fakegpu"')
        .replace('install_kind = "linux-cpu"', 'install_kind = "linux-fakegpu"')
        .replace('name = "cpu"', 'name = "fakegpu"')
        .replace('"libggml-cpu*.so*",', '"libggml-cpu*.so*", "libggml-fakegpu.so*",')
    )
    (bundles / f"{LEG}.toml").write_text(spec)
    return bundles


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="this host is not Linux (the probe copies an ELF)")
def test_a_fake_gpu_backend_runs_through_plan_verify_and_smoke(tmp_path):
    bundles = _standin(tmp_path)
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(SITE + NO_SIDE)
    run_dir = tmp_path / "work"
    run_dir.mkdir()
    env = env_for(bundles, run_dir, PYTHONPATH=f"{site}:{ROOT}")

    def run(*argv):
        return subprocess.run([*argv], capture_output=True, text=True, env=env, cwd=run_dir, timeout=120)

    # the finding: every command stops at the smoke sides table (a stage module's table) when a
    # GPU backend has no side there: adding one needs an entry in pipeline/smoke/sides.py
    p = run(str(BIN / "bundlegraph"), "plan", "--json")
    assert p.returncode == 1
    assert (
        "RuntimeError: bundlegraph.pipeline.smoke.sides: smoke sides for ['cpu', 'cuda', 'hip', 'metal', 'vulkan']: "
        "expected one entry per backend ['cpu', 'cuda', 'fakegpu', 'hip', 'metal', 'vulkan']; GPU backend fakegpu "
        "has no smoke side"
    ) in p.stderr, p.stderr
    env["FAKEGPU_NO_SIDE"] = "1"
    # plan: the leg and its tasks
    p = run(str(BIN / "bundlegraph"), "plan", "--json")
    assert p.returncode == 0, p.stdout + p.stderr
    plan = json.loads(p.stdout)
    assert LEG in plan["legs"], list(plan["legs"])
    stages = [st["task"] for st in plan["legs"][LEG]["stages"]]
    assert stages[:2] == [f"source:{LEG}", f"configure:{LEG}"], stages
    assert plan["legs"][LEG]["bundle"] == "app-b42-linux-x64-fakegpu.tar.gz"
    t = run(str(BIN / "bundlegraph"), "plan", LEG)
    assert t.returncode == 0, t.stdout + t.stderr
    assert f"== {LEG}  ->  app-b42-linux-x64-fakegpu.tar.gz" in t.stdout, t.stdout
    d = run(str(BIN / "doit"), "-f", str(ROOT / "dodo.py"), "list", "--all")
    assert d.returncode == 0, d.stdout + d.stderr
    names = [l.split()[0] for l in d.stdout.splitlines() if l.strip()]
    assert sorted(n for n in names if LEG in n) == [
        f"{st}:{LEG}" for st in ("build", "configure", "merge", "package", "smoke", "source", "verify")
    ]
    i = run(str(BIN / "doit"), "-f", str(ROOT / "dodo.py"), "info", f"smoke:{LEG}")
    # doit info exits 1 for a task that is not up to date: the listing is what counts
    assert i.returncode == 1 and "status     : run" in i.stdout, i.stdout + i.stderr
    assert f"start {LEG}'s bundle here (native): version, libraries, backends, generation, serving" in i.stdout
    probe = tmp_path / "probe.py"
    probe.write_text(PROBE)
    pr = run(str(BIN / "python"), str(probe), str(bundles), LEG, str(tmp_path / "tree"), _ctypes.__file__)
    assert pr.returncode == 0, pr.stdout + pr.stderr
    out = pr.stdout
    facts = json.loads(out[: out.index("\nFILES ")])
    # smoke: a task whose GPU steps are not applicable (no side, no probe, no decision): host checks only
    assert facts["backend"] == "fakegpu" and facts["side"] == "None"
    assert facts["gpus"] == "None" and facts["decision"] == "None"
    assert facts["checks"] == ["version", "backends", "list-devices", "generate", "serve"]
    # verify: the generic rows know its library and apply to it
    assert facts["verify_backends"]["linux"][-1] == "libggml-fakegpu.so"
    assert "backend='fakegpu'" in facts["policy"] and "'libggml-fakegpu.so*'" in facts["policy"]
    assert "FILES ['libggml-fakegpu.so']" in out
    assert (
        "FAIL Failure(file='libggml-fakegpu.so', check='backend', reason='exports no ggml_backend_init: "
        "with GGML_BACKEND_DL=ON ggml loads this backend and ignores it')"
    ) in out, out
    assert (
        "FAIL Failure(file='llama-server', check='content', reason='required file is missing from the bundle')" in out
    )
