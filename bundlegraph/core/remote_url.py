"""ccache's ``remote_storage`` value (``BUNDLEGRAPH_CACHE_REMOTE``): its credentials found, masked
and checked, so none reaches a log, a record or an artifact (issue 51).

The value is what ccache's manual ("Remote storage backends") accepts: one or more storages
separated by spaces, each ``URL|attribute=value|...``. A credential can sit in three places:

- the URL's user part: ``http://user:password@host/...``, ``redis://PASSWORD@host`` (redis takes
  a lone user part as the password) or ``redis://user:password@host``; also a token given as the
  user name of an ``https://TOKEN@host/`` URL (ccache's HTTP storage refuses that form:
  :func:`problems`);
- an attribute: ``|bearer-token=...``, ``|header=Authorization=...``, and any attribute bundlegraph
  does not know to be harmless (:data:`SAFE_ATTRIBUTES`);
- the URL's query (``?password=...``): every value but ``db`` (redis' database number).

:func:`redact` writes each of them as ``***``; :func:`secrets_of` lists them (raw and
percent-decoded) for :func:`bundlegraph.core.proc.run`'s ``secrets=``, which masks them in the
echoed command and in every line of output (ccache prints a bad URL's user part in its error).
"""

from __future__ import annotations

from urllib.parse import unquote

MASK = "***"

SAFE_ATTRIBUTES = frozenset(
    {"layout", "read-only", "connect-timeout", "operation-timeout", "keep-alive", "shards", "share-hits"}
)
"""ccache attributes whose value is no secret (ccache's manual): kept as they are. Any other
attribute's value is masked, a bearer token's or a header's among them."""

SAFE_QUERY = frozenset({"db"})
"""Query keys whose value is no secret (redis' database number)."""


def _split(url: str) -> tuple[str, str, str, str]:
    """``(scheme + "://" or "", userinfo or "", host and the rest of the URL, query or "")``."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        scheme, rest = "", url
    else:
        scheme += sep
    rest, qsep, query = rest.partition("?")
    end = len(rest)
    for c in "/#":
        i = rest.find(c)
        if i >= 0:
            end = min(end, i)
    authority = rest[:end]
    userinfo, at, host = authority.rpartition("@")
    if not at or not sep:
        return scheme, "", rest, query if qsep else ""
    return scheme, userinfo, host + rest[end:], query if qsep else ""


def _parts(one: str) -> tuple[str, list[tuple[str, str | None]]]:
    """``(url, [(attribute, value or None when it has no "=")])`` of one storage."""
    url, *attrs = one.split("|")
    out: list[tuple[str, str | None]] = []
    for a in attrs:
        k, eq, v = a.partition("=")
        out.append((k, v if eq else None))
    return url, out


def _query(query: str) -> list[tuple[str, str | None]]:
    out: list[tuple[str, str | None]] = []
    for item in query.split("&") if query else []:
        k, eq, v = item.partition("=")
        out.append((k, v if eq else None))
    return out


def _query_item(k: str, v: str | None) -> str:
    if v is None:
        return k if k in SAFE_QUERY else MASK
    return f"{k}={v if k in SAFE_QUERY else MASK}"


def redact(value: str) -> str:
    """``value`` with every credential written as ``***`` (module docstring), for logs and
    records: ``http://***@host/c|layout=flat|bearer-token=***``. Empty stays empty."""
    out = []
    for one in value.split():
        url, attrs = _parts(one)
        scheme, userinfo, host, query = _split(url)
        text = scheme + (f"{MASK}@" if userinfo else "") + host
        if not scheme and ":" not in url:  # no URL: a word a space split off a value (a header's)
            out.append(MASK)
            continue
        if query:
            text += "?" + "&".join(_query_item(k, v) for k, v in _query(query))
        for k, v in attrs:
            if v is None:
                text += "|" + (k if k in SAFE_ATTRIBUTES else MASK)
            else:
                text += f"|{k}={v if k in SAFE_ATTRIBUTES else MASK}"
        out.append(text)
    return " ".join(out)


MIN_MASKED = 4
"""Shorter credentials are not masked in output (a password ``p`` would garble every line); records
and logs written by bundlegraph still show them redacted (:func:`redact`)."""


def secrets_of(value: str) -> list[str]:
    """Every credential of ``value`` as it is written and percent-decoded (the user part whole,
    the password, unsafe attribute and query values), longest first so a mask never leaves a part
    of a longer one; none shorter than :data:`MIN_MASKED`."""
    found: set[str] = set()
    for one in value.split():
        url, attrs = _parts(one)
        scheme, userinfo, _, query = _split(url)
        if not scheme and ":" not in url:
            found.add(one)
            continue
        if userinfo:  # a user name beside a password is no secret (redact() hides it anyway)
            found.update([userinfo, userinfo.partition(":")[2]])
        found.update(v for k, v in attrs if v and k not in SAFE_ATTRIBUTES)
        found.update(k for k, v in attrs if v is None and k not in SAFE_ATTRIBUTES)
        found.update(v for k, v in _query(query) if v and k not in SAFE_QUERY)
        # a header's value alone too (header=Authorization=Bearer X -> "Bearer X")
        found.update(v.partition("=")[2] for k, v in attrs if v and k == "header" and "=" in v)
    found |= {unquote(s) for s in found}
    return sorted((s for s in found if len(s) >= MIN_MASKED), key=lambda s: (-len(s), s))


def problems(value: str, var: str = "BUNDLEGRAPH_CACHE_REMOTE") -> list[str]:
    """Why ccache would refuse ``value`` in a way that prints its credential, one line each and
    naming no secret: an ``http(s)://`` URL whose user part has no ``user:password`` (ccache's
    HTTP storage stops every compile with "Expected username:password in URL but got
    "<the token>""). Empty when there is none."""
    out = []
    for one in value.split():
        url, _ = _parts(one)
        scheme, userinfo, _, _ = _split(url)
        if scheme.lower() in ("http://", "https://") and userinfo and ":" not in userinfo:
            out.append(
                f"{var}: {redact(one)}: ccache's HTTP storage takes a user part only as user:password; "
                "give a token as |bearer-token=TOKEN instead"
            )
    return out


__all__ = ["MASK", "problems", "redact", "secrets_of"]
