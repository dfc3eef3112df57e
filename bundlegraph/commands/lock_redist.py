"""``bundlegraph lock-redist [LABEL ...] [--update]``: pin NVIDIA's redist manifests by sha256
(:mod:`bundlegraph.toolkit.redistlock`, ``bundles/locks/cuda-redist-manifests.toml``).

Each label (default: every ``cuda.toolkit.manifest`` label a spec names) is fetched from the redist
pool (``BUNDLEGRAPH_REDIST_URL``, default NVIDIA's), parsed as a redist manifest of that label, and
pinned with its sha256 and size. A label already pinned whose bytes are not the pinned ones is
refused, naming both digests, and nothing is written, unless ``--update`` (NVIDIA republished it
on purpose: review what changed). A maintainer command on a machine with the network: run it,
review the diff, commit.
"""

from __future__ import annotations

import argparse
import hashlib
import json
from pathlib import Path
from typing import Any

from ..backends.cuda.spec import CUDA
from ..core.errors import BundleGraphError, ToolkitError


def fetch_pin(label: str, pool: str) -> tuple[str, Any]:
    """``(origin, ManifestPin)`` of ``<pool>redistrib_<label>.json`` as served now. Raises
    :class:`ToolkitError` for a document that is not that label's manifest, :class:`DownloadError`."""
    from ..core.download import fetch_small
    from ..schemas.redist import parse_manifest
    from ..toolkit.redistlock import ManifestPin

    origin = f"{pool}redistrib_{label}.json"
    data = fetch_small(origin)
    try:
        doc = json.loads(data)
    except ValueError as e:
        raise ToolkitError(f"{origin}: not a redist manifest (not JSON: {e})") from None
    parse_manifest(doc, origin)
    if doc.get("release_label") != label:
        raise ToolkitError(f"{origin}: release_label is {doc.get('release_label')!r}, not {label}")
    return origin, ManifestPin(label, hashlib.sha256(data).hexdigest(), len(data))


def repin(bundles: Path, labels: list[str], update: bool) -> list[str]:
    """Pin ``labels`` (default: every label the specs name) into the bundles directory's lock;
    returns one line per label. Raises :class:`BundleGraphError` (nothing written) when a pinned
    label's bytes moved and ``update`` is false, or when no spec names a redist manifest."""
    from ..specs.loader import load_matrix
    from ..toolkit.identity import redist_pool_url
    from ..toolkit.redistlock import dump_pins, load_pins, lock_path

    if not labels:
        matrix = load_matrix(bundles)
        toolkits = [cuda.toolkit for cuda in map(CUDA.get, matrix.legs.values()) if cuda is not None]
        labels = sorted(
            {
                tk.manifest
                for tk in toolkits
                if tk.source == "redist" and tk.manifest and not tk.manifest.endswith(".json")
            }
        )
        if not labels:
            raise BundleGraphError(f"lock-redist: no spec in {bundles} names a redist manifest")
    path = lock_path(bundles)
    pins = load_pins(path)
    pool = redist_pool_url()
    lines, problems = [], []
    for label in labels:
        origin, pin = fetch_pin(label, pool)
        old = pins.get(label)
        if old is not None and old.sha256 != pin.sha256 and not update:
            problems.append(
                f"{origin}: sha256 {pin.sha256}, but {path} pins it at {old.sha256}: the manifest moved; "
                f"review the change, then rerun with --update"
            )
            continue
        what = "unchanged" if old == pin else ("re-pinned" if old else "pinned")
        lines.append(f"redistrib_{label}.json: {what}, sha256 {pin.sha256}, {pin.size} bytes ({origin})")
        pins[label] = pin
    if problems:
        raise BundleGraphError("\n".join(problems))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dump_pins(pins), encoding="utf-8")
    return lines


def run(args: argparse.Namespace) -> int:
    for line in repin(Path(args.bundles), list(args.label), args.update):
        print(line)
    return 0


def register(sub: Any) -> None:
    p = sub.add_parser("lock-redist", help="pin NVIDIA's redistrib_<label>.json manifests by sha256 (network)")
    p.add_argument("label", nargs="*", help="a redist label such as 12.8.0 (default: every label a spec names)")
    p.add_argument("--update", action="store_true", help="re-pin a label whose bytes moved (review the change first)")
    p.set_defaults(func=run)
