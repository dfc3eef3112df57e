"""cmake and ninja, pinned so every host runs the same versions.

Default: the PyPI wheels installed in bundlegraph's own environment (``pip install
bundlegraph[tools]`` pins ``cmake==4.4.5`` and ``ninja==1.13.2``); their executables sit beside
the interpreter (``<venv>/bin`` or ``<venv>\\Scripts``). ``BUNDLEGRAPH_TOOLS=system`` uses the
``cmake``/``ninja`` on PATH instead, and ``BUNDLEGRAPH_CMAKE`` / ``BUNDLEGRAPH_NINJA`` name
explicit executables (:mod:`bundlegraph.core.settings`). The version of each (read from the wheel's metadata without starting a
process, else from ``<tool> --version``) is part of configure's action key.

Errors: :class:`ToolMissing` naming the tool and how to install it; :class:`BundleGraphError`
when a wheel tool's version differs from the pin.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import Any

from ..core import memo, paths, proc, settings
from ..core.errors import BundleGraphError, ToolMissing
from ..core.fsutil import atomic_write_json
from ..core.lightclass import frozen

PINS = {"cmake": "4.4.5", "ninja": "1.13.2"}
"""The versions ``bundlegraph[tools]`` installs (``pyproject.toml``); a wheel must match."""

MIN_CMAKE = (3, 25)


@frozen
class Tool:
    """One build tool: ``name`` (cmake/ninja), ``path`` (absolute executable), ``version``
    (``"4.4.5"``) and ``origin`` (``wheel``, ``system`` or ``env:<VAR>``)."""

    name: str
    path: Path
    version: str
    origin: str

    def key(self) -> dict[str, Any]:
        return {"version": self.version, "origin": self.origin}


@frozen
class BuildTools:
    """The pinned ``cmake`` and ``ninja`` a configure/build uses."""

    cmake: Tool
    ninja: Tool

    def key(self) -> dict[str, Any]:
        """Action-key inputs: versions and origins (never paths, so checkouts share keys)."""
        return {"cmake": self.cmake.key(), "ninja": self.ninja.key()}


_SEEN: dict[str, str] = memo.table("tools.versions")  # this process's answers of _version_by_run, by ident
# this process's build_tools() answers, by what decides them
_FOUND: dict[tuple[Any, ...], BuildTools] = memo.table("tools.found")


def _version_by_run(path: Path, name: str) -> str:
    """``<tool> --version`` (first x.y.z), cached by path+size+mtime in the state directory so a
    no-op graph run does not start a process per task, and in this process so the file is read
    once (issue 20)."""
    st = path.stat()
    cache = paths.state_dir() / "tool-versions.json"
    ident = f"{path.as_posix()}|{st.st_size}|{st.st_mtime_ns}"
    if ident in _SEEN:
        return _SEEN[ident]
    try:
        known = json.loads(cache.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        known = {}
    if ident not in known:
        out = proc.run([str(path), "--version"], capture=True, echo=False, what=f"{name} --version").output
        m = re.search(r"(\d+\.\d+(?:\.\d+)?)", out)
        if not m:
            raise BundleGraphError(f"{path}: cannot read a version from '{name} --version' output: {out[:200]!r}")
        known[ident] = m.group(1)
        atomic_write_json(cache, known)
    _SEEN[ident] = str(known[ident])
    return _SEEN[ident]


def find_tool(name: str, env: dict[str, str] | None = None) -> Tool:
    """Locate ``name`` (``cmake`` or ``ninja``) as described in the module docstring."""
    env = dict(os.environ if env is None else env)
    var = f"BUNDLEGRAPH_{name.upper()}"
    if env.get(var):
        p = proc.which(env[var], env)
        if p is None:
            raise ToolMissing(f"{var}={env[var]}: no such executable")
        path = Path(p).resolve()
        return Tool(name, path, _version_by_run(path, name), f"env:{var}")
    if settings.get("TOOLS", env) == "system":
        p = proc.which(name, env)
        if p is None:
            raise ToolMissing(f"BUNDLEGRAPH_TOOLS=system: '{name}' is not on PATH; install {name} or unset it")
        path = Path(p).resolve()
        return Tool(name, path, _version_by_run(path, name), "system")
    exe = proc.which(str(Path(sys.executable).parent / name))
    version = wheel_version(name)
    if exe is None or version is None:
        raise ToolMissing(
            f"{name}: the pinned {name}=={PINS[name]} wheel is not installed in {sys.prefix}; "
            f"run '{sys.executable} -m pip install {name}=={PINS[name]}' (or pip install -e .[tools]), "
            f"or set BUNDLEGRAPH_TOOLS=system to use the {name} on PATH"
        )
    if version != PINS[name]:
        raise BundleGraphError(
            f"{name}: the installed wheel is {version}, bundlegraph pins {PINS[name]}; "
            f"run '{sys.executable} -m pip install {name}=={PINS[name]}'"
        )
    return Tool(name, Path(exe), version, "wheel")


def wheel_version(name: str) -> str | None:
    """The version of the installed distribution ``name`` (``cmake`` -> ``"4.4.5"``), or None.

    Read from the name of its ``<name>-<version>.dist-info`` directory on ``sys.path`` (the
    layout pip installs, PEP 376 / PEP 427's binary distribution format), first match in path
    order as :func:`importlib.metadata.version` searches; that function (which imports the
    email parser, ~17 ms) is asked only when no such directory is found (an egg-info install)."""
    prefix = f"{name.lower().replace('-', '_')}-"
    for entry in sys.path:
        try:
            with os.scandir(entry or ".") as it:
                for e in it:
                    n = e.name
                    if n.endswith(".dist-info") and n.lower().startswith(prefix):
                        return n[len(prefix) : -len(".dist-info")]
        except OSError:
            continue
    import importlib.metadata

    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def build_tools(env: dict[str, str] | None = None) -> BuildTools:
    """Both tools; cmake must be at least 3.25 (``CMAKE_CUDA_ARCHITECTURES`` with ``a``
    suffixes and ``cmake_language(DEFER)`` are used). Found once per process for the same
    deciding variables (``BUNDLEGRAPH_CMAKE``/``_NINJA``/``_TOOLS``, ``PATH``, the state
    directory), since every task's key asks (issue 20)."""
    e = os.environ if env is None else env
    decided = (
        tuple(e.get(k) for k in ("BUNDLEGRAPH_CMAKE", "BUNDLEGRAPH_NINJA", "BUNDLEGRAPH_TOOLS", "PATH")),
        str(paths.state_dir()),
        sys.executable,
    )
    if decided not in _FOUND:
        cmake = find_tool("cmake", env)
        if tuple(int(x) for x in cmake.version.split(".")[:2]) < MIN_CMAKE:
            raise BundleGraphError(f"{cmake.path}: cmake {cmake.version} is older than 3.25; use the pinned wheel")
        _FOUND[decided] = BuildTools(cmake, find_tool("ninja", env))
    return _FOUND[decided]
