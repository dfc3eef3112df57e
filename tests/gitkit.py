"""A real git server on 127.0.0.1 for the mix-source tests: ``git daemon`` serving bare
repositories from a directory (read-only, every repository exported), and a repository made from
a tree with pull requests as ``refs/pull/<n>/head``, the refs GitHub serves for a pull request.

    with GitServer(tmp) as srv:
        repo = srv.repository("minillama", tree, tag="b42", prs={1: patch})
        srv.url("minillama")   # git://127.0.0.1:<port>/minillama
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
from pathlib import Path

FIXED = {
    "GIT_AUTHOR_NAME": "stand-in",
    "GIT_AUTHOR_EMAIL": "stand-in@localhost",
    "GIT_COMMITTER_NAME": "stand-in",
    "GIT_COMMITTER_EMAIL": "stand-in@localhost",
    "GIT_AUTHOR_DATE": "2026-10-01T00:00:00Z",
    "GIT_COMMITTER_DATE": "2026-10-01T00:00:00Z",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
}
"""One identity and date for every commit the tests make: the same repository, byte for byte,
on every run (so its commits have the same ids)."""


def git(*args: str, cwd: Path | None = None, date: str | None = None) -> str:
    env = {**os.environ, **FIXED}
    if date:
        env |= {"GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date}
    r = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)}: {r.stderr.strip()}")
    return r.stdout.strip()


class GitServer:
    """``git daemon`` over ``root`` (bare repositories ``<root>/<name>``) on a free loopback port."""

    def __init__(self, root: Path):
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> GitServer:
        self.proc = subprocess.Popen(
            [
                "git",
                "daemon",
                "--reuseaddr",
                "--export-all",
                "--listen=127.0.0.1",
                f"--port={self.port}",
                f"--base-path={self.root}",
                str(self.root),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    return self
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("git daemon did not start listening")

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(10)

    def url(self, name: str) -> str:
        return f"git://127.0.0.1:{self.port}/{name}"

    def repository(self, name: str, tree: Path, tag: str, prs: dict[int, Path]) -> dict[str, str]:
        """A bare repository ``name``: ``tree`` committed and tagged ``tag``, and for each
        pull request number a branch from that commit with the patch applied, published as
        ``refs/pull/<n>/head``. Returns ``{"base": sha, <n>: head sha, ...}`` (keys as text)."""
        work = self.root.parent / f"{name}-work"
        git("init", "-q", "-b", "main", str(work))
        for p in tree.rglob("*"):
            if p.is_file():
                dest = work / p.relative_to(tree)
                dest.parent.mkdir(parents=True, exist_ok=True)
                dest.write_bytes(p.read_bytes())
        git("add", "-A", cwd=work)
        git("commit", "-q", "-m", f"{tag}", cwd=work)
        git("tag", tag, cwd=work)
        shas = {"base": git("rev-parse", "HEAD", cwd=work)}
        for n, patch in sorted(prs.items()):
            git("checkout", "-q", "-b", f"pr{n}", shas["base"], cwd=work)
            git("apply", "--index", str(patch), cwd=work)
            git("commit", "-q", "-m", f"pull request {n}: {patch.stem}", cwd=work, date="2026-10-02T00:00:00Z")
            shas[str(n)] = git("rev-parse", "HEAD", cwd=work)
        bare = self.root / name
        git("clone", "-q", "--bare", str(work), str(bare))
        for n in prs:
            git("update-ref", f"refs/pull/{n}/head", shas[str(n)], cwd=bare)
        return shas

    def add_build(self, name: str, tag: str, patch: Path | None = None, date: str = "2026-10-05T00:00:00Z") -> str:
        """Commit ``patch`` (or an empty commit) on top of the main branch as upstream's next
        build ``tag``, and publish the branch and the tag; returns its commit."""
        work = self.root.parent / f"{name}-work"
        git("checkout", "-q", "main", cwd=work)
        if patch is not None:
            git("apply", "--index", str(patch), cwd=work)
            git("commit", "-q", "-m", tag, cwd=work, date=date)
        else:
            git("commit", "-q", "--allow-empty", "-m", tag, cwd=work, date=date)
        git("tag", tag, cwd=work)
        git("fetch", "-q", str(work), "+main:main", f"+refs/tags/{tag}:refs/tags/{tag}", cwd=self.root / name)
        return git("rev-parse", "HEAD", cwd=work)

    def move_head(self, name: str, number: int, extra_file: str) -> str:
        """Push one more commit onto pull request ``number`` (its head moves); returns the new head."""
        work = self.root.parent / f"{name}-work"
        git("checkout", "-q", f"pr{number}", cwd=work)
        (work / extra_file).write_text("one more commit\n", encoding="utf-8")
        git("add", "-A", cwd=work)
        git("commit", "-q", "-m", "one more commit", cwd=work, date="2026-10-03T00:00:00Z")
        head = git("rev-parse", "HEAD", cwd=work)
        git("fetch", "-q", str(work), f"+pr{number}:refs/pull/{number}/head", cwd=self.root / name)
        return head


def archive_sha256(bare: Path, commit: str) -> str:
    """sha256 of ``git archive --format=tar <commit>`` (what a mix pin's base sha256 is)."""
    import hashlib

    out = subprocess.run(["git", "-C", str(bare), "archive", "--format=tar", commit], capture_output=True, check=True)
    return hashlib.sha256(out.stdout).hexdigest()


PRS = Path(__file__).resolve().parent / "data" / "minillama-prs"
"""The stand-in's pull requests (tests/data/minillama-prs: 1 adds a program, 2 conflicts with 1)."""
MINILLAMA = Path(__file__).resolve().parent / "data" / "minillama"


def standin_repository(srv: GitServer, prs: tuple[int, ...] = (1,)) -> dict[str, str]:
    """The stand-in (tests/data/minillama) as repository ``minillama`` of ``srv``, tagged ``b42``,
    with the pull requests ``prs`` of :data:`PRS` (:meth:`GitServer.repository`'s shas)."""
    patches = {1: PRS / "1-diffusion-gemma-visual-server.patch", 2: PRS / "2-conflicts-with-1.patch"}
    return srv.repository("minillama", MINILLAMA, "b42", {n: patches[n] for n in prs})


def mix_release_text(
    url: str,
    base: tuple[str, str, str],
    prs: list[tuple[int, str]],
    *,
    default_legs: list[str],
    tag: str | None = None,
    title: str | None = None,
    comments: bool = False,
) -> str:
    """A stand-in ``release.toml`` of kind ``mix``: ``base`` is ``(tag, commit, sha256)``, ``prs``
    ``(number, sha)`` of ``example/minillama``; the tag derived from them unless ``tag`` says
    otherwise; ``comments`` adds two comment lines (what ``bump`` must keep)."""
    from bundlegraph.schemas.records import PullPin, mix_tag

    pins = [PullPin(repo="example/minillama", number=n, sha=s) for n, s in prs]
    lines = [
        *(["# the stand-in as a mix release"] if comments else []),
        f'tag = "{tag or mix_tag(base[0], pins)}"',
        'paired_runtime_tag = "b42"',
        'source_repo = "example/minillama"',
        "default_legs = [" + ", ".join(f'"{leg}"' for leg in default_legs) + "]",
        "",
        "[source]",
        'kind = "mix"',
        f'url = "{url}"',
        "",
        "[source.base]" + ("  # moved by bundlegraph bump" if comments else ""),
        f'tag = "{base[0]}"',
        f'commit = "{base[1]}"',
        f'sha256 = "{base[2]}"',
    ]
    for p in pins:
        lines += ["", "[[source.prs]]", f'repo = "{p.repo}"', f"number = {p.number}", f'sha = "{p.sha}"']
        if title:
            lines.append(f'title = "{title}"')
    return "\n".join(lines) + "\n"
