"""The doit graph as users see it: `doit list`, filters, a new spec file, a bad spec."""

from __future__ import annotations

import json
import shutil

from graphrun import ROOT, cli, doit

from bundlegraph.graph.context import Filters, load_graph


def listed(stdout: str) -> list[str]:
    return [l.split()[0] for l in stdout.splitlines() if l.strip()]


def test_plain_doit_list_shows_every_stage_task_for_every_leg(workdir):
    r = doit(["list"], workdir=workdir)
    assert r.returncode == 0, r.stderr
    names = set(listed(r.stdout))
    g = load_graph(ROOT / "bundles")
    every_leg = ["source", "configure", "build", "verify", "merge", "package"]
    for leg, spec in g.ctx.matrix.legs.items():
        for stage in every_leg + (["smoke"] if spec.backend == "cuda" else []):
            assert f"{stage}:{leg}" in names, (stage, leg)
    assert {"manifest", "publish"} <= names
    assert any(n.startswith("toolkit:cuda13.4-windows-x86_64+windows-arm64-") for n in names)
    assert {p.full_name for p in g.plans} <= names


def test_profile_filter_keeps_same_legs_in_graph_matrix_and_plan(workdir):
    want = [
        "linux-arm64-cuda13-portable",
        "linux-x64-cuda13-portable",
        "windows-arm64-cuda13-portable",
        "windows-x64-cuda13-portable",
    ]
    g = load_graph(ROOT / "bundles", Filters(only_profile="cuda13-portable"))
    assert g.ctx.legs == want
    m = cli(["matrix", "--only-profile", "cuda13-portable"], workdir=workdir)
    assert m.returncode == 0, m.stderr
    rows = json.loads(m.stdout)["include"]  # pure JSON on stdout
    assert all(
        set(r) == {"id", "os", "arch", "profile", "runner", "compile_runner", "role", "merge_base", "shards", "shard"}
        for r in rows
    )
    shard_rows = [r for r in rows if r["role"] == "shard"]  # each follows its leg's row, one per shard
    assert all(
        r["shard"] == f"{i}/{r['shards']}"
        for leg in want
        for i, r in enumerate((x for x in shard_rows if x["id"] == leg), 1)
    )
    rows = [r for r in rows if r["role"] != "shard"]
    assert [r["id"] for r in rows] == want
    assert {r["id"]: (r["role"], r["merge_base"]) for r in rows} == {
        "linux-arm64-cuda13-portable": ("backend", "linux-arm64-cpu"),
        "linux-x64-cuda13-portable": ("backend", "linux-x64-cpu"),
        "windows-arm64-cuda13-portable": ("backend", "windows-arm64-cpu"),
        "windows-x64-cuda13-portable": ("backend", "windows-x64-cpu"),
    }
    p = cli(["plan", "--json", "--only-profile", "cuda13-portable"], workdir=workdir)
    assert list(json.loads(p.stdout)["legs"]) == want
    d = doit(["list", "only_profile=cuda13-portable"], workdir=workdir)
    legs_in_graph = sorted({n.split(":", 1)[1] for n in listed(d.stdout) if n.startswith("source:")})
    assert legs_in_graph == want
    e = doit(["list"], workdir=workdir, BUNDLEGRAPH_ONLY_LEG="linux-arm64-cpu")
    # the leg's tasks, and its pinned compiler's (issue 50)
    names = sorted({n.split(":", 1)[1] for n in listed(e.stdout) if ":" in n})
    assert [n for n in names if not n.startswith("gcc-12.2.0-linux-arm64-")] == ["linux-arm64-cpu"], names


def test_a_new_spec_file_is_a_new_leg_everywhere(workdir, bundles_copy):
    src = (bundles_copy / "linux-arm64-cuda13-blackwell.toml").read_text()
    new = (
        src.replace("linux-arm64-cuda13-blackwell", "linux-arm64-cuda13-spark")
        .replace('name = "cuda13-blackwell"', 'name = "cuda13-spark"')
        .replace('klass = "blackwell"', 'klass = "newer"')
    )
    (bundles_copy / "linux-arm64-cuda13-spark.toml").write_text(new)
    r = doit(["list"], bundles=bundles_copy, workdir=workdir)
    assert "source:linux-arm64-cuda13-spark" in listed(r.stdout), r.stdout + r.stderr
    m = json.loads(cli(["matrix"], bundles=bundles_copy, workdir=workdir).stdout)
    assert "linux-arm64-cuda13-spark" in [x["id"] for x in m["include"]]
    g = load_graph(bundles_copy)
    assert "linux-arm64-cuda13-spark" in g.ctx.matrix.promised
    only = json.loads(cli(["matrix", "--only-profile", "cuda13-spark"], bundles=bundles_copy, workdir=workdir).stdout)
    legs = [x for x in only["include"] if x["role"] != "shard"]  # shard rows follow their leg's row
    assert [x["id"] for x in legs] == ["linux-arm64-cuda13-spark"]
    assert {x["id"] for x in only["include"]} == {"linux-arm64-cuda13-spark"}


