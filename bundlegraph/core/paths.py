"""Where bundlegraph keeps things.

- cache (shared by runs and checkouts): ``$BUNDLEGRAPH_CACHE``, else platformdirs'
  user cache dir (``~/.cache/bundlegraph`` on Linux, ``%LOCALAPPDATA%\\bundlegraph\\Cache``
  on Windows). Content-addressed: ``blobs/sha256/<hex>``, ``sources/<digest>/``,
  ``toolkits/<name>/``.
- work directory (per checkout): ``$BUNDLEGRAPH_WORKDIR``, else the directory holding
  ``dodo.py`` / the current directory. Holds ``build/<leg>/``, ``dist/`` and
  ``.bundlegraph/`` (doit's sqlite3 state, stamps, locks).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import platformdirs

from . import memo, settings

_RESOLVED: dict[tuple[Any, ...], Path] = memo.table("paths.resolved")
"""Resolved directories by what decides them (the variable, the current directory when the
path is relative, the home and cache variables platformdirs reads): every task's key asks for
them many times (issue 20: ``resolve()`` is a ``realpath`` per call)."""

_HOME_VARS = ("HOME", "XDG_CACHE_HOME", "LOCALAPPDATA", "USERPROFILE")
"""What ``platformdirs.user_cache_dir`` reads on Linux and Windows."""


def _deciding(env: str | None) -> tuple[Any, ...]:
    """What a directory named by ``env`` (None: the default) resolves by, besides ``env``."""
    return () if env and os.path.isabs(os.path.expanduser(env)) else (os.getcwd(),)


def cache_root() -> Path:
    """The shared cache directory (created on demand)."""
    env = settings.get("CACHE")
    k = ("cache", env, *_deciding(env), *(() if env else (os.environ.get(v) for v in _HOME_VARS)))
    if k not in _RESOLVED:
        p = Path(env) if env else Path(platformdirs.user_cache_dir("bundlegraph", appauthor=False))
        _RESOLVED[k] = p.expanduser().resolve()
    return _RESOLVED[k]


def blob_path(sha256: str) -> Path:
    """``<cache>/blobs/sha256/<hex>``: where a verified download of that hash lives."""
    return cache_root() / "blobs" / "sha256" / sha256.lower()


def workdir() -> Path:
    """The per-checkout work directory (``$BUNDLEGRAPH_WORKDIR`` or the current directory)."""
    env = settings.get("WORKDIR")
    k = ("work", env, *_deciding(env))
    if k not in _RESOLVED:
        _RESOLVED[k] = Path(env).expanduser().resolve() if env else Path.cwd().resolve()
    return _RESOLVED[k]


def choose(bundles: str | os.PathLike[str] | None, root: Path) -> tuple[Path, Path]:
    """``(bundles directory, work directory)`` of a run: the one rule ``doit`` and ``bundlegraph``
    both follow (issue 29: ``bundlegraph --bundles DIR`` once used DIR's parent as the work
    directory where ``doit bundles=DIR`` used the checkout).

    - bundles: ``bundles`` as given (``doit bundles=DIR``, ``bundlegraph --bundles DIR``), else
      ``$BUNDLEGRAPH_BUNDLES``, else ``<root>/bundles``;
    - work directory: ``$BUNDLEGRAPH_WORKDIR``, else ``root``: the directory the command runs in
      (doit runs in the folder of ``dodo.py``; ``bundlegraph`` in the current directory). Never
      derived from the bundles directory.

    Sets ``BUNDLEGRAPH_WORKDIR`` when it was unset, so every later :func:`workdir` (and any
    process started from here) agrees. Both paths are absolute and resolved."""
    env = settings.get("BUNDLES")
    chosen = Path(bundles) if bundles else (Path(env) if env and env.strip() else root / "bundles")
    os.environ.setdefault("BUNDLEGRAPH_WORKDIR", str(root.resolve()))
    return chosen.expanduser().resolve(), workdir()


def _in_workdir(*parts: str) -> Path:
    w = workdir()
    k = ("in", str(w), *parts)  # every task's key asks for these (a Path is built once)
    p = _RESOLVED.get(k)
    if p is None:
        p = _RESOLVED[k] = w.joinpath(*parts)
    return p


def state_dir() -> Path:
    """``<workdir>/.bundlegraph``: doit's sqlite3 file, stamps, locks, logs."""
    return _in_workdir(".bundlegraph")


def build_dir(leg: str) -> Path:
    """``<workdir>/build/<leg>``."""
    return _in_workdir("build", leg)


def dist_dir() -> Path:
    """``<workdir>/dist``: bundles, manifest, SHA index."""
    return _in_workdir("dist")
