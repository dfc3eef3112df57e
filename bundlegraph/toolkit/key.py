"""The toolkit task's action key: what decides whether an installed toolkit is the one a
component set asks for. Kept apart from :mod:`.install` so the up-to-date check of a toolkit
imports neither the download, extract nor redist-manifest code (issue 20)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .identity import ComponentSet

LAYOUT_VERSION = 1
"""The layout of an installed toolkit (:mod:`.layout`); a change reinstalls every toolkit."""


def key_inputs(cs: ComponentSet, bundles: Path) -> dict[str, Any]:
    """The toolkit task's action-key inputs: the component set with every resolved name,
    version, platform and sha256 (redist: from the manifest; wheels: the lock rows, which the
    set's identity holds; host: a fingerprint of the files used). Raises
    :class:`~bundlegraph.core.errors.ToolkitError` when a redist manifest cannot be had."""
    d: dict[str, Any] = {"set": cs.identity(), "layout": LAYOUT_VERSION}
    if cs.source == "redist":
        from .redist import resolve

        d["artifacts"] = [a.as_json() for a in resolve(cs, bundles)[2]]
    elif cs.source == "host":
        from .hostsrc import fingerprint

        d["host_files"] = fingerprint(cs)
    return d
