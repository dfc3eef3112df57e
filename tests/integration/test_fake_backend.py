"""Issue 42 item 6, issue 53 item 2: a fake GPU backend, registered from outside the package (a
``sitecustomize`` that appends a module to :mod:`bundlegraph.schemas.backend`' tuples before the schemas
freeze the backend names), runs through ``bundlegraph plan`` and the doit graph's listing (verify
and smoke tasks), the verify rows and the smoke planner of a copy of the stand-in release, with no
module of the house edited and none of its verbs None. It is a package (``fakegpu_pkg`` beside the
``sitecustomize``) holding its spec table's record (``spec.py``: ``[fakegpu]``, which the records
and the JSON Schema take up), that table's rules (``rules.py``, which validation runs), its
configure side (``configure.py``: a cache entry from its table, its device targets, a
``configure.json`` entry), its manifest fields and size (``manifest.py``) and what its legs promise
their bundles (``verify.py``'s ``policy_fields``); its SDK
module and smoke side are modules of their own that the backend names (``SDK``, ``SMOKE``), as the
real backends name theirs; its GPU compiler (``COMPILER``) is held against the leg's toolchain; its
CMake option and targets entry are derived into the leg's cache from its facts and its table. A
GPU backend naming no smoke side, or no compiler where its driver compiles nothing, is refused
when the registry loads, in one line (also tested).
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
    import os, sys, types
    assert "bundlegraph.schemas.records" not in sys.modules, "schemas imported before the fake backend"
    import bundlegraph.schemas.backend as b
    assert "bundlegraph.schemas.records" not in sys.modules, "the registry imported the schemas"
    m = types.ModuleType("bundlegraph.backends.fakegpu")
    m.__path__ = [os.environ["FAKEGPU_PKG"]]  # a package: its spec table (spec.py) and rules (rules.py) beside it
    m.NAME = "fakegpu"
    m.ORDER = 90
    m.TITLE = "FakeGPU"
    m.GPU = True
    m.LIBRARY = "ggml-fakegpu"
    m.DRIVERS = {"linux": "libfakedrv.so.1"}
    m.DRIVER_WHAT = "the FakeGPU driver"
    m.INSTALL_KINDS = {("linux", "x64"): "linux-fakegpu"}
    m.RUNTIME_GLOBS = {}
    m.CPU_FALLBACK = frozenset({("linux", "x64")})
    m.SPEC_TABLE = "fakegpu"  # its record: FAKE_SPEC, the package's spec.py
    m.SDK = "fakegpu_sdk"
    m.COMPILER = os.environ.get("FAKEGPU_COMPILER", "c") or None  # its kernels compile with the toolchain's C compiler
    m.COMPILED_BY_DRIVER = False
    m.SMOKE = os.environ.get("FAKEGPU_SMOKE", "fakegpu_side") or None
    m.REQUIRED_PROGRAMS = ()
    m.HOST_GPUS = ()
    m.CMAKE_OPTION = "GGML_FAKEGPU"  # derived into the leg's cmake (the stand-in never configures it here)
    m.CMAKE_TARGETS_KEY = "FAKEGPU_TARGETS"
    FAMILIES = {"fg": ["fg1", "fg2"]}

    def table_targets(table):
        if not isinstance(table, dict):
            return table, ()
        out = dict(table)
        if "cores" not in out and out.get("family") in FAMILIES:
            out["cores"] = FAMILIES[out["family"]]
        return out, tuple(out.get("cores") or ())

    m.table_targets = table_targets
    m.required_files = lambda os_name, targets: ()
    sys.modules[m.__name__] = m
    t = (*b.BACKENDS, m)
    if m.SMOKE is None or m.COMPILER is None:
        print(b.registry_problems(t), file=sys.stderr, flush=True)
        os._exit(3)  # the registry's own check, as it runs on BACKENDS when the package loads
    assert b.registry_problems(t) == [], b.registry_problems(t)
    b.BACKENDS = t
    b.BY_NAME = {x.NAME: x for x in t}
    b.BACKEND_NAMES = tuple(b.BY_NAME)
    b.GPU_BACKENDS = tuple(x for x in t if x.GPU)
    """
)