def test_not_promised_leg_is_listed_but_not_promised(bundles_copy):
    f = bundles_copy / "linux-x64-cpu.toml"
    f.write_text("promised = false\n" + f.read_text())
    g = load_graph(bundles_copy)
    assert "linux-x64-cpu" in g.ctx.legs and "linux-x64-cpu" not in g.ctx.matrix.promised


def test_bad_spec_stops_every_task(workdir, bundles_copy):
    f = bundles_copy / "linux-arm64-cuda13-blackwell.toml"
    f.write_text(f.read_text().replace('archs = ["120", "121"]', 'archs = ["61", "121"]'))
    r = doit(["source:linux-arm64-cpu"], bundles=bundles_copy, workdir=workdir)
    assert r.returncode == 2
    assert f"{f}: cuda.archs[0]: '61': sm_61 was dropped after CUDA 12.9" in r.stderr
    assert not (workdir / "build").exists()
    m = cli(["matrix"], bundles=bundles_copy, workdir=workdir)
    assert m.returncode == 2 and "cuda.archs[0]" in m.stderr and m.stdout == ""


def test_unknown_filter_value_is_refused(workdir):
    r = cli(["matrix", "--only-profile", "cuda14"], workdir=workdir)
    assert r.returncode == 2
    assert (
        "only_profile=cuda14: no leg has this profile; profiles: cpu, cuda12-legacy, cuda12-newer, cuda12-older, "
        "cuda12-portable, cuda13-blackwell, cuda13-newer, cuda13-older, cuda13-portable"
    ) in r.stderr


def test_plan_of_one_leg_shows_it_as_the_graph_runs_it(workdir):
    """`plan LEG` keeps the rest of the graph: the CUDA leg's merge waits for its base's package
    task; `--only-leg` plans the one-leg graph, whose merge takes the base bundle from dist/."""
    leg, base = "linux-arm64-cuda13-blackwell", "linux-arm64-cpu"
    one = json.loads(cli(["plan", "--json", leg], workdir=workdir).stdout)
    assert list(one["legs"]) == [leg]
    merge = next(st for st in one["legs"][leg]["stages"] if st["task"] == f"merge:{leg}")
    assert f"package:{base}" in merge["deps"]
    alone = json.loads(cli(["plan", "--json", "--only-leg", leg], workdir=workdir).stdout)
    merge = next(st for st in alone["legs"][leg]["stages"] if st["task"] == f"merge:{leg}")
    assert f"package:{base}" not in merge["deps"]
    bad = cli(["plan", "no-such-leg"], workdir=workdir)
    assert bad.returncode == 2 and "'no-such-leg' is not a leg of the selected graph" in bad.stderr


def test_matrix_roles_come_from_merge_tables_not_profile_names(workdir, bundles_copy):
    """A CUDA leg that builds its own CPU backend and has no merge table is a base (built
    alone): the role follows ``[merge]``, never the profile's name."""
    spec = bundles_copy / "linux-arm64-cuda13-blackwell.toml"
    text = spec.read_text()
    start = text.index("[merge]")
    end = text.index("\n[", start + 1)
    # without [merge] the leg is a whole bundle: its required files follow (specs/derive.py), the CPU's and ggml-cuda
    spec.write_text((text[:start] + text[end + 1 :]).replace("GGML_CPU = false", "GGML_CPU = true"))
    rows = {
        r["id"]: r
        for r in json.loads(cli(["matrix"], bundles=bundles_copy, workdir=workdir).stdout)["include"]
        if r["role"] != "shard"
    }  # a sharded leg's shard rows follow its own row
    assert (rows["linux-arm64-cuda13-blackwell"]["role"], rows["linux-arm64-cuda13-blackwell"]["merge_base"]) == (
        "base",
        None,
    )
    assert rows["linux-arm64-cpu"]["role"] == "base" and rows["linux-arm64-cuda13-portable"]["role"] == "backend"


