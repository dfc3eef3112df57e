"""The Vulkan backend's SDK (:attr:`bundlegraph.backends.vulkan.SDK`), a
:class:`~.sdk.SdkModule`: the Vulkan headers and loader a leg links, the SPIR-V headers ggml's
CMake asks for, and the ``glslc`` that compiles ggml's shaders, from one of three sources
(``[vulkan.sdk] source``, :class:`~bundlegraph.schemas.records.VulkanSdkSpec`):

- ``debs``: Debian packages pinned by name, version, architecture and sha256 in a lock file
  (``bundles/locks/vulkan-1.4.309-debs.toml``), fetched with ``apt-get download`` and unpacked
  with ``dpkg-deb -x`` (:mod:`.debs`) into ``<cache>/toolkits/<name>/``. The packages in
  :data:`BUILD_PACKAGES` run on the build machine and are taken for its architecture; every
  other package is taken for the leg's target architecture (or ``all``): a linux-arm64 leg gets
  arm64 headers and loader and the x86_64 glslc. The build machine's packages (glslc, its
  shaderc library and the C and C++ runtime they load, glibc's loader included) are unpacked on
  their own into ``<prefix>/glslc/`` (:data:`GLSLC_DIR`), never beside the loader a leg links,
  and the prefix's ``bin/glslc`` wrapper runs that glslc through that C library's own loader
  (``ld-linux-x86-64.so.2 --library-path <prefix libs> glslc``): Debian 13's and 14's binaries
  need a newer glibc than Debian 12's or Ubuntu 22.04's, and the host's C library is never used.
- ``host``: the build machine's own glslc (PATH) and the headers and loader CMake finds; its key
  fingerprints the files used, so a change on the host configures again.
- ``lunarg``: LunarG's SDK installer (the Windows legs), pinned by version and sha256; it is run
  only on a Windows build machine, elsewhere the task refuses in one line.

The task ``toolkit:vulkan-<version>-<platform>-<6 hex>`` (``vulkan-1.4.309-linux-x64-3f9a1c``;
the hex is a digest of the SDK's identity) writes a receipt (:data:`~.sdk_ref.RECEIPT`)
holding the Vulkan header version (from ``vulkan_core.h``'s ``VK_HEADER_VERSION`` and
``VK_HEADER_VERSION_COMPLETE``) and ``glslc --version``'s first line.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ...core import proc
from ...core.errors import HostMismatch, ToolkitError
from ...core.fsutil import atomic_write_json, read_json_object, sha256_file
from ...core.lightclass import frozen
from ...core.state import Present
from ...schemas.records import BundleSpec
from ...toolchains.registry import TOOLCHAINS
from ...toolkit.ref import toolkits_root
from ...toolkit.sdk import PrefixSdkTaskPlan
from .sdk_ref import RECEIPT, VulkanSdk, shader_extensions
from .spec import VULKAN, VulkanSdkSpec

if TYPE_CHECKING:
    from ...toolkit.sdkpins import SdkFile

LAYOUT_VERSION = 2
"""The layout of an installed Vulkan SDK (the wrapper, the paths below); a change reinstalls.
2: the build machine's packages under :data:`GLSLC_DIR`, glslc run by their own loader."""

BUILD_PACKAGES = frozenset({"glslc", "libshaderc1", "libc6", "libstdc++6", "libgcc-s1"})
"""Debian packages of a debs lock that run on the build machine: glslc, the shaderc library it
loads (glslang and SPIRV-Tools are linked into it) and the C and C++ runtime both load."""

GLSLC_DIR = "glslc"
"""Prefix-relative directory of the build machine's packages (:data:`BUILD_PACKAGES`)."""

LOADER = {"amd64": "ld-linux-x86-64.so.2", "arm64": "ld-linux-aarch64.so.1"}
"""glibc's dynamic loader per Debian architecture (in ``usr/lib/<triplet>/`` of libc6)."""

DEB_ARCH = {"x64": "amd64", "arm64": "arm64"}
"""A spec's ``arch`` -> Debian's architecture name."""

TRIPLET = {"amd64": "x86_64-linux-gnu", "arm64": "aarch64-linux-gnu"}
"""Debian's multiarch directory per architecture (Debian policy 9.1.1, the multiarch tuples)."""

LUNARG_DOWNLOAD = "https://sdk.lunarg.com/sdk/download/{version}/windows/{url_name}"
"""Where LunarG publishes an SDK installer (the address the fork's Windows Vulkan job uses); a
vendor's download site, not a package registry."""

