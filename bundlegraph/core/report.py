"""The one way library code talks to the person running it.

- :func:`say`: a progress or result line on stdout (``source: ... commit ...``,
  ``[build:leg] 42% [130/313] ...``); hidden at ``BUNDLEGRAPH_VERBOSITY=quiet``.
- :func:`detail`: a line only at ``BUNDLEGRAPH_VERBOSITY=verbose`` (the commands ``proc.run``
  echoes are shown at ``normal`` too: they are what a user copies to reproduce a step).
- :func:`warn` / :func:`error`: stderr, always; on GitHub Actions (``GITHUB_ACTIONS=true``) an
  error is also a ``::error::`` workflow command, so it is annotated on the run.
- :func:`task`: a context manager around one graph task: its start line, its end line with the
  time taken and the outcome, and on GitHub Actions a ``::group::``/``::endgroup::`` pair that
  folds the task's output in the log.

Workflow-command syntax (``::group::``, ``::error::``, ``%``/CR/LF escaped) is GitHub's
("Workflow commands for GitHub Actions"). Commands (``bundlegraph ...``) print their own output.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

LEVELS = {"quiet": 0, "normal": 1, "verbose": 2}


def _level() -> int:
    from . import settings

    return LEVELS[settings.get("VERBOSITY") or "normal"]


def _gha() -> bool:
    return os.environ.get("GITHUB_ACTIONS") == "true"


def escape(s: str) -> str:
    """``s`` as a workflow command's value: ``%``, CR and LF escaped."""
    return s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def say(msg: str) -> None:
    """A progress/result line (stdout), unless quiet."""
    if _level() >= 1:
        print(msg, flush=True)


def detail(msg: str) -> None:
    """A line shown only at verbose."""
    if _level() >= 2:
        print(msg, flush=True)


def warn(msg: str, *, annotate: bool = False) -> None:
    """``warning: msg`` on stderr (always); with ``annotate`` on GitHub Actions also a
    ``::warning::`` annotation (shown on the run's page)."""
    print(f"warning: {msg}", file=sys.stderr, flush=True)
    if annotate and _gha():
        print(f"::warning::{escape(msg)}", flush=True)


def error(msg: str) -> None:
    """``msg`` on stderr (always); on GitHub Actions also an ``::error::`` annotation."""
    print(msg, file=sys.stderr, flush=True)
    if _gha():
        print(f"::error::{escape(msg)}", flush=True)


@contextmanager
def task(name: str) -> Iterator[dict[str, Any]]:
    """Fold one task's output (GitHub Actions) and time it. The body sets ``outcome`` in the
    yielded dict (``done``/``skipped``/``failed``) and, for ``skipped``, ``why``; the end line
    is ``[name] done in 1.2s`` / ``[name] SKIPPED after 0.1s: why`` / ``[name] FAILED after
    3.4s`` (stderr)."""
    t0 = time.monotonic()
    state = {"outcome": "failed", "why": ""}
    if _gha():
        print(f"::group::{name}", flush=True)
    try:
        yield state
    finally:
        if _gha():
            print("::endgroup::", flush=True)
        took = time.monotonic() - t0
        if state["outcome"] == "done":
            say(f"[{name}] done in {took:.1f}s")
        elif state["outcome"] == "skipped":
            say(f"[{name}] SKIPPED after {took:.1f}s: {state['why']}")
        else:
            error(f"[{name}] FAILED after {took:.1f}s")


__all__ = ["LEVELS", "detail", "error", "say", "task", "warn"]
