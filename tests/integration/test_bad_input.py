"""Bad input stops at once with one line, nothing started (issue 17): an unknown doit variable,
filters that select no leg (exit 2); graph state that is unreadable is said and rebuilt."""

from __future__ import annotations

import shutil
from pathlib import Path

import graphrun
from conftest import require_input, require_tools

from bundlegraph.core import paths

ROOT = Path(__file__).resolve().parents[2]


def test_an_unknown_doit_variable_is_refused_not_ignored(tmp_path):
    for arg, hint in (
        ("only-leg=linux-x64-cpu", "only_leg"),
        ("only_lg=linux-x64-cpu", "only_leg"),
        ("build_target=ggml", "build_targets"),
    ):
        r = graphrun.doit([arg], bundles=ROOT / "bundles", workdir=tmp_path)
        assert r.returncode == 2, (arg, r.stdout[-2000:])
        assert f"{arg}: unknown doit variable '{arg.split('=')[0]}' (did you mean '{hint}'?)" in r.stderr, r.stderr
        assert graphrun.executed(r.stdout) == [] and not (tmp_path / "build").exists()


def test_filters_that_select_no_leg_are_refused_everywhere(tmp_path):
    r = graphrun.doit(
        ["only_profile=cpu", "only_leg=windows-arm64-cuda13-portable"], bundles=ROOT / "bundles", workdir=tmp_path
    )
    want = (
        "only_profile=cpu only_leg=windows-arm64-cuda13-portable: together they select no leg "
        "(the profile of windows-arm64-cuda13-portable is cuda13-portable)"
    )
    assert r.returncode == 2 and want in r.stderr and "Traceback" not in r.stderr, r.stderr
    m = graphrun.cli(
        ["matrix", "--only-profile", "cpu", "--only-leg", "windows-arm64-cuda13-portable"], workdir=tmp_path
    )
    assert m.returncode != 0 and want in m.stderr and '"include": []' not in m.stdout, (m.stdout, m.stderr)


def test_a_garbage_doit_database_is_set_aside_not_a_traceback(tmp_path):
    """Graph state is a cache: doit's sqlite file overwritten with garbage is reported, moved
    aside and rebuilt; the stamps still say what is up to date."""

    require_tools("aarch64-linux-gnu-gcc", "aarch64-linux-gnu-g++")
    graphrun.standin_tree(tmp_path)
    work = tmp_path / "work"
    leg = "mini-linux-arm64-cpu"
    r = graphrun.doit([f"build:{leg}"], bundles=tmp_path / "bundles", workdir=work)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    db = work / ".bundlegraph" / "doit.sqlite3"
    db.write_bytes(b"this is not a database" * 100)
    r = graphrun.doit([f"build:{leg}"], bundles=tmp_path / "bundles", workdir=work)
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr[-3000:]
    assert f"{db}: unreadable" in r.stdout + r.stderr and "doit starts a new one" in r.stdout + r.stderr
    assert graphrun.executed(r.stdout) == []  # the stamps: nothing to rebuild
    assert list(db.parent.glob("doit.sqlite3.unreadable-*"))


def test_a_toolkit_whose_files_were_deleted_is_not_up_to_date(tmp_path):
    """The toolkit task's stamp covers its required files (by presence), not only the receipt:
    remove ``bin/nvcc`` after install and the task runs again and puts it back."""
    import json

    require_tools("aarch64-linux-gnu-gcc", "aarch64-linux-gnu-g++")
    require_input("cuda-13.5-sbsa-cross")
    graphrun.standin_tree(tmp_path)
    work = tmp_path / "work"
    # a cache of its own (the shared one's downloads hard-linked in): this test deletes a toolkit
    # file, which must not pull the toolkit from under another run that shares the user's cache
    own = {"BUNDLEGRAPH_CACHE": str(tmp_path / "cache")}
    graphrun.link_blobs(paths.cache_root(), tmp_path / "cache")
    plan = json.loads(graphrun.cli(["plan", "--json"], bundles=tmp_path / "bundles", workdir=work, **own).stdout)
    task = next(t for t in plan["shared"] if t["task"].startswith("toolkit:cuda"))
    r = graphrun.doit([task["task"]], bundles=tmp_path / "bundles", workdir=work, **own)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    nvcc = Path(task["prefix"]) / "bin" / "nvcc"
    assert nvcc.is_file() and nvcc.is_relative_to(tmp_path / "cache")
    nvcc.unlink()
    r = graphrun.doit([task["task"]], bundles=tmp_path / "bundles", workdir=work, **own)
    assert r.returncode == 0 and graphrun.executed(r.stdout) == [task["task"]], r.stdout[-3000:]
    assert nvcc.is_file()
    again = graphrun.doit([task["task"]], bundles=tmp_path / "bundles", workdir=work, **own)
    assert graphrun.executed(again.stdout) == []
    # the pinned compiler's task likewise: a deleted wrapper is laid out again (issue 50)
    gcc = next(t for t in plan["shared"] if t["task"].startswith("toolkit:gcc-"))
    r = graphrun.doit([gcc["task"]], bundles=tmp_path / "bundles", workdir=work, **own)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    wrapper = Path(gcc["wrappers"]["cxx"])
    assert wrapper.is_file() and wrapper.is_relative_to(tmp_path / "cache")
    wrapper.unlink()
    r = graphrun.doit([gcc["task"]], bundles=tmp_path / "bundles", workdir=work, **own)
    assert r.returncode == 0 and graphrun.executed(r.stdout) == [gcc["task"]], r.stdout[-3000:]
    assert wrapper.is_file()


