"""Read a source tree's commit and commit date from the git metadata it carries.

Handles a ``.git`` directory or a ``.git`` file (``gitdir: <path>``, as submodules and the
llama-cpp-python sdist's ``vendor/llama.cpp`` have). The commit object is read directly when
it is a loose object (zlib-compressed ``commit <len>\\0...``, git's object format); for packed
objects the ``git`` program is asked (``git log -1 --format=%H %ct``).
"""

from __future__ import annotations

import datetime as _dt
import re
import zlib
from pathlib import Path

from . import proc
from .lightclass import frozen


@frozen
class CommitInfo:
    """``commit`` (40 hex) and ``date`` (committer time, UTC-aware)."""

    commit: str
    date: _dt.datetime


def _gitdir(tree: Path) -> Path | None:
    dotgit = tree / ".git"
    if dotgit.is_dir():
        return dotgit
    if dotgit.is_file():
        text = dotgit.read_text(encoding="utf-8", errors="replace").strip()
        if text.startswith("gitdir:"):
            p = (tree / text.split(":", 1)[1].strip()).resolve()
            return p if p.is_dir() else None
    return None


def _resolve_head(gitdir: Path) -> str | None:
    head = (gitdir / "HEAD").read_text().strip()
    if re.fullmatch(r"[0-9a-f]{40}", head):
        return head
    if head.startswith("ref:"):
        ref = head.split(":", 1)[1].strip()
        f = gitdir / ref
        if f.is_file():
            return f.read_text().strip()
        packed = gitdir / "packed-refs"
        if packed.is_file():
            for line in packed.read_text().splitlines():
                parts = line.split()
                if len(parts) == 2 and parts[1] == ref:
                    return parts[0]
    return None


def read_commit(tree: str | Path) -> CommitInfo | None:
    """The commit checked out in ``tree``, or None when the tree carries no git metadata."""
    tree = Path(tree)
    gitdir = _gitdir(tree)
    if gitdir is None:
        return None
    commit = _resolve_head(gitdir)
    if commit is None:
        return None
    obj = gitdir / "objects" / commit[:2] / commit[2:]
    if obj.is_file():
        raw = zlib.decompress(obj.read_bytes())
        header, _, body = raw.partition(b"\0")
        if not header.startswith(b"commit "):
            return None
        m = re.search(rb"^committer .* (\d+) ([+-]\d{4})$", body, re.M)
        return CommitInfo(commit, _dt.datetime.fromtimestamp(int(m.group(1)), _dt.UTC)) if m else None
    if proc.which("git") is None:
        return None
    out = proc.run(
        ["git", "--git-dir", str(gitdir), "log", "-1", "--format=%H %ct", commit],
        capture=True,
        echo=False,
        check=False,
    ).output.strip()
    mt = re.fullmatch(r"([0-9a-f]{40}) (\d+)", out)
    return CommitInfo(mt.group(1), _dt.datetime.fromtimestamp(int(mt.group(2)), _dt.UTC)) if mt else None


def git(
    tree: Path, *args: str, log: Path, what: str, env: dict[str, str] | None = None, check: bool = True
) -> proc.Completed:
    """``git -C tree ARGS...``, captured, logged to ``log`` and not echoed (``what``: the step's
    name in messages, the git subcommand added: ``source: git fetch``). Raises as
    :func:`~bundlegraph.core.proc.run` does when ``check`` and git fails."""
    return proc.run(
        ["git", "-C", str(tree), *args],
        env=env,
        log=log,
        capture=True,
        check=check,
        echo=False,
        what=f"{what}: git {args[0]}",
    )