_HEADER_VERSION = re.compile(r"^#define\s+VK_HEADER_VERSION\s+(\d+)\s*$", re.M)
_HEADER_COMPLETE = re.compile(
    r"^#define\s+VK_HEADER_VERSION_COMPLETE\s+VK_MAKE_API_VERSION\(\s*\d+\s*,\s*(\d+)\s*,\s*(\d+)\s*,", re.M
)


@frozen
class VulkanSdkSet:
    """A Vulkan SDK's identity: what two legs must agree on to share one task. ``source``,
    ``version`` (``1.4.309``; ``host``), ``platform`` (``linux-x64``), ``build_arch`` (Debian
    architecture of the build machine), ``pins`` (debs: the selected lock rows; lunarg: version,
    sha256, installer name; host: nothing), ``lock`` (debs: the lock file) and ``spec_file``."""

    source: Literal["debs", "host", "lunarg"]
    version: str
    platform: str
    build_arch: str
    target_arch: str
    pins: tuple[tuple[str, Any], ...]
    lock: str = ""
    spec_file: str = ""

    def identity(self) -> dict[str, Any]:
        """The JSON form the name's digest and the key are taken over."""
        named = ("source", "version", "platform", "build_arch", "target_arch")
        return {**{k: getattr(self, k) for k in named}, **dict(self.pins)}

    @property
    def name(self) -> str:
        """``vulkan-<version>-<platform>-<6 hex>``."""
        h = hashlib.sha256(json.dumps(self.identity(), sort_keys=True).encode()).hexdigest()[:6]
        return f"vulkan-{self.version}-{self.platform}-{h}"


def _debs_rows(sdk: VulkanSdkSpec, bundles: Path, spec_file: str, build_arch: str, target_arch: str) -> list[Any]:
    from ...toolkit.debs import load_lock

    lock = load_lock(bundles / str(sdk.lock))
    rows = [
        p
        for p in lock.packages
        if (p.architecture == build_arch if p.name in BUILD_PACKAGES else p.architecture in (target_arch, "all"))
    ]
    names = {p.name for p in rows}
    need = {"libvulkan-dev", "libvulkan1", "glslc"}
    if need - names:
        raise ToolkitError(
            f"{spec_file}: vulkan.sdk.lock: {lock.path} has no {', '.join(sorted(need - names))} for "
            f"target {target_arch} / build machine {build_arch} (glslc and libshaderc1 are taken for the build "
            f"machine, the rest for the target)"
        )
    return rows


def sdk_set(spec: BundleSpec, bundles: Path, spec_file: str) -> VulkanSdkSet:
    """The SDK identity of a Vulkan leg (pure: reads the lock file only). Raises
    :class:`ToolkitError` naming ``spec_file`` and the key for a leg without ``[vulkan]``, an
    unknown toolchain or a lock that lacks a package."""
    vulkan = VULKAN.get(spec)
    if vulkan is None:
        raise ToolkitError(f"{spec_file}: vulkan: the leg has no [vulkan] table, so no Vulkan SDK")
    sdk = vulkan.sdk
    tc = TOOLCHAINS.get(spec.toolchain)
    if tc is None:
        raise ToolkitError(f"{spec_file}: toolchain: unknown toolchain '{spec.toolchain}'")
    build_arch, target_arch = DEB_ARCH[tc.build_arch], DEB_ARCH[spec.arch]
    platform = f"{spec.os}-{spec.arch}"
    if sdk.source == "debs":
        rows = _debs_rows(sdk, bundles, spec_file, build_arch, target_arch)
        dev = next(p for p in rows if p.name == "libvulkan-dev")
        version = ".".join(dev.version.split(":")[-1].split("-")[0].split(".")[:3])
        pins: tuple[tuple[str, Any], ...] = (
            (
                "packages",
                [[p.name, p.version, p.architecture, p.suite, p.sha256] for p in rows],
            ),
        )
        return VulkanSdkSet("debs", version, platform, build_arch, target_arch, pins, str(sdk.lock), spec_file)
    if sdk.source == "lunarg":
        assert sdk.version is not None  # VulkanSdkSpec requires it for lunarg
        version = ".".join(sdk.version.split(".")[:3])
        pins = (("lunarg", {"version": sdk.version, "sha256": sdk.sha256, "url_name": sdk.url_name}),)
        return VulkanSdkSet("lunarg", version, platform, build_arch, target_arch, pins, "", spec_file)
    if dict(tc.compiler):
        raise ToolkitError(
            f"{spec_file}: vulkan.sdk.source: 'host' takes the build machine's Vulkan headers from /usr/include, "
            f"beside its C library, which toolchain {spec.toolchain}'s pinned compiler must not see; use source "
            '"debs" (a pinned lock) instead'
        )
    return VulkanSdkSet("host", "host", platform, build_arch, target_arch, (), "", spec_file)


