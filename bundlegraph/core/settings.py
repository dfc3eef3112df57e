"""Every ``BUNDLEGRAPH_*`` environment variable, documented once and parsed in one place.

:data:`SETTINGS` is the table (name, form, default, what it does); :func:`get` reads one
variable, checks its form and returns a typed value. A bad value is a
:class:`~bundlegraph.core.errors.SettingError` of one line naming the variable, the value and the
expected form (``BUNDLEGRAPH_LOCK_WAIT='abc': expected a number of seconds >= 0, e.g. 30``),
never a traceback. The README's "Settings" table is :func:`markdown_table` (a test keeps the
two equal).

Plain standard library on purpose: read on every ``doit`` no-op, before anything heavy loads.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from .errors import SettingError
from .lightclass import frozen

PREFIX = "BUNDLEGRAPH_"
PASS_PREFIX = "BUNDLEGRAPH_EXTRA_"
"""Variables under this prefix are never read by bundlegraph and never refused: your scripts' own
(the test suite's harness variables live there). Any other ``BUNDLEGRAPH_*`` name that
:data:`SETTINGS` does not know is refused before anything runs (a misspelt filter would
otherwise be ignored, and a bare ``doit`` start the whole main job)."""
#: what a ``url`` setting may start with (ccache's remote storage schemes, ccache manual)
URL_SCHEMES = ("http://", "https://", "redis://", "redis+unix:")


@frozen
class Setting:
    """One variable: ``name`` (after the prefix), ``form`` (``path``, ``dir`` (a directory, created
    when missing: a file there is refused by :func:`check_environment`), ``text``, ``int``,
    ``seconds``, ``flag`` (``1``/``0``), ``choice``, ``list`` (comma-separated), ``url``), ``default``
    (as text; None: unset), ``doc`` (one sentence), ``minimum`` for numbers, ``choices``."""

    name: str
    form: str
    default: str | None
    doc: str
    minimum: float | None = None
    choices: tuple[str, ...] = ()

    @property
    def var(self) -> str:
        return PREFIX + self.name

    def expected(self) -> str:
        if self.form == "int":
            return f"an integer >= {int(self.minimum or 0)}, e.g. 4"
        if self.form == "seconds":
            return f"a number of seconds >= {self.minimum or 0:g}, e.g. 30"
        if self.form == "flag":
            return "1 or 0"
        if self.form == "choice":
            return "one of " + ", ".join(self.choices)
        if self.form == "url":
            return "a URL starting with " + ", ".join(URL_SCHEMES)
        return {
            "path": "a directory or file path",
            "dir": "a directory (created when missing)",
            "list": "comma-separated names",
            "text": "text",
        }[self.form]


SETTINGS: tuple[Setting, ...] = (
    Setting("WORKDIR", "dir", None, "work directory (`build/`, `dist/`, `.bundlegraph/`); default: the checkout"),
    Setting(
        "CACHE",
        "dir",
        None,
        "download, source and toolkit cache; default: the platform's user cache dir (`~/.cache/bundlegraph` on Linux)",
    ),
    Setting(
        "BUNDLES",
        "path",
        None,
        "the bundles directory `doit` and `bundlegraph` read; default: `bundles/` of the checkout",
    ),
    Setting("ONLY_PROFILE", "text", None, "load-time filter: keep the legs of this profile (doit `only_profile=`)"),
    Setting("ONLY_LEG", "text", None, "load-time filter: keep this leg (doit `only_leg=`)"),
    Setting("ARTIFACTS", "path", None, "a directory of bundles built on other runners (doit `artifacts=`)"),
    Setting(
        "BUILT",
        "path",
        None,
        "a directory of build outputs made on other runners, `<leg>/` or `built-<leg>/` "
        "each (doit `built=`): those legs' build tasks import instead of compiling",
    ),
    Setting("ARCHS", "text", None, "local build for these CUDA archs, or `native` (doit `archs=`); never published"),
    Setting(
        "TOOLKIT_SOURCE",
        "text",
        None,
        "local build with a CUDA toolkit already installed: `host[:PATH]` (doit `toolkit_source=`); never published",
    ),
    Setting("BUILD_TARGETS", "list", None, "compile only these ninja targets or outputs (doit `build_targets=`)"),
    Setting(
        "SHARD",
        "text",
        None,
        "compile only shard `I/N` of a leg with `[build] shards = N` into the compiler cache, "
        "linking nothing (doit `shard=`; `doit build:L` only)",
    ),
    Setting(
        "COSTS",
        "path",
        None,
        "a directory of per-leg cost records (`<leg>.json`) the shard split and the "
        "critical path read first, and builds write; default: `.bundlegraph/costs/`",
    ),
    Setting(
        "JOBS",
        "int",
        None,
        "build parallelism; default: min(cores, 0.9 x available memory / measured memory of one job)",
        minimum=1,
    ),
    Setting("DOWNLOAD_JOBS", "int", "3", "downloads run at once", minimum=1),
    Setting(
        "DEBIAN_ARCHIVE",
        "url",
        None,
        "a Debian archive's URL (the root holding `pool/`): the pinned .debs (compilers, Vulkan, CUDA 12.4) are "
        "downloaded from it by their pool path and sha256, on any host (GitHub's Ubuntu runners have no Debian "
        "apt source); unset: `apt-get download` on a Debian host",
    ),
    Setting(
        "LAUNCHER",
        "choice",
        None,
        "compiler cache: `ccache`, `sccache`, or `none`; default: whichever is "
        "installed and caches the leg's C and CUDA compiles",
        choices=("ccache", "sccache", "none"),
    ),
    Setting(
        "CACHE_REMOTE",
        "url",
        None,
        "ccache remote storage shared by every runner of a release "
        "(`http://` WebDAV, `https://`, `redis://`; ccache's `remote_storage`)",
    ),
    Setting(
        "CACHE_REMOTE_MODE",
        "choice",
        "read-write",
        "`read-write`, or `read-only` (hits only, nothing stored)",
        choices=("read-write", "read-only"),
    ),
    Setting(
        "VERBOSITY",
        "choice",
        "normal",
        "how much the graph prints: `quiet` (warnings and errors), `normal` "
        "(progress, results, the commands it runs), `verbose`",
        choices=("quiet", "normal", "verbose"),
    ),
    Setting(
        "LOCK_WAIT", "seconds", "0", "how long a second `doit` run in one work directory waits for the first", minimum=0
    ),
    Setting("CONNECT_TIMEOUT", "seconds", "15", "download connect timeout", minimum=0.1),
    Setting("READ_TIMEOUT", "seconds", "60", "download read timeout (between bytes)", minimum=0.1),
    Setting("RETRIES", "int", "4", "extra download attempts after a network error, 5xx or 429", minimum=0),
    Setting("BACKOFF", "seconds", "1", "seconds before the first retry, doubled each time", minimum=0),
    Setting("ALLOW_HTTP", "flag", "0", "allow plain-http download URLs (loopback is always allowed)"),
    Setting(
        "REDIST_URL",
        "text",
        None,
        "NVIDIA redist pool (`redistrib_<ver>.json` and the component archives); default: NVIDIA's",
    ),
    Setting(
        "GITHUB_API", "text", None, "GitHub API base (paired runtime assets, `upload-release`); default: api.github.com"
    ),
    Setting(
        "SOURCE_URL",
        "text",
        None,
        "git URL `verify-release --rebuild` fetches a release's source commit from; default: source_repo on GitHub",
    ),
    Setting(
        "SIGN_COMMAND",
        "text",
        None,
        "signing hook: the signer's argv as a JSON list, run on each of the leg's own PE files (`{file}` is replaced)",
    ),
    Setting("SIGN_SECRETS", "list", None, "names of variables the signing hook needs, masked in logs"),
    Setting(
        "SIGN",
        "choice",
        "now",
        "`now`: `package` signs a leg's own PE files with the signing hook; `later`: it leaves them unsigned "
        "(info file `signing: pending`, no signature required by its verify) for `bundlegraph sign-bundles` "
        "in a job that runs no build code",
        choices=("now", "later"),
    ),
    Setting(
        "TRUST_ROOTS",
        "list",
        None,
        "comma-separated PEM file paths: extra root certificates the archive check of `package` trusts for Authenticode, "
        "e.g. a private signing CA",
    ),
    Setting("MSVC_REDIST", "path", None, "where MSVC's redistributable DLLs are (libomp140 and friends)"),
    Setting("CLANG", "path", None, "the clang to use for Windows ARM64 CPU legs"),
    Setting(
        "THEROCK_DIR",
        "path",
        None,
        "a folder of AMD TheRock tarballs fetched by hand: the ROCm legs' SDK is taken from there, checked against its pin",
    ),
    Setting("CMAKE", "path", None, "use this cmake executable instead of the pinned wheel"),
    Setting("NINJA", "path", None, "use this ninja executable instead of the pinned wheel"),
    Setting(
        "VULKAN_ICD",
        "path",
        None,
        "the ICD manifest (JSON) of the Vulkan driver a Vulkan leg's smoke runs on (e.g. "
        "`/usr/share/vulkan/icd.d/nvidia_icd.json`); default: Mesa's lavapipe",
    ),
    Setting(
        "TOOLS",
        "choice",
        "wheel",
        "`wheel`: the pinned cmake/ninja wheels of the environment; `system`: the cmake/ninja on PATH",
        choices=("wheel", "system"),
    ),
    Setting(
        "NOOP_MEMO",
        "flag",
        "1",
        "a `doit` run that found every task up to date lets the next identical run skip loading the graph "
        "while nothing it looked at changed (`.bundlegraph/noop/`); `0`: always load it",
    ),
)

_BY_NAME = {s.name: s for s in SETTINGS}


def setting(name: str) -> Setting:
    """The :class:`Setting` of ``name`` (with or without the prefix). KeyError for an unknown one."""
    return _BY_NAME[name.removeprefix(PREFIX)]


def get(name: str, env: Mapping[str, str] | None = None) -> Any:
    """The typed value of variable ``name`` in ``env`` (default: this process's environment),
    else its default (None when it has none). ``int`` -> int, ``seconds`` -> float, ``flag`` ->
    bool, ``list`` -> list[str], others -> str. Raises :class:`SettingError`."""
    s = setting(name)
    raw = (os.environ if env is None else env).get(s.var)
    if raw is None or raw.strip() == "":
        raw = s.default
        if raw is None:
            return None
    raw = raw.strip()
    if s.form == "int":
        if not raw.isdigit() or (s.minimum is not None and int(raw) < s.minimum):
            raise _bad(s, raw)
        return int(raw)
    if s.form == "seconds":
        try:
            v = float(raw)
        except ValueError:
            raise _bad(s, raw) from None
        if v != v or (s.minimum is not None and v < s.minimum):
            raise _bad(s, raw)
        return v
    if s.form == "flag":
        if raw not in ("0", "1"):
            raise _bad(s, raw)
        return raw == "1"
    if s.form == "list":
        return [x.strip() for x in raw.replace(";", ",").split(",") if x.strip()]
    if (s.form == "choice" and raw not in s.choices) or (s.form == "url" and not raw.startswith(URL_SCHEMES)):
        raise _bad(s, raw)
    return raw


def _bad(s: Setting, raw: str) -> SettingError:
    """The one line for a bad value; a URL's credentials written as ``***`` (it may hold them)."""
    if s.form == "url":
        from .remote_url import redact

        raw = redact(raw)
    return SettingError(f"{s.var}={raw!r}: expected {s.expected()} ({s.doc})")


def unknown_names(env: Mapping[str, str]) -> list[str]:
    """One line per ``BUNDLEGRAPH_*`` name in ``env`` that :data:`SETTINGS` does not know (and
    that is not under :data:`PASS_PREFIX`), with the closest known name, then one line naming
    every known variable; empty when every name is known."""
    import difflib

    known = [s.var for s in SETTINGS]
    out = []
    for k in sorted(env):
        if not k.startswith(PREFIX) or k.startswith(PASS_PREFIX) or k.removeprefix(PREFIX) in _BY_NAME:
            continue
        close = difflib.get_close_matches(k.removeprefix(PREFIX), list(_BY_NAME), n=1, cutoff=0.6)
        out.append(f"{k}: unknown variable" + (f" (did you mean {PREFIX}{close[0]}?)" if close else ""))
    if out:
        out.append(f"known: {', '.join(known)} (README, Settings); names under {PASS_PREFIX} pass through unread")
    return out


def check_environment(env: Mapping[str, str] | None = None) -> None:
    """Refuse a run whose environment sets a ``BUNDLEGRAPH_*`` variable this table does not know
    (:func:`unknown_names`) or any of its variables to a value of the wrong form, before anything
    starts: every problem at once, in one :class:`SettingError` (what :func:`get` would raise
    later, where the value is read), and a ``dir`` setting naming a file (:func:`_not_a_directory`:
    checked here, once a run, not on every :func:`get`)."""
    env = os.environ if env is None else env
    bad = unknown_names(env)
    for s in SETTINGS:
        if (env.get(s.var) or "").strip():
            try:
                value = get(s.name, env)
            except SettingError as e:
                bad.append(str(e))
                continue
            if s.form == "dir":
                bad += _not_a_directory(s, value)
    if bad:
        raise SettingError("\n".join(bad))


def _not_a_directory(s: Setting, value: str) -> list[str]:
    """One line when the ``dir`` setting ``s`` of ``value`` cannot be a directory: the path, or
    the nearest of its parents that exists, is something else (a file); else none."""
    from pathlib import Path

    p = Path(value).expanduser()
    for q in (p, *p.parents):
        if q.exists() or q.is_symlink():
            if q.is_dir():
                return []
            what = "is a file" if q.is_file() else "is not a directory"
            where = f"{q} {what}" if q == p else f"its parent {q} {what}"
            return [f"{s.var}={value!r}: not a directory ({where}); expected {s.expected()} ({s.doc})"]
    return []


def markdown_table() -> str:
    """The README's settings table: variable, form, default, what it does."""
    rows = ["| variable | value | default | what it does |", "|---|---|---|---|"]
    for s in SETTINGS:
        rows.append(f"| `{s.var}` | {s.expected()} | {f'`{s.default}`' if s.default is not None else '-'} | {s.doc} |")
    return "\n".join(rows)


__all__ = ["PASS_PREFIX", "PREFIX", "SETTINGS", "Setting", "get", "markdown_table", "setting", "unknown_names"]
