"""A mix source (``[source] kind = "mix"``): an upstream build with pinned pull requests merged on
top, in order, with real git. What the source stage runs for a :class:`~..schemas.records.MixPin`.

1. The base: ``git fetch <url> refs/tags/<tag>``; the tag must name the pinned commit, and
   ``git archive --format=tar <commit>`` must have the pinned sha256 (the base is the bytes it
   was when pinned). Either difference is refused, naming both values.
2. Each pull request, in order: ``git fetch <url> refs/pull/<number>/head`` (GitHub's ref for a
   pull request's head; the tests' local git server serves the same refs). A head that is not
   the pinned sha is refused, naming both. Then ``git merge --no-ff`` of the pinned sha, made
   from the pin alone (:func:`merge_message`, :data:`IDENTITY`, the pinned head's own commit
   time, no user or system git configuration), so the same pins give the same merged commit on
   every machine; a pin's cosmetic ``title`` changes nothing. A conflict is refused, naming the
   pull request and the conflicting files.
3. The tree is checked out at the merged commit, ``.git`` beside it: the source's commit is the
   merge commit (:func:`bundlegraph.core.gitmeta.read_commit`), and :func:`ggml_tree` reads
   ``git rev-parse HEAD:ggml``, the ggml ABI key installers record.

Sources: git's documentation (``git-fetch``, ``git-merge``, ``git-archive``: "git archive behaves
differently when given a tree ID versus when given a commit ID or tag ID ... the commit time as
recorded in the referenced commit object is used as the modification time"), and GitHub's
"Checking out pull requests locally" (``refs/pull/<id>/head``).
"""

from __future__ import annotations

import os
from pathlib import Path

from ..core import gitmeta, proc
from ..core.errors import BundleGraphError, HashMismatch
from ..core.fsutil import sha256_file
from ..schemas.records import MixPin, PullPin

IDENTITY = {
    "GIT_AUTHOR_NAME": "bundlegraph",
    "GIT_AUTHOR_EMAIL": "bundlegraph@localhost",
    "GIT_COMMITTER_NAME": "bundlegraph",
    "GIT_COMMITTER_EMAIL": "bundlegraph@localhost",
    # a user's or the system's configuration (commit.gpgsign, merge.renames, a hook path) would
    # change the merge commit or its tree from machine to machine
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
}
"""Who merges, and with which configuration: fixed, so the merge commit does not depend on the machine."""


def merge_message(pr: PullPin) -> str:
    """The merge commit's message for ``pr``: ``Merge <repo>#<number> at <sha>``, the pin's
    ``repo#number:sha`` (what the mix tag hashes) and nothing else: a title is not part of it."""
    return f"Merge {pr.repo}#{pr.number} at {pr.sha}"


def _git(tree: Path, *args: str, log: Path, env: dict[str, str] | None = None, check: bool = True) -> proc.Completed:
    return gitmeta.git(tree, *args, log=log, what="source", env=env, check=check)


def _rev(tree: Path, ref: str, log: Path) -> str:
    return _git(tree, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", log=log).output.strip()


def archive_sha256(tree: Path, commit: str, log: Path) -> str:
    """sha256 of ``git archive --format=tar <commit>`` (the base's pin), written beside ``tree``
    and removed."""
    out = tree.parent / f".{tree.name}.base.tar"
    try:
        _git(tree, "archive", "--format=tar", "-o", str(out), commit, log=log)
        return sha256_file(out)
    finally:
        out.unlink(missing_ok=True)


def fetch_and_merge(pin: MixPin, tree: Path, log: Path, base: tuple[str, str] | None = None) -> tuple[str, str]:
    """Fetch the base and the pull requests of ``pin`` into a new repository at ``tree``, check
    them against their pins and merge them in order; returns ``(merged commit, the base
    archive's sha256)``. ``base``: ``(tag, commit)`` of another base than the pin's (``bundlegraph
    bump``: its archive's sha256 is computed, not checked). Raises :class:`BundleGraphError`
    naming a moved tag or head or a conflicting pull request and its files,
    :class:`HashMismatch` for a base whose tree is not the pinned bytes, and
    :class:`~bundlegraph.core.errors.ToolFailed` when git itself fails (an unreachable URL)."""
    tag, commit = base or (pin.base.tag, pin.base.commit)
    _git(tree, "init", "-q", log=log)
    _git(tree, "fetch", "-q", "--no-tags", pin.url, f"+refs/tags/{tag}:refs/bundlegraph/base", log=log)
    got = _rev(tree, "refs/bundlegraph/base", log)
    if got != commit:
        raise BundleGraphError(
            f"source: tag {tag} of {pin.url} is commit {got}, the pin ([source.base] commit) says {commit}"
        )
    sha = archive_sha256(tree, commit, log)
    if base is None and sha != pin.base.sha256:
        raise HashMismatch(
            f"source: the base {tag} ({commit[:12]}) archives to sha256 {sha}, the pin ([source.base] "
            f"sha256) says {pin.base.sha256}"
        )
    _git(tree, "checkout", "-q", "--detach", commit, log=log)
    for pr in pin.prs:
        _merge_one(tree, pin.url, pr, log)
    return _rev(tree, "HEAD", log), sha


def _merge_one(tree: Path, url: str, pr: PullPin, log: Path) -> None:
    ref = f"refs/bundlegraph/pr/{pr.number}"
    _git(tree, "fetch", "-q", "--no-tags", url, f"+refs/pull/{pr.number}/head:{ref}", log=log)
    head = _rev(tree, ref, log)
    if head != pr.sha:
        raise BundleGraphError(
            f"source: {pr.repo}#{pr.number}: its head is {head}, the pin says {pr.sha}; review the new commits and "
            f"pin the new head (or pin the reviewed one again once it is the head)"
        )
    when = _git(tree, "show", "-s", "--format=%cI", pr.sha, log=log).output.strip()
    env = {**os.environ, **IDENTITY, "GIT_AUTHOR_DATE": when, "GIT_COMMITTER_DATE": when}
    r = _git(
        tree,
        "merge",
        "--no-ff",
        "--no-edit",
        "--no-signoff",
        "--no-verify",
        "-m",
        merge_message(pr),
        pr.sha,
        log=log,
        env=env,
        check=False,
    )
    if r.returncode != 0:
        files = _git(tree, "diff", "--name-only", "--diff-filter=U", log=log, check=False).output.split()
        _git(tree, "merge", "--abort", log=log, check=False)
        raise BundleGraphError(
            f"source: {pr.repo}#{pr.number} ({pr.sha[:12]}) does not merge on top of what precedes it: "
            + (f"conflicts in {', '.join(files)}" if files else r.output.strip().splitlines()[-1:][0])
            + "; rebase the pull request or drop it from [[source.prs]]"
        )


def ggml_tree(tree: Path, log: Path) -> str | None:
    """``git rev-parse HEAD:ggml`` of ``tree`` (the tree id of its ``ggml/`` directory), None when
    it has no such directory or its git metadata cannot say (a shallow gitdir without trees)."""
    if not (tree / "ggml").is_dir() or proc.which("git") is None:
        return None
    r = _git(tree, "rev-parse", "--verify", "--quiet", "HEAD:ggml", log=log, check=False)
    out = r.output.strip()
    return out if r.returncode == 0 and len(out) == 40 else None


__all__ = ["IDENTITY", "archive_sha256", "fetch_and_merge", "ggml_tree", "merge_message"]