def group(spec: BundleSpec, bundles: Path, spec_file: str) -> tuple[str, VulkanSdkSet]:
    """The leg's SDK identity and its task name (legs with equal identities share a task)."""
    s = sdk_set(spec, bundles, spec_file)
    return s.name, s


def ref_for(s: VulkanSdkSet) -> VulkanSdk:
    """Where ``toolkit:<name>`` puts the SDK of ``s`` (pure): a debs or lunarg SDK in
    ``<cache>/toolkits/<name>/``, a host SDK where it is (its receipt in the cache)."""
    own = toolkits_root() / s.name
    layout: dict[str, str] = {}
    if s.source == "debs":
        layout = {
            "include_dir": "usr/include",
            "library": f"usr/lib/{TRIPLET[s.target_arch]}/libvulkan.so",
            "spirv_headers_dir": "usr/share/cmake/SPIRV-Headers",
            "bin_dir": "bin",
        }
    elif s.source == "lunarg":
        # the installer's layout (C:\VulkanSDK\<version>: Include, Lib\vulkan-1.lib, Bin\glslc.exe)
        layout = {"include_dir": "Include", "library": "Lib/vulkan-1.lib", "bin_dir": "Bin"}
    return VulkanSdk(
        name=s.name,
        task=f"toolkit:{s.name}",
        source=s.source,
        version=s.version,
        platform=s.platform,
        prefix=Path("/") if s.source == "host" else own,
        receipt=own / RECEIPT,
        **layout,
    )


def ref(spec: BundleSpec, bundles: Path, spec_file: str) -> VulkanSdk:
    """The leg's SDK where its task puts it."""
    return ref_for(sdk_set(spec, bundles, spec_file))


def pinned_files(spec: BundleSpec, bundles: Path, spec_file: Path) -> list[SdkFile]:
    """The SDK files ``bundlegraph lock`` pins for this leg (:func:`bundlegraph.toolkit.sdkpins.wanted`):
    LunarG's installer of a ``lunarg`` SDK, pinned in the spec's ``[vulkan.sdk] sha256``; nothing for
    the others (Debian's packages are pinned by ``lock-debs``)."""
    from ...toolkit.sdkpins import SdkFile as File

    sdk = vulkan.sdk if (vulkan := VULKAN.get(spec)) is not None else None
    if sdk is None or sdk.source != "lunarg" or not sdk.url_name or not sdk.version:
        return []
    url = LUNARG_DOWNLOAD.format(version=sdk.version, url_name=sdk.url_name)
    return [File("lunarg", sdk.url_name, url, spec_file, sdk.sha256 or "")]


def host_files() -> dict[str, str]:
    """The build machine's Vulkan files a ``host`` SDK uses, by role, each ``path sha256``
    (``missing`` when absent): glslc on PATH, ``vulkan/vulkan_core.h`` and ``libvulkan.so``
    where Debian and Ubuntu install them. The host SDK's key, so a changed host configures again."""
    cands = {
        "glslc": [shutil.which("glslc") or ""],
        "vulkan_core.h": ["/usr/include/vulkan/vulkan_core.h"],
        "libvulkan.so": [f"/usr/lib/{t}/libvulkan.so" for t in TRIPLET.values()],
    }
    out = {}
    for role, files in cands.items():
        hit = next((Path(f) for f in files if f and Path(f).is_file()), None)
        out[role] = f"{hit.resolve()} {sha256_file(hit)}" if hit else "missing"
    return out


@frozen
class VulkanSdkPlan(PrefixSdkTaskPlan[VulkanSdkSet, VulkanSdk]):
    """What ``toolkit:vulkan-…`` does: install the SDK ``sdk`` (identity) at ``ref`` for the
    :class:`~bundlegraph.toolkit.sdk.SdkTaskPlan`'s legs."""

    def key(self) -> dict[str, Any]:
        """The identity (every package's name, version, architecture, suite and sha256; the
        installer's version and sha256), the layout, and for a host SDK the files it uses."""
        d: dict[str, Any] = {"sdk": "vulkan", "set": self.sdk.identity(), "layout": LAYOUT_VERSION}
        if self.sdk.source == "host":
            d["host_files"] = host_files()
        return d

    def doc(self) -> str:
        """The task's doc line."""
        s = self.sdk
        return f"install the Vulkan SDK {s.version} ({s.source}) for {s.platform} for {', '.join(self.legs)}"


