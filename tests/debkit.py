"""Real Debian packages of another release (trixie) for the tests, fetched by name with
``apt-get download`` under a private apt state, pinned by sha256, cached beside the other real
inputs (``<bundlegraph cache>/test-inputs/debs/``) and unpacked with ``dpkg-deb -x``. Nothing
is installed into the system: the private state has its own sources list (the system's own
Debian mirror, read from ``/etc/apt``, with the suite replaced), lists and archive cache.

A package that cannot be fetched (offline with an empty cache, no apt on the host) raises
:class:`realinputs.MissingInput`, which the tests turn into a failure; a hash that moved fails
closed with AssertionError. ``python tests/debkit.py [NAME...]`` fetches ahead of time.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from realinputs import MissingInput, cache_root

from bundlegraph.core.fsutil import atomic_dir, locked, sha256_file


@dataclass(frozen=True)
class Deb:
    """``package`` at ``version`` from Debian ``suite``, its ``.deb`` pinned by ``sha256``."""

    package: str
    version: str
    suite: str
    sha256: str


DEBS: dict[str, Deb] = {
    # rocFFT 6.1.2 as Debian 13 builds it with ROCm's clang: one offload bundle, 11 gfx targets
    "librocfft0": Deb(
        "librocfft0", "6.1.2-1", "trixie", "a720be0e46c967b325980b7c5f10bee2d41ccfaa7446053f772cc8c211949065"
    ),
    # SpFFT 1.1.1 built with HIP: five offload bundles (one per HIP source), 10 gfx targets each
    "libspfft1": Deb(
        "libspfft1", "1.1.1-3", "trixie", "f02a52b27bfd662c082109b1c8e4edc6358d9200926946ae3aff93dc7898440f"
    ),
}


def _mirror() -> str:
    """The Debian mirror the system's apt uses (never spelled in this repository)."""
    for f in sorted(Path("/etc/apt/sources.list.d").glob("*.sources")):
        m = re.search(r"^URIs:\s*(\S+)", f.read_text(), re.M)
        if m and "security" not in m.group(1):
            return m.group(1)
    lst = Path("/etc/apt/sources.list")
    if lst.is_file():
        m = re.search(r"^deb\s+(?:\[[^]]*\]\s+)?(\S+)\s+\S+\s+main", lst.read_text(), re.M)
        if m:
            return m.group(1)
    raise MissingInput("this host has no Debian apt sources (/etc/apt) to fetch trixie packages from")


def _apt_options(state: Path) -> list[str]:
    return [
        "-o", f"Dir::Etc::SourceList={state / 'sources.list'}",
        "-o", "Dir::Etc::SourceParts=-",
        "-o", f"Dir::State::Lists={state / 'lists'}",
        "-o", f"Dir::Cache={state / 'cache'}",
        "-o", "Dir::State::Status=/dev/null",
        "-o", "APT::Sandbox::User=root",
        "-o", "Debug::NoLocking=1",
    ]  # fmt: skip


def _apt(state: Path, *args: str, cwd: Path, what: str) -> None:
    try:
        r = subprocess.run(["apt-get", "-q", *_apt_options(state), *args], capture_output=True, text=True, cwd=cwd)
    except OSError as e:
        raise MissingInput(f"{what}: apt-get cannot run here: {e}") from None
    if r.returncode != 0:
        raise MissingInput(f"{what}: apt-get {' '.join(args)} failed: {(r.stderr or r.stdout)[-500:]}")


def fetch(name: str) -> Path:
    """The verified ``.deb`` of ``name`` (see :data:`DEBS`), downloaded once, then cached."""
    deb = DEBS[name]
    root = cache_root() / "debs"
    dest = root / "files" / deb.sha256
    with locked(root / f"{deb.sha256}.lock", what=f"Debian package {name}"):
        if dest.is_dir():
            files = list(dest.glob("*.deb"))
            if len(files) == 1 and sha256_file(files[0]) == deb.sha256:
                return files[0]
            shutil.rmtree(dest)
        state = root / f"apt-{deb.suite}"
        for d in ("lists/partial", "cache/archives/partial"):
            (state / d).mkdir(parents=True, exist_ok=True)
        (state / "sources.list").write_text(f"deb {_mirror()} {deb.suite} main\n")
        what = f"Debian package {deb.package}={deb.version} ({deb.suite})"
        with tempfile.TemporaryDirectory(prefix="bg-deb-") as t:
            _apt(state, "update", cwd=Path(t), what=what)
            _apt(state, "download", f"{deb.package}={deb.version}", cwd=Path(t), what=what)
            files = list(Path(t).glob("*.deb"))
            if len(files) != 1:
                raise MissingInput(f"{what}: apt-get download left {len(files)} files")
            got = sha256_file(files[0])
            if got != deb.sha256:
                raise AssertionError(f"{name}: {files[0].name} has sha256 {got}, pinned {deb.sha256}")
            dest.mkdir(parents=True, exist_ok=True)
            return Path(shutil.move(str(files[0]), dest / files[0].name))


def unpacked(name: str) -> Path:
    """A cached ``dpkg-deb -x`` of ``name``'s package (read-only by convention)."""
    deb = DEBS[name]
    archive = fetch(name)
    out = cache_root() / "debs" / "unpacked" / deb.sha256
    with locked(cache_root() / "debs" / f"{deb.sha256}.unpack.lock", what=f"Debian package {name}"):
        if not (out / ".complete").exists():
            with atomic_dir(out) as tmp:
                subprocess.run(["dpkg-deb", "-x", str(archive), str(tmp)], check=True, capture_output=True)
                (tmp / ".complete").write_text("ok")
    return out


def require_deb(name: str) -> Path:
    """:func:`unpacked`, failing the calling test (never skipping) when it cannot be had."""
    import pytest

    try:
        return unpacked(name)
    except MissingInput as e:
        pytest.fail(str(e), pytrace=False)


if __name__ == "__main__":
    for n in sys.argv[1:] or DEBS:
        print(n, unpacked(n), flush=True)
