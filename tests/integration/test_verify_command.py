"""One verify (issue 40, item 8): ``bundlegraph verify TREE --leg L --built-tree`` applies every
check ``verify:L`` applies to the same tree, the build host's paths included, because both take
their policy from one function (:func:`bundlegraph.pipeline.verify.leg_policy`).

A real shared library compiled (GCC) from a source under the download cache without a prefix map
names the cache in its ``__FILE__``: the graph's ``verify:L`` refuses such a tree (check
``host-path``), and so must the standalone command, which used to pass it."""

from __future__ import annotations

import json
import subprocess

import graphrun
from conftest import linux_only, require_tools

LEG = "mini-linux-x64-cpu"
SOURCE = "#include <stdio.h>\nvoid where(void) { puts(__FILE__); }\n"

pytestmark = linux_only


def test_verify_built_tree_refuses_the_build_host_s_paths_as_verify_leg_does(tmp_path, monkeypatch):
    require_tools("gcc")
    bundles, work = graphrun.standin_tree(tmp_path)
    cache = tmp_path / "cache"
    src = cache / "sources" / "tree" / "ggml" / "where.c"
    src.parent.mkdir(parents=True)
    src.write_text(SOURCE)
    tree = tmp_path / "built"
    tree.mkdir()
    subprocess.run(
        ["gcc", "-O2", "-shared", "-fPIC", str(src), "-o", str(tree / "libwhere.so")], check=True, timeout=120
    )
    env = {"BUNDLEGRAPH_CACHE": str(cache)}
    r = graphrun.cli(
        ["verify", str(tree), "--leg", LEG, "--built-tree", "--json"], bundles=bundles, workdir=work, **env
    )
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stdout + r.stderr
    report = json.loads(r.stdout)
    host = [f for f in report["failures"] if f["check"] == "host-path"]
    assert [f["file"] for f in host] == ["libwhere.so"], report["failures"]
    assert f"names the build host's download cache {cache.as_posix()!r}" in host[0]["reason"]

    # the very policy verify:L is planned with (the graph's context, this cache and work directory)
    from bundlegraph.graph.context import load_graph

    monkeypatch.setenv("BUNDLEGRAPH_CACHE", str(cache))
    monkeypatch.setenv("BUNDLEGRAPH_WORKDIR", str(work))
    graph = load_graph(bundles)
    plan = next(p for p in graph.plans if p.full_name == f"verify:{LEG}")
    assert plan.preview is not None
    planned = json.loads(json.dumps(plan.preview().policy.to_json(), default=list))
    assert report["policy"] == planned
    assert [w for w, _ in planned["host_paths"]] == [
        "download cache",
        "work directory",
        "source tree",
        "home directory",
    ]

    # with the prefix map, as the graph compiles, the same tree passes the host-path check
    mapped = ["gcc", f"-ffile-prefix-map={cache / 'sources' / 'tree'}=llama.cpp", "-O2", "-shared", "-fPIC"]
    subprocess.run([*mapped, str(src), "-o", str(tree / "libwhere.so")], check=True, timeout=120)
    r = graphrun.cli(
        ["verify", str(tree), "--leg", LEG, "--built-tree", "--json"], bundles=bundles, workdir=work, **env
    )
    assert not [f for f in json.loads(r.stdout)["failures"] if f["check"] == "host-path"], r.stdout


def test_built_tree_without_a_leg_is_a_usage_error(tmp_path):
    r = graphrun.cli(["verify", str(tmp_path), "--built-tree"], workdir=tmp_path)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.strip().splitlines()[-1] == (
        "bundlegraph: --built-tree: needs --leg (the leg whose build output PATH is)"
    ), r.stderr
