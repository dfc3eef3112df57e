"""Tracking upstream llama.cpp: which ``bNNNN`` build is the newest (:func:`newest_build`), and
moving a mix release's base to it (:func:`bump`).

Upstream's release list (GitHub's REST API, ``GET /repos/{owner}/{repo}/releases``, newest first)
holds, since 2026-08, one ``vX.Y.Z`` release that ``/releases/latest`` points at and whose only
asset is ``nightly-tag.txt`` (the ``bNNNN`` tag it stands for), and every ``bNNNN`` build as a
prerelease. So "the newest build" is read from the list, never from ``/releases/latest``:

- drafts are skipped (only their authors see them anyway);
- a ``^b\\d+$`` tag is a build; prereleases count;
- a ``v*`` release is followed through its ``nightly-tag.txt`` to the build it names (which is
  looked up by tag, ``GET /releases/tags/{tag}``, when the list does not hold it). Every rule
  applies to *that build*, never to the pointer: a build that is a draft, or has no published
  release (deleted; GitHub's by-tag lookup does not find drafts), is skipped whatever points to
  it, and its age is its own ``published_at`` (never the pointer's);
- a build younger than the age floor (``--min-age-hours``) is skipped, with the reason;
- the newest is the highest build number; its commit is ``GET /repos/{repo}/commits/{tag}``.

:func:`bump` never moves a base to an older build than release.toml's unless asked
(``allow_older``): a schedule that once saw a newer build must not release an older one.
"""

from __future__ import annotations

import datetime as _dt
import re
from dataclasses import field
from pathlib import Path
from typing import Any

from ..core.errors import BundleGraphError
from ..core.lightclass import frozen, mutable

BUILD_RE = re.compile(r"^b(\d+)$")
POINTER_ASSET = "nightly-tag.txt"


@frozen
class UpstreamBuild:
    """One upstream build: ``tag`` (``b11650``), its ``number``, ``commit``, when it was
    published, and ``via`` (the ``v*`` release that pointed at it, if that is how it was found)."""

    tag: str
    number: int
    commit: str
    published_at: _dt.datetime
    via: str | None = None

    def age_hours(self, now: _dt.datetime) -> float:
        return (now - self.published_at).total_seconds() / 3600


@mutable
class Scan:
    """What :func:`newest_build` found: the ``build`` chosen and each release ``skipped`` with why."""

    build: UpstreamBuild | None
    skipped: list[str] = field(default_factory=list)


def parse_time(text: str) -> _dt.datetime:
    """A GitHub API timestamp (``2026-12-01T12:00:00Z``, ISO 8601) as an aware datetime."""
    return _dt.datetime.fromisoformat(text.replace("Z", "+00:00"))


def _when(text: str | None) -> _dt.datetime | None:
    return parse_time(text) if text else None


def published_build(gh: Any, tag: str) -> tuple[int, _dt.datetime] | None:
    """``tag``'s build number and when its release was published, from ``GET
    /releases/tags/{tag}``; None when it has no published release (deleted, or a draft: GitHub
    finds only published releases by tag) or no publication date. ``tag`` must match
    :data:`BUILD_RE`. Raises :class:`BundleGraphError` when the API fails otherwise."""
    m = BUILD_RE.match(tag)
    assert m, tag
    rel = gh.call("GET", f"/releases/tags/{tag}", ok=(200, 404))
    if not isinstance(rel, dict) or rel.get("draft") or "tag_name" not in rel:
        return None
    when = _when(rel.get("published_at"))
    return None if when is None else (int(m.group(1)), when)


def newest_build(gh: Any, now: _dt.datetime, min_age_hours: float = 0.0) -> Scan:
    """The newest ``bNNNN`` build of ``gh``'s repository at least ``min_age_hours`` old (see the
    module docstring). ``gh``: a :class:`bundlegraph.release.github_release.GitHub`. Raises
    :class:`BundleGraphError` when the API fails; a repository with no such build gives
    ``Scan(None, skipped)``."""
    releases = gh.paged("/releases")
    skipped: list[str] = []
    builds: dict[str, tuple[int, _dt.datetime | None]] = {}
    drafts: set[str] = set()
    pointers: list[tuple[str, str]] = []  # (v* tag, the build its nightly-tag.txt names)
    for r in releases:
        tag = str(r.get("tag_name", ""))
        if r.get("draft"):
            skipped.append(f"{tag}: a draft")
            drafts.add(tag)
            continue
        m = BUILD_RE.match(tag)
        if m:
            builds.setdefault(tag, (int(m.group(1)), _when(r.get("published_at"))))
            continue
        if tag.startswith("v"):
            asset = next((a for a in r.get("assets", []) if a.get("name") == POINTER_ASSET), None)
            if asset is None:
                skipped.append(f"{tag}: a v* release without {POINTER_ASSET}")
                continue
            named = gh.request("GET", asset["browser_download_url"], headers=gh.h, follow_redirects=True).text.strip()
            if not BUILD_RE.match(named):
                skipped.append(f"{tag}: its {POINTER_ASSET} says {named[:40]!r}, not a bNNNN tag")
                continue
            pointers.append((tag, named))
            continue
        skipped.append(f"{tag}: not a bNNNN build")
    # a pointer is resolved after the whole list is read: the build it names is judged as itself
    # (a draft listed after the pointer is still a draft)
    via: dict[str, str] = {}
    for tag, named in pointers:
        if named in drafts:
            skipped.append(f"{tag}: names {named}, a draft: not a build to release")
            continue
        if named not in builds:
            found = published_build(gh, named)
            if found is None:
                skipped.append(f"{tag}: names {named}, which has no published release (deleted, or a draft)")
                continue
            builds[named] = found
        via.setdefault(named, tag)
    floor = _dt.timedelta(hours=min_age_hours)
    for tag, (n, when) in sorted(builds.items(), key=lambda kv: -kv[1][0]):
        if when is None:
            skipped.append(f"{tag}: no publication date")
            continue
        if now - when < floor:
            skipped.append(
                f"{tag}: published {(now - when).total_seconds() / 3600:.1f} h ago, younger than the "
                f"{min_age_hours:g} h floor"
            )
            continue
        commit = gh.call("GET", f"/commits/{tag}")["sha"]
        return Scan(UpstreamBuild(tag, n, commit, when, via.get(tag)), skipped)
    return Scan(None, skipped)


