"""`bundlegraph explain TASK`: never run, up to date, and which input changed from what to what."""

from __future__ import annotations

from graphrun import cli, doit

from bundlegraph.core.fsutil import tree_digest


def test_explain_source_task_through_its_life(workdir, bundles_copy, tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "CMakeLists.txt").write_text("project(x)\n")
    rel = bundles_copy / "release.toml"
    rel.write_text(rel.read_text().split("[source]")[0] + f'[source]\nkind = "path"\npath = "{src}"\n')
    task = "source:linux-x64-cpu"
    r = cli(["explain", task], bundles=bundles_copy, workdir=workdir)
    assert r.returncode == 0 and r.stdout.splitlines() == [
        f"{task}: would run",
        "  - never completed (no stamp), or its last run failed or was interrupted",
        "  - it would consume: pin, tree",
    ]
    assert doit([task], bundles=bundles_copy, workdir=workdir).returncode == 0
    assert cli(["explain", task], bundles=bundles_copy, workdir=workdir).stdout.strip() == f"{task}: up to date"
    other = tmp_path / "src2"
    other.mkdir()
    rel.write_text(rel.read_text().replace(f'path = "{src}"', f'path = "{other}"'))
    lines = cli(["explain", task], bundles=bundles_copy, workdir=workdir).stdout.splitlines()
    assert lines == [
        f"{task}: would run",
        f'  - input pin.path changed: "{src}" -> "{other}"',
        f'  - input tree changed: "{tree_digest(src)[0]}" -> "{tree_digest(other)[0]}"',
    ]
    (workdir / "build/linux-x64-cpu/source.json").write_text("{}")
    rel.write_text(rel.read_text().replace(f'path = "{other}"', f'path = "{src}"'))
    lines = cli(["explain", task], bundles=bundles_copy, workdir=workdir).stdout.splitlines()
    assert lines == [
        f"{task}: would run",
        "  - output build/linux-x64-cpu/source.json was changed outside bundlegraph (fingerprint differs)",
    ]


def test_explain_unknown_task(workdir):
    r = cli(["explain", "build:nope"], workdir=workdir)
    assert r.returncode == 2 and "no task 'build:nope' in the graph" in r.stderr


def test_explain_of_a_mistyped_task_names_the_three_closest_not_every_task(workdir):
    """Issue 29: it printed all 73 task names."""
    r = cli(["explain", "sorce:linux-arm64-cpu"], workdir=workdir)
    assert r.returncode == 2
    msg = r.stderr.strip()
    assert msg.startswith(
        "bundlegraph: no task 'sorce:linux-arm64-cpu' in the graph (did you mean 'source:linux-arm64-cpu' or "
    ), msg
    assert msg.count("' or '") == 2 and msg.endswith("`doit list` lists all 74 tasks"), msg
    assert "manifest" not in msg and len(msg) < 300


def test_doit_info_prints_one_short_line_per_check_not_the_plan(workdir):
    """Issue 29: ``doit info TASK`` printed a 14 KB repr of the plan, the context and every leg's
    model; now the check says which task, why it is due, and the command that says more."""
    task = "package:windows-arm64-cuda13-portable"
    r = doit(["info", task], workdir=workdir)
    assert r.returncode == 1, r.stderr  # doit info's status for a task that is not up to date
    assert len(r.stdout) < 1500, r.stdout
    assert "TaskPlan" not in r.stdout and "Context(" not in r.stdout
    check = [l for l in r.stdout.splitlines() if l.strip().startswith("- <")]
    assert (
        len(check) == 1
        and check[0].strip().startswith(f"- <{task} check (due: ")
        and f"`bundlegraph explain {task}` says why>" in check[0]
    ), r.stdout


def test_doit_refuses_a_task_name_the_graph_lacks_with_the_closest(workdir):
    """A newcomer's find: ``doit biuld:L`` was doit's exit 3 ("Invalid parameter"), ``doit info``
    of it a traceback; both now stop with the three closest names (exit 2), like ``explain``."""
    for args in (
        ["biuld:linux-arm64-cpu"],
        ["info", "biuld:linux-arm64-cpu"],
        ["clean", "-n", "biuld:linux-arm64-cpu"],
    ):
        r = doit(args, workdir=workdir)
        assert r.returncode == 2, (args, r.stdout[-2000:], r.stderr[-2000:])
        assert "no task 'biuld:linux-arm64-cpu' in the graph (did you mean 'build:linux-arm64-cpu' or " in r.stderr
        assert "Traceback" not in r.stderr
    assert doit(["list", "build"], workdir=workdir).returncode == 0  # a stage's group name is a task
