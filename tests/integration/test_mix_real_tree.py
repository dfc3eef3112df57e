"""A mix source over real llama.cpp trees (issue 31): the base is the llama.cpp tree vendored by
``llama-cpp-python==0.3.35``, tagged as the release's upstream build, and the pull request is a
real change set: ``ggml/`` as ``llama-cpp-python==0.3.36`` (the main job's source) vendors it,
committed on a branch (upstream's ggml sync between the two). Served by ``git daemon``, the real
release's specs (``bundles/``) turned into a mix of the two: the source stage fetches, merges and
records the merge commit and the merged tree's ``ggml`` tree id, which is the pull request's.

The served repository (the base tree committed without its test models and docs, the pull
request's branch, packed by a bare clone) is the same bytes on every run (:data:`gitkit.FIXED` dates and identity), so it is
built once and kept in the bundlegraph cache (``test-inputs/mix-real-tree/<key>``), keyed by what
decides it: the two sdists' sha256 and :data:`RECIPE` (issue 41: building it took most of the
test's 623 s under load). What the test proves is unchanged: the source stage, with a cache of
its own, fetches the base and the pull request over ``git daemon``, checks the base archive's
sha256, merges and records, every run."""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Callable
from pathlib import Path

import graphrun
import realinputs
from conftest import linux_only, require_input, require_tools
from gitkit import FIXED, GitServer, archive_sha256, git

from bundlegraph.core.fsutil import atomic_dir, locked
from bundlegraph.schemas.records import PullPin, mix_tag

ROOT = Path(__file__).resolve().parents[2]
LEG = "linux-arm64-cpu"
RECIPE = 2
"""The version of :func:`_served`'s recipe: raise it when the repository it builds changes."""
NOT_SERVED = ("models", "docs")
"""Top-level folders of the base tree left out of the served repository: the vocab test models
(75 MB of GGUF) and the docs (38 MB), 113 of the tree's ~210 MB, which every run's fetch would
pack, index and check out again. Neither is read by a build or by what this test checks (the
merge of a change to ``ggml/`` on the base's ``src/``)."""


def _not_served(root: Path) -> Callable[[str, list[str]], list[str]]:
    """``shutil.copytree``'s ignore for a copy of ``root``: the sdist's ``.git`` pointer anywhere,
    :data:`NOT_SERVED` at the top only (``src/models/`` is source)."""
    return lambda folder, names: [n for n in names if n == ".git" or (Path(folder) == root and n in NOT_SERVED)]


pytestmark = linux_only


def _vendored(unpacked: Path) -> Path:
    return next(unpacked.glob("llama_cpp_python-*/vendor/llama.cpp"))


def _served(old: Path, new: Path) -> tuple[Path, dict[str, str]]:
    """``(root, facts)``: ``root/llama.cpp``, a bare repository of ``old`` tagged ``b11642`` with
    pull request 1 (``ggml/`` as ``new`` vendors it, over ``old``'s), built once per key
    (module docstring) in the bundlegraph cache; ``facts``: the commits (``base``, ``1``), the pull
    request's ``ggml`` tree id, the base archive's sha256 and the patch's size. git daemon only
    reads it (upload-pack), so the shared copy is served as it is."""
    key = hashlib.sha256(json.dumps([old.parents[2].name, new.parents[2].name, RECIPE, FIXED]).encode())
    d = realinputs.cache_root() / "mix-real-tree" / key.hexdigest()[:16]
    with locked(d.with_name(d.name + ".lock"), what="test input mix-real-tree"):
        if not (d / "facts.json").is_file():
            with atomic_dir(d) as tmp:
                # the change set: ggml/ of 0.3.36 over ggml/ of 0.3.35, as git sees it
                scratch = tmp / "scratch"
                shutil.copytree(old, scratch, ignore=shutil.ignore_patterns(".git"))
                git("init", "-q", str(scratch))
                git("add", "-A", "ggml", cwd=scratch)
                git("commit", "-q", "-m", "ggml of 0.3.35", cwd=scratch)
                shutil.rmtree(scratch / "ggml")
                shutil.copytree(new / "ggml", scratch / "ggml")
                git("add", "-A", "ggml", cwd=scratch)
                patch = tmp / "ggml-0.3.36.patch"
                patch.write_text(git("diff", "--cached", "--binary", cwd=scratch) + "\n", encoding="utf-8")
                shutil.rmtree(scratch)
                base_tree = tmp / "base"
                shutil.copytree(old, base_tree, ignore=_not_served(old))
                shas = GitServer(tmp / "srv").repository("llama.cpp", base_tree, "b11642", {1: patch})
                shutil.rmtree(tmp / "llama.cpp-work")
                shutil.rmtree(base_tree)
                bare = tmp / "srv" / "llama.cpp"
                facts = {
                    **shas,
                    "pr_ggml": git("rev-parse", f"{shas['1']}:ggml", cwd=bare),
                    "base_sha256": archive_sha256(bare, shas["base"]),
                    "patch_bytes": str(patch.stat().st_size),
                }
                (tmp / "facts.json").write_text(json.dumps(facts, indent=1), encoding="utf-8")
    facts = json.loads((d / "facts.json").read_text(encoding="utf-8"))
    bare = d / "srv" / "llama.cpp"
    # the cached copy still holds what the facts say (a damaged one fails here, by name)
    for ref, want in (("refs/tags/b11642^{commit}", facts["base"]), ("refs/pull/1/head", facts["1"])):
        assert git("rev-parse", ref, cwd=bare) == want, f"{bare}: {ref} is not {want}; delete {d} to rebuild it"
    return d / "srv", facts


def test_a_real_ggml_change_merged_on_a_real_tree(tmp_path):
    require_tools("git")
    old = _vendored(require_input("llama-sdist-0.3.35", unpack=True))
    new = _vendored(require_input("llama-sdist", unpack=True))
    root, facts = _served(old, new)
    assert int(facts["patch_bytes"]) > 10_000  # a real change, not a token one
    shas = {"base": facts["base"], "1": facts["1"]}
    pr_ggml = facts["pr_ggml"]

    with GitServer(root) as srv:
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
            + f'sha256 = "{facts["base_sha256"]}"\n'
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