def test_damaged_records_are_named_and_rebuilt_never_a_traceback(tmp_path):
    """A stamp overwritten with garbage: one line naming it, and its task runs again; a damaged
    ``source.json``: the source task sees its output changed and writes it again. ``artifacts=``
    naming a missing directory is refused at load."""

    require_tools("aarch64-linux-gnu-gcc", "aarch64-linux-gnu-g++")
    graphrun.standin_tree(tmp_path)
    work = tmp_path / "work"
    leg = "mini-linux-arm64-cpu"

    def run(*args: str):
        return graphrun.doit([*args, f"build:{leg}"], bundles=tmp_path / "bundles", workdir=work)

    assert run().returncode == 0
    stamp = work / ".bundlegraph" / "stamps" / f"configure__{leg}.json"
    stamp.write_text("{not json")
    r = run()
    assert r.returncode == 0 and "Traceback" not in r.stderr
    assert f"{stamp}: unreadable stamp" in r.stdout + r.stderr and f"configure:{leg}" in graphrun.executed(r.stdout)
    # doit's output says why each task ran, in explain's words
    assert f"configure:{leg}: runs because never completed (no stamp)" in r.stdout
    src = work / "build" / leg / "source.json"
    src.write_text('{"tree": 1}')
    r = run()
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr[-2000:]
    assert f"source:{leg}" in graphrun.executed(r.stdout) and '"digest"' in src.read_text()
    r = run(f"artifacts={tmp_path / 'nowhere'}")
    assert r.returncode == 2 and f"artifacts={tmp_path / 'nowhere'}: not a directory" in r.stderr, r.stderr


def test_a_backend_without_its_entry_point_is_refused(tmp_path):
    """GGML_BACKEND_DL=ON: a ggml backend library that does not export ggml_backend_init would be
    loaded and ignored on the user's machine; verify refuses the build naming it."""
    import subprocess

    require_tools("aarch64-linux-gnu-gcc", "aarch64-linux-gnu-g++")
    graphrun.standin_tree(tmp_path)
    work = tmp_path / "work"
    leg = "mini-linux-arm64-cpu"
    assert graphrun.doit([f"build:{leg}"], bundles=tmp_path / "bundles", workdir=work).returncode == 0
    built = tmp_path / "built" / leg
    shutil.copytree(work / "build" / leg / "cmake" / "bin", built)
    src = tmp_path / "cpu.c"
    src.write_text("int ggml_backend_cpu_init(void) { return 1; }\n")  # the entry point is missing
    (built / "libggml-cpu.so").unlink()
    subprocess.run(
        ["aarch64-linux-gnu-gcc", "-shared", "-fPIC", "-o", str(built / "libggml-cpu.so"), str(src)], check=True
    )
    r = graphrun.doit([f"built={built.parent}", f"verify:{leg}"], bundles=tmp_path / "bundles", workdir=tmp_path / "w2")
    assert r.returncode != 0
    assert "libggml-cpu.so: backend: exports no ggml_backend_init" in r.stdout + r.stderr, (r.stdout + r.stderr)[-3000:]


