"""Keeping releases coming: how old the newest published release is (:func:`newest_published`,
``bundlegraph release-age``), whether a cancelled release run is re-run (:func:`rerun_verdict`,
``bundlegraph rerun-cancelled``), and starting ``release.yml`` on a tag (:func:`start_release`,
``bundlegraph start-release``). Each reads and writes through GitHub's REST API
(:class:`bundlegraph.release.github_release.GitHub`):

- ``GET /repos/{repo}/releases`` (drafts are not published; ``published_at`` is when one was);
- ``GET /repos/{repo}/actions/runs/{id}`` and ``.../jobs`` (each job's ``conclusion``:
  ``success``, ``failure``, ``cancelled``, ``skipped``, ...), ``POST .../rerun``;
- ``GET /repos/{repo}/check-runs/{job id}/annotations`` (a job is a check run of the same id:
  its ``check_run_url`` ends in it; the token needs ``checks: read``): why a cancelled job
  stopped. The jobs API itself does not say: a job cancelled by a person, by its
  ``timeout-minutes`` or by GitHub all conclude ``cancelled`` (public runs show a job that hit its
  timeout as ``cancelled``, not ``timed_out``; ``timed_out`` is still counted as a failure). What tells them apart is the failure annotation GitHub
  writes on the job (the texts below, as GitHub's run pages and public run logs show them; GitHub
  documents no list of them, so an unknown text counts as "not a person"):

  - ``The run was canceled by @<login>.``: a person (or an app acting for one) cancelled it;
  - ``The job has exceeded the maximum execution time of 45m0s`` (older: ``The job running on
    runner <name> has exceeded the maximum execution time of 45 minutes.``): its timeout;
  - ``Canceling since a higher priority waiting request for '<group>' exists``: a newer run of
    the same concurrency group replaced it;
  - ``The runner has received a shutdown signal...`` / ``... lost communication with the
    server ...``: the runner went away.
- ``POST /repos/{repo}/actions/workflows/{file}/dispatches`` with ``{"ref": "refs/tags/T"}``: a
  tag pushed with the workflow's own ``GITHUB_TOKEN`` starts no workflow (GitHub: "events
  triggered by the GITHUB_TOKEN ... will not create a new workflow run", except
  ``workflow_dispatch`` and ``repository_dispatch``), so the upstream workflow dispatches the
  release run itself.
"""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Mapping
from typing import Any

from ..core.lightclass import frozen
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


PERSON_CANCEL = re.compile(r"The run was canceled by @?(\S+?)\.?$", re.M)
"""GitHub's annotation on a job a person cancelled (module docstring)."""
SUPERSEDED = "Canceling since a higher priority waiting request"
"""GitHub's annotation on a run a newer one of its concurrency group replaced."""


def cancelled_by_person(jobs: list[dict[str, Any]], annotations: Mapping[int, list[str]]) -> tuple[str, str] | None:
    """``(login, job name)`` of the first cancelled job whose annotations (``annotations``: job
    id -> the messages of its check run's annotations) say a person cancelled the run, else None."""
    for j in jobs:
        if j.get("conclusion") != "cancelled":
            continue
        for msg in annotations.get(int(j.get("id") or 0), []):
            m = PERSON_CANCEL.search(msg)
            if m:
                return m.group(1), str(j.get("name", "?"))
    return None


def rerun_verdict(
    run: dict[str, Any], jobs: list[dict[str, Any]], annotations: Mapping[int, list[str]] | None = None
) -> tuple[bool, str]:
    """Whether a finished release run is re-run once: it was cancelled by no person (a runner
    lost, a job's timeout, the platform), it is its first attempt, at least one job succeeded and
    none failed (a failure is a real answer: re-running it would only hide it). A run a person
    cancelled (a cancelled job annotated ``The run was canceled by @login.``) or a newer run of its
    tag replaced stays cancelled. ``annotations``: job id -> its check run's annotation messages,
    for the cancelled jobs (module docstring). Returns ``(rerun, why)``."""
    annotations = annotations or {}
    concl = run.get("conclusion")
    attempt = int(run.get("run_attempt") or 1)
    if concl != "cancelled":
        return False, f"the run's conclusion is {concl!r}, not 'cancelled'"
    if attempt != 1:
        return False, f"attempt {attempt}: a cancelled run is re-run once only"
    person = cancelled_by_person(jobs, annotations)
    if person is not None:
        return False, f"cancelled by @{person[0]} (job '{person[1]}'): a person's cancel stands"
    if any(SUPERSEDED in m for msgs in annotations.values() for m in msgs):
        return False, "a newer run of the same tag replaced it (its concurrency group)"
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


__all__ = [
    "PERSON_CANCEL",
    "SUPERSEDED",
    "Published",
    "cancelled_by_person",
    "newest_published",
    "rerun_verdict",
    "start_release",
]
