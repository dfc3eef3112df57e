"""The names of the release's own files, for the stages that plan with them before any of the
formats is read or written (no pydantic here; the formats are :mod:`bundlegraph.schemas.manifest`)."""

from __future__ import annotations

MANIFEST_NAME = "llama-prebuilt-manifest.json"
"""The release manifest installers read (``dist/`` and the release's assets)."""
INDEX_NAME = "llama-prebuilt-sha256.json"
"""The release's SHA index (``dist/`` and the release's assets)."""
ATTESTATION_NAME = "llama-prebuilt-attestation.sigstore.json"
"""The Sigstore bundle of the release workflow's attestation of every other asset (the attest
job's ``actions/attest`` ``bundle-path``, uploaded by ``publish-release --sigstore-bundle``);
:mod:`bundlegraph.release.authenticity` verifies it."""


def source_archive_name(commit: str) -> str:
    """``llama.cpp-source-commit-<40-hex commit>.tar.gz``: the source archive a release
    publishes. Installers look it up by this name in the SHA index (with the index's
    ``source_repo``) and download it from the release itself; the other name they accept,
    ``llama.cpp-source-<upstream_tag>.tar.gz``, is fetched from upstream's tag tarball, whose
    bytes we do not make (unsloth 2026.10.9, see :mod:`bundlegraph.schemas.installer`)."""
    return f"llama.cpp-source-commit-{commit}.tar.gz"