def test_a_filtered_build_is_never_packaged(tmp_path):
    """`doit build_targets=ggml-base package:L` after a source edit used to package the old
    libggml-cpu.so and record it verified: a bundle is made only from a complete build."""

    require_tools("aarch64-linux-gnu-gcc", "aarch64-linux-gnu-g++")
    graphrun.standin_tree(tmp_path)
    work = tmp_path / "work"
    leg = "mini-linux-arm64-cpu"
    bundles = tmp_path / "bundles"
    assert graphrun.doit([f"package:{leg}"], bundles=bundles, workdir=work).returncode == 0
    bundle = next((work / "dist").glob("app-*.tar.gz"))
    before = bundle.read_bytes()
    r = graphrun.doit(["build_targets=ggml-base", f"package:{leg}"], bundles=bundles, workdir=work)
    assert r.returncode != 0
    assert (
        f"merge:{leg}: the last build:{leg} built only ggml-base (build_targets=); a bundle is made from a "
        f"complete build"
    ) in r.stdout + r.stderr, (r.stdout + r.stderr)[-3000:]
    assert bundle.read_bytes() == before  # nothing packaged from the partial build
    r = graphrun.doit([f"package:{leg}"], bundles=bundles, workdir=work)
    assert r.returncode == 0 and f"build:{leg}" in graphrun.executed(r.stdout)


def test_doits_file_checker_option_is_refused(tmp_path):
    r = graphrun.doit(["--check_file_uptodate=timestamp", "list"], bundles=ROOT / "bundles", workdir=tmp_path)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "--check_file_uptodate=timestamp: bundlegraph's tasks are up to date by their action-key stamps" in r.stderr


def test_a_cmake_key_the_project_does_not_use_fails_the_configure(tmp_path):
    """A misspelt [cmake] key: CMake only warns ("Manually-specified variables were not used"),
    buried in the log; configure fails naming the spec file, the key and the closest option of the
    configured tree's own cache."""

    require_tools("aarch64-linux-gnu-gcc", "aarch64-linux-gnu-g++")
    graphrun.standin_tree(tmp_path)
    leg = "mini-linux-arm64-cpu"
    spec = tmp_path / "bundles" / f"{leg}.toml"
    spec.write_text(spec.read_text().replace("LLAMA_BUILD_TESTS = false", "LLAMA_BUILD_TESTZ = false"))
    r = graphrun.doit([f"configure:{leg}"], bundles=tmp_path / "bundles", workdir=tmp_path / "work")
    assert r.returncode != 0
    out = r.stdout + r.stderr
    assert f"{spec}: cmake.LLAMA_BUILD_TESTZ: the project does not use it" in out, out[-3000:]
    assert "did you mean LLAMA_BUILD_TESTS?" in out


def test_a_merge_base_that_is_nowhere_stops_the_leg_before_it_builds(tmp_path):
    """The stand-in CUDA leg alone (only_leg=), its base neither built in this run nor in dist/:
    refused by its first task, naming the base bundle and where it looked, not after the build."""

    graphrun.standin_tree(tmp_path)
    leg = "mini-linux-arm64-cuda"
    r = graphrun.doit([f"only_leg={leg}", f"package:{leg}"], bundles=tmp_path / "bundles", workdir=tmp_path / "work")
    out = r.stdout + r.stderr
    assert r.returncode != 0
    assert f"source:{leg}: {leg} merges into mini-linux-arm64-cpu, which this run does not build" in out, out[-3000:]
    assert "the merge base bundle is not in" in out
    assert graphrun.executed(r.stdout) == [f"source:{leg}"] or f"configure:{leg}" not in graphrun.executed(r.stdout)


def test_explain_answers_on_a_fresh_clone_for_groups_and_for_legs_of_another_host(tmp_path):
    def explain(task: str) -> str:
        r = graphrun.cli(["explain", task], workdir=tmp_path)
        assert r.returncode == 0, (task, r.stderr)
        return r.stdout

    out = explain("configure:linux-arm64-cpu")
    assert "configure:linux-arm64-cpu: would run\n  - never completed (no stamp)" in out
    assert "depends on source:linux-arm64-cpu, which would run first" in out
    lines = explain("build").splitlines()
    assert (
        "build:linux-arm64-cpu: would run: never completed (no stamp), or its last run failed or was interrupted"
        in lines
    )
    assert len(lines) == len(list(graphrun.ROOT.glob("bundles/*-*.toml"))) > 0  # one line per leg
    out = explain("configure:windows-arm64-cuda13-portable")
    assert "on this host it is refused before any download: windows-arm64-cuda13-portable compiles on a windows" in out


