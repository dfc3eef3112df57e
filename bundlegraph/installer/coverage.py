"""The release's coverage rules (``[coverage]`` of ``release.toml``,
:class:`~bundlegraph.schemas.records.CoverageRules`) judged against the bundles a release
offers. The rules are data; this module knows only their kinds:

- ``equal_classes``: on each listed platform, the set of listed classes each listed CUDA line
  ships is the same for every line, and not empty (the fork's gate: for linux-x64 and
  windows-x64, cuda12 and cuda13 each ship ``{older, newer, portable}`` alike);
- ``required``: every listed profile ships for every listed platform (``cuda12-legacy`` for both
  x64 platforms, ``cpu`` for all four);
- ``fingerprint`` is judged per bundle by ``verify`` (:mod:`bundlegraph.checks.brand`), not here.

One judge, two sources of offers: the specs before anything builds (:func:`offers_of_specs`:
what ``bundlegraph plan`` reports) and the bundles in ``dist/`` as the manifest describes them
(:func:`offers_of_manifest`: what ``publish`` refuses on). Every problem names the rule
(``coverage.required[0]``) and each bundle missing, by its asset name.

A missing bundle of an ``equal_classes`` rule is named by the profile ``<line>-<class>``
(``cuda12-older``): the naming every CUDA leg of the release follows (the fork's too).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from ..core.lightclass import frozen
from ..core.platforms import platform
from ..schemas.records import CoverageRules, Matrix

if TYPE_CHECKING:  # a type only: judging the specs (bundlegraph plan) imports no pydantic
    from ..schemas.manifest import ManifestArtifact


@frozen
class Offer:
    """One bundle a release offers: ``platform`` (``linux-x64``), ``line`` (``cuda12``, None
    for a CPU bundle), ``klass`` (coverage class), ``profile`` (bundle profile) and ``name``
    (its asset name)."""

    platform: str
    line: str | None
    klass: str
    profile: str
    name: str


def asset_name(prefix: str, tag: str, plat: str, profile: str) -> str:
    """``<prefix>-<tag>-<os>-<arch>-<profile><.zip|.tar.gz>`` of platform ``plat``
    (``linux-x64``), as :meth:`~bundlegraph.schemas.records.BundleSpec.bundle_name` writes it."""
    return f"{prefix}-{tag}-{plat}-{profile}{platform(plat.split('-', 1)[0]).archive}"


def offers_of_specs(matrix: Matrix) -> list[Offer]:
    """The bundles the promised legs of ``matrix`` will ship (nothing built yet)."""
    rel = matrix.release
    return [
        Offer(
            f"{s.os}-{s.arch}",
            s.profile.line,
            s.profile.klass,
            s.profile_name,
            s.bundle_name(rel.tag, rel.bundle_prefix),
        )
        for s in (matrix.legs[leg] for leg in matrix.promised)
    ]


def offers_of_manifest(artifacts: Iterable[ManifestArtifact], dist: Path) -> list[Offer]:
    """The bundles a manifest lists (its ``artifacts``) whose file is in ``dist``."""
    return [
        Offer(f"{a.os}-{a.arch}", a.runtime_line, a.coverage_class, a.bundle_profile, a.asset_name)
        for a in artifacts
        if (dist / a.asset_name).is_file()
    ]


def rule_problems(rules: CoverageRules | None, offers: list[Offer], *, prefix: str, tag: str) -> list[str]:
    """One line per broken rule and missing bundle: ``coverage.<kind>[<i>]: <what>``; empty when
    ``rules`` is None or every rule holds."""
    if rules is None:
        return []
    out: list[str] = []
    for i, eq in enumerate(rules.equal_classes):
        where = f"coverage.equal_classes[{i}]"
        for plat in eq.platforms:
            have = {
                line: sorted(
                    {o.klass for o in offers if o.platform == plat and o.line == line and o.klass in eq.classes}
                )
                for line in eq.lines
            }
            union = sorted({k for ks in have.values() for k in ks})
            sets = "; ".join(f"{line} [{', '.join(ks)}]" for line, ks in have.items())
            if not union:
                want = [asset_name(prefix, tag, plat, f"{line}-{k}") for line in eq.lines for k in eq.classes]
                out.append(
                    f"{where}: {plat}: no bundle of class {'/'.join(eq.classes)} on any of "
                    f"{', '.join(eq.lines)} (the sets must be non-empty and equal); ship e.g. {', '.join(want)}"
                )
                continue
            for line, ks in have.items():
                for k in union:
                    if k not in ks:
                        out.append(
                            f"{where}: {plat}: {asset_name(prefix, tag, plat, f'{line}-{k}')} is missing: "
                            f"the class sets of {', '.join(eq.lines)} must be equal ({sets})"
                        )
    for i, req in enumerate(rules.required):
        shipped = {(o.platform, o.profile) for o in offers}
        for plat in req.platforms:
            for prof in req.profiles:
                if (plat, prof) not in shipped:
                    out.append(
                        f"coverage.required[{i}]: {asset_name(prefix, tag, plat, prof)} is missing "
                        f"(profile {prof} on {plat} is required)"
                    )
    return out


def describe(rules: CoverageRules | None) -> list[str]:
    """The rules in words, one line each (for ``bundlegraph plan``)."""
    if rules is None:
        return []
    out = [
        f"equal_classes[{i}]: on {', '.join(e.platforms)}, {' = '.join(e.lines)} in classes {'/'.join(e.classes)}, "
        f"non-empty"
        for i, e in enumerate(rules.equal_classes)
    ]
    out += [f"required[{i}]: {', '.join(r.profiles)} on {', '.join(r.platforms)}" for i, r in enumerate(rules.required)]
    if rules.fingerprint:
        out.append(f"fingerprint: {rules.fingerprint!r} in every binary that links build-info")
    return out


__all__ = ["Offer", "asset_name", "describe", "offers_of_manifest", "offers_of_specs", "rule_problems"]
