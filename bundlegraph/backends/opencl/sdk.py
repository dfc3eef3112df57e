"""The OpenCL backend's SDK (:attr:`bundlegraph.backends.opencl.SDK`), a
:class:`~bundlegraph.toolkit.sdk.SdkModule`: the Khronos OpenCL C headers and the ICD loader a
Linux leg links, as Debian packages pinned by name, version, architecture and sha256 in
:data:`LOCK` (fetched with ``apt-get download`` or from ``BUNDLEGRAPH_DEBIAN_ARCHIVE`` and unpacked
with ``dpkg-deb -x``: :mod:`bundlegraph.toolkit.debs`) into ``<cache>/toolkits/<name>/``.
Every package is taken for the leg's target architecture (or ``all``); none runs on the build
machine.

The task ``toolkit:opencl-<version>-<platform>-<6 hex>`` (``opencl-3.0-linux-x64-1a2b3c``; the hex
is a digest of the SDK's identity, the lock's rows) writes a receipt
(:data:`~.sdk_ref.RECEIPT`) with the packages and the headers' OpenCL version
(``CL_VERSION_3_0`` and its siblings in ``CL/cl_version.h``: the newest one defined).
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

from ...core.errors import HostMismatch, ToolkitError
from ...core.fsutil import atomic_write_json
from ...core.lightclass import frozen
from ...core.platforms import platform
from ...core.state import Present
from ...schemas.records import BundleSpec
from ...toolkit.ref import toolkits_root
from ...toolkit.sdk import PrefixSdkTaskPlan
from .sdk_ref import RECEIPT, OpenClSdk

LOCK = "locks/opencl-3.0-debs.toml"
"""The lock of the SDK's packages, relative to the bundles directory (no spec table names it: an
OpenCL leg has nothing else to choose)."""

NEEDS = ("ocl-icd-opencl-dev", "ocl-icd-libopencl1", "opencl-c-headers")
"""The packages the lock must hold for the target: the loader's link name, the loader, the headers."""

DEB_ARCH = {"x64": "amd64", "arm64": "arm64"}
"""A spec's ``arch`` -> Debian's architecture name."""

TRIPLET = {"amd64": "x86_64-linux-gnu", "arm64": "aarch64-linux-gnu"}
"""Debian's multiarch directory per architecture (Debian policy 9.1.1)."""

LAYOUT_VERSION = 1
"""The layout of an installed OpenCL SDK (the paths :func:`ref_for` pins); a change reinstalls."""

_CL_VERSION = re.compile(r"^#define\s+CL_VERSION_(\d+)_(\d+)\s+1\s*$", re.M)


@frozen
class OpenClSdkSet:
    """An OpenCL SDK's identity: what two legs must agree on to share one task: ``version``
    (``3.0``), ``platform`` (``linux-x64``), ``target_arch`` (Debian's), ``packages`` (the lock
    rows taken: name, version, architecture, suite, sha256), ``lock`` and ``spec_file``."""

    version: str
    platform: str
    target_arch: str
    packages: tuple[tuple[str, str, str, str, str], ...]
    lock: str = LOCK
    spec_file: str = ""

    def identity(self) -> dict[str, Any]:
        """The JSON form the name's digest and the key are taken over."""
        return {
            "platform": self.platform,
            "target_arch": self.target_arch,
            "packages": [list(p) for p in self.packages],
        }

    @property
    def name(self) -> str:
        """``opencl-<version>-<platform>-<6 hex>``."""
        h = hashlib.sha256(json.dumps(self.identity(), sort_keys=True).encode()).hexdigest()[:6]
        return f"opencl-{self.version}-{self.platform}-{h}"


def sdk_set(spec: BundleSpec, bundles: Path, spec_file: str) -> OpenClSdkSet:
    """The SDK identity of an OpenCL leg (pure: reads the lock only). Raises :class:`ToolkitError`
    naming ``spec_file`` for a leg that is not Linux, or a lock that lacks a package for its arch."""
    from ...toolkit.debs import load_lock

    if platform(spec.os).binary != "ELF" or spec.arch not in DEB_ARCH:  # Debian's packages: Linux only
        raise ToolkitError(
            f"{spec_file}: os/arch: an OpenCL leg is linux x64 or arm64 (its SDK is Debian's packages), "
            f"not {spec.os} {spec.arch}"
        )
    arch = DEB_ARCH[spec.arch]
    lock = load_lock(bundles / LOCK)
    rows = [p for p in lock.packages if p.architecture in (arch, "all")]
    if lost := [n for n in NEEDS if n not in {p.name for p in rows}]:
        raise ToolkitError(
            f"{spec_file}: backend: the OpenCL SDK's lock {lock.path} has no {', '.join(lost)} for {arch}"
        )
    headers = next(p for p in rows if p.name == "opencl-c-headers")
    version = headers.version.split(":")[-1].split("~")[0].split("-")[0]
    pins = tuple((p.name, p.version, p.architecture, p.suite, p.sha256) for p in rows)
    return OpenClSdkSet(version, f"{spec.os}-{spec.arch}", arch, pins, LOCK, spec_file)


