"""Per-leg cost records: how many seconds each compile step of a leg took when it was last
really compiled (a compiler-cache miss, or a build without a cache), read from ninja's
``.ninja_log``. The shard split (:mod:`.shards`) balances by them and ``bundlegraph plan
--critical-path`` predicts a release's timeline from them.

A record is a small JSON file, ``<leg>.json``::

    {"format": "bundlegraph-costs/1", "leg": "linux-arm64-cuda13-blackwell",
     "objects": {"ggml/src/ggml-cuda/CMakeFiles/ggml-cuda.dir/argmax.cu": 5.2, ...},
     "other": {"bin/libggml-cuda.so": 3.1},
     "note": "cold build, -j2, 2-core x86_64 VM"}

``objects``: seconds per compile step, keyed by :func:`~.ninja_graph.object_key` (the object's
path in the build directory without ``.o``/``.obj``); ``other``: seconds of the leg's other ninja
steps (links, custom commands), which the final compile of a sharded leg still runs. ``note``
(optional) says where the figures come from.

Where a record is looked up (:func:`find`), first found wins:

1. ``$BUNDLEGRAPH_COSTS/<leg>.json`` (a directory; the release workflow hands one directory to
   every job of a run, so all shards of a leg split alike);
2. ``<work dir>/.bundlegraph/costs/<leg>.json`` (what this work directory's builds measured);
3. ``<bundles>/costs/<leg>.json`` (a record committed beside the specs: the seed).

A full build writes the merged record to the first of 1 and 2 (:func:`write_dir`); a shard
build writes its figures into its shard folder instead (``shard.json``), and ``bundlegraph
shard-merge`` folds them in, so a shard never changes the record the other shards split by.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import field
from pathlib import Path

from ...core import paths, settings
from ...core.errors import BundleGraphError
from ...core.fsutil import atomic_write_bytes
from ...core.lightclass import frozen

FORMAT = "bundlegraph-costs/1"
EXPECTED = (
    f'JSON {{"format": "{FORMAT}", "leg": "<leg id>", "objects": {{"<object>": seconds}}, '
    f'"other": {{"<output>": seconds}}}}'
)


class CostRecordError(BundleGraphError):
    """A file that should be a cost record is not one (named, with what was expected)."""


@frozen
class CostRecord:
    """One leg's measured seconds: ``objects`` (compile steps by object key), ``other`` (the
    other ninja steps by output), ``note``; ``origin``: the file it was read from (None: new)."""

    leg: str
    objects: Mapping[str, float] = field(default_factory=dict)
    other: Mapping[str, float] = field(default_factory=dict)
    note: str = ""
    origin: Path | None = None

    def to_json(self) -> bytes:
        """The file's bytes: sorted keys, seconds rounded to 0.1 s, newline at the end."""
        data = {
            "format": FORMAT,
            "leg": self.leg,
            "objects": {k: round(v, 1) for k, v in sorted(self.objects.items())},
            "other": {k: round(v, 1) for k, v in sorted(self.other.items())},
        }
        if self.note:
            data["note"] = self.note
        return (json.dumps(data, indent=1, sort_keys=True) + "\n").encode("utf-8")

    def merged(self, objects: Mapping[str, float], other: Mapping[str, float] | None = None) -> CostRecord:
        """A copy with ``objects``/``other`` measured anew (each replaces the old figure)."""
        return CostRecord(
            self.leg, {**self.objects, **objects}, {**self.other, **(other or {})}, self.note, self.origin
        )


def _seconds_table(data: object, where: str) -> dict[str, float]:
    if not isinstance(data, dict):
        raise CostRecordError(f"{where}: expected an object of seconds, got {type(data).__name__}")
    out = {}
    for k, v in data.items():
        if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v) or v < 0:
            raise CostRecordError(f"{where}.{k}: {v!r} is not a number of seconds >= 0")
        out[str(k)] = float(v)
    return out


def parse(raw: bytes, where: Path, leg: str | None = None) -> CostRecord:
    """A record from a file's bytes. Raises :class:`CostRecordError` (one line naming ``where``,
    the key and :data:`EXPECTED`) for anything else, or a record of another leg than ``leg``."""
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise CostRecordError(f"{where}: not a cost record (not JSON: {e}); expected {EXPECTED}") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        got = data.get("format") if isinstance(data, dict) else type(data).__name__
        raise CostRecordError(f"{where}: not a cost record (format {got!r}); expected {EXPECTED}")
    unknown = sorted(set(data) - {"format", "leg", "objects", "other", "note"})
    if unknown:
        raise CostRecordError(f"{where}: unknown key {unknown[0]!r}; expected {EXPECTED}")
    if "leg" not in data:
        raise CostRecordError(f"{where}: leg: missing; expected {EXPECTED}")
    if not isinstance(data["leg"], str):
        raise CostRecordError(f"{where}: leg: {data['leg']!r} is not text (a leg id); expected {EXPECTED}")
    if leg is not None and data["leg"] != leg:
        raise CostRecordError(f"{where}: leg: the record is of {data['leg']!r}, expected {leg!r}")
    try:
        objects = _seconds_table(data.get("objects", {}), f"{where}: objects")
        other = _seconds_table(data.get("other", {}), f"{where}: other")
    except CostRecordError as e:
        raise CostRecordError(f"{e}; expected {EXPECTED}") from None
    note = data.get("note", "")
    return CostRecord(data["leg"], objects, other, note if isinstance(note, str) else str(note), where)


def load(path: Path, leg: str | None = None) -> CostRecord:
    """:func:`parse` of the file ``path``."""
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise CostRecordError(f"{path}: cannot read the cost record ({e.strerror or e})") from None
    return parse(raw, path, leg)


def write_dir() -> Path:
    """Where builds write their records: ``$BUNDLEGRAPH_COSTS``, else ``.bundlegraph/costs``."""
    d = settings.get("COSTS")
    return Path(d).expanduser().resolve() if d else paths.state_dir() / "costs"


def candidates(leg: str, bundles: Path | None) -> list[Path]:
    """The files :func:`find` tries, in order."""
    out = [write_dir() / f"{leg}.json"]
    if settings.get("COSTS"):
        out.append(paths.state_dir() / "costs" / f"{leg}.json")
    if bundles is not None:
        out.append(bundles / "costs" / f"{leg}.json")
    return out


def find(leg: str, bundles: Path | None) -> CostRecord | None:
    """The first record of ``leg`` found (module docstring), None when there is none. A file
    that exists but is no record of ``leg`` raises :class:`CostRecordError`."""
    for p in candidates(leg, bundles):
        if p.is_file():
            return load(p, leg)
    return None


def save(record: CostRecord, directory: Path | None = None) -> Path:
    """Write ``record`` as ``<directory or write_dir()>/<leg>.json`` (atomic); returns the path."""
    p = (directory or write_dir()) / f"{record.leg}.json"
    atomic_write_bytes(p, record.to_json())
    return p


__all__ = ["FORMAT", "CostRecord", "CostRecordError", "candidates", "find", "load", "parse", "save", "write_dir"]
