"""The SDK files the specs name that are pinned by sha256 on first download (``bundlegraph
lock``): LunarG's Vulkan SDK installer of a ``lunarg`` leg (pinned in the spec's ``[vulkan.sdk]
sha256``) and the TheRock tarball of each HIP leg (a ``[[tarball]]`` row of its lock). Debian
packages and NVIDIA's wheels have their own indexes and commands (``lock-debs``, ``lock-wheels``).

:func:`wanted` lists them from the specs (pure); :func:`pin_all` downloads each once (from its
home, or ``<mirror>/<file name>``), refuses a pin whose bytes changed and, only when nothing was
refused, writes the new pins. A pin that already holds is checked against the bytes (the blob
cache first), never rewritten.
"""

from __future__ import annotations

import re
from pathlib import Path

from ..core.errors import BundleGraphError, DownloadError, HashMismatch
from ..core.lightclass import frozen
from ..schemas.records import Matrix


@frozen
class SdkFile:
    """One SDK file a spec names: ``kind`` (``lunarg`` | ``therock``), its file ``name``, the
    ``url`` it is published at, ``pin_file`` (the spec or lock file that holds its pin), the pin
    (``sha256``, ``size``; empty and 0 while unpinned) and the ``legs`` that use it."""

    kind: str
    name: str
    url: str
    pin_file: Path
    sha256: str = ""
    size: int = 0
    legs: tuple[str, ...] = ()


def wanted(matrix: Matrix, bundles: Path) -> list[SdkFile]:
    """Every SDK file the specs of ``matrix`` name that is pinned on first download, once each, in
    leg order: what each leg's SDK module says of it (its optional ``pinned_files(spec, bundles,
    spec_file)`` verb: LunarG's installer of a ``lunarg`` Vulkan leg, the TheRock tarball of a HIP
    leg). Pure: reads the TheRock locks. Raises :class:`~bundlegraph.core.errors.ToolkitError`
    for a lock that does not load."""
    from ..schemas import backend as backends
    from .sdk import sdk_module

    out: dict[tuple[str, Path], SdkFile] = {}

    def add(f: SdkFile, leg: str) -> None:
        have = out.setdefault((f.name, f.pin_file), f)
        out[(f.name, f.pin_file)] = SdkFile(**{**have.__dict__, "legs": (*have.legs, leg)})

    for leg, spec in matrix.legs.items():
        spec_file = matrix.files.get(leg, bundles / f"{leg}.toml")
        mod = sdk_module(backends.backend(spec.backend))
        for f in getattr(mod, "pinned_files", lambda *_: [])(spec, bundles, spec_file):
            add(f, leg)  # the SDK module's own verb: the files of its SDK pinned on first download
    return list(out.values())


def _fetch(f: SdkFile, mirror: str | None) -> tuple[str, int]:
    """``(sha256, size)`` of ``f``'s bytes: a pinned file through :func:`download` (the blob
    cache first; other bytes raise :class:`HashMismatch`), an unpinned one downloaded once."""
    from ..core.download import download, download_unpinned

    url = f"{mirror.rstrip('/')}/{f.name}" if mirror else f.url
    if f.sha256:
        download(url, f.sha256, f.size or None)
        return f.sha256, f.size
    _, sha, size = download_unpinned(url)
    return sha, size


_SDK_TABLE = re.compile(r"^\[vulkan\.sdk\][ \t]*$", re.M)
_SHA_LINE = re.compile(r'^sha256[ \t]*=[ \t]*"[0-9a-f]*"[ \t]*\n', re.M)


def pin_spec(text: str, sha256: str) -> str:
    """A lunarg leg's spec text with ``sha256 = "<hex>"`` as the last key of its ``[vulkan.sdk]``
    table (the only change). Raises :class:`BundleGraphError` when the spec has no such table."""
    m = _SDK_TABLE.search(text)
    if m is None:
        raise BundleGraphError("no [vulkan.sdk] table to pin")
    nxt = re.search(r"^\[", text[m.end() :], re.M)
    end = m.end() + nxt.start() if nxt else len(text)
    body = _SHA_LINE.sub("", text[m.end() : end])
    stripped = body.rstrip("\n")
    return f'{text[: m.end()]}{stripped}\nsha256 = "{sha256}"{body[len(stripped) :] or chr(10)}{text[end:]}'


def pin_lock(text: str, rows: list[SdkFile]) -> str:
    """A TheRock lock's text with a ``[[tarball]]`` row (name, url, sha256, size) appended for
    each of ``rows``."""
    out = text.rstrip("\n") + "\n"
    for r in rows:
        out += f'\n[[tarball]]\nname = "{r.name}"\nurl = "{r.url}"\nsha256 = "{r.sha256}"\nsize = {r.size}\n'
    return out


def pin_all(files: list[SdkFile], mirror: str | None = None) -> list[str]:
    """Download and pin every one of ``files`` (module docstring). Returns one line per file
    (``pinned``, ``unchanged``); raises :class:`HashMismatch` (any pin's bytes changed) or
    :class:`DownloadError` with one line per refused file and then writes nothing."""
    done: list[SdkFile] = []
    lines: list[str] = []
    problems: list[str] = []
    for f in files:
        try:
            sha, size = _fetch(f, mirror)
        except HashMismatch as e:
            problems.append(f"{f.pin_file}: {f.name}: the bytes changed, the pin is kept ({e})")
            continue
        except DownloadError as e:
            problems.append(f"{f.pin_file}: {f.name}: not downloaded ({e})")
            continue
        if f.sha256:
            lines.append(f"{f.name}: unchanged (sha256 {sha})")
            continue
        done.append(SdkFile(**{**f.__dict__, "sha256": sha, "size": size}))
        lines.append(f"{f.name}: pinned sha256 {sha} size {size} in {f.pin_file}")
    if problems:  # exit 3 when a pin's bytes moved (a refused input), else 4 (a download failed)
        moved = any(": the bytes changed, " in line for line in problems)
        raise (HashMismatch if moved else DownloadError)("\n".join(problems))
    for pin_file in dict.fromkeys(f.pin_file for f in done):
        mine = [f for f in done if f.pin_file == pin_file]
        text = pin_file.read_text(encoding="utf-8")
        if mine[0].kind == "lunarg":
            text = pin_spec(text, mine[0].sha256)
        else:
            text = pin_lock(text, mine)
        pin_file.write_text(text, encoding="utf-8")
    return lines


__all__ = ["SdkFile", "pin_all", "pin_lock", "pin_spec", "wanted"]