SIDE = textwrap.dedent(
    """
    from bundlegraph.pipeline.smoke.side import Decision

    BACKEND = "fakegpu"
    DEV = "FakeGPU0"
    OPS = (("MUL_MAT", None),)
    DOC = "; on a FakeGPU its kernels"
    PARALLEL_OPS = False
    REFERENCE_JOBS = {}  # no throughput check


    def reference_sms(probe):
        return []


    def reference_problem(probe):
        return None


    class _Probe:
        command = "look for a FakeGPU"

        def key(self):
            return {"fakegpus": []}


    def probe():
        return _Probe()


    def decide(bundle_os, bundle_arch, host, probe):
        return Decision(run=False, reason="no FakeGPU on this host")


    def runtime_dir(ctx, leg):
        return None


    def sibling(ctx, leg):
        return None


    def decide_here(run, os_name, arch):
        return None


    def env(run):
        return {}


    def describe(decision):
        return "a FakeGPU"
    """
)
"""The fake backend's smoke side (:class:`bundlegraph.pipeline.smoke.side.GpuSide`): this host
has no FakeGPU, so its GPU steps are planned as not run, with the reason."""

FAKE_SPEC = textwrap.dedent(
    '''
    from bundlegraph.schemas.record_base import Record, record


    @record
    class FakeGpuSpec(Record):
        """the FakeGPU table of a fakegpu leg: its core family and the cores it compiles kernels for"""

        family: str
        """the FakeGPU family (fg)"""
        cores: list[str]
        """the cores of the family the bundle holds kernels for (fg1, fg2); left out: the family's"""


    TABLE = FakeGpuSpec
    '''
)
"""The fake backend's spec table (``[fakegpu]``): its package's ``spec.py``, added to
:class:`bundlegraph.schemas.records.BundleSpec` with no edit to the records."""

FAKE_RULES = textwrap.dedent(
    """
    def problems(f, s, root, read):
        if not s.fakegpu.cores:
            return [f"{f}: fakegpu.cores: empty: a FakeGPU bundle holds kernels for at least one core"]
        return []
    """
)
"""The fake backend's spec-table rules (its package's ``rules.py``), run by validation."""

FAKE_CONFIGURE = textwrap.dedent(
    """
    from bundlegraph.pipeline.configure import ADDS_NOTHING

    LANGUAGES = ()


    def cache_entries(spec):
        return {"FAKEGPU_CORE_COUNT": str(len(spec.fakegpu.cores))}


    def device_targets(spec):
        return len(spec.fakegpu.cores)


    def record(plan):
        return {"fakegpu_cores": plan.cache["FAKEGPU_CORE_COUNT"]}


    hooks = ADDS_NOTHING.hooks
    prefix_root = ADDS_NOTHING.prefix_root
    describe = ADDS_NOTHING.describe
    probe_tools = ADDS_NOTHING.probe_tools
    summary = ADDS_NOTHING.summary
    checks = ADDS_NOTHING.checks
    """
)
"""The fake backend's configure side (its package's ``configure.py``): a cache entry derived from
its table, its device targets, a ``configure.json`` entry; the rest as a backend that adds nothing."""

FAKE_MANIFEST = textwrap.dedent(
    """
    from bundlegraph.schemas.entry import EntryFields


    def fields(spec, sass):
        return EntryFields(mapped_targets=list(spec.fakegpu.cores))


    def extra_mb(spec):
        return 1.5 * len(spec.fakegpu.cores)
    """
)
"""The fake backend's manifest fields and size (its package's ``manifest.py``)."""

FAKE_VERIFY = textwrap.dedent(
    """
    ROWS = ()


    def policy_fields(spec):
        return {"gfx_targets": tuple(spec.fakegpu.cores)}, [("fakegpu_family", spec.fakegpu.family)]
    """
)
"""The fake backend's verify module (its package's ``verify.py``): no rows of its own, and what its
legs promise their bundles (``policy_fields``)."""

FAKE_SDK = textwrap.dedent(
    """
    import json
    from pathlib import Path

    from bundlegraph.core import paths
    from bundlegraph.core.lightclass import frozen

    NAME = "fakesdk-1.0"


    @frozen
    class FakeSdk:
        SHIPS_OWN_RUNTIME = False
        prefix: Path
        version: str
        task: str

        @property
        def root(self):
            return self.prefix.as_posix()

        def path(self, rel):
            return self.prefix / rel

        def gpu_compiler(self):
            return None

        def toolchain_lines(self, tc, at):
            return ["", f"# The FakeGPU SDK ({self.task})", f'set( FAKEGPU_SDK_ROOT "{self.root}" CACHE PATH "" )']

        def missing(self):
            return [] if self.path("include/fakegpu.h").is_file() else ["include/fakegpu.h"]

        def for_toolchain(self, tc):
            return tc

        def runtime_from(self):
            return None

        def shipped_runtime(self, os_name):
            return []

        def info_toolkit(self):
            return None

        def bundle_info(self):
            return {"source": "fake", "version": self.version}

        def configure_record(self, log):
            return {"fakegpu": {"sdk": self.task}}


    @frozen
    class FakePlan:
        legs: tuple
        prefix: Path

        def key(self):
            return {"fakesdk": "1.0"}

        def describe(self):
            return {"sdk": "FakeGPU 1.0"}

        def doc(self):
            return "install the FakeGPU SDK 1.0"


    def group(spec, bundles, spec_file):
        return NAME, "1.0"


    def ref(spec, bundles, spec_file):
        return FakeSdk(paths.cache_root() / "toolkits" / NAME, "1.0", f"toolkit:{NAME}")


    def plan(ident, legs, bundles, host_problem):
        return FakePlan(tuple(legs), paths.cache_root() / "toolkits" / NAME)


    def run(p):
        (p.prefix / "include").mkdir(parents=True, exist_ok=True)
        (p.prefix / "include/fakegpu.h").write_text("/* the FakeGPU SDK */\\n")
        (p.prefix / "receipt.json").write_text(json.dumps({"version": "1.0"}))
        return [p.prefix / "receipt.json"]
    """
)
"""The fake backend's SDK module (:class:`bundlegraph.toolkit.sdk.SdkModule`) and its reference
(:class:`bundlegraph.toolchains.sdk_ref.SdkRef`), from outside the package: the toolkit stage makes
its task, configure waits for it and puts its lines into the leg's toolchain file, asking it only
through the protocol's verbs."""

