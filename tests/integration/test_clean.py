"""``doit clean``: every task says what it wrote and removes exactly that (issue 29, item 6)."""

from __future__ import annotations

import graphrun


def test_clean_dry_run_names_what_a_task_wrote_and_clean_removes_it_keeping_the_cache(tmp_path):
    bundles, work = graphrun.standin_tree(tmp_path)
    leg = "mini-linux-x64-cpu"
    r = graphrun.doit([f"only_leg={leg}", f"build:{leg}"], bundles=bundles, workdir=work)
    assert r.returncode == 0, r.stdout + r.stderr
    before = sorted(p.relative_to(work).as_posix() for p in work.rglob("*"))
    dry = graphrun.doit(["clean", "-n", f"build:{leg}", f"configure:{leg}"], bundles=bundles, workdir=work)
    assert dry.returncode == 0, dry.stderr
    lines = {l.split(" - ", 1)[0]: l for l in dry.stdout.splitlines() if " - executing " in l}
    assert f".bundlegraph/stamps/build__{leg}.json, build/{leg}/build.json" in lines[f"build:{leg}"], dry.stdout
    assert (
        f"build/{leg}/cmake/," in lines[f"configure:{leg}"]
        and f"build/{leg}/configure.json" in lines[f"configure:{leg}"]
    )
    assert sorted(p.relative_to(work).as_posix() for p in work.rglob("*")) == before  # a dry run removes nothing
    r = graphrun.doit(["clean", f"build:{leg}"], bundles=bundles, workdir=work)
    assert r.returncode == 0, r.stderr
    assert not (work / "build" / leg / "build.json").exists()
    assert not (work / ".bundlegraph" / "stamps" / f"build__{leg}.json").exists()
    assert (work / "build" / leg / "configure.json").is_file()  # another task's files stay
    e = graphrun.cli(["explain", f"build:{leg}"], bundles=bundles, workdir=work)
    assert e.stdout.startswith(f"build:{leg}: would run"), e.stdout + e.stderr
    # starting over: every task's share of the work directory goes (the cost records stay)
    r = graphrun.doit(["clean", "-a"], bundles=bundles, workdir=work)
    assert r.returncode == 0, r.stderr
    left = [
        p
        for p in work.rglob("*")
        if p.is_file() and p.parent.name != "costs" and not p.name.startswith(("doit.sqlite3", "run.", "tool-versions"))
    ]
    assert left == [], left
