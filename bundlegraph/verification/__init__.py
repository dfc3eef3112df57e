"""The verify library, below the stages: what a leg promises (:mod:`.policy`), the check rows
(:mod:`.rows`: the generic ones; :mod:`.cuda`, :mod:`.vulkan`: the backends'), the table of both
(:mod:`.table`) and the one loop that walks it over a bundle (:mod:`.run`).

The graph stage ``verify:<leg>`` (:mod:`bundlegraph.pipeline.verify`) keeps only its plan and its
run; ``package``/``merge`` (:mod:`bundlegraph.pipeline.archivecheck`) and ``bundlegraph verify``
call :func:`.run.verify_path` with a policy from :mod:`.policy`.
"""

from __future__ import annotations

from .policy import VerifyPolicy, archive_policy, policy_from_spec
from .run import Report, verify_path

__all__ = ["Report", "VerifyPolicy", "archive_policy", "policy_from_spec", "verify_path"]
