"""Keeping releases coming: how old the newest published release is (:func:`newest_published`,
``bundlegraph release-age``), whether a cancelled release run is re-run (:func:`rerun_verdict`,
``bundlegraph rerun-cancelled``), and starting ``release.yml`` on a tag (:func:`start_release`,
``bundlegraph start-release``). Each reads and writes through GitHub's REST API
(:class:`bundlegraph.github_release.GitHub`):

- ``GET /repos/{repo}/releases`` (drafts are not published; ``published_at`` is when one was);
- ``GET /repos/{repo}/actions/runs/{id}`` and ``.../jobs`` (each job's ``conclusion``:
  ``success``, ``failure``, ``cancelled``, ``skipped``, ...), ``POST .../rerun``;
- ``POST /repos/{repo}/actions/workflows/{file}/dispatches`` with ``{"ref": "refs/tags/T"}``: a
  tag pushed with the workflow's own ``GITHUB_TOKEN`` starts no workflow (GitHub: "events
  triggered by the GITHUB_TOKEN ... will not create a new workflow run", except
  ``workflow_dispatch`` and ``repository_dispatch``), so the upstream workflow dispatches the
  release run itself.
"""

from __future__ import annotations

import datetime as _dt
from typing import Any

from .core.lightclass import frozen
from .upstream import parse_time


@frozen
class Published:
    """The newest published release: its ``tag`` and when it was published."""

    tag: str
    published_at: _dt.datetime

    def age_days(self, now: _dt.datetime) -> float:
        return (now - self.published_at).total_seconds() / 86400


def newest_published(gh: Any) -> Published | None:
    """The most recently published (not draft) release of ``gh``'s repository, None when it has
    none. Raises :class:`~bundlegraph.core.errors.BundleGraphError` when the API fails."""
    best: Published | None = None
    for r in gh.paged("/releases"):
        when = r.get("published_at")
        if r.get("draft") or not when:
            continue
        at = parse_time(str(when))
        if best is None or at > best.published_at:
            best = Published(str(r.get("tag_name")), at)
    return best


def rerun_verdict(run: dict[str, Any], jobs: list[dict[str, Any]]) -> tuple[bool, str]:
    """Whether a finished release run is re-run once: it was cancelled (a runner lost, a
    timeout of the platform), it is its first attempt, at least one job succeeded and none
    failed (a failure is a real answer: re-running it would only hide it). Returns
    ``(rerun, why)``."""
    concl = run.get("conclusion")
    attempt = int(run.get("run_attempt") or 1)
    if concl != "cancelled":
        return False, f"the run's conclusion is {concl!r}, not 'cancelled'"
    if attempt != 1:
        return False, f"attempt {attempt}: a cancelled run is re-run once only"
    kinds = [j.get("conclusion") for j in jobs]
    failed = [j.get("name", "?") for j in jobs if j.get("conclusion") in ("failure", "timed_out")]
    if failed:
        return False, f"job(s) failed: {', '.join(failed)}"
    if "success" not in kinds:
        return False, "no job succeeded before the cancel (nothing shows the run can get further)"
    return True, f"cancelled after {kinds.count('success')} successful job(s) and no failure: re-run once"


def start_release(gh: Any, tag: str, workflow: str = "release.yml") -> None:
    """Dispatch ``workflow`` on ``refs/tags/<tag>``. Raises on an API error."""
    gh.call("POST", f"/actions/workflows/{workflow}/dispatches", ok=(204,), json={"ref": f"refs/tags/{tag}"})


__all__ = ["Published", "newest_published", "rerun_verdict", "start_release"]
