"""NVIDIA's redist manifests pinned by sha256: ``<bundles>/locks/cuda-redist-manifests.toml``.

Every archive a ``source = "redist"`` leg installs is checked against the sha256 its manifest
``redistrib_<label>.json`` gives, so the manifest itself is pinned: a leg whose label has no row
here refuses before anything is downloaded, and a manifest whose bytes are not the pinned ones
(NVIDIA republished it, a mirror or a man in the middle changed it) is refused in one line naming
the manifest and both digests. Rows are written by ``bundlegraph lock-redist`` (a maintainer, with
the network), never by hand. Shape::

    version = 1

    [[manifest]]
    label = "12.8.0"          # redistrib_12.8.0.json
    sha256 = "<64 hex>"
    size = 61234              # bytes

A manifest the spec names as a local ``.json`` file (in the bundles directory, under version
control like this lock) needs no row.
"""

from __future__ import annotations

import re
from pathlib import Path

from ..core.errors import BundleGraphError, HashMismatch, ToolkitError
from ..core.lightclass import frozen
from .lockread import is_sha256, is_size, read_toml

LOCK = "locks/cuda-redist-manifests.toml"
"""The lock's path relative to the bundles directory."""

COMMAND = "bundlegraph lock-redist"
"""The maintainer command that writes the rows."""

_LABEL = re.compile(r"^[0-9]+\.[0-9]+\.[0-9]+$")


@frozen
class ManifestPin:
    """One row: ``label`` (``12.8.0``), ``sha256`` (lowercase hex) and ``size`` (bytes)."""

    label: str
    sha256: str
    size: int


def lock_path(bundles: Path) -> Path:
    """``<bundles>/locks/cuda-redist-manifests.toml``."""
    return bundles / LOCK


def load_pins(path: Path) -> dict[str, ManifestPin]:
    """The rows of ``path`` by label; ``{}`` when the file does not exist. Raises
    :class:`ToolkitError` naming the file and every bad row at once (no sha256, not 64 hex digits,
    no size, a label twice, an unknown key)."""
    if not path.is_file():
        return {}
    doc = read_toml(path, "the redist manifests' lock")
    problems = [f"{path}: {k}: unknown key" for k in doc if k not in ("version", "manifest")]
    if doc.get("version") != 1:
        problems.append(f"{path}: version: expected 1, got {doc.get('version')!r}")
    pins: dict[str, ManifestPin] = {}
    for i, row in enumerate(doc.get("manifest", [])):
        where = f"{path}: manifest[{i}]"
        label, sha, size = row.get("label"), row.get("sha256"), row.get("size")
        extra = sorted(set(row) - {"label", "sha256", "size"})
        if extra:
            problems.append(f"{where}: unknown key(s) {', '.join(extra)}")
        if not isinstance(label, str) or not _LABEL.match(label):
            problems.append(f"{where}.label: expected a redist release label such as 12.8.0, got {label!r}")
            continue
        if not is_sha256(sha):
            problems.append(f"{where}.sha256: expected 64 lowercase hex digits, got {sha!r}; rerun `{COMMAND}`")
        elif not is_size(size):
            problems.append(f"{where}.size: expected a positive number of bytes, got {size!r}")
        elif label in pins:
            problems.append(f"{where}.label: {label} is pinned twice")
        else:
            pins[label] = ManifestPin(label, sha, size)
    if problems:
        raise ToolkitError("\n".join(problems))
    return pins


def dump_pins(pins: dict[str, ManifestPin]) -> str:
    """The lock file's text for ``pins`` (sorted by label, numerically)."""
    lines = [
        f"# Written by `{COMMAND}`: do not edit the hashes by hand.",
        "# NVIDIA's redistrib_<label>.json manifests by sha256: every archive a redist leg installs is",
        "# checked against its manifest, so the manifest is checked against this pin first.",
        "version = 1",
    ]
    for label in sorted(pins, key=lambda v: tuple(int(x) for x in v.split("."))):
        p = pins[label]
        lines += ["", "[[manifest]]", f'label = "{p.label}"', f'sha256 = "{p.sha256}"', f"size = {p.size}"]
    return "\n".join(lines) + "\n"


class ManifestNotPinned(BundleGraphError):
    """A redist leg's manifest has no row in the lock (exit 2: pin it, then run again)."""


def unpinned(label: str, spec_file: str, bundles: Path) -> ManifestNotPinned:
    """The refusal of a leg whose manifest has no pin (raised before any download)."""
    return ManifestNotPinned(
        f"{spec_file}: cuda.toolkit.manifest: redistrib_{label}.json is not pinned in {lock_path(bundles)}; "
        f"a maintainer runs `{COMMAND} {label}` (with the network), reviews and commits the lock"
    )


def moved(origin: str, got: str, want: str, lock: Path | str, label: str) -> HashMismatch:
    """The refusal of a manifest whose bytes are not the pinned ones (one line; exit 3)."""
    return HashMismatch(
        f"{origin}: sha256 {got}, but {lock} pins redistrib_{label}.json at {want}: the manifest moved, nothing "
        f"is installed from it; if NVIDIA republished it, review the change and re-pin with `{COMMAND} {label} --update`"
    )


__all__ = [
    "COMMAND",
    "LOCK",
    "ManifestNotPinned",
    "ManifestPin",
    "dump_pins",
    "load_pins",
    "lock_path",
    "moved",
    "unpinned",
]