@frozen
class Bumped:
    """What :func:`bump` wrote: the new ``tag``, the ``base`` build, the base archive's
    ``sha256``, the merged commit and the release file."""

    tag: str
    base: UpstreamBuild
    sha256: str
    merged: str
    file: Path


def rewrite_release(text: str, tag: str, base_tag: str, commit: str, sha256: str) -> str:
    """``release.toml``'s text with the top-level ``tag`` and ``[source.base]``'s ``tag``,
    ``commit`` and ``sha256`` replaced, everything else (comments, pins, order) kept. Raises
    :class:`BundleGraphError` naming what it could not find."""
    lines = text.splitlines(keepends=True)
    table = ""
    done: set[str] = set()
    for i, line in enumerate(lines):
        s = line.split("#", 1)[0].strip()  # (a table header may carry a comment)
        if s.startswith("["):
            table = s.strip("[]").strip()
            continue
        m = re.match(r"^(\s*)(tag|commit|sha256)(\s*=\s*)\"[^\"]*\"(.*)$", line.rstrip("\r\n"))
        if not m:
            continue
        key = m.group(2)
        new = None
        if table == "" and key == "tag":
            new, what = tag, "tag"
        elif table == "source.base" and key in ("tag", "commit", "sha256"):
            new = {"tag": base_tag, "commit": commit, "sha256": sha256}[key]
            what = f"source.base.{key}"
        if new is not None:
            end = line[len(line.rstrip("\r\n")) :]
            lines[i] = f'{m.group(1)}{key}{m.group(3)}"{new}"{m.group(4)}{end}'
            done.add(what)
    missing = {"tag", "source.base.tag", "source.base.commit", "source.base.sha256"} - done
    if missing:
        raise BundleGraphError(f"release.toml: bump found no {', '.join(sorted(missing))} to rewrite")
    return "".join(lines)


class OlderBuild(BundleGraphError):
    """A bump to an older build than release.toml's base, not asked for (``--allow-older``)."""


def check_not_older(f: Path, current: str, build: str, allow_older: bool) -> None:
    """Raise :class:`OlderBuild` naming both builds when ``build`` (``bNNNN``) is older than
    ``current``, the base in ``f``, unless ``allow_older``."""
    if not allow_older and int(build[1:]) < int(current[1:]):
        raise OlderBuild(
            f"{f}: [source.base] tag is {current}; bump refuses to move it back to the older {build} "
            f"(pass --allow-older to do so on purpose)"
        )


def bump(bundles: Path, build: UpstreamBuild, log: Path, allow_older: bool = False) -> Bumped:
    """Move the mix release of ``bundles`` onto ``build``: fetch it and every pinned pull
    request, merge them in a scratch repository (a pull request that no longer merges is
    refused, naming it and its files; nothing is written), compute the base archive's sha256,
    and rewrite ``release.toml`` (the new base, the tag derived from the kept pins), checked by
    loading it again. A ``build`` older than the current base is refused (:class:`OlderBuild`,
    before any fetch) unless ``allow_older``. Raises :class:`BundleGraphError`."""
    import tempfile

    from ..core.fsutil import atomic_write_bytes
    from ..pipeline.mix import fetch_and_merge
    from ..schemas.records import MixPin, mix_tag
    from ..specs.loader import load_matrix

    f = bundles / "release.toml"
    rel = load_matrix(bundles).release
    if not isinstance(rel.source, MixPin):
        raise BundleGraphError(
            f"{f}: bump moves a mix source's base; this release's source is kind '{rel.source.kind}'"
        )
    pin = rel.source
    check_not_older(f, pin.base.tag, build.tag, allow_older)
    with tempfile.TemporaryDirectory(prefix="bundlegraph-bump-") as d:
        tree = Path(d) / "tree"
        tree.mkdir()
        merged, sha256 = fetch_and_merge(pin, tree, log, base=(build.tag, build.commit))
    tag = mix_tag(build.tag, pin.prs)
    old = f.read_bytes()
    new = rewrite_release(old.decode("utf-8"), tag, build.tag, build.commit, sha256)
    atomic_write_bytes(f, new.encode("utf-8"))
    try:
        load_matrix(bundles)
    except BundleGraphError:
        atomic_write_bytes(f, old)
        raise
    return Bumped(tag, build, sha256, merged, f)


__all__ = [
    "BUILD_RE",
    "Bumped",
    "OlderBuild",
    "Scan",
    "UpstreamBuild",
    "bump",
    "check_not_older",
    "newest_build",
    "parse_time",
    "published_build",
    "rewrite_release",
]