def plan(ident: VulkanSdkSet, legs: tuple[str, ...], bundles: Path, host_problem: str | None) -> VulkanSdkPlan:
    """The plan of the SDK task of ``ident``."""
    return VulkanSdkPlan(sdk=ident, ref=ref_for(ident), bundles=bundles, legs=legs, host_problem=host_problem)


def header_version(header: Path) -> str:
    """``major.minor.patch`` of a ``vulkan_core.h`` (``1.4.309``). Raises :class:`ToolkitError`
    naming the file when it is missing or lacks the two defines."""
    try:
        text = header.read_text(encoding="utf-8", errors="replace")
    except OSError as e:
        raise ToolkitError(f"{header}: cannot read the Vulkan header ({e.strerror})") from None
    v, c = _HEADER_VERSION.search(text), _HEADER_COMPLETE.search(text)
    if v is None or c is None:
        raise ToolkitError(f"{header}: no VK_HEADER_VERSION / VK_HEADER_VERSION_COMPLETE define")
    return f"{c.group(1)}.{c.group(2)}.{v.group(1)}"


def glslc_version(glslc: Path, log: Path | None = None) -> str:
    """The first line of ``glslc --version`` (``shaderc v2023.2 v2023.2``). Raises
    :class:`~bundlegraph.core.errors.ToolFailed` when it does not run."""
    out = proc.run([glslc, "--version"], capture=True, echo=False, log=log, what="glslc --version").output
    return next((line.strip() for line in out.splitlines() if line.strip()), "")


_WRAPPER = """#!/bin/sh
# Written by bundlegraph: the pinned glslc, run by the loader of its own C library (its packages
# are under glslc/; the host's C library, its ld.so.cache and LD_LIBRARY_PATH are not used).
here=$(cd "$(dirname "$0")/.." && pwd)
lib="$here/{glslc_dir}/usr/lib/{triplet}"
exec "$lib/{loader}" --inhibit-cache --library-path "$lib" "$here/{glslc_dir}/usr/bin/glslc" "$@"
"""


def wrapper_text(build_arch: str) -> str:
    """The ``bin/glslc`` wrapper for a build machine of Debian architecture ``build_arch``."""
    return _WRAPPER.format(glslc_dir=GLSLC_DIR, triplet=TRIPLET[build_arch], loader=LOADER[build_arch])


def _write_wrapper(build_arch: str, prefix: Path) -> None:
    """Write ``prefix/bin/glslc`` (:func:`wrapper_text`) unless it is there as it should be (a
    layout change rewrites it in a prefix whose packages did not change)."""
    wrapper = prefix / "bin" / "glslc"
    text = wrapper_text(build_arch)
    if wrapper.is_file() and wrapper.read_text(encoding="utf-8") == text and os.access(wrapper, os.X_OK):
        return
    wrapper.parent.mkdir(parents=True, exist_ok=True)
    tmp = wrapper.with_name(".glslc.tmp")
    tmp.write_text(text, encoding="utf-8", newline="\n")
    tmp.chmod(0o755)
    tmp.replace(wrapper)


def _install_debs(p: VulkanSdkPlan) -> tuple[dict[str, Any], Path]:
    from ...toolkit.debs import DebLock, extract, load_lock

    lock = load_lock(p.bundles / p.sdk.lock)
    want = {tuple(r) for r in dict(p.sdk.pins)["packages"]}
    rows = tuple(x for x in lock.packages if (x.name, x.version, x.architecture, x.suite, x.sha256) in want)
    target = DebLock(path=lock.path, packages=tuple(x for x in rows if x.name not in BUILD_PACKAGES))
    build = DebLock(path=lock.path, packages=tuple(x for x in rows if x.name in BUILD_PACKAGES))
    # two prefixes, each with its own receipt (a changed package reinstalls only its own); the
    # build machine's inside the target's, so a reinstalled target prefix brings it back too
    extract(target, p.ref.prefix)
    extract(build, p.ref.prefix / GLSLC_DIR)
    _write_wrapper(p.sdk.build_arch, p.ref.prefix)
    lib = f"{GLSLC_DIR}/usr/lib/{TRIPLET[p.sdk.build_arch]}"
    runs = [f"{GLSLC_DIR}/usr/bin/glslc", f"{lib}/{LOADER[p.sdk.build_arch]}", f"{lib}/libshaderc.so.1"]
    missing = p.ref.missing() + [r for r in runs if not p.ref.path(r).exists()]
    if missing:
        raise ToolkitError(
            f"toolkit:{p.sdk.name}: the unpacked packages lack {', '.join(missing)} under {p.ref.prefix}"
        )
    extra = {"packages": [{"name": x.name, "version": x.version, "architecture": x.architecture} for x in rows]}
    return extra, p.ref.prefix / "bin" / "glslc"