def group(spec: BundleSpec, bundles: Path, spec_file: str) -> tuple[str, OpenClSdkSet]:
    """The leg's SDK identity and its task name (legs with equal identities share a task)."""
    s = sdk_set(spec, bundles, spec_file)
    return s.name, s


def ref_for(s: OpenClSdkSet) -> OpenClSdk:
    """Where ``toolkit:<name>`` puts the SDK of ``s`` (pure): ``<cache>/toolkits/<name>/``."""
    own = toolkits_root() / s.name
    return OpenClSdk(
        name=s.name,
        task=f"toolkit:{s.name}",
        version=s.version,
        platform=s.platform,
        prefix=own,
        receipt=own / RECEIPT,
        include_dir="usr/include",
        library=f"usr/lib/{TRIPLET[s.target_arch]}/libOpenCL.so",
    )


def ref(spec: BundleSpec, bundles: Path, spec_file: str) -> OpenClSdk:
    """The leg's SDK where its task puts it."""
    return ref_for(sdk_set(spec, bundles, spec_file))


@frozen
class OpenClSdkPlan(PrefixSdkTaskPlan[OpenClSdkSet, OpenClSdk]):
    """What ``toolkit:opencl-…`` does: unpack the SDK ``sdk`` at ``ref`` for the
    :class:`~bundlegraph.toolkit.sdk.SdkTaskPlan`'s legs."""

    def key(self) -> dict[str, Any]:
        """The identity (every package's name, version, architecture, suite, sha256) and the layout."""
        return {"sdk": "opencl", "set": self.sdk.identity(), "layout": LAYOUT_VERSION}

    def doc(self) -> str:
        """The task's doc line."""
        return f"install the OpenCL SDK {self.sdk.version} (debs) for {self.sdk.platform} for {', '.join(self.legs)}"


def plan(ident: OpenClSdkSet, legs: tuple[str, ...], bundles: Path, host_problem: str | None) -> OpenClSdkPlan:
    """The plan of the SDK task of ``ident``."""
    return OpenClSdkPlan(sdk=ident, ref=ref_for(ident), bundles=bundles, legs=legs, host_problem=host_problem)


def headers_version(include_dir: Path) -> str:
    """The newest OpenCL version ``CL/cl_version.h`` under ``include_dir`` defines (``3.0``).
    Raises :class:`ToolkitError` naming the file when it is missing or defines none."""
    header = include_dir / "CL" / "cl_version.h"
    try:
        text = header.read_text(encoding="utf-8", errors="replace")
    except OSError as e:
        raise ToolkitError(f"{header}: cannot read the OpenCL headers ({e.strerror})") from None
    found = sorted((int(a), int(b)) for a, b in _CL_VERSION.findall(text))
    if not found:
        raise ToolkitError(f"{header}: no CL_VERSION_<major>_<minor> define")
    return "{}.{}".format(*found[-1])


def run(p: OpenClSdkPlan) -> list[Path | Present]:
    """Unpack (or check) the SDK of ``p`` and write its receipt; returns the receipt, then the
    pinned files by presence. Refuses (:class:`HostMismatch`) before any download when no leg can
    compile here; raises :class:`ToolkitError` in one line for a missing part."""
    from ...toolkit.debs import DebLock, extract, load_lock

    if p.host_problem:
        raise HostMismatch(f"toolkit:{p.sdk.name}: {p.host_problem}")
    lock = load_lock(p.bundles / p.sdk.lock)
    want = set(p.sdk.packages)
    rows = tuple(x for x in lock.packages if (x.name, x.version, x.architecture, x.suite, x.sha256) in want)
    extract(DebLock(path=lock.path, packages=rows), p.ref.prefix)
    if missing := p.ref.missing():
        raise ToolkitError(
            f"toolkit:{p.sdk.name}: the unpacked packages lack {', '.join(missing)} under {p.ref.prefix}"
        )
    receipt = {
        "sdk": "opencl",
        "name": p.sdk.name,
        "platform": p.sdk.platform,
        "prefix": p.ref.root,
        "headers_version": headers_version(p.ref.path(p.ref.include_dir)),
        "cmake": p.ref.cmake_cache(),
        "packages": [{"name": x.name, "version": x.version, "architecture": x.architecture} for x in rows],
    }
    atomic_write_json(p.ref.receipt, receipt)
    return [p.ref.receipt, *(Present(p.ref.path(r)) for r in (p.ref.include_dir, p.ref.library))]


__all__ = [
    "LOCK",
    "OpenClSdkPlan",
    "OpenClSdkSet",
    "group",
    "headers_version",
    "plan",
    "ref",
    "ref_for",
    "run",
    "sdk_set",
]
