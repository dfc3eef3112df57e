"""A GitHub releases API on 127.0.0.1, in memory: the part ``bundlegraph upload-release`` uses,
written from GitHub's REST documentation (``/repos/{owner}/{repo}/releases...``), and the download
host for what it holds.

Behaviour kept from GitHub: a draft release is not found by ``GET /releases/tags/{tag}`` (only
listed, to its authors, by ``GET /releases``); an upload's asset gets ``state: "uploaded"`` and a
``digest`` of ``sha256:<hex>`` computed by the server; an upload of a name the release already
has is ``422`` (``already_exists``); ``PATCH`` with ``draft: false`` publishes. Every request is
recorded in ``calls`` as ``"METHOD /path"`` (query dropped, ``{id}`` kept numeric) for assertions
on the order of calls; ``token`` when set is required as ``Authorization: Bearer <token>``.
"""

from __future__ import annotations

import hashlib
import http.server
import json
import threading
import urllib.parse
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Asset:
    id: int
    name: str
    data: bytes
    state: str = "uploaded"

    def json(self, base: str, repo: str, tag: str) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "size": len(self.data),
            "state": self.state,
            "content_type": "application/octet-stream",
            "digest": "sha256:" + hashlib.sha256(self.data).hexdigest() if self.state == "uploaded" else None,
            "browser_download_url": f"{base}/{repo}/releases/download/{tag}/{urllib.parse.quote(self.name)}",
        }


@dataclass
class Release:
    id: int
    tag_name: str
    draft: bool
    name: str = ""
    body: str = ""
    assets: list[Asset] = field(default_factory=list)
    prerelease: bool = False
    published_at: str | None = None


