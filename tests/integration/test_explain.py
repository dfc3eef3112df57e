"""`bundlegraph explain TASK`: never run, up to date, and which input changed from what to what."""

from __future__ import annotations

import re

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
    assert msg.count("' or '") == 2 and re.search(r"`doit list` lists all \d+ tasks$", msg), msg
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


def test_diagnostics_answer_in_a_partly_run_or_damaged_work_directory(tmp_path):
    """After only ``doit source:L`` (or a run stopped between source and merge), and with a
    damaged ``merge.json``, ``doit info``, ``doit list --status`` and ``bundlegraph explain``
    say what is missing, exit 0, and print no traceback (issue 41)."""
    import graphrun

    bundles, work = graphrun.standin_tree(tmp_path)
    leg = "mini-linux-x64-cpu"
    merge_json = work / "build" / leg / "merge.json"
    assert doit([f"source:{leg}"], bundles=bundles, workdir=work).returncode == 0
    for state, want in (
        ("partly run", f"{merge_json}: missing: merge:{leg} has not completed here; run merge:{leg}"),
        ("damaged", f"{merge_json}: not a merge record ("),
    ):
        if state == "damaged":
            merge_json.write_text('{"leg": ', encoding="utf-8")
        info = doit(["info", f"package:{leg}"], bundles=bundles, workdir=work)
        listing = doit(["list", "--all", "--status"], bundles=bundles, workdir=work)
        why = cli(["explain", f"package:{leg}"], bundles=bundles, workdir=work)
        # doit info exits 1 for a task that is not up to date (doit's own rule), never 3 (a bug)
        assert info.returncode == 1 and "Traceback" not in info.stdout + info.stderr, (state, info.stderr)
        for r in (listing, why):
            assert r.returncode == 0 and "Traceback" not in r.stdout + r.stderr, (state, r.stdout[-2000:], r.stderr)
        assert want in info.stdout and want in why.stdout, (state, info.stdout, why.stdout)
        assert f"R package:{leg}" in listing.stdout and f"U source:{leg}" in listing.stdout, listing.stdout


def test_doit_variables_before_the_command_work_as_after_it(workdir):
    """doit itself accepts ``doit only_leg=L list`` (its ``process_args`` takes out every
    ``key=value`` first); bundlegraph's argument checks agree (issue 41)."""
    leg = "linux-x64-cpu"
    for cmd in (["list"], ["info", f"source:{leg}"], ["clean", "-n", f"source:{leg}"]):
        before = doit([f"only_leg={leg}", *cmd], workdir=workdir)
        after = doit([*cmd, f"only_leg={leg}"], workdir=workdir)
        # doit info exits 1 for a task that is not up to date (doit's own rule)
        assert before.returncode == after.returncode == (1 if cmd[0] == "info" else 0), (cmd, before.stderr)
        assert "no task" not in before.stderr and before.stdout == after.stdout, (cmd, before.stderr)
    listed = doit([f"only_leg={leg}", "list"], workdir=workdir).stdout
    assert f"source:{leg}" in listed and "source:linux-arm64-cpu" not in listed


def test_a_setting_given_as_a_doit_variable_points_to_its_environment_variable(workdir):
    r = doit(["jobs=4"], workdir=workdir)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert "jobs=4: not a doit variable; set the environment variable BUNDLEGRAPH_JOBS=4" in r.stderr, r.stderr
    assert not (workdir / "build").exists()
