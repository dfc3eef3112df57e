"""GitHub Actions hand-off: a Markdown step summary and ``::error`` annotations.

- :func:`write_summary`: when ``GITHUB_STEP_SUMMARY`` names a file, append a table with one row
  per bundle in ``dist/``: bundle, size (MiB), sha256, fatbin SMs (from its info JSON's verify
  findings), and time per stage (seconds recorded in each task's stamp, :mod:`bundlegraph.core.state`).
- :func:`write_cache_summary`: the same, one table row per build: the leg, the compiler cache and
  its version, hits (remote/local), misses, uncacheable calls and the build's seconds.
- :func:`annotate`: when ``GITHUB_ACTIONS=true``, print each verify failure as
  ``::error file=<bundle>::<message>`` (workflow-command syntax; ``%``, CR and LF escaped).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any, TextIO

from ..core.report import escape
from .bundle.archive import read_member

STAGES = ("configure", "build", "verify", "merge", "package")


def annotate(failures: list[str], file: str | os.PathLike[str], *, out: TextIO | None = None) -> int:
    """Print one ``::error file=...::`` line per failure (only on GitHub Actions). Returns the count."""
    if os.environ.get("GITHUB_ACTIONS") != "true":
        return 0
    out = out or sys.stdout
    name = escape(Path(file).as_posix()).replace(",", "%2C").replace(":", "%3A")
    for f in failures:
        print(f"::error file={name}::{escape(f)}", file=out, flush=True)
    return len(failures)


def _seconds(leg: str) -> str:
    from ..core import state

    stamps = {st: state.load(f"{st}:{leg}") for st in STAGES}
    parts = [f"{st} {s.seconds:.0f}s" for st, s in stamps.items() if s and isinstance(s.seconds, (int, float))]
    return ", ".join(parts) or "-"


def summary_rows(dist: Path, index: dict[str, Any], info_file: str) -> list[list[str]]:
    """Rows ``[bundle, size, sha256, SMs, times]`` for the ``bundle`` entries of ``index``."""
    rows = []
    for name, e in sorted(index.get("artifacts", {}).items()):
        if e.get("kind") != "bundle" or not (dist / name).is_file():
            continue
        raw = read_member(dist / name, info_file)
        info = json.loads(raw) if raw else {}
        sms = (
            ",".join(str(s) for s in (info.get("verify") or {}).get("fatbin_sms") or info.get("supported_sms") or [])
            or "-"
        )
        size = f"{(dist / name).stat().st_size / 2**20:.1f} MiB"
        rows.append([name, size, f"`{e['sha256']}`", sms, _seconds(info.get("leg", ""))])
    return rows


def write_summary(dist: Path, index_file: Path, info_file: str) -> bool:
    """Append the bundle table to ``$GITHUB_STEP_SUMMARY``; False when it is not set."""
    if not os.environ.get("GITHUB_STEP_SUMMARY"):
        return False
    index = json.loads(index_file.read_text(encoding="utf-8"))
    lines = [
        f"### Bundles of {index.get('release_tag', '?')}",
        "",
        "| bundle | size | sha256 | SMs | time per stage |",
        "|---|---|---|---|---|",
    ]
    lines += ["| " + " | ".join(r) + " |" for r in summary_rows(dist, index, info_file)]
    return _append_summary(lines)


def _append_summary(lines: list[str]) -> bool:
    """Append ``lines`` and a blank line to ``$GITHUB_STEP_SUMMARY``; False when it is not set."""
    target = os.environ.get("GITHUB_STEP_SUMMARY")
    if not target:
        return False
    with open(target, "a", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n\n")
    return True


def append_summary(lines: list[str]) -> bool:
    """:func:`_append_summary` for the commands (a line such as why a scheduled step did
    nothing); False when ``GITHUB_STEP_SUMMARY`` is not set."""
    return _append_summary(lines)


def write_missed_summary(leg: str, shards: int, missed: list[str], *, failed: bool = False) -> bool:
    """Append to ``$GITHUB_STEP_SUMMARY`` that the final compile of ``leg`` (a leg of ``shards``
    shards) missed the compiler cache for ``missed`` (ninja outputs), naming each; ``failed``:
    they were objects the merged shards wrote, and the compile step fails for it. False when the
    summary is not set."""
    lines = [
        f"### build:{leg}: the final compile missed {len(missed)} object(s)" + (" (FAILED)" if failed else ""),
        "",
        f"The {shards} shard jobs should have compiled every object into the compiler cache; these were "
        + (
            "written by the merged shards, yet not taken from the cache (missed or uncacheable): the compile "
            "step fails (check the launcher, the shards' ccache entries and `shard-merge`'s output):"
            if failed
            else "compiled by the final compile instead (slower, not wrong):"
        ),
        "",
    ]
    lines += [f"- `{m}`" for m in missed]
    return _append_summary(lines)


def write_cache_summary(stats: dict[str, Any]) -> bool:
    """Append one build's compiler-cache figures (:func:`bundlegraph.pipeline.compile.compiler_cache.build_stats`
    plus ``leg`` and ``seconds``) to ``$GITHUB_STEP_SUMMARY``; False when it is not set."""
    lines = [
        f"### Compiler cache of build:{stats['leg']}",
        "",
        "| leg | cache | hits (remote/local) | misses | uncacheable | build |",
        "|---|---|---|---|---|---|",
        f"| {stats['leg']} | {stats['launcher']} {stats['version'].split()[-1] if stats['version'] else ''} "
        f"| {stats['hits']} ({stats['remote_hits']}/{stats['local_hits']}) | {stats['misses']} "
        f"| {stats['uncacheable']} | {stats['seconds']:.0f}s |",
    ]
    return _append_summary(lines)
