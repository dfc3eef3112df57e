"""Verify a packed bundle archive and reduce the result to :class:`VerifyFindings`.

:func:`archive_verifier` returns the ``Verifier`` that ``package`` and ``merge`` call: verify's
full report on the archive itself (:func:`~bundlegraph.verification.run.verify_path` with
:func:`~bundlegraph.verification.policy.policy_from_spec`: machine, closure, glibc floors, fatbin
vs promised archs, signatures, required files, the info JSON). Failures raise
:class:`VerifyError` naming the archive and member (on CI each becomes an
``::error file=<archive>::`` annotation, :mod:`bundlegraph.pipeline.ci`); machines and fatbin SASS
targets become the findings.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ..core.errors import VerifyError
from ..schemas.manifest import VerifyFindings
from ..schemas.records import BundleSpec, Release
from ..verification import Report, archive_policy, verify_path


def findings_of(report: Report, arch: str) -> VerifyFindings:
    """Reduce a verify ``Report`` to :class:`VerifyFindings`: the machines of its binaries
    (``arch`` when all agree) and the SMs with SASS in the fatbins of the GPU backend
    (``ggml-cuda.dll`` / ``libggml-cuda.so``: what the bundle runs its own GPU code with), sorted.
    Fatbins of shipped libraries (cuBLAS carries SASS for every SM NVIDIA supports) say nothing
    about which GPUs the bundle's backend runs on."""
    machines = {str(f["machine"]) for f in report.files.values() if f.get("machine")}
    backends = {b.lower() for b in report.policy.backends}
    gpu = [f for path, f in report.files.items() if path.rsplit("/", 1)[-1].lower() in backends]
    sms = sorted({int(k) for f in gpu for k in (f.get("fatbin") or {}).get("sass", {})})
    sass = sorted(
        {a for f in gpu for a in (f.get("fatbin") or {}).get("sass_archs", [])}, key=lambda a: (int(a.rstrip("af")), a)
    )
    machine = arch if machines == {arch} else (",".join(sorted(machines)) or None)
    return VerifyFindings(machine=machine, fatbin_sms=sms, fatbin_sass=sass, passed=report.ok)


def archive_verifier(
    spec: BundleSpec,
    release: Release,
    *,
    base: BundleSpec | None = None,
    trust_roots: tuple[str, ...] = (),
    awaiting_signature: bool = False,
) -> Callable[[Path], VerifyFindings]:
    """``verifier(archive) -> VerifyFindings`` for ``spec``'s finished bundles: verify's
    :func:`verify_path` on the archive itself with ``policy_from_spec(spec, release, base=base)``
    (``base``: the merge base's spec for a merged leg; ``trust_roots``: extra PEM roots for the
    signature check, default ``BUNDLEGRAPH_TRUST_ROOTS``; ``awaiting_signature``: a bundle packaged
    with ``BUNDLEGRAPH_SIGN=later``, whose PE files ``sign-bundles`` signs, so no signature is
    required yet; every other check applies). Raises :class:`VerifyError` listing every failure."""
    policy = archive_policy(spec, release, base=base, trust_roots=trust_roots)
    if awaiting_signature:
        from dataclasses import replace

        policy = replace(policy, signing_required=False)

    def verify(archive: Path) -> VerifyFindings:
        report = verify_path(archive, policy)
        if not report.ok:
            raise VerifyError(report.lines(), subject=archive.name)
        return findings_of(report, spec.arch)

    return verify
