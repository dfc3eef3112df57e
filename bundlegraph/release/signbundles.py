"""``bundlegraph sign-bundles DIR --out OUT``: sign the bundles that ``package`` left unsigned
(``BUNDLEGRAPH_SIGN=later``, info file ``signing: pending``), in a job of their own that holds the
signing secret and runs no build code: only this project's code at the tag and the configured
signer (:mod:`bundlegraph.pipeline.bundle.sign`). Nothing of llama.cpp is built, loaded or run.

For each pending bundle under ``DIR`` (any depth, as ``actions/download-artifact`` lays out
``bundle-<leg>/``), merge bases before the legs merged into them:

1. read its members and its leg's spec; repacking the unsigned members must give back the very
   same bytes (the archive writer is byte-deterministic, :mod:`bundlegraph.pipeline.bundle.archive`), so the only
   change the new archive can carry is the one made here;
2. a merged leg's files that came from its base (byte-equal to the unsigned base bundle's) are
   replaced by the *signed* base bundle's: the base is signed first and the shared files agree;
3. the signing hook runs on copies of the leg's own PE files (not a shipped runtime's, not the
   base's), exactly as ``package`` would have; every signed file must equal its unsigned self
   outside the Authenticode signature (:func:`~bundlegraph.checks.pe_unsigned.same_outside_signature`);
4. the info JSON is rewritten as ``package`` writes it with ``signing`` set to the outcome
   (``signed``; ``unsigned`` for an ``optional`` leg without a signer); nothing else in it changes;
5. repack with the same epoch, then verify with the leg's archive check, signatures required
   where its spec requires them;
6. the smoke result beside the unsigned bundle (``<bundle>.smoke.json``) is re-bound to the signed
   bytes: signing changed nothing outside the signatures (checked in 3 and 2), so the smoke judged
   the code the signed bundle runs. The new record keeps the old sha256 as ``unsigned_sha256``.

Every other file under ``DIR`` (bundles not pending, their sidecars, anything else) is copied to
``OUT`` at the same relative path; ``OUT/signed-bundles.json`` lists each signed bundle with both
sha256s, the files signed and the files taken from the signed base.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..core.errors import BundleGraphError
from ..core.fsutil import atomic_write_json
from ..core.report import say
from .signone import SignBundlesError, sign_one

RECORD = "signed-bundles.json"


def _pending(src: Path, info_file: str) -> dict[Path, Any]:
    """Every bundle under ``src`` whose info file says ``signing: pending``, with that info."""
    from ..pipeline.bundle.archive import read_bundle_info

    out: dict[Path, Any] = {}
    for p in sorted(src.rglob("*.zip")):
        try:
            info = read_bundle_info(p, info_file)
        except BundleGraphError:
            continue  # not a bundle (a paired runtime zip): copied through
        if info.signing == "pending":
            out[p] = info
    return out


def sign_bundles(src: Path, out: Path, bundles: Path, env: Mapping[str, str]) -> list[dict[str, Any]]:
    """Sign every pending bundle under ``src`` into ``out`` (module docstring); returns the
    records written to ``out/signed-bundles.json``. Raises :class:`SignBundlesError`,
    :class:`~bundlegraph.pipeline.bundle.sign.SigningError`, :class:`~bundlegraph.core.errors.VerifyError`
    (naming the bundle and file) and :class:`~bundlegraph.core.errors.SpecError`."""
    from ..specs.loader import load_matrix

    matrix = load_matrix(bundles)
    rel = matrix.release
    if not src.is_dir():
        raise SignBundlesError(f"sign-bundles: {src} is not a directory")
    if out.resolve() == src.resolve() or out.resolve().is_relative_to(src.resolve()):
        raise SignBundlesError(f"sign-bundles: --out {out} must be outside {src}")
    pending = _pending(src, rel.info_file)
    order = sorted(pending, key=lambda p: (pending[p].merged_from is not None, p.name))
    out.mkdir(parents=True, exist_ok=True)
    signed: dict[str, tuple[Path, Path]] = {}  # asset -> (unsigned, signed)
    for p in sorted(src.rglob("*.zip")):  # a base that signs nothing (not pending) is its own signed self
        if p not in pending and any(i.merged_from == p.name for i in pending.values()):
            signed.setdefault(p.name, (p, p))
    records = []
    with tempfile.TemporaryDirectory(prefix="sign-bundles-") as td:
        for p in order:
            info = pending[p]
            if info.leg not in matrix.legs:
                raise SignBundlesError(f"{p.name}: leg {info.leg} has no spec in {bundles}")
            if info.release_tag != rel.tag:
                raise SignBundlesError(f"{p.name}: built for {info.release_tag}, {bundles} is for {rel.tag}")
            dest = out / p.relative_to(src)
            dest.parent.mkdir(parents=True, exist_ok=True)
            rec = sign_one(p, dest, info, matrix, signed, Path(td) / info.leg, env)
            signed[p.name] = (p, dest)
            records.append(rec)
    for f in sorted(src.rglob("*")):  # everything else travels unchanged
        rel_path = f.relative_to(src)
        if not f.is_file() or f in pending or (out / rel_path).exists():
            continue
        (out / rel_path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(f, out / rel_path)
    atomic_write_json(out / RECORD, {"release_tag": rel.tag, "bundles": records})
    for r in records:
        say(
            f"sign-bundles: {r['asset']}: {r['signing']}, {len(r['signed_files'])} file(s) signed, "
            f"{len(r['from_signed_base'])} from the signed base; sha256 {r['unsigned_sha256']} -> {r['sha256']}"
        )
    if not records:
        say(f"sign-bundles: no bundle under {src} awaits signing; everything copied to {out}")
    return records


__all__ = ["RECORD", "sign_bundles"]
