"""The HIP backend's SDK: one of AMD TheRock's multi-arch tarballs, pinned by exact build and
sha256 (:mod:`bundlegraph.backends.hip` names this module as its ``SDK``).

What the fork does and what we do instead: the fork takes the newest TheRock nightly up to a
weekly cut-off for each leg, with no hash check (``unsloth-prebuilt-rocm.yml``). We pin one build
(``[hip.sdk] version``) and a lock file (``[hip.sdk] lock``, ``bundles/locks/therock-<version>.toml``)
that holds each tarball's name, size and sha256; a tarball whose bytes differ from the pin is
refused (:func:`bundlegraph.core.download.download` / :func:`~bundlegraph.core.download.adopt`
fail closed), and a tarball the lock does not pin is refused before anything is fetched.

Names (TheRock's own, and the fork's mapping): ``therock-dist-<linux|windows>-<archive
family>-<version>.tar.gz`` where the archive family is :func:`bundlegraph.backends.hip.archive_family`
(``gfx110X`` -> ``gfx110X-all``). The tarball is a relocatable ``/opt/rocm``-style tree: Linux
``bin/hipcc``, ``lib/llvm/bin/clang++``, ``lib/libamdhip64.so*``, ``lib/rocblas/library``; Windows
``bin/amdhip64_*.dll``, ``bin/rocblas/library``, ``lib/llvm/bin/clang.exe`` (TheRock's RELEASES.md
and the fork's copy steps).

Lock file shape (``version`` = 1)::

    version = 1
    therock = "7.14.0"
    [[tarball]]
    name = "therock-dist-linux-gfx110X-all-7.14.0.tar.gz"
    url = "https://.../therock-dist-linux-gfx110X-all-7.14.0.tar.gz"
    sha256 = "e78a..."            # 64 hex; a row without one is refused
    size = 2313039793             # bytes

Nothing of this was fetched or installed on this project's machines: no TheRock tarball is
reachable here, so a run without the file fails with :class:`~bundlegraph.core.errors.ToolkitError`
(one line naming the tarball, its pin and where to put it). Plan and key need no file.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import TYPE_CHECKING

from ...core import settings
from ...core.errors import ToolkitError
from ...core.lightclass import frozen
from ...core.platforms import platform
from ...core.state import Present
from ...schemas.records import BundleSpec
from ...toolkit.lockread import is_sha256, is_size, read_toml
from .. import hip
from .sdk_ref import HipSdk, runtime_files
from .spec import HIP

if TYPE_CHECKING:
    from ...toolkit.sdkpins import SdkFile

LOCK_VERSION = 1
"""The lock file format this module reads."""
DOWNLOAD = "https://repo.amd.com/rocm/tarball-multi-arch/{name}"
"""Where AMD publishes TheRock's multi-arch tarballs (the pinned rows' ``url``): what ``bundlegraph
lock`` fetches a tarball without a row from (:mod:`.sdkpins`)."""

_NAME = re.compile(r"^therock-dist-(linux|windows)-([A-Za-z0-9]+(?:-all)?)-(\d+\.\d+\.\d+(?:(?:a|rc)\d+)?)\.tar\.gz$")

DIR_VAR = "BUNDLEGRAPH_THEROCK_DIR"
"""A folder holding tarballs fetched by hand (a machine that cannot reach AMD's servers;
the setting ``THEROCK_DIR``): :func:`fetch` adopts a tarball found there after checking its sha256
against the pin."""


@frozen
class Tarball:
    """One pinned tarball of the lock: its file ``name``, ``url``, ``sha256`` and ``size`` (bytes)."""

    name: str
    url: str
    sha256: str
    size: int


@frozen
class Lock:
    """A TheRock lock file: the ``therock`` build it pins and its tarballs by name."""

    file: Path
    therock: str
    tarballs: dict[str, Tarball]


@frozen
class SdkPlan:
    """What a HIP leg's SDK is, before anything is fetched: the tarball's ``name``, the lock
    row (``pin``; None when the lock does not pin it), the ``version``, ``os`` and ``family``."""

    name: str
    pin: Tarball | None
    version: str
    os: str
    family: str
    lock_file: Path

    @property
    def task(self) -> str:
        """The toolkit stage's task name: ``toolkit:therock-<version>-<os>-<archive family>-<hash6>``
        (hash6: the first 6 hex of the pinned sha256, ``unpinned`` without a pin)."""
        h = self.pin.sha256[:6] if self.pin else "unpinned"
        return f"toolkit:therock-{self.version}-{self.os}-{hip.archive_family(self.family)}-{h}"

    def key(self) -> dict[str, object]:
        """The action key: the tarball's name and its pin (sha256 and size): the SDK's bytes."""
        return {
            "sdk": "therock",
            "name": self.name,
            "sha256": self.pin.sha256 if self.pin else None,
            "size": self.pin.size if self.pin else None,
        }

    def receipt(self) -> dict[str, object]:
        """What the bundle's info file records of its SDK (``sdk`` section): source, build,
        tarball and sha256."""
        return {
            "source": "therock",
            "version": self.version,
            "tarball": self.name,
            "sha256": self.pin and self.pin.sha256,
        }


def tarball_name(os_name: str, family: str, version: str) -> str:
    """``therock-dist-<os>-<archive family>-<version>.tar.gz`` (``linux``, ``gfx110X``, ``7.14.0``
    -> ``therock-dist-linux-gfx110X-all-7.14.0.tar.gz``). Raises KeyError for an unknown family."""
    return f"therock-dist-{os_name}-{hip.archive_family(family)}-{version}.tar.gz"


def load_lock(file: Path) -> Lock:
    """Read and check a TheRock lock file (once per process while it is unchanged: every HIP
    leg's plan reads it when the graph loads). Raises :class:`ToolkitError`, one line naming the
    file and the key, for a missing file, bad TOML, another ``version``, a row without a valid
    name, 64-hex ``sha256``, ``https`` url or positive ``size``, or a row of another build."""
    from ...core.fsutil import parsed_once

    return parsed_once(file, _read_lock)


def _read_lock(file: Path) -> Lock:
    data = read_toml(file, "the TheRock lock file")
    if data.get("version") != LOCK_VERSION:
        raise ToolkitError(f"{file}: version: expected {LOCK_VERSION}, got {data.get('version')!r}")
    build = data.get("therock")
    if not isinstance(build, str) or not build:
        raise ToolkitError(f"{file}: therock: expected the pinned build (7.14.0)")
    rows: dict[str, Tarball] = {}
    for i, row in enumerate(data.get("tarball", [])):
        where = f"{file}: tarball[{i}]"
        name, url, sha, size = row.get("name"), row.get("url"), row.get("sha256"), row.get("size")
        m = _NAME.match(name) if isinstance(name, str) else None
        if m is None:
            raise ToolkitError(f"{where}.name: expected therock-dist-<linux|windows>-<family>-<version>.tar.gz")
        if m.group(3) != build:
            raise ToolkitError(f"{where}.name: {name} is build {m.group(3)}, the lock pins {build}")
        if not is_sha256(sha):
            raise ToolkitError(f"{where}.sha256: expected 64 lower-case hex digits")
        if not isinstance(url, str) or not url.startswith("https://") or not url.endswith("/" + name):
            raise ToolkitError(f"{where}.url: expected an https URL ending in /{name}")
        if not is_size(size):
            raise ToolkitError(f"{where}.size: expected a positive number of bytes")
        if name in rows:
            raise ToolkitError(f"{where}.name: {name} is pinned twice")
        rows[name] = Tarball(name, url, sha, size)
    return Lock(file, build, rows)


def tarball_plan(os_name: str, family: str, version: str, lock_file: Path) -> SdkPlan:
    """The SDK of a HIP leg for ``os_name`` and gfx ``family`` at TheRock build ``version``, pinned
    by ``lock_file``. Raises :class:`ToolkitError` (one line) when the lock pins another build."""
    lock = load_lock(lock_file)
    if lock.therock != version:
        raise ToolkitError(
            f"{lock_file}: therock: the lock pins {lock.therock}, the spec's hip.sdk.version is {version}"
        )
    name = tarball_name(os_name, family, version)
    return SdkPlan(name, lock.tarballs.get(name), version, os_name, family, lock_file)


def fetch(p: SdkPlan) -> Path:
    """The verified tarball of ``p`` in the blob cache: adopted from :data:`DIR_VAR`'s folder when
    it is there, else downloaded from the pinned URL. Raises :class:`ToolkitError` (one line) when
    the lock does not pin it, or when it can be neither found nor fetched; a file whose sha256
    differs from the pin is deleted and refused (:class:`~bundlegraph.core.errors.HashMismatch`)."""
    from ...core import download as dl
    from ...core import paths
    from ...core.errors import DownloadError

    if p.pin is None:
        raise ToolkitError(
            f"{p.lock_file}: {p.name} is not pinned (no [[tarball]] row): a TheRock tarball is used only by sha256; "
            f"download it once, check it, and add its name, url, sha256 and size"
        )
    cached = paths.blob_path(p.pin.sha256)
    if cached.is_file():
        return cached
    folder = settings.get("THEROCK_DIR")
    if folder and (Path(folder) / p.name).is_file():
        src = Path(folder) / p.name
        if _sha256(src) != p.pin.sha256:
            raise ToolkitError(
                f"{src}: sha256 {_sha256(src)} is not the pin {p.pin.sha256} ({p.lock_file}): the tarball moved; refused"
            )
        tmp = cached.with_name(cached.name + ".adopt")
        cached.parent.mkdir(parents=True, exist_ok=True)
        import shutil

        shutil.copyfile(src, tmp)
        return dl.adopt(tmp, p.pin.sha256, what=p.name)
    try:
        return dl.download(p.pin.url, p.pin.sha256, p.pin.size)
    except DownloadError as e:
        raise ToolkitError(
            f"TheRock SDK {p.name} (sha256 {p.pin.sha256}) is not in the cache and cannot be fetched ({e}); "
            f"put the file in ${DIR_VAR}"
        ) from None


def _sha256(f: Path) -> str:
    h = hashlib.sha256()
    with f.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def layout_problems(prefix: Path, os_name: str, targets: tuple[str, ...] | list[str]) -> list[str]:
    """What an extracted TheRock tree at ``prefix`` lacks for a HIP leg on ``os_name`` compiling
    ``targets``, one line each (empty: nothing): the HIP compiler, the HIP runtime, rocBLAS and
    hipBLAS, and a rocBLAS kernel file for every target (the runtime copy takes them from here)."""
    plat = platform(os_name)
    lib = prefix / plat.library_dir
    clang = prefix / "lib" / "llvm" / "bin" / plat.program("clang++")
    probs = []
    if not clang.is_file():
        probs.append(f"{prefix}: no HIP compiler {clang.relative_to(prefix).as_posix()}")
    names = sorted(f.name for f in lib.iterdir()) if lib.is_dir() else []
    import fnmatch

    for g in hip.RUNTIME_REQUIRED[os_name]:
        if not fnmatch.filter(names, g):
            probs.append(f"{prefix}: no {g} in {lib.relative_to(prefix).as_posix()}/")
    kernels = lib / "rocblas" / "library"
    files = sorted(f.name for f in kernels.iterdir()) if kernels.is_dir() else []
    missing = hip.missing_kernels(targets, files)
    if missing:
        probs.append(
            f"{prefix}: {kernels.relative_to(prefix).as_posix()}/ has no rocBLAS kernels for {', '.join(missing)}"
        )
    return probs


def prefix_of(p: SdkPlan) -> Path:
    """Where :func:`install` extracts ``p``'s tarball: ``<cache>/toolkits/<task name after toolkit:>``."""
    from ...toolkit.ref import toolkits_root

    return toolkits_root() / p.task.removeprefix("toolkit:")


RECEIPT = "therock-receipt.json"
"""The receipt :func:`install` writes in the prefix (:meth:`SdkPlan.receipt` plus the targets it
was checked for)."""


def install(p: SdkPlan, targets: tuple[str, ...] | list[str]) -> Path:
    """Fetch (:func:`fetch`) and extract ``p``'s tarball into :func:`prefix_of`, check it holds
    what a HIP leg compiling ``targets`` needs (:func:`layout_problems`) and write its receipt;
    returns the receipt. An installed prefix whose receipt names the same sha256 is kept.
    Raises :class:`ToolkitError` (one line) for an unpinned or unreachable tarball, a moved hash,
    or a tree that lacks what the leg needs."""
    import shutil

    from ...core.extract import extract
    from ...core.fsutil import atomic_write_bytes

    dest = prefix_of(p)
    receipt = dest / RECEIPT
    want = json.dumps({**p.receipt(), "targets": sorted(targets)}, sort_keys=True, indent=1) + "\n"
    if receipt.is_file() and json.loads(receipt.read_text(encoding="utf-8")).get("sha256") == p.receipt()["sha256"]:
        probs = layout_problems(dest, p.os, targets)
    else:
        tarball = fetch(p)
        if dest.exists():
            shutil.rmtree(dest)
        dest.mkdir(parents=True)
        extract(tarball, dest)
        probs = layout_problems(dest, p.os, targets)
    if probs:
        raise ToolkitError(f"{p.name}: {probs[0]}" + (f" (and {len(probs) - 1} more)" if len(probs) > 1 else ""))
    atomic_write_bytes(receipt, want.encode())
    return receipt


def receipt_json(p: SdkPlan) -> str:
    """:meth:`SdkPlan.receipt` as the sorted JSON the info file embeds."""
    return json.dumps(p.receipt(), sort_keys=True)


__all__ = [
    "DIR_VAR",
    "RECEIPT",
    "Lock",
    "SdkPlan",
    "Tarball",
    "TheRockTaskPlan",
    "fetch",
    "group",
    "install",
    "layout_problems",
    "load_lock",
    "plan",
    "prefix_of",
    "receipt_json",
    "ref",
    "ref_for",
    "run",
    "runtime_files",
    "tarball_name",
    "tarball_plan",
]


# -- the SdkModule protocol (bundlegraph.toolkit.sdk): what the toolkit stage calls ----------------


def _sdk_plan(spec: BundleSpec, bundles: Path, spec_file: str) -> SdkPlan:
    hip_table = HIP.get(spec)
    if hip_table is None:
        raise ToolkitError(f"{spec_file}: hip: the leg has no [hip] table, so no HIP SDK")
    try:
        return tarball_plan(spec.os, hip_table.gfx_target, hip_table.sdk.version, bundles / hip_table.sdk.lock)
    except ToolkitError as e:
        raise ToolkitError(f"{spec_file}: hip.sdk: {e}") from None


def group(spec: BundleSpec, bundles: Path, spec_file: str) -> tuple[str, SdkPlan]:
    """``(task name after toolkit:, the tarball's plan)`` of a HIP leg: legs of one OS and gfx
    family share a tarball, so a task. Pure (reads the lock). Raises :class:`ToolkitError`
    naming ``spec_file`` for a leg without ``[hip]`` or a lock of another build."""
    p = _sdk_plan(spec, bundles, spec_file)
    return p.task.removeprefix("toolkit:"), p


def ref_for(p: SdkPlan) -> HipSdk:
    """Where ``toolkit:<name>`` puts the SDK of ``p`` (pure)."""
    prefix = prefix_of(p)
    return HipSdk(
        name=p.task.removeprefix("toolkit:"),
        task=p.task,
        version=p.version,
        os=p.os,
        family=p.family,
        targets=hip.family_targets(p.family),
        tarball=p.name,
        sha256=p.pin.sha256 if p.pin else "",
        prefix=prefix,
        receipt=prefix / RECEIPT,
    )


def ref(spec: BundleSpec, bundles: Path, spec_file: str) -> HipSdk:
    """The leg's SDK where its task puts it."""
    return ref_for(_sdk_plan(spec, bundles, spec_file))


@frozen
class TheRockTaskPlan:
    """What ``toolkit:therock-…`` does: fetch the pinned tarball of ``sdk``, extract it and check
    it for its family's gfx targets, for ``legs``; ``host_problem``: why none of them can compile
    here (the run refuses before any download)."""

    sdk: SdkPlan
    legs: tuple[str, ...]
    host_problem: str | None = None

    def key(self) -> dict[str, object]:
        """The tarball's name and pin (:meth:`SdkPlan.key`) and the targets it is checked for."""
        return {**self.sdk.key(), "targets": list(hip.family_targets(self.sdk.family))}

    def describe(self) -> dict[str, object]:
        """The legs using it, where it installs, the tarball and its pin (None: not pinned; the run refuses it)."""
        return {"legs": list(self.legs), "prefix": str(prefix_of(self.sdk)), **self.key()}

    def doc(self) -> str:
        """The task's doc line."""
        return f"install AMD TheRock {self.sdk.version} ({self.sdk.name}) for {', '.join(self.legs)}"


def pinned_files(spec: BundleSpec, bundles: Path, spec_file: Path) -> list[SdkFile]:
    """The SDK file ``bundlegraph lock`` pins for this HIP leg (:func:`bundlegraph.toolkit.sdkpins.wanted`):
    its TheRock tarball, a ``[[tarball]]`` row of its lock (unpinned while the lock has no row).
    Raises :class:`~bundlegraph.core.errors.ToolkitError` for a lock that does not load."""
    from ...toolkit.sdkpins import SdkFile as File

    hip = HIP.of(spec)
    lock_file = bundles / hip.sdk.lock
    name = tarball_name(spec.os, hip.gfx_target, hip.sdk.version)
    row = load_lock(lock_file).tarballs.get(name)
    url = row.url if row else DOWNLOAD.format(name=name)
    return [File("therock", name, url, lock_file, row.sha256 if row else "", row.size if row else 0)]


def plan(ident: SdkPlan, legs: tuple[str, ...], bundles: Path, host_problem: str | None) -> TheRockTaskPlan:
    """The plan of the SDK task of ``ident`` (the protocol's ``plan``)."""
    return TheRockTaskPlan(sdk=ident, legs=legs, host_problem=host_problem)


def run(p: TheRockTaskPlan) -> list[Path | Present]:
    """Install the SDK of ``p`` (:func:`install`); returns its receipt. Refuses an unpinned
    tarball first (one line, before the host check: no host can use it), then a host that none of
    the legs can compile on (:class:`~bundlegraph.core.errors.HostMismatch`)."""
    from ...core.errors import HostMismatch

    if p.sdk.pin is None:
        fetch(p.sdk)  # raises the one-line refusal naming the lock
    if p.host_problem:
        raise HostMismatch(f"toolkit:{p.sdk.task.removeprefix('toolkit:')}: {p.host_problem}")
    return [install(p.sdk, hip.family_targets(p.sdk.family))]