def test_a_ggml_key_llama_cpp_never_declared_fails_the_real_configure(tmp_path, bundles_copy):
    """Issue 29: llama.cpp's ggml/CMakeLists.txt reads every variable, so CMake never reports a
    misspelt ``GGML_*`` key as unused; ``GGML_OPENMPP = true`` configured silently. Judged by what
    the configured real tree declares: both typos are refused naming the file, the key and the
    declared option meant (a deprecated one said to be deprecated); the real specs' own deprecated
    ``LLAMA_CURL`` is only warned about; no configure record is written."""
    require_tools("aarch64-linux-gnu-gcc", "aarch64-linux-gnu-g++")
    require_input("llama-sdist")
    leg = "linux-arm64-cpu"
    spec = bundles_copy / f"{leg}.toml"
    text = spec.read_text()
    assert "LLAMA_CURL = false" in text and "GGML_OPENMP = true" in text
    spec.write_text(
        text.replace("GGML_OPENMP = true", "GGML_OPENMPP = true").replace(
            "LLAMA_CURL = false", "LLAMA_CURL = false\nLLAMA_CURLL = false"
        )
    )
    work = tmp_path / "work"
    r = graphrun.doit([f"only_leg={leg}", f"configure:{leg}"], bundles=bundles_copy, workdir=work)
    out = r.stdout + r.stderr
    assert r.returncode != 0, out[-3000:]
    assert (
        f"{spec}: cmake.GGML_OPENMPP: the configured tree declares no such option (its cache holds it as "
        "UNINITIALIZED, set only by the spec); did you mean GGML_OPENMP?"
    ) in out, out[-3000:]
    assert (
        f'{spec}: cmake.LLAMA_CURLL: the project does not use it (CMake: "Manually-specified variables were '
        'not used by the project"); did you mean LLAMA_CURL? (deprecated: this tree ignores it)'
    ) in out
    assert f"configure:{leg}: {spec}: cmake.LLAMA_CURL: deprecated: this tree ignores it" in out
    assert not (work / "build" / leg / "configure.json").exists()


def test_a_misspelt_BUNDLEGRAPH_variable_stops_doit_and_bundlegraph_before_anything_runs(tmp_path):
    """Issue 29: ``BUNDLEGRAPH_ONLY_LEGS=linux-arm64-cpu doit list`` listed the whole graph with
    exit 0 (a bare ``doit`` would have started the whole main job)."""
    for run in (graphrun.doit, graphrun.cli):
        r = run(
            ["list"] if run is graphrun.doit else ["matrix"],
            bundles=ROOT / "bundles",
            workdir=tmp_path,
            BUNDLEGRAPH_ONLY_LEGS="linux-arm64-cpu",
        )
        assert r.returncode == 2 and r.stdout == "", r.stdout
        assert "BUNDLEGRAPH_ONLY_LEGS: unknown variable (did you mean BUNDLEGRAPH_ONLY_LEG?)" in r.stderr, r.stderr
    assert not (tmp_path / "build").exists()
    ok = graphrun.doit(["list"], bundles=ROOT / "bundles", workdir=tmp_path, BUNDLEGRAPH_EXTRA_MINE="kept")
    assert ok.returncode == 0 and "source:linux-arm64-cpu" in ok.stdout


def test_bundlegraph_outside_a_checkout_says_what_to_do_and_global_options_may_follow(tmp_path):
    """Outside a checkout: cd into one or name the bundles; ``--bundles`` after the command name
    works as before it (issue 41)."""
    import subprocess

    env = graphrun.env_for(None, tmp_path)
    env.pop("BUNDLEGRAPH_BUNDLES", None)
    exe = str(graphrun.BIN / "bundlegraph")
    r = subprocess.run([exe, "plan"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert f"{tmp_path / 'bundles'}: bundles directory not found: cd into a bundlegraph checkout" in r.stderr
    assert "bundlegraph --bundles DIR COMMAND" in r.stderr, r.stderr
    after = [exe, "plan", "--bundles", str(ROOT / "bundles"), "--only-leg", "linux-x64-cpu"]
    before = [exe, "--bundles", str(ROOT / "bundles"), "plan", "--only-leg", "linux-x64-cpu"]
    a, b = (
        subprocess.run(c, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120) for c in (after, before)
    )
    # (the available memory in the jobs line moves between two runs)
    same = [(x, y) for x, y in zip(a.stdout.splitlines(), b.stdout.splitlines()) if "MiB available" not in x]
    assert a.returncode == 0 and all(x == y for x, y in same) and "linux-x64-cpu" in a.stdout, a.stderr
    assert len(a.stdout.splitlines()) == len(b.stdout.splitlines()) > 10
