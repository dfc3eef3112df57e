"""``shard.json``: what one shard of a sharded leg's compile left for the final compile
(written by :func:`bundlegraph.pipeline.shard_build.run_shard`, read by ``bundlegraph
shard-merge``), as a record of the :mod:`.records` kind, validated by pydantic like a spec.

A shard folder arrives as a downloaded artifact, so its ``shard.json`` is input from another
runner: :func:`read_shard` refuses a damaged one (``"shard": "2/x"``, a ``measured`` that is
not a number, a missing key) with one line naming the file, the key and the value
(:class:`ShardRecordError`), before anything is merged.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Final, Literal

from ..core.errors import BundleGraphError
from .constraints import Check
from .records import Record, record

SHARD_FORMAT: Final = "bundlegraph-shard/1"
"""``format`` of every ``shard.json`` this version writes and reads."""

_SECONDS = Annotated[float, Check(ge=0, strict=True, allow_inf_nan=False)]
_COUNT = Annotated[int, Check(ge=0, strict=True)]


class ShardRecordError(BundleGraphError):
    """A ``shard.json`` that is not a shard record (one line: file, key, value, expected)."""


@record
class ShardRecord(Record):
    """One shard's ``shard.json``."""

    format: Literal["bundlegraph-shard/1"]
    """bundlegraph-shard/1"""
    leg: Annotated[str, Check(pattern=r"^[a-z0-9][a-z0-9._-]*$")]
    """the leg's id"""
    shard: Annotated[str, Check(pattern=r"^[1-9][0-9]*/[1-9][0-9]*$")]
    """which shard, ``I/N`` (1 <= I <= N)"""
    objects: list[str]
    """the ninja outputs (objects) this shard compiled"""
    predicted_seconds: _SECONDS
    """CPU seconds the split predicted for the slice"""
    jobs: Annotated[int, Check(ge=1, strict=True)]
    """the parallel jobs it compiled with (-j)"""
    seconds: _SECONDS
    """wall seconds the shard's compile took"""
    costs_from: str
    """the cost record the split used (its path, or "the stated estimates")"""
    split_digest: Annotated[str, Check(pattern=r"^[0-9a-f]{64}$")]
    """sha256 of the whole split: equal on every shard of one leg that split alike"""
    measured: dict[str, _SECONDS]
    """seconds per compile step really compiled, by object key (folded into the cost record)"""
    cache: dict[str, Any] | None
    """the compiler cache's figures (launcher, version, hits, misses, remote), None without one"""
    cache_entries_added: _COUNT
    """cache entries this shard added (its ccache/ folder)"""
    remote_storage: bool
    """whether the entries went to the remote storage instead"""

    def __post_init__(self) -> None:
        if self.index > self.count:
            raise ValueError(f"shard: '{self.shard}': I must be between 1 and {self.count}")

    @property
    def index(self) -> int:
        """I of ``I/N``."""
        return int(self.shard.split("/")[0])

    @property
    def count(self) -> int:
        """N of ``I/N``."""
        return int(self.shard.split("/")[1])


EXPECTED = f"expected the shard.json a shard build writes (format {SHARD_FORMAT!r})"


def _value(v: Any) -> str:
    text = json.dumps(v, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


def read_shard(f: Path) -> ShardRecord:
    """``f`` as a :class:`ShardRecord`. Raises :class:`ShardRecordError` of one line, ``<file>:
    <key>: <value>: <what is wrong>; expected ...`` (the first problem, and how many more), for
    a file that is unreadable, not JSON, of another format or not valid."""
    from pydantic import ValidationError

    from .adapters import adapter

    try:
        data = json.loads(f.read_text(encoding="utf-8"))
    except (OSError, ValueError) as why:
        raise ShardRecordError(f"{f}: not a shard record ({why}); {EXPECTED}") from None
    if not isinstance(data, dict) or data.get("format") != SHARD_FORMAT:
        got = _value(data.get("format")) if isinstance(data, dict) else type(data).__name__
        raise ShardRecordError(f"{f}: format: {got}: not a shard record; {EXPECTED}")
    try:
        return adapter(ShardRecord).validate_python(data)
    except ValidationError as err:
        errors = err.errors()
        e = errors[0]
        loc = [str(p) for p in e["loc"]]
        msg = e["msg"].removeprefix("Value error, ")
        if e["type"] == "value_error" and msg.startswith("shard: "):  # __post_init__ names its key
            loc, msg = ["shard"], msg.split(": ", 2)[-1]
        key = ".".join(loc) or "(top level)"
        if e["type"] == "string_pattern_mismatch" and key == "shard":
            msg = "expected I/N, two whole numbers with 1 <= I <= N (e.g. 2/3)"
        if e["type"] in ("missing", "missing_keyword_only_argument", "missing_argument"):
            what = f"{f}: {key}: missing"
        elif e["type"] in ("unexpected_keyword_argument", "extra_forbidden"):
            what = f"{f}: {key}: {_value(e.get('input'))}: unknown key"
        else:
            what = f"{f}: {key}: {_value(data_at(data, loc))}: {msg}"
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        raise ShardRecordError(f"{what}{more}; {EXPECTED}") from None


def data_at(data: Any, loc: list[str]) -> Any:
    """The value at key path ``loc`` of ``data`` (None where there is none)."""
    for k in loc:
        if isinstance(data, dict) and k in data:
            data = data[k]
        elif isinstance(data, list) and k.isdigit() and int(k) < len(data):
            data = data[int(k)]
        else:
            return None
    return data


__all__ = ["EXPECTED", "SHARD_FORMAT", "ShardRecord", "ShardRecordError", "data_at", "read_shard"]
