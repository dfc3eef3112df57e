"""A mix source over real llama.cpp trees (issue 31): the base is the llama.cpp tree vendored by
``llama-cpp-python==0.3.35``, tagged as the release's upstream build, and the pull request is a
real change set: ``ggml/`` as ``llama-cpp-python==0.3.36`` (the main job's source) vendors it,
committed on a branch (upstream's ggml sync between the two). Served by ``git daemon``, the real
release's specs (``bundles/``) turned into a mix of the two: the source stage fetches, merges and
records the merge commit and the merged tree's ``ggml`` tree id, which is the pull request's."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import graphrun
from conftest import linux_only, require_input, require_tools
from gitkit import GitServer, archive_sha256, git

from bundlegraph.schemas.records import PullPin, mix_tag

ROOT = Path(__file__).resolve().parents[2]
LEG = "linux-arm64-cpu"

pytestmark = linux_only


def _vendored(unpacked: Path) -> Path:
    return next(unpacked.glob("llama_cpp_python-*/vendor/llama.cpp"))


def test_a_real_ggml_change_merged_on_a_real_tree(tmp_path):
    require_tools("git")
    old = _vendored(require_input("llama-sdist-0.3.35", unpack=True))
    new = _vendored(require_input("llama-sdist", unpack=True))
    ggml_patch = tmp_path / "ggml-0.3.36.patch"
    # the change set: ggml/ of 0.3.36 over ggml/ of 0.3.35, as git sees it
    scratch = tmp_path / "scratch"
    shutil.copytree(old, scratch, ignore=shutil.ignore_patterns(".git"))
    git("init", "-q", str(scratch))
    git("add", "-A", "ggml", cwd=scratch)
    git("commit", "-q", "-m", "ggml of 0.3.35", cwd=scratch)
    shutil.rmtree(scratch / "ggml")
    shutil.copytree(new / "ggml", scratch / "ggml")
    git("add", "-A", "ggml", cwd=scratch)
    ggml_patch.write_text(git("diff", "--cached", "--binary", cwd=scratch) + "\n", encoding="utf-8")
    assert ggml_patch.stat().st_size > 10_000  # a real change, not a token one
    base_tree = tmp_path / "base"
    shutil.copytree(old, base_tree, ignore=shutil.ignore_patterns(".git"))

    with GitServer(tmp_path / "srv") as srv:
        shas = srv.repository("llama.cpp", base_tree, "b11642", {1: ggml_patch})
        bare = srv.root / "llama.cpp"
        pr_ggml = git("rev-parse", f"{shas['1']}:ggml", cwd=bare)
        pins = [PullPin(repo="ggml-org/llama.cpp", number=1, sha=shas["1"])]
        bundles = tmp_path / "bundles"
        shutil.copytree(ROOT / "bundles", bundles)
        rel = bundles / "release.toml"
        text = rel.read_text(encoding="utf-8")
        head = text.split("\n[source]\n")[0]
        head = head.replace('tag = "b11642"', f'tag = "{mix_tag("b11642", pins)}"')
        head = "\n".join(l for l in head.splitlines() if not l.startswith("upstream_tag"))
        rel.write_text(
            head
            + "\n[source]\n"
            + 'kind = "mix"\n'
            + f'url = "{srv.url("llama.cpp")}"\n'
            + "[source.base]\n"
            + 'tag = "b11642"\n'
            + f'commit = "{shas["base"]}"\n'
            + f'sha256 = "{archive_sha256(bare, shas["base"])}"\n'
            + "[[source.prs]]\n"
            + 'repo = "ggml-org/llama.cpp"\n'
            + "number = 1\n"
            + f'sha = "{shas["1"]}"\n'
            + 'title = "ggml: sync (the change between llama-cpp-python 0.3.35 and 0.3.36)"\n',
            encoding="utf-8",
        )
        work = tmp_path / "work"
        work.mkdir()
        r = graphrun.doit([f"source:{LEG}"], bundles=bundles, workdir=work, BUNDLEGRAPH_CACHE=str(tmp_path / "cache"))
        assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-3000:]
    rec = json.loads((work / "build" / LEG / "source.json").read_text())
    tree = Path(rec["tree"])
    assert rec["kind"] == "mix" and rec["commit"] not in (shas["base"], shas["1"])
    assert rec["ggml_tree"] == pr_ggml  # the merged tree's ggml is the pull request's
    assert (tree / "ggml" / "CMakeLists.txt").read_bytes() == (new / "ggml" / "CMakeLists.txt").read_bytes()
    assert (tree / "src" / "llama.cpp").read_bytes() == (old / "src" / "llama.cpp").read_bytes()  # the base's