def _install_lunarg(p: VulkanSdkPlan) -> tuple[dict[str, Any], Path]:
    pin = dict(p.sdk.pins)["lunarg"]
    if not pin.get("sha256"):
        raise ToolkitError(
            f"{p.sdk.spec_file}: vulkan.sdk.sha256: the LunarG installer {pin['url_name']} is not pinned; an "
            f"unhashed installer is never run: set its sha256 (from a runner that can download it)"
        )
    if os.name != "nt":
        raise HostMismatch(
            f"toolkit:{p.sdk.name}: the LunarG SDK installer {pin['url_name']} runs only on a Windows build machine"
        )
    from ...core.download import download

    exe = download(LUNARG_DOWNLOAD.format(**pin), pin["sha256"])
    proc.run(
        [exe, "--root", p.ref.prefix, "--accept-licenses", "--default-answer", "--confirm-command", "install"],
        what=f"LunarG SDK installer {pin['url_name']}",
    )
    missing = p.ref.missing()
    if missing:
        raise ToolkitError(f"toolkit:{p.sdk.name}: the LunarG SDK at {p.ref.prefix} lacks {', '.join(missing)}")
    return {"installer": pin}, p.ref.prefix / "Bin" / "glslc.exe"


def _install_host(p: VulkanSdkPlan) -> tuple[dict[str, Any], Path]:
    files = host_files()
    lost = [role for role, v in files.items() if v == "missing"]
    if lost:
        raise ToolkitError(
            f"toolkit:{p.sdk.name}: source 'host' needs the build machine's {', '.join(lost)} "
            f"(Debian/Ubuntu: apt-get install glslc libvulkan-dev spirv-headers)"
        )
    return {"host_files": files}, Path(files["glslc"].rsplit(" ", 1)[0])


def run(p: VulkanSdkPlan) -> list[Path | Present]:
    """Install (or check) the SDK of ``p`` and write its receipt; returns the receipt, then the
    pinned files by presence. Refuses (:class:`HostMismatch`) before any download when no leg
    can compile here; raises :class:`ToolkitError` in one line for an unpinned or missing part."""
    if p.host_problem:
        raise HostMismatch(f"toolkit:{p.sdk.name}: {p.host_problem}")
    install = {"debs": _install_debs, "lunarg": _install_lunarg, "host": _install_host}[p.sdk.source]
    extra, glslc = install(p)
    header = (p.ref.path(p.ref.include_dir) if p.ref.include_dir else Path("/usr/include")) / "vulkan" / "vulkan_core.h"
    receipt = {
        "sdk": "vulkan",
        "name": p.sdk.name,
        "source": p.sdk.source,
        "platform": p.sdk.platform,
        "prefix": p.ref.root,
        "vulkan_header_version": header_version(header),
        "glslc": glslc.as_posix(),
        "glslc_version": glslc_version(glslc),
        "cmake": p.ref.cmake_cache(),
        **extra,
    }
    p.ref.receipt.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_json(p.ref.receipt, receipt)
    pinned = [p.ref.path(r) for r in (p.ref.include_dir, p.ref.library, p.ref.spirv_headers_dir) if r]
    return [p.ref.receipt, *(Present(x) for x in pinned), Present(glslc)]


def read_receipt(sdk: VulkanSdk) -> dict[str, Any] | None:
    """The SDK's receipt (after its task ran), or None."""
    return read_json_object(sdk.receipt)


__all__ = [
    "BUILD_PACKAGES",
    "VulkanSdkPlan",
    "VulkanSdkSet",
    "glslc_version",
    "group",
    "header_version",
    "plan",
    "read_receipt",
    "ref",
    "ref_for",
    "run",
    "sdk_set",
    "shader_extensions",
]
