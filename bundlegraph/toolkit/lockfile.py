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

import tomllib
from pathlib import Path
from typing import Annotated

from pydantic import Field, ValidationError

from ..errors import ToolkitError
from ..fsutil import atomic_write_bytes
from ..schemas.base import Strict


class WheelRow(Strict):
    """One locked wheel (see the module docstring for the fields)."""

    component: str
    platform: str
    tag: str
    requirement: str
    version: str
    filename: Annotated[str, Field(pattern=r"^[A-Za-z0-9_.+-]+\.whl$")]
    sha256: Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
    size: Annotated[int, Field(gt=0)]


class WheelLock(Strict):
    """A whole lock file."""

    version: int = 1
    cuda: str
    requirements: dict[str, str] = {}
    wheel: list[WheelRow] = []

    def row(self, component: str, platform: str) -> WheelRow | None:
        """The row of ``component`` on ``platform``, or None."""
        for r in self.wheel:
            if r.component == component and r.platform == platform:
                return r
        return None


def load_lock(path: Path) -> WheelLock:
    """Read and check a lock file. Raises :class:`ToolkitError` naming the file and key."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ToolkitError(f"{path}: wheels lock file is missing; write it with `bundlegraph lock-wheels`") from None
    except tomllib.TOMLDecodeError as e:
        raise ToolkitError(f"{path}: not valid TOML: {e}") from None
    try:
        lock = WheelLock.model_validate(data)
    except ValidationError as e:
        lines = []
        for err in e.errors():
            loc = ".".join(str(p) for p in err["loc"])
            lines.append(f"{path}: {loc}: {err['msg']}")
        raise ToolkitError("wheels lock file refused:\n  " + "\n  ".join(lines)) from None
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
    out = ["# Written by `bundlegraph lock-wheels`: do not edit the hashes by hand.",
           "# Change a version in [requirements] and rerun the command to re-pin.",
           f"version = {lock.version}", f"cuda = {_q(lock.cuda)}", "", "[requirements]"]
    out += [f"{k} = {_q(v)}" for k, v in sorted(lock.requirements.items())]
    for r in sorted(lock.wheel, key=lambda r: (r.platform, r.component)):
        out += ["", "[[wheel]]"]
        for k in ("component", "platform", "tag", "requirement", "version", "filename", "sha256"):
            out.append(f"{k} = {_q(getattr(r, k))}")
        out.append(f"size = {r.size}")
    return "\n".join(out) + "\n"


def write_lock(path: Path, lock: WheelLock) -> None:
    """Write ``lock`` atomically (after validating it again)."""
    WheelLock.model_validate(lock.model_dump())
    atomic_write_bytes(path, dump_lock(lock).encode())