def test_bundlegraph_reads_BUNDLEGRAPH_BUNDLES_as_doit_does(tmp_path):
    """With only ``BUNDLEGRAPH_BUNDLES`` set (no --bundles), ``bundlegraph`` sees the same legs
    and tasks as ``doit`` in the same directory, and uses the same work directory."""
    import subprocess

    from graphrun import BIN, env_for

    bundles = tmp_path / "stand-in"
    shutil.copytree(ROOT / "tests" / "data" / "bundles", bundles)
    shutil.copytree(ROOT / "bundles" / "locks", bundles / "locks", dirs_exist_ok=True)
    shutil.copytree(ROOT / "tests" / "data" / "minillama", tmp_path / "minillama")
    run_dir = tmp_path / "checkout"
    run_dir.mkdir()
    env = {k: v for k, v in env_for(bundles, run_dir).items() if k != "BUNDLEGRAPH_WORKDIR"}

    def bg(*args):
        r = subprocess.run([str(BIN / "bundlegraph"), *args], capture_output=True, text=True, env=env, cwd=run_dir)
        assert r.returncode == 0, r.stdout + r.stderr
        return r.stdout

    legs = [r["id"] for r in json.loads(bg("matrix"))["include"] if r["role"] != "shard"]
    assert legs == ["mini-linux-arm64-cpu", "mini-linux-arm64-cuda", "mini-linux-x64-cpu"]
    plan = json.loads(bg("plan", "--json"))
    assert list(plan["legs"]) == legs
    d = subprocess.run(
        [str(BIN / "doit"), "-f", str(ROOT / "dodo.py"), "list"],
        capture_output=True,
        text=True,
        env={**env, "BUNDLEGRAPH_WORKDIR": str(run_dir)},
        cwd=run_dir,
    )
    assert d.returncode == 0, d.stderr
    assert sorted({n.split(":", 1)[1] for n in listed(d.stdout) if n.startswith("source:")}) == legs
    assert "would run" in bg("explain", "source:mini-linux-x64-cpu")
    # doit run in the checkout works there; explain (cwd = the checkout) reads the same stamps
    d = subprocess.run(
        [str(BIN / "doit"), "-f", str(ROOT / "dodo.py"), "source:mini-linux-x64-cpu"],
        capture_output=True,
        text=True,
        env={**env, "BUNDLEGRAPH_WORKDIR": str(run_dir)},
        cwd=run_dir,
    )
    assert d.returncode == 0, d.stdout + d.stderr
    assert "up to date" in bg("explain", "source:mini-linux-x64-cpu")


def test_plan_command_prints_configure_and_toolchain(workdir):
    r = cli(["plan", "windows-arm64-cuda13-portable"], workdir=workdir)
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "configure: " in out and "-DCMAKE_TOOLCHAIN_FILE=" in out and "'-DCMAKE_CUDA_ARCHITECTURES=120;121'" in out
    # nvcc's flags: -target-dir, -objtemp, then the host compiler's prefix maps (cl.exe's /d1trimfile)
    assert '| set( CMAKE_CUDA_FLAGS_INIT "-target-dir=arm64 -objtemp -Xcompiler=/d1trimfile:' in out
    assert "build: " in out and "--target ggml-cuda -j " in out
    assert "build_host: windows x64" in out


def test_three_ways_to_name_a_bundles_directory_give_one_work_directory(tmp_path):
    """Issue 29: ``doit bundles=DIR``, ``BUNDLEGRAPH_BUNDLES=DIR`` and ``bundlegraph --bundles
    DIR`` resolve the work directory by one rule (``BUNDLEGRAPH_WORKDIR``, else the directory the
    command runs in: dodo.py's folder for doit), never DIR's parent: ``explain`` after ``doit``
    sees the stamps doit wrote, and ``plan`` prints the work directory."""
    import subprocess

    from graphrun import BIN, env_for

    checkout = tmp_path / "checkout"  # a checkout of its own: dodo.py's folder is doit's work directory
    checkout.mkdir()
    shutil.copy(ROOT / "dodo.py", checkout / "dodo.py")
    b2 = tmp_path / "elsewhere" / "b2"
    shutil.copytree(ROOT / "tests" / "data" / "bundles", b2)
    shutil.copytree(ROOT / "bundles" / "locks", b2 / "locks", dirs_exist_ok=True)
    shutil.copytree(ROOT / "tests" / "data" / "minillama", b2.parent / "minillama")
    env = {k: v for k, v in env_for(None, checkout).items() if k not in ("BUNDLEGRAPH_WORKDIR", "BUNDLEGRAPH_BUNDLES")}
    task = "source:mini-linux-x64-cpu"

    def run(argv, **extra):
        return subprocess.run(argv, capture_output=True, text=True, env=env | extra, cwd=checkout, timeout=300)

    d = run([str(BIN / "doit"), "-f", str(checkout / "dodo.py"), f"bundles={b2}", task])
    assert d.returncode == 0, d.stdout + d.stderr
    assert (checkout / ".bundlegraph").is_dir() and not (b2.parent / ".bundlegraph").exists()
    by_flag = run([str(BIN / "bundlegraph"), "--bundles", str(b2), "explain", task])
    by_env = run([str(BIN / "bundlegraph"), "explain", task], BUNDLEGRAPH_BUNDLES=str(b2))
    assert by_flag.stdout.strip() == by_env.stdout.strip() == f"{task}: up to date", by_flag.stdout + by_flag.stderr
    again = run([str(BIN / "doit"), "-f", str(checkout / "dodo.py"), task], BUNDLEGRAPH_BUNDLES=str(b2))
    assert again.returncode == 0 and f"-- {task}" in again.stdout, again.stdout + again.stderr
    plan = run([str(BIN / "bundlegraph"), "--bundles", str(b2), "plan"])
    assert plan.stdout.splitlines()[0] == f"work directory {checkout} (build/, dist/, .bundlegraph/); bundles {b2}"
    p = json.loads(run([str(BIN / "bundlegraph"), "--bundles", str(b2), "plan", "--json"]).stdout)
    assert (p["work_directory"], p["bundles"]) == (checkout.as_posix(), b2.as_posix())
