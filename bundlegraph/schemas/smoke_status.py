"""A bundle's smoke result as it travels with the bundle: ``<bundle>.smoke.json`` beside it.

``smoke:<leg>`` (:mod:`bundlegraph.pipeline.smoke`) runs on the sealed archive (signed,
hashed, verified), so its result cannot be inside it; it writes this sidecar next to the bundle
(and uploads travel ``dist/*``), the manifest copies each one's status into its entry, and
publish refuses a promised bundle without a passed smoke for exactly its bytes unless the spec's
``[smoke] waived`` says why.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..core.lightclass import frozen

SUFFIX = ".smoke.json"


def sidecar(bundle: Path) -> Path:
    """``<bundle>.smoke.json`` beside ``bundle``."""
    return bundle.with_name(bundle.name + SUFFIX)


@frozen
class SmokeStatus:
    """``status`` (``passed``), ``how`` it ran (``native``, ``qemu-aarch64 -L ...``) and the
    bundle's sha256 it judged."""

    status: str
    how: str
    bundle_sha256: str

    def summary(self) -> str:
        return f"{self.status} ({self.how})"


def judged(bundle: Path, sha256: str) -> dict[str, Any] | None:
    """The JSON of ``bundle``'s sidecar when it exists and judged these bytes (its
    ``bundle_sha256`` is ``sha256``); None otherwise (no smoke, an unreadable sidecar, or one for
    other bytes)."""
    try:
        d = json.loads(sidecar(bundle).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return d if isinstance(d, dict) and d.get("bundle_sha256") == sha256 else None


def read_status(bundle: Path, sha256: str) -> SmokeStatus | None:
    """The smoke result of ``bundle`` when its sidecar judged these bytes (:func:`judged`)."""
    d = judged(bundle, sha256)
    if d is None:
        return None
    return SmokeStatus(str(d.get("status")), str(d.get("how")), sha256)


__all__ = ["SUFFIX", "SmokeStatus", "read_status", "sidecar"]
