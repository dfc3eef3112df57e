"""Verify a bundle — a built tree, a merged tree or a finished archive — without running it:
:func:`verify_path` reads every file once and walks the verify table (:func:`.table.rows_for`)
with one loop, collecting a :class:`Report`. It raises nothing for what it finds (only for a path
that is neither a directory nor a readable archive).
"""

from __future__ import annotations

import os
from dataclasses import field
from typing import TYPE_CHECKING, Any

from ..checks import Failure
from ..core.errors import VerifyError
from ..core.lightclass import mutable
from .policy import VerifyPolicy
from .rows import READ_KEY, FileRow, Row, Subject
from .table import rows_for

if TYPE_CHECKING:  # the file checks are imported where a bundle is verified (never while planning)
    from ..checks.inspect import FileResult


@mutable
class Report:
    """The result of :func:`verify_path`: ``subject`` (what was verified), ``kind``
    (``directory``/``zip``/``tar``), ``failures`` (each one line naming the file and reason),
    ``files`` (bundle path -> finding: format, machine, fatbin inventory, signature),
    ``bundle`` (bundle-wide findings: fatbin SMs per backend, highest glibc needs)."""

    subject: str
    kind: str
    policy: VerifyPolicy
    failures: list[Failure] = field(default_factory=list)
    files: dict[str, dict[str, Any]] = field(default_factory=dict)
    bundle: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.failures

    def lines(self) -> list[str]:
        """One line per failure: ``<file>: <check>: <reason>``."""
        return [f.line() for f in self.failures]

    def to_json(self) -> dict[str, Any]:
        """``{"subject", "kind", "ok", "failures": [{file, check, reason}], "files": {...},
        "bundle": {...}, "policy": {...}}`` (JSON-serialisable)."""
        return {
            "subject": self.subject,
            "kind": self.kind,
            "ok": self.ok,
            "failures": [f.to_json() for f in self.failures],
            "files": self.files,
            "bundle": self.bundle,
            "policy": self.policy.to_json(),
        }

    def raise_for_failures(self) -> None:
        """Raise :class:`VerifyError` (one line per failure) unless the report is clean."""
        if self.failures:
            raise VerifyError(self.lines(), subject=self.subject)


def verify_path(path: str | os.PathLike[str], policy: VerifyPolicy) -> Report:
    """Verify the directory or archive at ``path`` against ``policy``: read each file once
    (:func:`~bundlegraph.checks.inspect.inspect_file` with the reader's key, :data:`.rows.READ_KEY`,
    and the applicable :class:`~.rows.FileRow` s on its bytes), then walk the table's rows in
    order, each with ``policy.only(row.key)`` and through its gate. Raises
    :class:`~bundlegraph.core.errors.BundleGraphError` only when ``path`` is neither a directory
    nor a readable archive."""
    from ..checks.brand import brand_marks
    from ..checks.bundle import read_bundle
    from ..checks.inspect import inspect_file

    table = [(row, policy.only(row.key)) for row in rows_for()]
    table = [(row, p) for row, p in table if row.gate(p)]
    file_rows = [(row, p) for row, p in table if isinstance(row, FileRow)]
    per_file: dict[str, list[Failure]] = {frow.name: [] for frow, _ in file_rows}
    read = policy.only(READ_KEY)
    marks = brand_marks(read.fingerprint)

    bundle, files = read_bundle(path)
    results: dict[str, FileResult] = {}
    info_doc: tuple[str, bytes] | None = None
    for rel, data in files:
        r = inspect_file(
            rel,
            data,
            os_name=read.os,
            arch=read.arch,
            signatures=read.signing_required,
            trust_roots=read.trust_roots,
            marks=marks,
            offload=bool(read.gfx_targets),
        )
        if r.format:
            results[rel] = r
        for frow, fp in file_rows:
            per_file[frow.name] += frow.run(rel, data, fp)
        if read.info_file and rel.rsplit("/", 1)[-1] == read.info_file:
            if info_doc is None or rel.count("/") < info_doc[0].count("/"):  # the shallowest one
                info_doc = (rel, bytes(data))

    report = Report(str(path), bundle.kind, policy)
    report.files = {r.path: r.finding() for r in results.values()}
    subject = Subject.of(results, tuple(bundle.names), tuple(bundle.failures), info_doc)
    for row, p in table:
        if isinstance(row, Row):
            fails, facts = row.run(subject, p)
            report.failures += fails
            report.bundle.update(facts)
        else:
            report.failures += per_file[row.name]
    return report


__all__ = ["Report", "verify_path"]
