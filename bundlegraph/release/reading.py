"""What verify-release reads and says, below every check of it: a release's files
(:class:`Source`: a ``dist/`` folder, :class:`DistSource`, or a published GitHub release,
:class:`ApiSource`), the files of ``dist/`` that are never uploaded (:data:`LOCAL_FILES`), and
one check's verdict (:class:`Check`). :mod:`.verify_release` runs the checks; :mod:`.authenticity`
and :mod:`.provenance_check` are some of them."""

from __future__ import annotations

from dataclasses import field
from pathlib import Path
from typing import Any

from ..core.errors import BundleGraphError
from ..core.lightclass import mutable

LOCAL_FILES = ("release-assets.txt", "llama-prebuilt-checksums.txt")
"""Files of ``dist/`` that are not uploaded (the upload list, the checksums of ``bundlegraph checksums``)."""


@mutable
class Check:
    """One check's verdict: ``status`` ``passed``/``failed``/``not run``/``not applicable``
    (nothing to check); ``problems`` (failed) or ``why`` (not run, not applicable)."""

    name: str
    status: str = "passed"
    problems: list[str] = field(default_factory=list)
    why: str = ""

    def fail(self, problem: str) -> None:
        self.status = "failed"
        self.problems.append(problem)


class Source:
    """A release's files: :meth:`names` and :meth:`path` (a local path, downloaded if need be)."""

    where: str

    def names(self) -> list[str]:
        raise NotImplementedError

    def path(self, name: str) -> Path | None:
        raise NotImplementedError


class DistSource(Source):
    """A ``dist/`` directory."""

    def __init__(self, d: Path):
        self.d = d
        self.where = str(d)

    def names(self) -> list[str]:
        return sorted(p.name for p in self.d.iterdir() if p.is_file() and not p.name.endswith(".smoke.json"))

    def path(self, name: str) -> Path | None:
        p = self.d / name
        return p if p.is_file() else None


class ApiSource(Source):
    """A published GitHub release, read through the API (``GET /repos/{repo}/releases/tags/{tag}``)
    and its assets' download URLs; each asset is downloaded once into a scratch directory."""

    def __init__(self, gh: Any, tag: str, scratch: Path):
        self.gh, self.tag, self.scratch = gh, tag, scratch
        self.where = f"{gh.repo}@{tag}"
        rel = gh.call("GET", f"/releases/tags/{tag}")
        assets = rel.get("assets") if isinstance(rel, dict) else None
        ok = isinstance(assets, list) and all(
            isinstance(a, dict) and isinstance(a.get("name"), str) and isinstance(a.get("browser_download_url"), str)
            for a in assets
        )
        if not ok:
            raise BundleGraphError(
                f"{self.where}: the releases API's answer is not a release object (assets: a list of objects with "
                f"name and browser_download_url)"
            )
        self.assets = {a["name"]: a for a in assets or []}

    def names(self) -> list[str]:
        return sorted(self.assets)

    def path(self, name: str) -> Path | None:
        a = self.assets.get(name)
        if a is None:
            return None
        p = self.scratch / name
        if not p.is_file():
            import httpx

            from ..core.errors import DownloadError

            try:
                with self.gh.c.stream("GET", a["browser_download_url"], follow_redirects=True) as r:
                    if r.status_code != 200:
                        raise DownloadError(f"{name}: download answered HTTP {r.status_code}")
                    with open(p, "wb") as f:
                        for chunk in r.iter_bytes():
                            f.write(chunk)
            except httpx.HTTPError as e:
                raise DownloadError(f"{name}: {a['browser_download_url']}: {type(e).__name__}: {e}") from None
        return p


__all__ = ["LOCAL_FILES", "ApiSource", "Check", "DistSource", "Source"]
