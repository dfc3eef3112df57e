"""The wheels lock file (``bundles/locks/cuda-<ver>-wheels.toml``): which NVIDIA wheel provides
each (component, platform), pinned by file name, sha256 and size.

Written only by the maintainer command ``bundlegraph lock-wheels`` (nobody edits hashes by
hand) and checked on every load: a row without a 64-hex sha256 or a positive size is refused,
naming the file and the row. Shape::

    version = 1
    cuda = "13.5"
    [requirements]                # component -> pip requirement (human-chosen versions)
    cuda_nvcc = "nvidia-cuda-nvcc==13.5.37"
    [[wheel]]                     # one per (component, platform)
    component = "cuda_nvcc"
    platform = "linux-x86_64"     # NVIDIA redist platform key
    tag = "manylinux2014_x86_64"  # pip --platform tag asked for
    requirement = "nvidia-cuda-nvcc==13.5.37"
    version = "13.5.37"
    filename = "nvidia_cuda_nvcc-13.5.37-py3-none-manylinux2014_x86_64....whl"
    sha256 = "f5c4..."
    size = 47028279               # bytes
"""

from __future__ import annotations

import re
from dataclasses import field, fields
from pathlib import Path

from ..core.errors import ToolkitError
from ..core.fsutil import atomic_write_bytes, parsed_once
from ..core.lightclass import frozen
from .lockread import is_sha256, is_size, read_toml, row_shape

_FILENAME = re.compile(r"^[A-Za-z0-9_.+-]+\.whl$")


@frozen
class WheelRow:
    """One locked wheel (see the module docstring for the fields; ``size`` in bytes)."""

    component: str
    platform: str
    tag: str
    requirement: str
    version: str
    filename: str
    sha256: str
    size: int


@frozen
class WheelLock:
    """A whole lock file."""

    cuda: str
    version: int = 1
    requirements: dict[str, str] = field(default_factory=dict)
    wheel: list[WheelRow] = field(default_factory=list)

    def row(self, component: str, platform: str) -> WheelRow | None:
        """The row of ``component`` on ``platform``, or None."""
        return next((r for r in self.wheel if r.component == component and r.platform == platform), None)


def _row_problems(i: int, row: object) -> list[str]:
    """What is wrong with ``wheel[i]`` of a lock file's data (one ``wheel.<i>.<key>: ...`` line each)."""
    where, names = f"wheel.{i}", [f.name for f in fields(WheelRow)]
    out = row_shape(where, row, names)
    if not isinstance(row, dict):
        return out
    for k in names:
        v = row.get(k)
        if v is None:
            out.append(f"{where}.{k}: required key is missing")
        elif k == "size":
            if not is_size(v):
                out.append(f"{where}.size: expected a positive whole number of bytes, got {v!r}")
        elif not isinstance(v, str):
            out.append(f"{where}.{k}: expected text, got {v!r}")
        elif k == "filename" and not _FILENAME.match(v):
            out.append(f"{where}.filename: {v!r} is not a wheel file name (letters, digits, _.+- and .whl)")
        elif k == "sha256" and not is_sha256(v):
            out.append(f"{where}.sha256: {v!r} is not 64 lowercase hex digits")
    return out


def lock_problems(data: object) -> list[str]:
    """Every problem of a lock file's parsed TOML (``key.path: message`` each); empty when it
    is a valid lock (the shape in the module docstring; unknown keys are errors)."""
    if not isinstance(data, dict):
        return ["(top level): expected a table"]
    out = []
    for k in data:
        if k not in ("version", "cuda", "requirements", "wheel"):
            out.append(f"{k}: unknown key; allowed: version, cuda, requirements, wheel")
    if not isinstance(data.get("cuda"), str):
        out.append(
            'cuda: required text key (the CUDA version, e.g. "13.5")'
            if "cuda" not in data
            else f"cuda: expected text, got {data['cuda']!r}"
        )
    v = data.get("version", 1)
    if not isinstance(v, int) or isinstance(v, bool):
        out.append(f"version: expected a whole number, got {v!r}")
    reqs = data.get("requirements", {})
    if not isinstance(reqs, dict) or not all(isinstance(x, str) for x in reqs.values()):
        out.append('requirements: expected a table of component = "pip requirement"')
    rows = data.get("wheel", [])
    if not isinstance(rows, list):
        out.append("wheel: expected an array of [[wheel]] tables")
    else:
        for i, r in enumerate(rows):
            out += _row_problems(i, r)
    return out


def load_lock(path: Path) -> WheelLock:
    """Read and check a lock file, once per process while the file is unchanged (every CUDA
    leg's key reads its lock; :func:`~bundlegraph.core.fsutil.parsed_once`). Raises
    :class:`ToolkitError` naming the file and key."""
    return parsed_once(path, _load_lock)


def _load_lock(path: Path) -> WheelLock:
    data = read_toml(path, "wheels lock file", "write it with `bundlegraph lock-wheels`")
    problems = lock_problems(data)
    if problems:
        raise ToolkitError("wheels lock file refused:\n  " + "\n  ".join(f"{path}: {p}" for p in problems))
    lock = WheelLock(
        cuda=data["cuda"],
        version=data.get("version", 1),
        requirements=dict(data.get("requirements", {})),
        wheel=[WheelRow(**r) for r in data.get("wheel", [])],
    )
    seen = set()
    for i, r in enumerate(lock.wheel):
        if (r.component, r.platform) in seen:
            raise ToolkitError(f"{path}: wheel[{i}]: a second row for {r.component} on {r.platform}")
        seen.add((r.component, r.platform))
    return lock


def _q(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def dump_lock(lock: WheelLock) -> str:
    """TOML text of ``lock`` (stable order: rows sorted by platform, component)."""
    out = [
        "# Written by `bundlegraph lock-wheels`: do not edit the hashes by hand.",
        "# Change a version in [requirements] and rerun the command to re-pin.",
        f"version = {lock.version}",
        f"cuda = {_q(lock.cuda)}",
        "",
        "[requirements]",
    ]
    out += [f"{k} = {_q(v)}" for k, v in sorted(lock.requirements.items())]
    for r in sorted(lock.wheel, key=lambda r: (r.platform, r.component)):
        out += ["", "[[wheel]]"]
        for k in ("component", "platform", "tag", "requirement", "version", "filename", "sha256"):
            out.append(f"{k} = {_q(getattr(r, k))}")
        out.append(f"size = {r.size}")
    return "\n".join(out) + "\n"


def write_lock(path: Path, lock: WheelLock) -> None:
    """Write ``lock`` atomically (after checking it as :func:`load_lock` would). Raises
    :class:`ToolkitError` naming the path and each problem."""
    import dataclasses

    problems = lock_problems(dataclasses.asdict(lock))
    if problems:
        raise ToolkitError(f"{path}: refusing to write a lock that would not load:\n  " + "\n  ".join(problems))
    atomic_write_bytes(path, dump_lock(lock).encode())