class FakeGitHub:
    """``with FakeGitHub("owner/repo") as gh:`` serves ``gh.api`` (the API base) until exit.
    ``releases`` is the state (tests may seed it); ``calls`` the requests in order."""

    def __init__(self, repo: str, token: str | None = None):
        self.repo, self.token = repo, token
        self.releases: list[Release] = []
        self.upstream: dict[str, list[Release]] = {}
        """Published releases of other repositories (``owner/name`` -> releases), served read-only
        on the same API: what the release's ``source_repo`` publishes (paired runtime assets)."""
        self.calls: list[str] = []
        self.commits: dict[str, str] = {}
        self.upstream_commits: dict[str, dict[str, str]] = {}
        """``GET /repos/{other}/commits/{ref}`` of an upstream repository: repo -> ref -> sha."""
        self.runs: dict[int, dict[str, Any]] = {}
        """``GET /repos/{repo}/actions/runs/{id}``: id -> the run's JSON, its ``jobs`` inside
        (served by ``.../jobs``, paged as GitHub pages: ``per_page`` default 30, at most 100);
        ``POST .../rerun`` appends the id to ``reruns``. A job's
        ``annotations`` (messages) are served, not in the job, by ``GET
        /repos/{repo}/check-runs/{job id}/annotations`` as failure-level annotations (GitHub's
        checks API: a job is the check run of the same id)."""
        self.reruns: list[int] = []
        self.dispatches: list[tuple[str, str]] = []
        """``POST /repos/{repo}/actions/workflows/{file}/dispatches``: (file, ref) in order."""
        """``GET /repos/{repo}/commits/{ref}``: ref (a tag) -> the commit sha it names."""
        self._ids = iter(range(1, 10**6))
        self._lock = threading.Lock()
        self._httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._httpd.owner = self  # type: ignore[attr-defined]
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.05,), daemon=True)

    @property
    def api(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def new_id(self) -> int:
        return next(self._ids)

    def release(self, tag: str) -> Release | None:
        return next((r for r in self.releases if r.tag_name == tag), None)

    def release_json(self, r: Release, repo: str | None = None) -> dict[str, Any]:
        repo = repo or self.repo
        return {
            "id": r.id,
            "tag_name": r.tag_name,
            "name": r.name,
            "body": r.body,
            "draft": r.draft,
            "prerelease": r.prerelease,
            "published_at": None if r.draft else r.published_at,
            "html_url": f"{self.api}/{repo}/releases/tag/{r.tag_name}",
            "upload_url": f"{self.api}/uploads/repos/{repo}/releases/{r.id}/assets{{?name,label}}",
            "assets": [a.json(self.api, repo, r.tag_name) for a in r.assets],
        }

    def publish_upstream(
        self, repo: str, tag: str, files: dict[str, bytes], prerelease: bool = False, published_at: str | None = None
    ) -> None:
        """Seed a published release ``tag`` of ``repo`` holding ``files`` (name -> bytes)."""
        rel = Release(self.new_id(), tag, False, tag, prerelease=prerelease, published_at=published_at)
        rel.assets = [Asset(self.new_id(), n, d) for n, d in files.items()]
        self.upstream.setdefault(repo, []).append(rel)

    def __enter__(self) -> FakeGitHub:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


def _page(items: list[Any], query: dict[str, str]) -> list[Any]:
    """One page of a list endpoint as GitHub serves it: ``per_page`` (default 30, at most 100)
    items of page ``page`` (from 1)."""
    per = min(100, int(query.get("per_page", 30)))
    page = int(query.get("page", 1))
    return items[(page - 1) * per : page * per]


class _Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a: Any) -> None:
        pass

    def _send_asset(self, a: Asset | None) -> None:
        """An asset's bytes as the download host serves them (404 when there is none)."""
        if a is None:
            return self._send(404, {"message": "Not Found"})
        self.send_response(200)
        self.send_header("Content-Length", str(len(a.data)))
        self.end_headers()
        self.wfile.write(a.data)
        return None

    def _send(self, code: int, obj: Any = None) -> None:
        body = b"" if obj is None else json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _route(self) -> None:
        gh: FakeGitHub = self.server.owner  # type: ignore[attr-defined]
        url = urllib.parse.urlsplit(self.path)
        path = urllib.parse.unquote(url.path)
        query = dict(urllib.parse.parse_qsl(url.query))
        gh.calls.append(f"{self.command} {path}")
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else b""
        for other, releases in gh.upstream.items():  # read-only: a published release and its files
            if path == f"/repos/{other}/releases" and self.command == "GET":  # the list, newest first
                return self._send(
                    200, [gh.release_json(r, other) for r in releases][::-1] if query.get("page", "1") == "1" else []
                )
            if path.startswith(f"/repos/{other}/commits/") and self.command == "GET":
                sha = gh.upstream_commits.get(other, {}).get(path.split("/")[-1])
                return self._send(200, {"sha": sha}) if sha else self._send(422, {"message": "No commit found"})
            if (
                path.startswith((f"/repos/{other}/releases/tags/", f"/{other}/releases/download/"))
                and self.command == "GET"
            ):
                tag = path.split("/")[-1] if "/tags/" in path else path.split("/")[-2]
                r = next((x for x in releases if x.tag_name == tag), None)
                if r is None:
                    return self._send(404, {"message": "Not Found"})
                if "/tags/" in path:
                    return self._send(200, gh.release_json(r, other))
                return self._send_asset(next((a for a in r.assets if a.name == path.split("/")[-1]), None))
        public = path.startswith(f"/{gh.repo}/releases/download/")  # the download host needs no token
        if gh.token and not public and self.headers.get("Authorization") != f"Bearer {gh.token}":
            return self._send(401, {"message": "Bad credentials"})
        prefix = f"/repos/{gh.repo}/releases"
        upload = f"/uploads/repos/{gh.repo}/releases/"
        with gh._lock:
            if path.startswith(upload) and path.endswith("/assets") and self.command == "POST":
                rid = int(path[len(upload) :].split("/")[0])
                r = next((x for x in gh.releases if x.id == rid), None)
                if r is None:
                    return self._send(404, {"message": "Not Found"})
                name = query.get("name", "")
                if any(a.name == name for a in r.assets):
                    return self._send(
                        422,
                        {
                            "message": "Validation Failed",
                            "errors": [{"resource": "ReleaseAsset", "code": "already_exists", "field": "name"}],
                        },
                    )
                a = Asset(gh.new_id(), name, body)
                r.assets.append(a)
                return self._send(201, a.json(gh.api, gh.repo, r.tag_name))
            if path.startswith(f"/{gh.repo}/releases/download/") and self.command == "GET":
                tag, name = path.split("/")[-2:]
                r = gh.release(tag)
                return self._send_asset(
                    next((a for a in r.assets if a.name == name), None) if r and not r.draft else None
                )
            actions = f"/repos/{gh.repo}/actions/"
            if path.startswith(actions):
                part = path[len(actions) :].split("/")
                if part[0] == "runs" and len(part) >= 2 and part[1].isdigit():
                    run = gh.runs.get(int(part[1]))
                    if run is None:
                        return self._send(404, {"message": "Not Found"})
                    if len(part) == 2 and self.command == "GET":
                        return self._send(200, {k: v for k, v in run.items() if k != "jobs"})
                    if part[2:] == ["jobs"] and self.command == "GET":
                        jobs = [{k: v for k, v in j.items() if k != "annotations"} for j in run["jobs"]]
                        return self._send(200, {"total_count": len(jobs), "jobs": _page(jobs, query)})
                    if part[2:] == ["rerun"] and self.command == "POST":
                        gh.reruns.append(int(part[1]))
                        return self._send(201, {})
                if part[0] == "workflows" and part[2:] == ["dispatches"] and self.command == "POST":
                    gh.dispatches.append((part[1], json.loads(body)["ref"]))
                    self.send_response(204)
                    self.end_headers()
                    return None
                return self._send(404, {"message": "Not Found"})
            checks = f"/repos/{gh.repo}/check-runs/"
            if path.startswith(checks) and path.endswith("/annotations") and self.command == "GET":
                job_id = int(path[len(checks) :].split("/")[0])
                job = next((j for r in gh.runs.values() for j in r["jobs"] if j.get("id") == job_id), None)
                if job is None:
                    return self._send(404, {"message": "Not Found"})
                notes = [
                    {"path": ".github", "annotation_level": "failure", "title": "", "message": m}
                    for m in job.get("annotations", [])
                ]
                return self._send(200, _page(notes, query))
            commits = f"/repos/{gh.repo}/commits/"
            if path.startswith(commits) and self.command == "GET":
                sha = gh.commits.get(path[len(commits) :])
                return self._send(200, {"sha": sha}) if sha else self._send(422, {"message": "No commit found"})
            if not path.startswith(prefix):
                return self._send(404, {"message": "Not Found"})
            rest = path[len(prefix) :].strip("/").split("/") if path != prefix else []
            if not rest and self.command == "GET":
                return self._send(200, [gh.release_json(r) for r in gh.releases])
            if not rest and self.command == "POST":
                d = json.loads(body)
                if gh.release(d["tag_name"]) is not None:
                    return self._send(
                        422,
                        {"message": "Validation Failed", "errors": [{"resource": "Release", "code": "already_exists"}]},
                    )
                r = Release(gh.new_id(), d["tag_name"], bool(d.get("draft")), d.get("name", ""), d.get("body", ""))
                gh.releases.append(r)
                return self._send(201, gh.release_json(r))
            if len(rest) == 2 and rest[0] == "tags" and self.command == "GET":
                r = gh.release(rest[1])
                if r is None or r.draft:
                    return self._send(404, {"message": "Not Found"})
                return self._send(200, gh.release_json(r))
            if len(rest) == 2 and rest[0] == "assets" and self.command == "DELETE":
                for r in gh.releases:
                    r.assets = [a for a in r.assets if a.id != int(rest[1])]
                return self._send(204)
            if rest and rest[0].isdigit():
                r = next((x for x in gh.releases if x.id == int(rest[0])), None)
                if r is None:
                    return self._send(404, {"message": "Not Found"})
                if len(rest) == 1 and self.command == "PATCH":
                    d = json.loads(body)
                    r.draft = bool(d.get("draft", r.draft))
                    r.tag_name = d.get("tag_name", r.tag_name)
                    return self._send(200, gh.release_json(r))
                if rest[1:] == ["assets"] and self.command == "GET":
                    page, per = int(query.get("page", 1)), int(query.get("per_page", 30))
                    items = [a.json(gh.api, gh.repo, r.tag_name) for a in r.assets]
                    return self._send(200, items[(page - 1) * per : page * per])
            return self._send(404, {"message": "Not Found"})

    do_GET = do_POST = do_PATCH = do_DELETE = _route
