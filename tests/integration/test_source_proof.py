"""The source proof of ``verify-release --rebuild`` (issue 40, item 4), against real git: the tree
id computed from a source archive's members is the one git computes for the committed tree
(executable bits, a symlink, names whose order git sorts as directories), and a changed, added or
removed file, or a lost executable bit, gives another tree, named by path."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import require_tools
from gitkit import git

from bundlegraph.pipeline.bundle.archive import entries_from_tree, write_tar_gz
from bundlegraph.release.source_proof import archive_listing, commit_listing, differing

pytestmark = pytest.mark.skipif(os.name == "nt", reason="makes a symlink")


def _tree(root: Path) -> Path:
    src = root / "src"
    for rel, text in {
        "CMakeLists.txt": "project(x)\n",
        "a.b": "dot\n",
        "a/b.c": "in a directory whose name sorts after a.b as git sorts trees\n",
        "a-b/c": "x\n",
        "scripts/run.sh": "#!/bin/sh\necho hi\n",
        "ggml/src/ggml.c": "int ggml;\n",
        "tools/server/public/index.html.gz": "\x00\x01binary",
    }.items():
        p = src / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
    (src / "scripts/run.sh").chmod(0o755)
    os.symlink("scripts/run.sh", src / "run")
    return src


def _archive(src: Path, dest: Path) -> Path:
    return write_tar_gz(dest, entries_from_tree(src, prefix="llama.cpp-source-commit-x"), 1_700_000_000)


def test_the_archive_s_tree_id_is_git_s_and_every_kind_of_change_is_named(tmp_path):
    require_tools("git")
    src = _tree(tmp_path)
    git("init", "-q", str(src))
    git("add", "-A", cwd=src)
    git("commit", "-q", "-m", "tree", cwd=src)
    commit = git("rev-parse", "HEAD", cwd=src)
    want, theirs = commit_listing(src, commit, tmp_path / "log")
    assert want == git("rev-parse", "HEAD^{tree}", cwd=src)
    sub, in_sub = commit_listing(src, commit, tmp_path / "log", "ggml")  # a pin's subdirectory
    assert sub == git("rev-parse", "HEAD:ggml", cwd=src) and list(in_sub) == ["src/ggml.c"]

    got, ours = archive_listing(_archive(src, tmp_path / "same.tar.gz"))
    assert got == want and differing(theirs, ours) == [] and len(ours) == 8

    (src / "ggml/src/ggml.c").write_text("int ggml; /* changed */\n", encoding="utf-8")
    (src / "scripts/run.sh").chmod(0o644)
    (src / "a.b").unlink()
    (src / "tools/extra.c").write_text("planted\n", encoding="utf-8")
    (src / ".gitignore").write_text("*.c\n", encoding="utf-8")  # git add would hide tools/extra.c
    got, ours = archive_listing(_archive(src, tmp_path / "changed.tar.gz"))
    assert got != want
    assert differing(theirs, ours) == [".gitignore", "a.b", "ggml/src/ggml.c", "scripts/run.sh", "tools/extra.c"]


def test_a_commit_is_fetched_by_its_id_from_a_git_server_and_an_unknown_one_is_named(tmp_path):
    """What ``--rebuild`` does for a release of one commit: ``git fetch --depth 1 <url> <commit>``
    from a real ``git daemon``; a commit the server does not have is one line naming it and the URL."""
    require_tools("git")
    from gitkit import GitServer, standin_repository

    from bundlegraph.core.errors import TOOL_FAILED, DownloadError, exit_code
    from bundlegraph.release.source_proof import fetch_commit

    with GitServer(tmp_path / "srv") as srv:
        shas = standin_repository(srv, ())
        fetch_commit(tmp_path / "a", srv.url("minillama"), shas["base"], tmp_path / "log")
        tree, listing = commit_listing(tmp_path / "a", shas["base"], tmp_path / "log")
        assert tree == git("rev-parse", f"{shas['base']}^{{tree}}", cwd=srv.root / "minillama")
        assert "CMakeLists.txt" in listing
        with pytest.raises(DownloadError) as e:
            fetch_commit(tmp_path / "b", srv.url("minillama"), "0" * 40, tmp_path / "log")
    assert str(e.value).startswith(f"--rebuild: commit {'0' * 40} cannot be fetched from {srv.url('minillama')} (")
    # a failed download is exit 4 (README "Exit codes"), also where nothing answers: the server is gone
    assert exit_code(e.value) == TOOL_FAILED
    with pytest.raises(DownloadError) as gone:
        fetch_commit(tmp_path / "c", srv.url("minillama"), shas["base"], tmp_path / "log")
    assert str(gone.value).startswith(f"--rebuild: commit {shas['base']} cannot be fetched from {srv.url('minillama')}")
    assert "\n" not in str(gone.value) and exit_code(gone.value) == TOOL_FAILED
