"""Who built a release: the Sigstore bundle the release workflow's attest job publishes among the
release's assets (:data:`ATTESTATION_NAME`), verified offline with the PyPI ``sigstore`` library
against a pinned trust root and the expected signer, and its attested subjects compared with the
release's files. This is what ``verify-release`` runs by default (check ``authenticity``:
:func:`check_release`) and what ``bundlegraph verify-attestation`` runs on any bundle and its files.

The signer is a certificate identity and an OIDC issuer (:func:`workflow_identity`,
:data:`GITHUB_ISSUER`): ``https://github.com/<repo>/.github/workflows/release.yml@refs/tags/<tag>``
issued by GitHub Actions. Fulcio issues such a certificate only to that workflow's run at that tag,
so a release re-sealed by someone with write access to it (files, SHA index, provenance subjects
all recomputed) has no bundle that names its bytes.

**The trust root** is :data:`TRUSTED_ROOT` (``bundlegraph/release/trust/sigstore-trusted-root.json``),
Sigstore's public-good production ``trusted_root.json`` (Fulcio's CA certificates, Rekor's and the
CT log's keys, with validity windows) as sigstore-python 4.5.1 embeds it, pinned by
:data:`TRUSTED_ROOT_SHA256` and checked on every load. It is read from the package, so
verification needs no network and writes nothing (sigstore-python's own ``offline=True`` mode reads
an unverified copy from the user's cache directory instead, after writing it there). When Sigstore
rotates a key, a newer root is passed with ``--trusted-root FILE`` until the pin is refreshed
(``sigstore`` keeps the current one under TUF: ``python -m sigstore`` fetches it).

Errors: every failure is :class:`AuthenticityError` (a :class:`BundleGraphError`, exit 1 in
``verify-release``/``verify-attestation``: a check that answered no) with one line naming the
bundle and what was expected.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.errors import BundleGraphError
from ..schemas.asset_names import ATTESTATION_NAME

if TYPE_CHECKING:
    from ..schemas.manifest import ShaIndex
    from .reading import Check, Source

GITHUB_ISSUER = "https://token.actions.githubusercontent.com"
"""The OIDC issuer of a GitHub Actions workflow's Sigstore certificate."""
WORKFLOW = "release.yml"
"""The workflow whose run at the release's tag signs the release (``.github/workflows/``)."""
TRUSTED_ROOT = Path(__file__).resolve().parent / "trust" / "sigstore-trusted-root.json"
"""Sigstore's public-good trust root, pinned (module docstring)."""
TRUSTED_ROOT_SHA256 = "6494e21ea73fa7ee769f85f57d5a3e6a08725eae1e38c755fc3517c9e6bc0b66"
"""sha256 of :data:`TRUSTED_ROOT` (sigstore-python 4.5.1's embedded production ``trusted_root.json``)."""
IN_TOTO = "application/vnd.in-toto+json"

__all__ = [
    "ATTESTATION_NAME",
    "GITHUB_ISSUER",
    "AuthenticityError",
    "attested_subjects",
    "check_release",
    "subject_problems",
    "unverified_statement",
    "verify_bundle",
    "workflow_identity",
]


class AuthenticityError(BundleGraphError):
    """A Sigstore bundle that does not prove what it must: unreadable, a signature or certificate
    that does not verify against the trust root, another signer, or a statement that is not an
    in-toto statement. The message is one line starting with the bundle's name."""


def workflow_identity(repo: str, tag: str, workflow: str = WORKFLOW) -> str:
    """``https://github.com/<repo>/.github/workflows/<workflow>@refs/tags/<tag>``: the certificate
    identity (SAN URI) Fulcio gives that workflow's run for that tag."""
    return f"https://github.com/{repo}/.github/workflows/{workflow}@refs/tags/{tag}"


