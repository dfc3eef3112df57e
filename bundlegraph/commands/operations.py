"""The release operations the scheduled workflows run (:mod:`bundlegraph.release.ops`):

- ``release-age [--max-days N] [--repo R]``: the newest published release of ``R`` (default
  ``GITHUB_REPOSITORY``) and its age; exit 1, naming both, when it is older than N days (default
  3) or there is none: the daily check that fails loudly when releases stop.
- ``rerun-cancelled --run-id ID [--repo R]``: re-run a cancelled release run once when nobody
  cancelled it by hand (its cancelled jobs' annotations: :mod:`bundlegraph.release.ops`), at
  least one of its jobs succeeded and none failed; says why it does or does not (a person's
  cancel is named and stands). Every job of the run is read, page by page (a release run has
  more than the 100 one page holds).
- ``start-release TAG [--repo R] [--workflow release.yml]``: dispatch the release workflow on the
  tag (a tag pushed with the workflow's own token starts nothing).

The API is ``BUNDLEGRAPH_GITHUB_API``, the token ``GITHUB_TOKEN``.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import os
import sys
from typing import Any

from ..core.errors import BundleGraphError


def _gh(repo: str | None) -> Any:
    from ..release.github_release import GitHub

    repo = repo or os.environ.get("GITHUB_REPOSITORY")
    if not repo:
        raise BundleGraphError("no repository: pass --repo OWNER/REPO or set GITHUB_REPOSITORY")
    return GitHub.connect(repo)


def run_age(args: argparse.Namespace) -> int:
    from ..release.ops import newest_published

    gh = _gh(args.repo)
    with gh.c:
        newest = newest_published(gh)
    if newest is None:
        print(f"{gh.repo}: no published release at all", file=sys.stderr)
        return 1
    age = newest.age_days(_dt.datetime.now(_dt.UTC))
    line = f"{gh.repo}: newest published release {newest.tag}, {newest.published_at.isoformat()} ({age:.1f} days ago)"
    if age > args.max_days:
        print(f"{line}: older than {args.max_days:g} days; releases have stopped", file=sys.stderr)
        return 1
    print(line)
    return 0


def run_rerun(args: argparse.Namespace) -> int:
    from ..release.ops import rerun_verdict

    gh = _gh(args.repo)
    with gh.c:
        run = gh.call("GET", f"/actions/runs/{args.run_id}")
        # every job, page by page: a release run has more jobs (139) than one page holds (100)
        jobs = gh.paged(f"/actions/runs/{args.run_id}/jobs", key="jobs")
        # why each cancelled job stopped: its check run's annotations (the jobs API does not say)
        notes = {
            int(j["id"]): [str(a.get("message", "")) for a in gh.paged(f"/check-runs/{j['id']}/annotations")]
            for j in jobs
            if j.get("conclusion") == "cancelled" and j.get("id")
        }
        again, why = rerun_verdict(run, jobs, notes)
        if again:
            gh.call("POST", f"/actions/runs/{args.run_id}/rerun", ok=(201,))
    print(f"run {args.run_id}: {'re-run' if again else 'left as it is'}: {why}")
    return 0


def run_start(args: argparse.Namespace) -> int:
    from ..release.ops import start_release

    gh = _gh(args.repo)
    with gh.c:
        start_release(gh, args.tag, args.workflow)
    print(f"{gh.repo}: {args.workflow} dispatched on refs/tags/{args.tag}")
    return 0


def register(sub: Any) -> None:
    p = sub.add_parser("release-age", help="fail when the newest published release is older than N days")
    p.add_argument("--max-days", type=float, default=3.0, help="the oldest a newest release may be (default 3)")
    p.add_argument("--repo", help="OWNER/REPO (default: $GITHUB_REPOSITORY)")
    p.set_defaults(func=run_age)
    r = sub.add_parser(
        "rerun-cancelled",
        help="re-run a cancelled release run once (nobody cancelled it by hand, some job passed, none failed)",
    )
    r.add_argument("--run-id", required=True, help="the workflow run's id")
    r.add_argument("--repo", help="OWNER/REPO (default: $GITHUB_REPOSITORY)")
    r.set_defaults(func=run_rerun)
    s = sub.add_parser("start-release", help="dispatch the release workflow on a tag")
    s.add_argument("tag")
    s.add_argument("--repo", help="OWNER/REPO (default: $GITHUB_REPOSITORY)")
    s.add_argument("--workflow", default="release.yml")
    s.set_defaults(func=run_start)
