"""What every lock file reader shares: reading the TOML, the shape of one row, and the checks of
a pinned sha256 and size. The lock formats themselves (the wheels lock, the debs locks, the
redist manifests' pins, TheRock's tarballs) stay with their readers; this module only keeps their
first lines from being written four times, and their words the same.

Errors are :class:`~bundlegraph.core.errors.ToolkitError`, one line naming the file."""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..core.errors import ToolkitError

SHA256 = re.compile(r"^[0-9a-f]{64}$")
"""A pinned sha256: 64 lowercase hex digits (what ``hashlib``'s ``hexdigest`` writes)."""


def read_toml(path: Path, what: str, hint: str = "") -> dict[str, Any]:
    """The top-level table of the lock file ``path``, whose kind ``what`` names (``"debs lock
    file"``). Raises :class:`ToolkitError`: ``<path>: <what> is missing`` (then ``; <hint>``,
    where to get one, when given) or ``<path>: not valid TOML: <parser's words>`` (also for
    bytes that are not UTF-8 and a file that cannot be read)."""
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ToolkitError(f"{path}: {what} is missing" + (f"; {hint}" if hint else "")) from None
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
        raise ToolkitError(f"{path}: not valid TOML: {e}") from None


def row_shape(where: str, row: object, names: Iterable[str]) -> list[str]:
    """The problems of the shape of one row (``[[package]]``, ``[[wheel]]``) at ``where``
    (``package.3``): not a table, or keys other than ``names``; empty when its shape is right
    (its values are the caller's to check)."""
    if not isinstance(row, dict):
        return [f"{where}: expected a table, got {type(row).__name__}"]
    allowed = list(names)
    return [f"{where}.{k}: unknown key; allowed: {', '.join(allowed)}" for k in row if k not in allowed]


def is_size(v: object) -> bool:
    """Whether ``v`` is a pinned size: a positive whole number of bytes (not a bool)."""
    return isinstance(v, int) and not isinstance(v, bool) and v > 0


def is_sha256(v: object) -> bool:
    """Whether ``v`` is a pinned sha256 (:data:`SHA256`)."""
    return isinstance(v, str) and SHA256.match(v) is not None
