"""`bundlegraph explain TASK`: never run, up to date, and which input changed from what to what."""

from __future__ import annotations


from bundlegraph.fsutil import tree_digest
from graphrun import cli, doit


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
        "  - it would consume: pin, tree"]
    assert doit([task], bundles=bundles_copy, workdir=workdir).returncode == 0
    assert cli(["explain", task], bundles=bundles_copy, workdir=workdir).stdout.strip() == f"{task}: up to date"
    other = tmp_path / "src2"
    other.mkdir()
    rel.write_text(rel.read_text().replace(f'path = "{src}"', f'path = "{other}"'))
    lines = cli(["explain", task], bundles=bundles_copy, workdir=workdir).stdout.splitlines()
    assert lines == [f"{task}: would run", f'  - input pin.path changed: "{src}" -> "{other}"',
                     f'  - input tree changed: "{tree_digest(src)[0]}" -> "{tree_digest(other)[0]}"']
    (workdir / "build/linux-x64-cpu/source.json").write_text("{}")
    rel.write_text(rel.read_text().replace(f'path = "{other}"', f'path = "{src}"'))
    lines = cli(["explain", task], bundles=bundles_copy, workdir=workdir).stdout.splitlines()
    assert lines == [f"{task}: would run",
                     "  - output build/linux-x64-cpu/source.json was changed outside bundlegraph (fingerprint differs)"]


def test_explain_unknown_task(workdir):
    r = cli(["explain", "build:nope"], workdir=workdir)
    assert r.returncode == 2 and "no task 'build:nope' in the graph" in r.stderr
