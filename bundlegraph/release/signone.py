"""Sign one pending bundle (``signing: pending``) for :mod:`bundlegraph.release.signbundles`: read, check
the repack, take the signed base's files, sign the leg's own PE files, rewrite the info JSON,
repack, verify, re-bind the smoke. The steps and what each proves: :mod:`bundlegraph.release.signbundles`.
"""

from __future__ import annotations

import calendar
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.errors import BundleGraphError
from ..core.fsutil import atomic_write_json, sha256_file
from ..core.lightclass import frozen

if TYPE_CHECKING:
    from ..schemas.manifest import BundleInfo
    from ..schemas.records import Matrix


class SignBundlesError(BundleGraphError):
    """A pending bundle cannot be signed faithfully (a missing base, a repack that differs, a
    signer that changed more than the signature, a bundle for another release)."""


@frozen
class Member:
    """One archive member: ``name``, ``data`` and whether it is marked executable."""

    name: str
    data: bytes
    executable: bool


def read_zip(path: Path) -> tuple[list[Member], int]:
    """The members of a bundle ``.zip`` and the epoch of their timestamps. Raises
    :class:`SignBundlesError` for another format (only Windows bundles hold PE files)."""
    if not path.name.endswith(".zip"):
        raise SignBundlesError(f"{path.name}: a pending bundle must be a .zip (PE files are Windows bundles')")
    with zipfile.ZipFile(path) as zf:
        infos = [i for i in zf.infolist() if not i.is_dir()]
        members = [Member(i.filename, zf.read(i), bool((i.external_attr >> 16) & 0o111)) for i in infos]
    epoch = calendar.timegm((*infos[0].date_time, 0, 0, 0)) if infos else 0
    return members, epoch


def write_zip(dest: Path, members: list[Member], epoch: int, scratch: Path) -> Path:
    """Pack ``members`` as ``package`` does (files on disk, :func:`bundlegraph.pipeline.bundle.archive.write_archive`)."""
    import shutil

    from ..pipeline.bundle.archive import Entry, write_archive

    shutil.rmtree(scratch, ignore_errors=True)
    entries = []
    for m in members:
        p = scratch / m.name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(m.data)
        entries.append(Entry(m.name, path=p, executable=m.executable))
    return write_archive(dest, entries, epoch)


def rebind_smoke(unsigned: Path, signed: Path, unsigned_sha: str, signed_sha: str) -> bool:
    """Write ``signed``'s smoke sidecar from ``unsigned``'s when that one judged exactly
    ``unsigned_sha``; returns whether there was one. The caller has checked that signing changed
    nothing outside the signatures."""
    from ..schemas.smoke_status import judged, sidecar

    d = judged(unsigned, unsigned_sha)
    if d is None:
        return False
    d = {
        **d,
        "bundle_sha256": signed_sha,
        "unsigned_sha256": unsigned_sha,
        "rebound": "sign-bundles: the smoke ran on the unsigned bundle; signing changed only Authenticode "
        "signatures (every file equal outside them)",
    }
    atomic_write_json(sidecar(signed), d)
    return True


def _info_bytes(info: BundleInfo) -> bytes:
    """The info JSON as ``package`` writes it."""
    return (info.model_dump_json(indent=2) + "\n").encode()


def _from_base(
    name: str, members: dict[str, Member], info: BundleInfo, signed: Mapping[str, tuple[Path, Path]], keep: set[str]
) -> dict[str, Member]:
    """The members of a merged bundle that came from its base, as the *signed* base holds them:
    a member byte-equal to the unsigned base's. Raises :class:`SignBundlesError` when the base was
    not signed in this run."""
    base = info.merged_from
    if base is None:
        return {}
    if base not in signed:
        raise SignBundlesError(
            f"{name}: merged from {base}, which is not among the bundles signed here; "
            f"give sign-bundles the base bundle too (it is signed first)"
        )
    before, _ = read_zip(signed[base][0])
    after, _ = read_zip(signed[base][1])
    old = {m.name: m.data for m in before}
    new = {m.name: m for m in after}
    return {n: new[n] for n, m in members.items() if n not in keep and n in old and old[n] == m.data and n in new}


