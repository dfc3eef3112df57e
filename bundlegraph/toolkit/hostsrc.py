"""Third toolkit source: a toolkit already installed on the host (``cuda.toolkit.path``, else
``$CUDA_PATH``, else ``/usr/local/cuda``), for developers' machines and hosts with no registry.

Used read-only: nothing is written into it. Its version is read from its ``version.json``
(NVIDIA's form: ``{"cuda": {"name": "CUDA SDK", "version": "13.0.2"}, ...}``); a toolkit installed
without it (some distribution packages and container images ship none) falls back to
``include/cuda.h``'s ``#define CUDA_VERSION 13000`` (``major * 1000 + minor * 10``, as the CUDA
Driver API reference documents ``CUDA_VERSION``), giving ``13.0``. It is checked with
the same required-file list as installed toolkits, and a receipt is written *beside our cache
entry* (``<cache>/toolkits/<name>/bundlegraph-toolkit.json``) with its path, version and the
sha256 of every file the build uses (the required files and ``bin/nvcc.profile``), so a change
to the host toolkit changes the task's inputs and is noticed.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from ..core.errors import ToolkitError
from ..core.fsutil import atomic_write_json, sha256_file
from ..core.report import say
from ..schemas.archs import CudaVersion
from ..toolchains.cuda import target_dir
from . import validate
from .identity import ComponentSet
from .ref import CudaToolkit

_CUDA_VERSION_RE = re.compile(r"^\s*#\s*define\s+CUDA_VERSION\s+(\d+)\b", re.MULTILINE)


def read_version(root: Path) -> str:
    """``cuda.version`` of ``root/version.json``; without that file, ``major.minor`` from
    ``root/include/cuda.h``'s ``CUDA_VERSION``. Raises :class:`ToolkitError` naming the files."""
    vj = root / "version.json"
    try:
        data = json.loads(vj.read_text(encoding="utf-8"))
        return str(data["cuda"]["version"])
    except FileNotFoundError:
        pass
    except (ValueError, KeyError, TypeError) as e:
        raise ToolkitError(f'{vj}: expected {{"cuda": {{"version": ...}}}}: {e}') from None
    ch = root / "include" / "cuda.h"
    try:
        m = _CUDA_VERSION_RE.search(ch.read_text(encoding="utf-8", errors="replace"))
    except FileNotFoundError:
        raise ToolkitError(
            f"{vj}: missing, and so is {ch}; a host toolkit needs NVIDIA's version.json or "
            f"include/cuda.h (set CUDA_PATH or cuda.toolkit.path to a CUDA toolkit root)"
        ) from None
    if m is None:
        raise ToolkitError(f"{vj}: missing, and {ch} has no '#define CUDA_VERSION <n>'")
    n = int(m.group(1))
    return f"{n // 1000}.{(n % 1000) // 10}"


def used_files(cs: ComponentSet) -> list[str]:
    """Prefix-relative files the build uses (required files + nvcc.profile), sorted."""
    return sorted({r.path for r in validate.required(cs)} | {"bin/nvcc.profile"})


def fingerprint(cs: ComponentSet) -> dict[str, list[int]]:
    """``{path: [size, mtime_ns]}`` of the used files (cheap; for the action key)."""
    root = Path(cs.pins["path"])
    out = {}
    for rel in used_files(cs):
        try:
            st = (root / rel).stat()
            out[rel] = [st.st_size, st.st_mtime_ns]
        except OSError:
            out[rel] = [-1, -1]
    return out


def describe(cs: ComponentSet, ref: CudaToolkit) -> Path:
    """Check the host toolkit and write its receipt; returns the receipt path."""
    root = Path(cs.pins["path"])
    if not root.is_dir():
        raise ToolkitError(
            f"{cs.spec_file}: cuda.toolkit: host toolkit {root} does not exist (set cuda.toolkit.path or CUDA_PATH)"
        )
    version = read_version(root)
    if CudaVersion(version).parts != cs.cuda_version.parts:
        read = root / "version.json" if (root / "version.json").is_file() else root / "include" / "cuda.h"
        raise ToolkitError(f"{read}: CUDA {version}, but {cs.spec_file} asks for cuda.version {cs.cuda_version}")
    validate.check(root, cs, what=f"{cs.name} (host toolkit {root})")
    files = {rel: sha256_file(root / rel) for rel in used_files(cs) if (root / rel).is_file()}
    import hashlib

    digest = hashlib.sha256(json.dumps(files, sort_keys=True).encode()).hexdigest()
    atomic_write_json(
        ref.receipt_file,
        {
            "name": cs.name,
            "set_digest": cs.digest,
            "source": "host",
            "path": root.as_posix(),
            "version": version,
            "cuda": cs.cuda_version,
            "host_platform": cs.host_platform,
            "target_platform": cs.target_platform,
            "target_dir": target_dir(cs.target_platform),
            "files": files,
            "files_digest": digest,
            "components": [],
            "generated": [],
        },
    )
    say(f"toolkit {cs.name}: host toolkit {root} (CUDA {version}), {len(files)} files checked")
    return ref.receipt_file