def _trusted_root(path: Path | None) -> Any:
    """The ``sigstore.models.TrustedRoot`` of ``path`` (None: the pinned :data:`TRUSTED_ROOT`,
    refused unless its sha256 is :data:`TRUSTED_ROOT_SHA256`)."""
    from sigstore.models import TrustedRoot

    where = path or TRUSTED_ROOT
    try:
        raw = where.read_bytes()
    except OSError as e:
        raise BundleGraphError(f"{where}: cannot read the Sigstore trust root ({e.strerror or e})") from None
    if path is None and hashlib.sha256(raw).hexdigest() != TRUSTED_ROOT_SHA256:
        raise AuthenticityError(
            f"{where}: sha256 {hashlib.sha256(raw).hexdigest()}, pinned {TRUSTED_ROOT_SHA256} (reinstall bundlegraph)"
        )
    try:
        return TrustedRoot.from_file(str(where))
    except Exception as e:  # sigstore raises its own errors, pydantic's and ValueError for a bad root
        raise AuthenticityError(f"{where}: not a Sigstore trusted root ({_line(e)})") from None


def verify_bundle(
    name: str,
    raw: bytes,
    *,
    identity: str,
    issuer: str = GITHUB_ISSUER,
    trusted_root: Path | None = None,
) -> dict[str, Any]:
    """Verify the Sigstore bundle ``raw`` (its file ``name``, for messages): the certificate chains
    to the trust root's Fulcio CA, was in its validity window when Rekor logged the signature (the
    log entry's inclusion proof or promise verified with Rekor's key), carries the SAN ``identity``
    and the issuer ``issuer``, and its key signed the DSSE envelope. Returns the in-toto statement
    (the envelope's payload, a dict with ``subject``/``predicateType``/``predicate``). Raises
    :class:`AuthenticityError` with one line for anything else."""
    from sigstore.errors import Error as SigstoreError
    from sigstore.models import Bundle
    from sigstore.verify import Verifier, policy

    verifier = Verifier(trusted_root=_trusted_root(trusted_root))
    try:
        bundle = Bundle.from_json(raw)
    except Exception as e:  # InvalidBundle, JSON and protobuf errors alike: the bytes are not a bundle
        raise AuthenticityError(f"{name}: not a Sigstore bundle ({_line(e)})") from None
    try:
        payload_type, payload = verifier.verify_dsse(bundle, policy.Identity(identity=identity, issuer=issuer))
    except SigstoreError as e:
        raise AuthenticityError(f"{name}: {_why(e, identity, issuer)}") from None
    except Exception as e:  # a malformed signature or certificate inside a well-formed bundle
        raise AuthenticityError(f"{name}: the signature does not verify ({_line(e)})") from None
    if payload_type != IN_TOTO:
        raise AuthenticityError(f"{name}: signs a {payload_type!r} payload, expected an in-toto statement ({IN_TOTO})")
    try:
        statement = json.loads(payload)
    except ValueError:
        statement = None
    if not isinstance(statement, dict) or not isinstance(statement.get("subject"), list):
        raise AuthenticityError(f"{name}: the signed payload is not an in-toto statement with subjects")
    return statement


def _why(e: Exception, identity: str, issuer: str) -> str:
    """One line for a sigstore verification error; an identity mismatch says what was expected."""
    msg = _line(e)
    low = msg.lower()
    if "identity" in low or "san" in low or "issuer" in low or "extension" in low:
        return f"not signed by the expected workflow run (issuer {issuer}): {msg}"
    return f"the signature does not verify against the Sigstore trust root: {msg}"


def _line(e: Exception) -> str:
    text = " ".join(str(e).split()) or type(e).__name__
    return text if len(text) <= 300 else text[:297] + "..."


def attested_subjects(name: str, statement: Mapping[str, Any]) -> dict[str, dict[str, str]]:
    """``{subject name: {algorithm: hex digest}}`` of an in-toto statement. Raises
    :class:`AuthenticityError` for a subject without a name or digests, or a name given twice."""
    out: dict[str, dict[str, str]] = {}
    for i, s in enumerate(statement.get("subject") or []):
        n = s.get("name") if isinstance(s, dict) else None
        d = s.get("digest") if isinstance(s, dict) else None
        if not isinstance(n, str) or not isinstance(d, dict) or not d:
            raise AuthenticityError(f"{name}: subject[{i}]: expected a name and a digest")
        if n in out:
            raise AuthenticityError(f"{name}: subject {n!r} is attested twice")
        out[n] = {str(k): str(v) for k, v in d.items()}
    return out


