"""NVIDIA's wheels as a toolkit source: fetch each locked wheel with ``pip download`` into the
content-addressed blob cache (checked against the lock's sha256 and size), and write the lock.

``pip download --no-deps --only-binary=:all: --python-version 3.12 --platform <tag>...`` is the
only client used (pip's own index configuration applies). A wheel is a zip whose files sit under
``nvidia/cu<major>/{bin,include,lib,nvvm,cccl}`` (see :mod:`bundlegraph.toolkit.layout`).
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

from ..core import paths, proc
from ..core.download import adopt
from ..core.errors import HashMismatch, ToolkitError
from ..core.fsutil import locked, sha256_file
from ..schemas.archs import CudaVersion
from .components import PIP_TAGS, RELEASE_VERSIONED, WHEELS
from .lockfile import WheelLock, WheelRow

PY_VERSION = "3.12"


def _pip_download(requirement: str, platform: str, dest: Path, log: Path | None) -> Path:
    tags = PIP_TAGS.get(platform)
    if not tags:
        raise ToolkitError(f"no NVIDIA wheel platform tag is known for {platform}; known: {', '.join(PIP_TAGS)}")
    argv = [
        proc.python_exe(),
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--only-binary=:all:",
        "--disable-pip-version-check",
        "--python-version",
        PY_VERSION,
    ]
    for t in tags:
        argv += ["--platform", t]
    argv += ["-d", str(dest), requirement]
    proc.run(argv, log=log, what=f"pip download {requirement} for {platform}")
    files = [p for p in dest.iterdir() if p.is_file() and p.name.endswith(".whl")]
    if len(files) != 1:
        raise ToolkitError(
            f"pip download {requirement} for {platform} gave {[p.name for p in files]}, expected one wheel"
        )
    return files[0]


def fetch_wheel(row: WheelRow, log: Path | None = None) -> Path:
    """The verified cache blob of a locked wheel (``pip download`` on a cache miss).

    Raises :class:`HashMismatch` (naming the wheel, expected and actual sha256 and size; the
    file is deleted) or :class:`ToolFailed` when pip fails."""
    blob = paths.blob_path(row.sha256)
    with locked(blob.parent / f".{row.sha256}.lock", what=f"wheel {row.filename}"):
        if blob.is_file():
            return blob
        with tempfile.TemporaryDirectory(prefix="bg-wheel-", dir=_tmp_root()) as d:
            got = _pip_download(row.requirement, row.platform, Path(d), log)
            if got.name != row.filename:
                raise ToolkitError(
                    f"pip download {row.requirement} for {row.platform} gave {got.name}, "
                    f"the lock pins {row.filename}; rerun `bundlegraph lock-wheels` if intended"
                )
            size = got.stat().st_size
            actual = sha256_file(got)
            if actual != row.sha256 or size != row.size:
                got.unlink()
                raise HashMismatch(
                    f"wheel {row.filename} ({row.requirement}): expected sha256 {row.sha256} "
                    f"size {row.size}, got sha256 {actual} size {size}"
                )
            return adopt(got, row.sha256, what=f"wheel {row.filename}")


def _tmp_root() -> Path:
    d = paths.cache_root() / "tmp"
    d.mkdir(parents=True, exist_ok=True)
    return d


def default_requirement(component: str, cuda: str) -> str:
    """``nvidia-cuda-nvcc==13.5.*`` for release-versioned components; ``nvidia-cublas>=13,<14``
    for components with their own version line (cccl, cublas)."""
    if component not in WHEELS:
        raise ToolkitError(f"component {component} has no NVIDIA wheel; wheels exist for {', '.join(WHEELS)}")
    major = CudaVersion(cuda).major
    if component in RELEASE_VERSIONED:
        return f"{WHEELS[component]}=={cuda}.*"
    return f"{WHEELS[component]}>={major},<{major + 1}"


_WHEEL_RE = re.compile(r"^(?P<dist>[^-]+)-(?P<ver>[^-]+)-")


def lock_wheels(
    cuda: str, wanted: list[tuple[str, str]], requirements: dict[str, str], log: Path | None = None
) -> WheelLock:
    """Resolve each (component, platform) in ``wanted`` with pip, cache the wheel and return the
    lock (versions from ``requirements``, else :func:`default_requirement`)."""
    reqs = dict(requirements)
    rows = []
    for comp, plat in sorted(set(wanted)):
        req = reqs.setdefault(comp, default_requirement(comp, cuda))
        with tempfile.TemporaryDirectory(prefix="bg-lock-", dir=_tmp_root()) as d:
            got = _pip_download(req, plat, Path(d), log)
            m = _WHEEL_RE.match(got.name)
            version = m.group("ver") if m else "?"
            if version.startswith("0.0.0"):
                raise ToolkitError(f"pip download {req} for {plat} gave the placeholder wheel {got.name}")
            sha = sha256_file(got)
            size = got.stat().st_size
            tag = got.name[:-4].split("-")[-1]
            rows.append(
                WheelRow(
                    component=comp,
                    platform=plat,
                    tag=tag,
                    requirement=f"{WHEELS[comp]}=={version}",
                    version=version,
                    filename=got.name,
                    sha256=sha,
                    size=size,
                )
            )
            adopt(got, sha, what=f"wheel {got.name}")
    return WheelLock(cuda=cuda, requirements=reqs, wheel=rows)
