"""The graph stage ``verify:<leg>``: verify a leg's built tree (after ``build:<leg>``, report in
``build/<leg>/verify.json``) without running it. This module keeps only the stage's plan and run,
and the one policy the graph applies to a leg (:func:`leg_policy`, which ``bundlegraph verify
--leg`` calls too). The library is :mod:`bundlegraph.verification`: the policy
(:class:`~bundlegraph.verification.policy.VerifyPolicy`), the table of check rows and the loop
that walks it (:func:`~bundlegraph.verification.run.verify_path`); its names are re-exported here
for the callers that imported them from this module.

The stage registry lists this stage (:data:`bundlegraph.pipeline.stages.STAGES`). The package
stage verifies the finished archive with the same library (:mod:`bundlegraph.pipeline.archivecheck`).
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..core.errors import BundleGraphError
from ..core.lightclass import frozen
from ..core.report import say
from ..verification.policy import BACKENDS, VerifyPolicy, archive_policy, policy_from_spec
from ..verification.run import Report, verify_path
from .base import Context, Prepared, leg_task, upstream_digest

NAME = "verify"
"""The stage's name: its tasks are ``verify:<leg>`` (:mod:`bundlegraph.pipeline.stages`)."""


def leg_policy(ctx: Context, leg: str, *, built_tree: bool) -> VerifyPolicy:
    """The one policy the graph applies to ``leg``: ``verify:<leg>``'s on its build output
    (``built_tree``, :func:`built_tree_policy`: with the build host's paths), else the archive
    check's (:func:`archive_policy`). ``bundlegraph verify --leg`` calls this, so the standalone
    command and the graph cannot check different things."""
    if built_tree:
        return built_tree_policy(ctx, leg)
    spec = ctx.spec(leg)
    return archive_policy(spec, ctx.release, base=ctx.matrix.legs.get(spec.merge.base) if spec.merge else None)


# ---------------------------------------------------------------- graph stage (built tree)


def built_tree_policy(ctx: Context, leg: str) -> VerifyPolicy:
    """``policy_from_spec(..., built_tree=True)`` for ``leg`` of a graph context (pure)."""
    spec = ctx.spec(leg)
    base = ctx.matrix.legs.get(spec.merge.base) if spec.merge else None
    policy = policy_from_spec(spec, ctx.release, base=base, built_tree=True)
    if ctx.imported_build(leg) is not None:  # made on another runner: its paths are not ours to know
        return policy
    return replace(policy, host_paths=host_paths(ctx, leg))


def host_paths(ctx: Context, leg: str) -> tuple[tuple[str, str], ...]:
    """The build-host directories no binary of ``leg`` may name: the download cache, the work
    directory, the source tree (a path pin lies outside both) and the home directory."""
    from .source import plan_source, source_record_if_any

    rec = source_record_if_any(leg)
    tree = Path(rec.tree) if rec is not None else plan_source(ctx.release, ctx.matrix.root).tree
    out = [
        ("download cache", ctx.cache.as_posix()),
        ("work directory", ctx.workdir.as_posix()),
        ("source tree", tree.as_posix()),
    ]
    try:
        out.append(("home directory", Path.home().as_posix()))
    except RuntimeError:  # no HOME (nor USERPROFILE): nothing to look for
        pass
    return tuple(out)


@frozen
class VerifyTreePlan:
    """``verify:<leg>``'s plan value: the built ``tree`` (``build/<leg>/cmake/bin``), the
    ``policy`` it is checked against and the ``report`` path (``build/<leg>/verify.json``)."""

    leg: str
    tree: Path
    policy: VerifyPolicy
    report: Path
    build_digest: str = "missing"
    """``build:<leg>``'s output digest when prepared (:func:`prepare`)."""

    def key(self) -> dict[str, Any]:
        """The built files (the build's output digest) and the policy."""
        return {"build": self.build_digest, "policy": _policy_json(self.policy)}

    def describe(self) -> dict[str, Any]:
        return {"tree": self.tree.as_posix(), "policy": _policy_json(self.policy)}


def _policy_json(policy: VerifyPolicy) -> dict[str, Any]:
    out: dict[str, Any] = json.loads(json.dumps(policy.to_json(), default=list))
    return out


def prepare(ctx: Context, leg: str) -> Prepared[VerifyTreePlan]:
    """The plan value of ``verify:<leg>`` and its key (the build's output digest, the policy)."""
    return Prepared.of(replace(plan_verify(ctx, leg), build_digest=upstream_digest(f"build:{leg}")))


def plan_verify(ctx: Context, leg: str) -> VerifyTreePlan:
    """The :class:`VerifyTreePlan` of ``leg`` (pure; its build digest is read by :func:`prepare`)."""
    from ..core import paths
    from .build import plan_build

    return VerifyTreePlan(
        leg, plan_build(ctx, leg).artifacts_dir, built_tree_policy(ctx, leg), paths.build_dir(leg) / "verify.json"
    )


def run_verify_built(plan: VerifyTreePlan) -> list[Any]:
    """``verify:<leg>``: verify the build stage's artifacts directory, write the report and
    raise :class:`VerifyError` on any failure."""
    from ..core.fsutil import atomic_write_json

    if not plan.tree.is_dir():
        raise BundleGraphError(f"verify:{plan.leg}: {plan.tree} does not exist; run build:{plan.leg}")
    report = verify_path(plan.tree, plan.policy)
    atomic_write_json(plan.report, report.to_json())
    say(f"verify:{plan.leg}: {len(report.files)} binaries, {len(report.failures)} failure(s); report {plan.report}")
    report.raise_for_failures()
    return [plan.report]


def plans(ctx: Context) -> list[Any]:
    """``verify:<leg>`` for every selected leg, after ``build:<leg>``: the checks of this
    module on the built tree (``built_tree=True`` policy). The finished archive is verified
    again by the package stage (:mod:`bundlegraph.pipeline.archivecheck`)."""
    out = []
    for leg in ctx.legs:
        doc, deps = f"verify the built tree of {leg} (machine, GPU code, imports)", [f"build:{leg}"]
        out.append(
            leg_task(NAME, ctx, leg, doc=doc, deps=deps, prepare=prepare, run=run_verify_built, preview=plan_verify)
        )
    return out


__all__ = [
    "BACKENDS",
    "NAME",
    "Report",
    "VerifyPolicy",
    "VerifyTreePlan",
    "archive_policy",
    "built_tree_policy",
    "host_paths",
    "leg_policy",
    "plan_verify",
    "plans",
    "policy_from_spec",
    "prepare",
    "run_verify_built",
    "verify_path",
]
