"""What a verify check row is (:class:`Row`, :class:`FileRow`), what it sees (:class:`Subject`),
and the generic rows every leg gets (:data:`ROWS`). A backend's own rows live in a module of this
package named after it (:mod:`.cuda`) and are registered in :func:`.table.registry_rows`.

A row is ``(name, run, gate, key, phase)``, the shape of ``pipeline/smoke/steps.py``:

- ``key``: the :class:`~.policy.VerifyPolicy` fields the row consumes. Its ``gate`` and ``run``
  receive ``policy.only(key)`` (every other field at its default), so the key is the whole of what
  the row reads from the policy, checked, not a comment;
- ``gate(policy) -> bool``: whether the row applies to this policy (default: always);
- ``run``: pure, returns an :data:`Outcome` ``(failures, facts)``: :class:`~bundlegraph.checks.Failure`
  records as :mod:`bundlegraph.checks` does (never raising for a bundle problem) and bundle-wide
  facts recorded in the report's ``bundle`` (``{"glibc": ...}``);
- ``phase``: one of :data:`PHASES`; :func:`.table.rows_for` orders rows by phase, generic rows
  before backend rows within a phase, so the report's failure order stays put as rows are added.

A :class:`Row` runs once on the whole bundle; a :class:`FileRow` runs on each file's bytes while
the bundle is read (each file is read once, and its bytes are gone afterwards).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import field
from typing import TYPE_CHECKING, Any

from ..checks import BytesLike, Failure, closure, content
from ..core.lightclass import frozen
from ..core.platforms import platform

if TYPE_CHECKING:
    from ..checks.elf import ELFInfo
    from ..checks.inspect import FileResult
    from ..checks.pe import PEInfo
    from .policy import VerifyPolicy

Outcome = tuple[list[Failure], dict[str, Any]]
"""What a row returns: ``(failures, facts for the report's bundle section)``."""

PHASES = ("archive", "host-path", "files", "device-code", "imports", "glibc", "required", "loading", "info")
"""The order rows run and report in: the archive's entries, each file's bytes, each file's own
checks (machine, parse, signature), GPU device code, import closure, glibc floors, required files,
how backends will load, the info JSON."""

READ_KEY = ("os", "arch", "signing_required", "trust_roots", "info_file", "fingerprint", "gfx_targets")
"""The policy fields the bundle reader itself consumes (:func:`.run.verify_path`): the per-file
checks of :func:`~bundlegraph.checks.inspect.inspect_file`, which file is the info JSON, and the
byte strings it records per binary (the fingerprint and build-info's line,
:func:`~bundlegraph.checks.brand.brand_marks`), and whether it reads each binary's HIP offload
bundles (a ROCm leg's ``gfx_targets``)."""


def always(_policy: VerifyPolicy) -> bool:
    """The default gate: the row applies to every policy."""
    return True


@frozen
class Subject:
    """What a bundle row sees once the bundle has been read: every binary's parse (``results``:
    bundle path -> :class:`~bundlegraph.checks.inspect.FileResult`), every bundle path
    (``names``), the archive reader's own failures (``archive``) and the info JSON
    (``info_doc``: ``(bundle path, bytes)`` or None)."""

    results: Mapping[str, FileResult]
    names: tuple[str, ...]
    archive: tuple[Failure, ...] = ()
    info_doc: tuple[str, bytes] | None = None
    pe: Mapping[str, PEInfo] = field(default_factory=dict)
    elf: Mapping[str, ELFInfo] = field(default_factory=dict)

    @classmethod
    def of(
        cls,
        results: Mapping[str, FileResult],
        names: tuple[str, ...],
        archive: tuple[Failure, ...] = (),
        info_doc: tuple[str, bytes] | None = None,
    ) -> Subject:
        """The subject of ``results`` with its PE and ELF records split out."""
        pe = {p: r.pe for p, r in results.items() if r.pe is not None}
        elf = {p: r.elf for p, r in results.items() if r.elf is not None}
        return cls(results, names, archive, info_doc, pe, elf)


@frozen
class Row:
    """One bundle-wide check row (see the module docstring)."""

    name: str
    run: Callable[[Subject, VerifyPolicy], Outcome]
    key: tuple[str, ...]
    phase: str
    gate: Callable[[VerifyPolicy], bool] = always


@frozen
class FileRow:
    """One per-file check row: ``run(bundle path, bytes, policy)`` returns that file's failures."""

    name: str
    run: Callable[[str, BytesLike, VerifyPolicy], list[Failure]]
    key: tuple[str, ...]
    phase: str
    gate: Callable[[VerifyPolicy], bool] = always


AnyRow = Row | FileRow
"""A row of either kind."""


# ---------------------------------------------------------------- the generic rows


def _archive(s: Subject, _p: VerifyPolicy) -> Outcome:
    return list(s.archive), {}


def _host_path(rel: str, data: BytesLike, p: VerifyPolicy) -> list[Failure]:
    from ..toolchains.prefix_maps import embedded

    return [
        Failure(
            rel,
            "host-path",
            f"names the build host's {what} {root!r}: a compile did not map it to a stable name "
            f"(-ffile-prefix-map, /d1trimfile); the bytes would differ on another machine",
        )
        for what, root in embedded(data, p.host_paths)
    ]


def _brand(s: Subject, p: VerifyPolicy) -> Outcome:
    from ..checks.brand import TARGET_SYMBOLS, unbranded

    if not p.fingerprint:  # the gate keeps this row from such a policy
        return [], {}
    marks = {path: r.marks for path, r in s.results.items()}
    importers = frozenset(
        [path for path, e in s.elf.items() if not e.imports.isdisjoint(TARGET_SYMBOLS)]
        + [path for path, pe in s.pe.items() if any(not set(TARGET_SYMBOLS).isdisjoint(i.names) for i in pe.imports)]
    )
    return unbranded(marks, p.fingerprint, whole=p.info_file is not None, importers=importers), {}


def _files(s: Subject, _p: VerifyPolicy) -> Outcome:
    return [f for r in s.results.values() for f in r.failures], {}


def _device_code(s: Subject, p: VerifyPolicy) -> Outcome:
    """The device-code inventory of the GPU backend libraries (``policy.backends``)."""
    backends = {b.lower() for b in p.backends}
    found = [r for path, r in sorted(s.results.items()) if path.rsplit("/", 1)[-1].lower() in backends]
    return [], {"fatbin": {r.path: r.fatbin.summary() for r in found if r.fatbin is not None}}


def _closure(s: Subject, p: VerifyPolicy) -> Outcome:
    fails = closure.pe_closure(s.pe, s.names, external=p.external, driver_of=p.driver_of)
    return fails + closure.elf_closure(s.elf, s.names, external=p.external, driver_of=p.driver_of), {}


def _glibc(s: Subject, p: VerifyPolicy) -> Outcome:
    if not s.elf:
        return [], {}
    from ..checks import glibc

    fails, highest = glibc.check_floors(s.elf, glibc=p.glibc_floor, glibcxx=p.glibcxx_floor)
    return fails, {"glibc": highest}


def _is_macos(p: VerifyPolicy) -> bool:
    return p.os is not None and platform(p.os).binary == "Mach-O"


def _macho_files(s: Subject, p: VerifyPolicy) -> Outcome:
    """Each Mach-O file's minimum macOS against the leg's floor and its code signature
    (:func:`bundlegraph.checks.macho.check_file`; the architecture is the reader's check); one
    failure when a macOS bundle holds no Mach-O file at all."""
    from ..checks.macho import check_file, parse_version

    files = {path: r.macho for path, r in sorted(s.results.items()) if r.macho is not None}
    if not files and not any(r.format == "macho" for r in s.results.values()):
        return [Failure("bundle", "macho", "a macOS bundle without a Mach-O file")], {}
    floor = parse_version(p.macos_floor) if p.macos_floor else None
    fails = [f for path, info in files.items() for f in check_file(path, info, minos_floor=floor)]
    minos = [sl.minos for info in files.values() for sl in info.slices if sl.minos is not None]
    from ..checks.macho import version_text

    return fails, {"minos": version_text(max(minos)) if minos else None}


def _macho_closure(s: Subject, _p: VerifyPolicy) -> Outcome:
    """The Mach-O load-command closure (:func:`bundlegraph.checks.macho.closure`: ``@rpath``,
    ``@loader_path``, system libraries; a build machine's ``LC_RPATH``)."""
    from ..checks.macho import closure as macho_closure

    return macho_closure({path: r.macho for path, r in s.results.items() if r.macho is not None}), {}


def _required(s: Subject, p: VerifyPolicy) -> Outcome:
    return content.missing_required(s.names, p.required, fold=_folds(p)), {}


def _folds(p: VerifyPolicy) -> bool:
    # a file verified without its leg (no os): names compare folded, so case alone names nothing missing
    return platform(p.os).fold if p.os is not None else True


def _entry_points(s: Subject, _p: VerifyPolicy) -> Outcome:
    from ..checks import backends

    return backends.missing_entry_points(s.pe, s.elf), {}


def _info(s: Subject, p: VerifyPolicy) -> Outcome:
    if s.info_doc is None:
        return [], {}
    return content.check_info(s.info_doc[0], s.info_doc[1], dict(p.info_expect)), {}


ROWS: tuple[AnyRow, ...] = (
    Row("archive", _archive, (), "archive"),
    FileRow("host-path", _host_path, ("host_paths",), "host-path", gate=lambda p: bool(p.host_paths)),
    Row("brand", _brand, ("fingerprint", "info_file"), "files", gate=lambda p: bool(p.fingerprint)),
    Row("files", _files, (), "files"),
    Row("device-code", _device_code, ("os", "gpu_backends", "backend"), "device-code"),
    Row("macho", _macho_files, ("os", "macos_floor"), "files", gate=_is_macos),
    Row("closure", _closure, ("external", "cuda", "backend"), "imports"),
    Row("macho-closure", _macho_closure, ("os",), "imports", gate=_is_macos),
    Row("glibc", _glibc, ("glibc_floor", "glibcxx_floor"), "glibc"),
    Row("required", _required, ("required", "os"), "required"),
    Row("entry-points", _entry_points, ("backend_dl",), "loading", gate=lambda p: p.backend_dl),
    Row("info", _info, ("info_expect",), "info"),
)
"""The rows every leg gets, whatever its backend. The reader's own checks (machine, parse,
signature: :data:`READ_KEY`) land in the ``files`` row. A macOS leg's Mach-O files get the
``macho`` rows (minimum macOS against the spec's floor, code signature, load-command closure). The closure row's driver rule reads the
backends registry (:func:`bundlegraph.schemas.backend.driver_owners`)."""

__all__ = ["PHASES", "READ_KEY", "ROWS", "AnyRow", "FileRow", "Outcome", "Row", "Subject", "always"]
