"""Anyone can rebuild a release and get its bytes (issue 32, item 5): every compile maps the
build host's roots (source tree, CMake's binary directory, work directory, download cache,
toolkit) to stable names, ``verify`` refuses a binary that still names one, and the provenance
says what a rebuild must match without naming a path of the machine that built it."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path

import graphrun
import pytest
from conftest import linux_only, require_tools

from bundlegraph.core import paths
from bundlegraph.pipeline.verify import VerifyPolicy, verify_path

pytestmark = linux_only


def _sha(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def test_a_rebuild_elsewhere_gives_the_same_bytes(release, tmp_path):
    """The stand-in release built again under another root (so another source tree path), work
    directory, ``BUNDLEGRAPH_CACHE`` (so another toolkit root) and ``HOME``: every bundle, the
    manifest and the SHA index come out byte-identical."""
    root = tmp_path / "elsewhere"
    root.mkdir()
    bundles, work = graphrun.standin_tree(root)
    cache, home = tmp_path / "other-cache", tmp_path / "other-home"
    home.mkdir()
    graphrun.link_blobs(paths.cache_root(), cache)
    r = graphrun.doit([], bundles=bundles, workdir=work, timeout=900, BUNDLEGRAPH_CACHE=str(cache), HOME=str(home))
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-3000:]
    # the second build really ran elsewhere: its toolkit was installed in its own cache
    assert any((cache / "toolkits").iterdir())
    assert not str(work).startswith(str(release.work)) and paths.cache_root() != cache
    ours = sorted(p.name for p in release.dist.glob("*.tar.gz"))
    theirs = sorted(p.name for p in (work / "dist").glob("*.tar.gz"))
    assert ours == theirs and len(ours) == 4, (ours, theirs)  # 3 bundles + the source archive
    for name in ours + ["llama-prebuilt-manifest.json", "llama-prebuilt-sha256.json"]:
        assert _sha(release.dist / name) == _sha(work / "dist" / name), name
    # what each configure recorded: the roots differed, the mapped names did not
    a = json.loads((release.work / "build/mini-linux-arm64-cuda/configure.json").read_text())["prefix_maps"]
    b = json.loads((work / "build/mini-linux-arm64-cuda/configure.json").read_text())["prefix_maps"]
    assert sorted(a) == sorted(b) == ["build", "cache", "cuda", "llama.cpp", "work"]
    assert all(a[k] != b[k] for k in a), (a, b)


def test_the_provenance_says_what_a_rebuild_must_match_and_names_no_host_path(release):
    """Per leg compiled here: toolchain, compiler and tool versions, CMake cache entries, each
    language's flags with every build-host root written as its stable name, and the maps; each
    toolkit component as a resolved dependency. No path of the building machine appears."""
    text = (release.dist / "llama-prebuilt-provenance.json").read_text()
    for root in (release.root, paths.cache_root(), Path.home()):
        assert str(root) + "/" not in text, root
    st = json.loads(text)
    builds = st["predicate"]["buildDefinition"]["internalParameters"]["builds"]
    assert sorted(builds) == ["mini-linux-arm64-cpu", "mini-linux-arm64-cuda", "mini-linux-x64-cpu"]
    cuda = builds["mini-linux-arm64-cuda"]
    assert cuda["toolchain"] == "gcc-cross-linux-aarch64" and cuda["cuda"] == "13.5"
    assert cuda["compilers"]["aarch64-linux-gnu-gcc"].count(".") == 2
    assert set(cuda["tools"]) == {"cmake", "ninja"}
    assert "-ffile-prefix-map=<llama.cpp>=llama.cpp" in cuda["flags"]["CMAKE_C_FLAGS"]
    assert "-Xcompiler=-ffile-prefix-map=<cuda>=cuda" in cuda["flags"]["CMAKE_CUDA_FLAGS"]
    assert cuda["prefix_maps"]["<llama.cpp>"] == "the llama.cpp source tree"
    assert cuda["cmake_cache"]["CMAKE_CUDA_ARCHITECTURES"] == "120;121"
    deps = {d["name"]: d for d in st["predicate"]["buildDefinition"]["resolvedDependencies"]}
    nvcc = deps["mini-linux-arm64-cuda: cuda_nvcc 13.5.37 (linux-x86_64, host)"]
    assert nvcc["uri"] == "nvidia-cuda-nvcc==13.5.37" and len(nvcc["digest"]["sha256"]) == 64


SOURCE = "#include <stdio.h>\nvoid where(void) { puts(__FILE__); }\n"


@pytest.mark.parametrize("mapped", [False, True], ids=["unmapped", "mapped"])
def test_verify_refuses_a_binary_naming_the_build_host(tmp_path, mapped):
    """A real shared library compiled from a source under a cache directory: without a prefix map
    its ``__FILE__`` names the cache, and verify refuses it naming the file and the path; with the
    map it names ``llama.cpp/...`` and passes."""
    require_tools("gcc")
    cache = tmp_path / "cache"
    src = cache / "sources" / "tree" / "ggml" / "where.c"
    src.parent.mkdir(parents=True)
    src.write_text(SOURCE)
    out = tmp_path / "bundle"
    out.mkdir()
    argv = ["gcc", "-O2", "-shared", "-fPIC", str(src), "-o", str(out / "libwhere.so")]
    if mapped:
        argv.insert(1, f"-ffile-prefix-map={cache / 'sources' / 'tree'}=llama.cpp")
    subprocess.run(argv, check=True, timeout=120)
    policy = VerifyPolicy(os="linux", arch="x64", host_paths=(("download cache", str(cache)),))
    report = verify_path(out, policy)
    if mapped:
        assert report.ok, report.lines()
        assert b"llama.cpp/ggml/where.c" in (out / "libwhere.so").read_bytes()
    else:
        assert [(f.file, f.check) for f in report.failures] == [("libwhere.so", "host-path")]
        assert f"names the build host's download cache {str(cache)!r}" in report.lines()[0]


def test_verify_release_rebuild_refuses_a_source_commit_its_repository_lacks_and_other_spec_files(release, tmp_path):
    """``verify-release --rebuild`` proves the source before building (issue 40, item 4): the
    stand-in's path pin names a made-up commit (0123...), which its source repository (here a
    local git server holding the stand-in's tree, ``BUNDLEGRAPH_SOURCE_URL``) does not have, so the
    rebuild is refused naming the commit and the URL, and nothing is built. (A rebuild that passes,
    and a substituted tree, are in test_rebuild_source.py: a mix release of real commits.) A spec
    file that is not the one the release was built from is refused first, naming it and both
    digests."""
    require_tools("git")
    from gitkit import GitServer, standin_repository

    where = tmp_path / "rebuild"
    with GitServer(tmp_path / "srv") as srv:
        standin_repository(srv, ())
        url = srv.url("minillama")
        r = graphrun.cli(
            ["verify-release", str(release.dist), "--rebuild", "mini-linux-x64-cpu", "--rebuild-dir", str(where)],
            bundles=release.bundles,
            workdir=release.work,
            BUNDLEGRAPH_SOURCE_URL=url,
        )
    assert r.returncode != 0
    commit = json.loads((release.dist / "llama-prebuilt-sha256.json").read_text())["source_commit"]
    assert f"--rebuild: commit {commit} cannot be fetched from {url}" in r.stderr, r.stdout[-3000:] + r.stderr
    assert not (where / "work" / "dist").exists()

    other = tmp_path / "bundles"
    shutil.copytree(release.bundles, other)
    leg = other / "mini-linux-x64-cpu.toml"
    leg.write_text(leg.read_text() + "\n# edited after the release\n")
    r = graphrun.cli(
        ["verify-release", str(release.dist), "--rebuild", "mini-linux-x64-cpu"], bundles=other, workdir=release.work
    )
    assert r.returncode != 0
    assert "not the spec files the release was built from" in r.stderr, r.stderr
    assert f"{leg}: sha256 " in r.stderr and "the release was built from" in r.stderr


OFF = [f"-D{k}=OFF" for k in ("GGML_NATIVE", "LLAMA_BUILD_TESTS", "LLAMA_BUILD_EXAMPLES", "LLAMA_BUILD_TOOLS")]
OFF += [f"-D{k}=OFF" for k in ("LLAMA_BUILD_SERVER", "LLAMA_CURL", "LLAMA_OPENSSL", "GGML_OPENMP")]


def test_ggml_s_commit_string_does_not_depend_on_how_the_tree_was_fetched(tmp_path):
    """Real ggml (the pinned llama.cpp tree, configured): in a git checkout
    with an uncommitted change its CMakeLists compiles ``<hash>-dirty`` into libggml-base; with the
    environment configure and build run in (:func:`without_git`) it says ``unknown``, as it does
    for the same tree from the release's source archive, which has no git metadata."""
    require_tools("git", "gcc", "g++")
    from conftest import require_input

    from bundlegraph.pipeline.compile.git_blind import without_git
    from bundlegraph.toolchains.tools import build_tools

    sdist = require_input("llama-sdist", unpack=True)
    tree = tmp_path / "checkout"
    # (the sdist's own .git file names a submodule directory it does not ship: a checkout of our own)
    shutil.copytree(next(sdist.glob("*/vendor/llama.cpp")), tree, ignore=shutil.ignore_patterns(".git"))
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", "-C", str(tree)]
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "tree"]):
        subprocess.run([*git, *args], check=True, capture_output=True, timeout=120)
    (tree / "ggml" / "CMakeLists.txt").write_text((tree / "ggml" / "CMakeLists.txt").read_text() + "\n# edited\n")
    cmake = str(build_tools().cmake.path)

    def commit_string(env: dict[str, str], name: str) -> str:
        out = subprocess.run(
            [cmake, "-S", str(tree), "-B", str(tmp_path / name), "-G", "Ninja", *OFF],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
        line = next(l for l in out.stdout.splitlines() if "ggml commit:" in l)
        return line.split("ggml commit:", 1)[1].strip()

    env = dict(os.environ, PATH=f"{Path(cmake).parent}{os.pathsep}{os.environ['PATH']}")
    assert commit_string(env, "seeing").endswith("-dirty")  # what git says of this checkout
    assert commit_string(without_git(env, tmp_path / "blind"), "blind") == "unknown"
