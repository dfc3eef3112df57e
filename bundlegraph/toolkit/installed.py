"""What a CUDA toolkit install from either source (NVIDIA's wheels or redist archives,
:mod:`.install`; Debian's packages, :mod:`.debsrc`) says and keeps once it is done: the line it
reports, and whether the receipt of a prefix was written for the same component set in this
layout (then the install is reused)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from ..core.fsutil import read_json_object
from ..core.report import say
from .identity import ComponentSet
from .key import LAYOUT_VERSION


def say_installed(cs: ComponentSet, what: str, prefix: Path, fetched: float, t0: float) -> None:
    """The one line an install says when done: ``what`` (``"12 components"``) at ``prefix``, the
    seconds its downloads took (``fetched``) and the whole install's since ``t0`` (monotonic)."""
    say(f"toolkit {cs.name}: installed {what} at {prefix} (fetch {fetched:.1f}s, total {time.monotonic() - t0:.1f}s)")


def receipt_of(receipt: Path, cs: ComponentSet) -> dict[str, Any] | None:
    """The receipt's JSON when it was written for ``cs`` (its ``set_digest``) in this layout
    (:data:`~.key.LAYOUT_VERSION`); None otherwise, or when it is absent or unreadable."""
    data = read_json_object(receipt)
    if data is None or data.get("set_digest") != cs.digest or data.get("layout") != LAYOUT_VERSION:
        return None
    return data