def sign_one(
    src: Path,
    dest: Path,
    info: BundleInfo,
    matrix: Matrix,
    signed: Mapping[str, tuple[Path, Path]],
    scratch: Path,
    env: Mapping[str, str],
) -> dict[str, Any]:
    """Sign bundle ``src`` into ``dest`` (``signed``: asset name -> (unsigned, signed) of the
    bundles already done, for a merged leg's base). Returns its record. Raises
    :class:`SignBundlesError`, :class:`~bundlegraph.pipeline.bundle.sign.SigningError` and
    :class:`~bundlegraph.core.errors.VerifyError` naming the bundle."""
    from ..checks.pe_unsigned import same_outside_signature
    from ..pipeline.archivecheck import archive_verifier
    from ..pipeline.bundle.sign import is_pe, sign_files
    from ..pipeline.merge import LICENSES_FILE

    rel, spec = matrix.release, matrix.legs[info.leg]
    name = src.name
    members, epoch = read_zip(src)
    check = scratch.parent / f"{scratch.name}.repack.zip"
    write_zip(check, members, epoch, scratch)
    same = check.read_bytes() == src.read_bytes()
    check.unlink()
    if not same:
        raise SignBundlesError(f"{name}: repacking its own members does not give back its bytes; not signed")
    if _info_bytes(info) != next((m.data for m in members if m.name == rel.info_file), b""):
        raise SignBundlesError(f"{name}: its {rel.info_file} is not as package writes it; not signed")
    by_name = {m.name: m for m in members}
    keep = {rel.info_file, LICENSES_FILE}
    base = _from_base(name, by_name, info, signed, keep)
    runtime = {r.name for r in info.runtime_files}
    own = [n for n in by_name if n not in keep and n not in base and n not in runtime]
    scratch.mkdir(parents=True, exist_ok=True)
    files: dict[str, Path] = {}
    for n in own:
        p = scratch / "own" / n
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(by_name[n].data)
        if is_pe(p):
            files[n] = p
    env = {k: v for k, v in env.items() if k != "BUNDLEGRAPH_SIGN"}  # sign now: this is the signing job
    outcome = sign_files(list(files.values()), leg=info.leg, signing=spec.signing, env=env)
    problems = []
    new: dict[str, Member] = dict(by_name)
    for n, p in files.items():
        data = p.read_bytes()
        why = same_outside_signature(by_name[n].data, data)
        if why:
            problems.append(f"{n}: {why}")
        new[n] = Member(n, data, by_name[n].executable)
    for n, m in base.items():  # the shared files agree: the signed base's, changed only by its signatures
        old = by_name[n].data
        if old[:2] == b"MZ":
            why = same_outside_signature(old, m.data)
        else:
            why = None if old == m.data else "differs from the signed base's"
        if why:
            problems.append(f"{n} (from the base {info.merged_from}): {why}")
        new[n] = m
    if problems:
        raise SignBundlesError(f"{name}: not signed: " + "; ".join(problems))
    info2 = info.model_copy(update={"signing": outcome})
    new[rel.info_file] = Member(rel.info_file, _info_bytes(info2), False)
    write_zip(dest, [new[m.name] for m in members], epoch, scratch / "pack")
    base_spec = matrix.legs.get(spec.merge.base) if spec.merge else None
    try:
        archive_verifier(spec, rel, base=base_spec)(dest)
    except BundleGraphError:
        dest.unlink(missing_ok=True)
        raise
    u_sha, s_sha = sha256_file(src), sha256_file(dest)
    return {
        "asset": name,
        "leg": info.leg,
        "signing": outcome,
        "unsigned_sha256": u_sha,
        "sha256": s_sha,
        "signed_files": sorted(files),
        "from_signed_base": sorted(base),
        "smoke_rebound": rebind_smoke(src, dest, u_sha, s_sha),
    }


__all__ = ["Member", "SignBundlesError", "read_zip", "rebind_smoke", "sign_one", "write_zip"]
