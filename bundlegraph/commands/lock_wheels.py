"""``bundlegraph lock-wheels``: (re)write the wheels lock files the specs refer to.

For every lock file named by a leg's ``cuda.toolkit.lock``, collect the (component, platform)
pairs those legs need (host components on the toolchain's host platform, target components on
the target platform), resolve each with ``pip download`` and write the file and the hashes.
Requirements come from ``--require COMPONENT=REQ``, else the existing lock's ``[requirements]``,
else a default (``nvidia-cuda-nvcc==13.5.*``). A maintainer command: run it once, commit the
lock; builds only read it.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..backends.cuda.spec import CUDA
from ..core.errors import BundleGraphError
from ..specs.loader import load_matrix
from ..toolchains.registry import TOOLCHAINS
from ..toolkit.lockfile import load_lock, write_lock
from ..toolkit.wheels import lock_wheels


def run(args: argparse.Namespace) -> int:
    matrix = load_matrix(args.bundles)
    wanted: dict[Path, tuple[str, list[tuple[str, str]]]] = {}
    for spec in matrix.legs.values():
        table = CUDA.get(spec)
        if table is None or table.toolkit.source != "wheels":
            continue
        tk = table.toolkit
        assert tk.lock is not None  # the spec schema requires it for source "wheels"
        path = (matrix.root / tk.lock).resolve()
        host = tk.host_platform or TOOLCHAINS[spec.toolchain].redist_host
        cuda, pairs = wanted.setdefault(path, (table.version, []))
        if cuda != table.version:
            raise BundleGraphError(f"{path}: legs with CUDA {cuda} and {table.version} share this lock")
        pairs += [(c, host) for c in tk.host] + [(c, tk.target_platform) for c in tk.target]
    if args.lock:
        only = Path(args.lock).resolve()
        wanted = {p: v for p, v in wanted.items() if p == only}
        if not wanted:
            raise BundleGraphError(f"{args.lock}: no leg uses this lock file")
    cli_reqs = {}
    for r in args.require or []:
        comp, sep, req = r.partition("=")
        if not sep or not req:
            raise BundleGraphError(f"--require {r!r}: expected COMPONENT=REQUIREMENT")
        cli_reqs[comp] = req
    for path, (cuda, pairs) in sorted(wanted.items()):
        reqs = {**(load_lock(path).requirements if path.exists() else {}), **cli_reqs}
        lock = lock_wheels(cuda, pairs, reqs)
        write_lock(path, lock)
        print(f"wrote {path}: {len(lock.wheel)} wheels")
        for row in lock.wheel:
            print(f"  {row.component:12} {row.platform:15} {row.filename}  sha256 {row.sha256}")
    return 0


def register(sub: Any) -> None:
    p = sub.add_parser("lock-wheels", help="pin NVIDIA's CUDA wheels (sha256) into the specs' lock files")
    p.add_argument("--lock", help="only this lock file (default: every lock a spec names)")
    p.add_argument(
        "--require",
        action="append",
        metavar="COMPONENT=REQ",
        help="pip requirement for a component, e.g. libcublas=nvidia-cublas==13.10.0.20",
    )
    p.set_defaults(func=run)