LEG = "mini-linux-x64-fakegpu"

PROBE = """\
import json, shutil, sys
from pathlib import Path

from bundlegraph.graph.context import load_graph
from bundlegraph.pipeline.smoke.plan import plan_smoke
from bundlegraph.pipeline.smoke.sides import side_of
from bundlegraph.pipeline.verify import BACKENDS, built_tree_policy, verify_path

bundles, leg, tree, elf = sys.argv[1:5]
ctx = load_graph(Path(bundles)).ctx
sp = plan_smoke(ctx, leg)
pol = built_tree_policy(ctx, leg)
from bundlegraph.pipeline.configure import plan_configure

conf = plan_configure(ctx, leg)
spec = ctx.matrix.legs[leg]
from bundlegraph.installer.planned import estimate_mb, planned_artifact
from bundlegraph.pipeline.configure import side_of as configure_side

art = planned_artifact(spec, "b42", "app")
facts = {
    "cache_entry": conf.cache.get("FAKEGPU_CORE_COUNT"),
    "device_targets": configure_side(spec.backend).device_targets(spec),
    "record": configure_side(spec.backend).record(conf),
    "entry_targets": art.mapped_targets,
    "estimate_mb": estimate_mb(spec),
    "table": spec.dump()["fakegpu"],
    "cmake": {k: v for k, v in spec.dump()["cmake"].items() if "FAKEGPU" in k},
    "sdk": ctx.leg(leg).sdk.task,
    "sdk_lines": [l for l in conf.toolchain_text.splitlines() if "FakeGPU" in l or "FAKEGPU" in l],
    "backend": sp.backend,
    "gpus": repr(sp.gpus),
    "decision": repr(sp.decision),
    "checks": [c.name for c in sp.checks],
    "side": getattr(side_of(sp.backend), "__name__", None),
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
    spec += '\n[fakegpu]\nfamily = "fg"\n'  # its own table: the cores follow from the family
    (bundles / f"{LEG}.toml").write_text(spec)
    return bundles


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="this host is not Linux (the probe copies an ELF)")
def test_a_fake_gpu_backend_runs_through_plan_verify_and_smoke(tmp_path):
    bundles = _standin(tmp_path)
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(SITE)
    (site / "fakegpu_side.py").write_text(SIDE)
    (site / "fakegpu_sdk.py").write_text(FAKE_SDK)
    pkg = site / "fakegpu_pkg"
    pkg.mkdir()
    (pkg / "spec.py").write_text(FAKE_SPEC)
    (pkg / "rules.py").write_text(FAKE_RULES)
    (pkg / "configure.py").write_text(FAKE_CONFIGURE)
    (pkg / "manifest.py").write_text(FAKE_MANIFEST)
    (pkg / "verify.py").write_text(FAKE_VERIFY)
    run_dir = tmp_path / "work"
    run_dir.mkdir()
    env = env_for(bundles, run_dir, PYTHONPATH=f"{site}:{ROOT}", FAKEGPU_PKG=str(pkg))

    def run(*argv):
        return subprocess.run([*argv], capture_output=True, text=True, env=env, cwd=run_dir, timeout=120)

    # a GPU backend that names no smoke side is refused as the registry loads
    env["FAKEGPU_SMOKE"] = ""
    p = run(str(BIN / "bundlegraph"), "plan", "--json")
    assert p.returncode == 3 and "backend fakegpu: a GPU backend with no smoke side (SMOKE)" in p.stderr, p.stderr
    del env["FAKEGPU_SMOKE"]
    # its compiler (COMPILER) is held against the leg's toolchain: one the machine file lacks is refused
    env["FAKEGPU_COMPILER"] = "fakecc"
    p = run(str(BIN / "bundlegraph"), "plan", "--json")
    assert p.returncode != 0 and (
        f"{LEG}.toml: toolchain: 'gcc-linux-x86_64' cannot compile FakeGPU; backend is 'fakegpu' (its machine "
        "file gcc-linux-x86_64.toml names no [binaries] fakecc)" in p.stderr
    ), p.stderr
    # and a GPU backend with no compiler whose driver compiles nothing (SYCL left at None) is refused
    env["FAKEGPU_COMPILER"] = ""
    p = run(str(BIN / "bundlegraph"), "plan", "--json")
    assert p.returncode == 3 and (
        "backend fakegpu: a GPU backend with no compiler (COMPILER) whose driver does not compile its device code "
        "either (COMPILED_BY_DRIVER)" in p.stderr
    ), p.stderr
    del env["FAKEGPU_COMPILER"]
    # its spec table and the rules of its package: a leg without the table, or one its rules refuse,
    # is one line naming the file and key
    leg_file = bundles / f"{LEG}.toml"
    good = leg_file.read_text()
    for text, line in (
        (good.replace('\n[fakegpu]\nfamily = "fg"\n', "\n"), "fakegpu: backend 'fakegpu' needs a [fakegpu] table"),
        (
            good + "cores = []\n",
            f"{LEG}.toml: fakegpu.cores: empty: a FakeGPU bundle holds kernels for at least one core",
        ),
        (good + "coress = []\n", "fakegpu.coress"),
    ):
        leg_file.write_text(text)
        p = run(str(BIN / "bundlegraph"), "plan", "--json")
        assert p.returncode != 0 and line in p.stderr and "Traceback" not in p.stderr, p.stderr
    leg_file.write_text(good)
    # the JSON Schema of the specs is derived: it has the table, described by its record's docstring
    sch = run(str(BIN / "bundlegraph"), "schema", "bundle-spec")
    assert sch.returncode == 0, sch.stderr
    prop = json.loads(sch.stdout)["properties"]["fakegpu"]
    assert "the FakeGPU table of a fakegpu leg" in prop["description"], prop
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
    assert "toolkit:fakesdk-1.0" in names, names  # its SDK's task, from the fake SDK module
    # a GPU leg: its side's test-backend-ops tools task too
    assert sorted(n for n in names if LEG in n) == [
        f"{st}:{LEG}" if not st.endswith("-") else f"{st}{LEG}"
        for st in ("build", "configure", "merge", "package", "smoke", "smoke:tools-", "source", "verify")
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
    # smoke: the fake's own side, asked like the real ones: its probe found no FakeGPU, so the
    # GPU steps are planned as not run, with the side's reason
    assert facts["backend"] == "fakegpu" and facts["side"] == "fakegpu_side"
    # its table as loaded (the cores its table_targets filled from the family) and the CMake entries
    # derived from its facts: its option on, its targets entry from the table's targets
    assert facts["table"] == {"family": "fg", "cores": ["fg1", "fg2"]}, facts
    assert facts["cmake"] == {"GGML_FAKEGPU": True, "FAKEGPU_TARGETS": ["fg1", "fg2"]}, facts
    # its configure side (a cache entry from its table, its device targets, its configure.json
    # entry), its manifest fields and size, and what its legs promise their bundles (verify.py)
    assert facts["cache_entry"] == "2" and facts["device_targets"] == 2, facts
    assert facts["record"] == {"fakegpu_cores": "2"}, facts
    assert facts["entry_targets"] == ["fg1", "fg2"] and facts["estimate_mb"] == 10.5, facts
    assert "gfx_targets=('fg1', 'fg2')" in facts["policy"], facts["policy"]
    # its SDK: one typed reference the stages ask, its lines in the leg's toolchain file
    assert facts["sdk"] == "toolkit:fakesdk-1.0"
    assert facts["sdk_lines"][0] == "# The FakeGPU SDK (toolkit:fakesdk-1.0)", facts["sdk_lines"]
    assert (
        facts["sdk_lines"][1].startswith('set( FAKEGPU_SDK_ROOT "') and "toolkits/fakesdk-1.0" in facts["sdk_lines"][1]
    )
    assert "no FakeGPU on this host" in facts["decision"] and "run=False" in facts["decision"], facts
    # the host checks, then the GPU checks of the fake's side (its OPS: MUL_MAT), which the
    # decision leaves unrun here
    assert facts["checks"] == [
        "version",
        "backends",
        "list-devices",
        "generate",
        "serve",
        "devices",
        "generate-gpu",
        "op:MUL_MAT",
    ]
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