def subject_problems(name: str, attested: Mapping[str, Mapping[str, str]], files: Mapping[str, str]) -> list[str]:
    """The differences between the ``attested`` subjects (:func:`attested_subjects`) and the
    release's ``files`` (``{file name: sha256}``), one line each: a file that is not attested, or
    attested with another sha256 (or with no sha256), and an attested subject that is not among
    the files. Empty when they are equal."""
    out: list[str] = []
    for n in sorted(files):
        got = attested.get(n)
        if got is None:
            out.append(f"{n}: not among the subjects {name} attests (sha256 {files[n]})")
        elif "sha256" not in got:
            out.append(f"{n}: {name} attests no sha256 for it (only {', '.join(sorted(got))})")
        elif got["sha256"] != files[n]:
            out.append(f"{n}: sha256 {files[n]}, {name} attests {got['sha256']}")
    for n in sorted(set(attested) - set(files)):
        out.append(f"{n}: attested by {name} but not in the release")
    return out


def unverified_statement(name: str, raw: bytes) -> dict[str, Any]:
    """The in-toto statement inside Sigstore bundle ``raw``, read without checking any signature
    (``publish-release`` compares its subjects before publishing; :func:`verify_bundle` is the
    check). Raises :class:`AuthenticityError` when there is none."""
    import base64

    try:
        doc = json.loads(raw)
        payload = base64.b64decode(doc["dsseEnvelope"]["payload"], validate=True)
        statement = json.loads(payload)
    except (ValueError, KeyError, TypeError):
        raise AuthenticityError(
            f"{name}: not a Sigstore bundle of an in-toto statement (dsseEnvelope.payload)"
        ) from None
    if not isinstance(statement, dict) or not isinstance(statement.get("subject"), list):
        raise AuthenticityError(f"{name}: the DSSE payload is not an in-toto statement with subjects")
    return statement


def check_release(
    src: Source, index: ShaIndex, repo: str | None, tag: str, trusted_root: Path | None, c: Check
) -> None:
    """The release's Sigstore bundle is signed by ``repo``'s release workflow at ``tag`` and
    attests exactly the release's files, each with its sha256 (:mod:`bundlegraph.release.authenticity`):
    every file but the bundle, the local side files of
    :data:`~bundlegraph.release.reading.LOCAL_FILES` and a paired upstream
    asset (kind ``runtime``: upstream's to publish and attest, never uploaded by us; its sha256 is
    in the index, which is attested, and the ``assets`` check holds the file to it). Verdicts go
    to ``c`` (:class:`~bundlegraph.release.reading.Check`): failed with one line per problem, or
    not run without ``repo``; raises nothing for what it finds."""
    from ..core.fsutil import sha256_file
    from .reading import LOCAL_FILES

    if not repo:
        c.status, c.why = "not run", "not authenticated: needs --repo OWNER/REPO, whose release.yml must have signed it"
        return
    identity = workflow_identity(repo, tag)
    p = src.path(ATTESTATION_NAME)
    if p is None:
        c.fail(
            f"{ATTESTATION_NAME}: not in the release, so nothing proves {identity} built it "
            "(the release workflow's attest job publishes this Sigstore bundle)"
        )
        return
    try:
        statement = verify_bundle(ATTESTATION_NAME, p.read_bytes(), identity=identity, trusted_root=trusted_root)
        attested = attested_subjects(ATTESTATION_NAME, statement)
    except AuthenticityError as e:
        c.fail(str(e))
        return
    files: dict[str, str] = {}
    upstreams = set(index.of_kind("runtime"))
    for n in src.names():
        fp = src.path(n) if n not in (ATTESTATION_NAME, *LOCAL_FILES, *upstreams) else None
        if fp is not None:
            files[n] = sha256_file(fp)
    for problem in subject_problems(ATTESTATION_NAME, attested, files):
        c.fail(problem)
    if c.status == "passed":
        c.why = f"{len(files)} files signed by {identity}"
