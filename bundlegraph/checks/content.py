"""Content checks: the files a leg promises are present, and the info JSON agrees with the spec.

Required files come from the spec's ``required`` list (``llama-server.exe``, ``ggml-base.dll``,
the backend). An entry may be a glob (``fnmatch``: ``ggml-cpu*.dll``, ``libllama.so*``, as
installers state their checks). A name without ``/`` matches a file of that name anywhere in the
bundle; a name with ``/`` matches that path. Windows names compare case-insensitively.

The info JSON (``Release.info_file``, default ``BUNDLE_INFO.json``) is optional; when present
it must be a JSON object and agree with the spec on the keys verify is given:

- ``install_kind``: equal strings;
- ``profile``: the profile name, as a string or as ``{"name": ...}``;
- ``archs``: a list of CUDA archs; compared as the set of fatbin SMs, so ``"120"``,
  ``"120a"``, ``"120a-real"``, ``"sm_120"`` and ``120`` all mean SM 120
  (:func:`bundlegraph.schemas.archs.fatbin_sm`), as in the fatbin check and the manifest.
"""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Iterable, Mapping

from ..schemas.archs import fatbin_sm, parse_arch
from . import Failure


def required_matches(name: str, pattern: str, *, fold: bool) -> bool:
    """Whether bundle path or file name ``name`` satisfies required entry ``pattern`` (a name,
    a path with ``/``, or a glob); ``fold``: case-insensitive (Windows)."""
    if fold:
        name, pattern = name.lower(), pattern.lower()
    if "/" not in pattern:
        name = name.rsplit("/", 1)[-1]
    return fnmatch.fnmatchcase(name, pattern) if any(c in pattern for c in "*?[") else name == pattern


def missing_required(names: Iterable[str], required: Iterable[str], *, fold: bool) -> list[Failure]:
    """One failure per required file (name, path or glob) that nothing in ``names`` (bundle
    paths) matches."""
    names = list(names)
    return [
        Failure(r, "content", "required file is missing from the bundle")
        for r in required
        if not any(required_matches(n, r, fold=fold) for n in names)
    ]


def sms_of(values: Iterable[object]) -> set[int]:
    """Arch values in any accepted spelling -> fatbin SM numbers. Raises ValueError."""
    return {fatbin_sm(parse_arch(str(v).strip().removeprefix("sm_").removeprefix("compute_"))) for v in values}


def check_info(path: str, data: bytes, expect: Mapping[str, object]) -> list[Failure]:
    """Compare the info JSON at bundle path ``path`` (its bytes) with ``expect``
    (keys ``install_kind``, ``profile``, ``archs``; see the module docstring)."""
    try:
        doc = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        return [Failure(path, "content", f"info file is not valid JSON: {e}")]
    if not isinstance(doc, dict):
        return [Failure(path, "content", f"info file must hold a JSON object, found {type(doc).__name__}")]
    out = []
    for key, want in expect.items():
        if key not in doc:
            out.append(Failure(path, "content", f"info file has no key {key!r} (the spec says {want!r})"))
            continue
        got = doc[key]
        if key == "profile" and isinstance(got, dict):
            got = got.get("name")
        if key == "archs":
            try:
                ok = isinstance(got, list) and sms_of(got) == sms_of(want)  # type: ignore[arg-type]  # `want` is a list of arch spellings here
            except ValueError as e:
                out.append(Failure(path, "content", f"info file key 'archs': {e}"))
                continue
        else:
            ok = got == want
        if not ok:
            out.append(Failure(path, "content", f"info file key {key!r} is {doc[key]!r}, the spec says {want!r}"))
    return out
