"""Validate a whole ``bundles/`` directory: the release and every leg spec as their records
(:mod:`.records`, by pydantic), then the rules over several tables and files. The loader
(:func:`bundlegraph.specs.loader.load_matrix`) calls :func:`validate_matrix` only when the
spec cache has no entry for the directory's bytes.

Every problem in every file is collected and reported at once (:class:`SpecError`), each line
``<file>: <key.path>: <message>`` with a "did you mean" for misspelled keys. While any spec is
invalid nothing is returned, so no task can run.

Cross-field rules (need several specs or tables):

- the file stem equals ``id``; a Linux/Windows toolchain matches the leg's os and arch;
- ``GGML_CPU=OFF`` needs a merge base of the same os and arch with backend ``cpu``;
- a merge needs ``GGML_BACKEND_DL=ON`` on both legs;
- ``(install_kind, profile)`` is unique; ``default_legs`` name existing legs;
- a macOS leg's ``CMAKE_OSX_DEPLOYMENT_TARGET`` is its floor (:func:`macos_problems`);
- a backend's own spec table: its package's ``rules`` module (``bundlegraph/backends/<name>/rules.py``,
  :func:`bundlegraph.schemas.backend.plug_in`), whose ``problems`` runs on each leg of that backend and
  whose optional ``partial_problems`` runs on a spec that failed the schema (CUDA: every arch
  within the CUDA version's range, a Windows ARM64 leg on CUDA >= 13.4, the toolkit's pinned
  version and the runtime line; HIP: the family's targets and the TheRock lock; Metal: where the
  shader library is). This module runs no backend table's rules itself.
"""

from __future__ import annotations

import re
import tomllib
import typing
from pathlib import Path
from typing import Any, TypeVar

from pydantic import ValidationError

from ..core.errors import SpecError, did_you_mean
from ..core.platforms import platform
from ..schemas import backend as backends
from ..schemas.adapters import adapter
from ..schemas.cmake_rules import cmake_problems, served_options
from ..schemas.records import BundleSpec, Matrix, Record, Release, build_number_of
from ..toolchains.registry import TOOLCHAINS
from .derive import fill

RELEASE_FILE = "release.toml"
T = TypeVar("T")


def validate_leg(data: dict[str, Any]) -> BundleSpec:
    """One leg's table (a spec file's content, or a spec's ``dump()`` with changes), validated
    as a :class:`BundleSpec`. Raises pydantic's ``ValidationError``."""
    return adapter(BundleSpec).validate_python(data)


R = TypeVar("R", bound=Record)


def validate_table(record: type[R], data: dict[str, Any]) -> R:
    """One table (a backend's ``[cuda]``, say) validated as ``record``, its record class.
    Raises pydantic's ``ValidationError``."""
    return adapter(record).validate_python(data)


def _record_class(ann: Any) -> type[Record] | None:
    """The record class inside a field's annotation (``CudaSpec | None`` -> ``CudaSpec``)."""
    if isinstance(ann, type) and issubclass(ann, Record):
        return ann
    return next((c for c in map(_record_class, typing.get_args(ann)) if c is not None), None)


def _keys_at(cls: type[Record], loc: tuple[Any, ...]) -> list[str]:
    """The TOML keys valid at ``loc`` inside record ``cls``, for did-you-mean."""
    cur: type[Record] | None = cls
    for part in loc:
        if isinstance(part, int) or cur is None:
            continue
        hints = typing.get_type_hints(cur)
        name = next((f for f in cur.FIELDS if f.rstrip("_") == part), None)
        if name is None:
            return []
        cur = _record_class(hints[name])
    return [f.rstrip("_") for f in cur.FIELDS] if cur is not None else []


_EXTRA = ("unexpected_keyword_argument", "extra_forbidden")
_MISSING = ("missing", "missing_keyword_only_argument", "missing_argument")
_RULE_KEY = re.compile(r"^([a-z_][A-Za-z0-9_.]*): (.*)$", re.S)


def format_validation(path: Path, err: ValidationError, cls: type[Record]) -> list[str]:
    """One line per pydantic error: ``file: key.path: message`` (+ did-you-mean on an unknown
    key). A table's own rule (``__post_init__``) names its key first (``archs: holds
    duplicates``); that key joins the path."""
    out = []
    for e in err.errors():
        # drop discriminator tags pydantic inserts (e.g. 'pip-sdist') from the path
        clean: list[object] = []
        for p in e["loc"]:
            if p in ("tarball", "git", "path", "pip-sdist", "mix") and clean and clean[-1] == "source":
                continue
            clean.append(p)
        msg = e["msg"].removeprefix("Value error, ").removeprefix("Assertion failed, ")
        if e["type"] == "value_error":
            m = _RULE_KEY.match(msg)
            if m:
                clean.append(m.group(1))
                msg = m.group(2)
        key = ".".join(str(p) for p in clean) or "(top level)"
        if e["type"] in _EXTRA:
            choices = _keys_at(cls, tuple(clean[:-1]))
            msg = "unknown key" + did_you_mean(str(clean[-1]), choices)
            if choices:
                msg += f"; allowed here: {', '.join(choices)}"
        elif e["type"] in _MISSING:
            msg = "required key is missing"
        out.append(f"{path}: {key}: {msg}")
    return out


def _read_toml(path: Path, problems: list[str]) -> dict[str, Any] | None:
    """The TOML document of ``path``, or None with one line in ``problems``: a syntax error, a
    file that cannot be read, or one that is not UTF-8 (TOML's only encoding), e.g. UTF-16 as
    Windows editors save it (:func:`not_utf8`)."""
    try:
        with open(path, "rb") as f:
            return tomllib.load(f)
    except UnicodeDecodeError as e:
        problems.append(not_utf8(path, e))
    except tomllib.TOMLDecodeError as e:
        problems.append(f"{path}: (TOML syntax): {e}")
    except OSError as e:
        problems.append(f"{path}: cannot read: {e}")
    return None


_BOMS = {b"\xff\xfe": "UTF-16 (little-endian)", b"\xfe\xff": "UTF-16 (big-endian)"}
"""Byte-order marks that say which encoding a non-UTF-8 spec file was saved in."""


def not_utf8(path: Path, e: UnicodeDecodeError) -> str:
    """The one line refusing ``path`` that is not UTF-8: ``<file>: (encoding): not UTF-8 (...)``,
    naming the first bad byte and, from a byte-order mark, the encoding it was saved in."""
    raw = e.object if isinstance(e.object, bytes) else b""
    saved = next(
        (f"; it starts with the byte-order mark of {n}" for bom, n in _BOMS.items() if raw.startswith(bom)), ""
    )
    bad = raw[e.start : e.start + 1].hex() or "?"
    return f"{path}: (encoding): not UTF-8 (byte 0x{bad} at offset {e.start}{saved}); save it as UTF-8, the encoding TOML requires"


def validate_matrix(root: str | Path) -> tuple[Matrix, list[Path]]:
    """Validate ``root/release.toml`` and every other ``root/*.toml`` as a leg spec; returns
    the matrix (records) and the files read besides ``root/*.toml`` (the wheels locks the
    legs name), which the spec cache must also key on.

    Raises :class:`SpecError` listing every problem found (schema and cross-field) at once.
    """
    root = Path(root)
    problems: list[str] = []
    if not root.is_dir():
        raise SpecError(
            [
                f"{root}: bundles directory not found: cd into a bundlegraph checkout, or name the directory "
                f"(bundlegraph --bundles DIR COMMAND, doit bundles=DIR, or BUNDLEGRAPH_BUNDLES=DIR)"
            ]
        )
    rel_path = root / RELEASE_FILE
    release: Release | None = None
    if not rel_path.is_file():
        problems.append(f"{rel_path}: (file): missing; a bundles directory needs a release.toml")
    else:
        data = _read_toml(rel_path, problems)
        if data is not None:
            try:
                release = adapter(Release).validate_python(data)
            except ValidationError as e:
                problems += format_validation(rel_path, e, Release)

    legs: dict[str, BundleSpec] = {}
    files: dict[str, Path] = {}
    invalid: set[str] = set()  # leg files that exist but failed validation (reported on their own)
    for path in sorted(root.glob("*.toml")):
        if path.name == RELEASE_FILE:
            continue
        invalid.add(path.stem)
        data = _read_toml(path, problems)
        if data is None:
            continue
        if "local" in data:
            problems.append(
                f"{path}: local: is set by the archs=/toolkit_source= overrides at load time, "
                f"never in a spec file; remove it"
            )
            continue
        data = fill(data)  # the keys that follow from backend, os and arch (derive.py)
        try:
            spec = validate_leg(data)
        except ValidationError as e:
            problems += format_validation(path, e, BundleSpec)
            problems += _partial_problems(path, data)
            continue
        if spec.id != path.stem:
            problems.append(f"{path}: id: '{spec.id}' must equal the file name stem '{path.stem}'")
            continue
        legs[spec.id] = spec
        files[spec.id] = path
        invalid.discard(path.stem)

    read: list[Path] = []
    problems += cross_field_problems(legs, files, release, rel_path, invalid, read)
    if problems:
        raise SpecError(problems)
    assert release is not None
    return Matrix(root=root, release=release, legs=dict(sorted(legs.items())), files=files), read


def _partial_problems(path: Path, data: dict[str, Any]) -> list[str]:
    """Rules that can still be checked on a spec that failed the schema elsewhere (so a typo in
    one key does not hide an impossible arch): each backend's ``partial_problems`` (a rules
    module's optional verb: its table on its own, as CUDA's ``[cuda]``)."""
    out: list[str] = []
    for b in backends.BACKENDS:
        rules = backends.plug_in(b, "rules")
        if rules is not None and hasattr(rules, "partial_problems"):
            out += rules.partial_problems(path, data)
    return out


def installer_problems(s: BundleSpec, f: Path, legs: dict[str, BundleSpec], release: Release | None) -> list[str]:
    """The installer contract (:mod:`bundlegraph.schemas.installer`) on one leg: its
    ``install_kind`` is one the installer asks for and describes this leg's os/arch/backend;
    its ``required`` list (with its merge base's) covers every file the installer requires of
    that kind, so verify refuses a bundle the installer would refuse."""
    from ..schemas.installer import CHECKED_AGAINST, INSTALL_KINDS, kind_for, required_patterns

    try:
        want = kind_for(s.os, s.arch, s.backend)
    except KeyError:
        want = None
    kind = INSTALL_KINDS.get(s.install_kind)
    if not s.install_kind:  # left out, and none follows from os, arch and backend (derive.py)
        return [
            f"{f}: install_kind: the installer has no kind for a {s.os}-{s.arch} {s.backend} leg "
            f"({CHECKED_AGAINST}); kinds: {', '.join(INSTALL_KINDS)}"
        ]
    if kind is None:
        hint = f" (a {s.os}-{s.arch} {s.backend} leg is '{want}')" if want else ""
        return [
            f"{f}: install_kind: '{s.install_kind}' is not a kind the installer asks for{hint}"
            f"; kinds ({CHECKED_AGAINST}): {', '.join(INSTALL_KINDS)}"
        ]
    if not kind.serves(s.os, s.arch, s.backend):
        return [
            f"{f}: install_kind: '{kind.name}' serves {kind.os}-{'/'.join(kind.archs)} {kind.backend} hosts; "
            f"the leg is {s.os}-{s.arch} backend '{s.backend}'" + (f": use '{want}'" if want else "")
        ]
    base = legs.get(s.merge.base) if s.merge else None
    if s.merge is not None and base is None:
        return []  # the base spec is invalid or missing: reported on its own, the union is unknown
    fold = platform(s.os).fold
    have = {x.lower() if fold else x for x in [*s.required, *(base.required if base else [])]}
    # the backend's REQUIRED_PROGRAMS (the DiffusionGemma visual server of a Vulkan bundle, from
    # llama.cpp PR #24423, which no upstream tag builds) are required of a promised leg: the
    # installer's health check refuses a published Vulkan bundle without it. A leg that is not
    # promised (today's Vulkan legs: their specs say why) may be built without it.
    wanted = required_patterns(kind.name, release.build_number if release else None, programs=s.promised)
    missing = [p for p in wanted if (p.lower() if fold else p) not in have]
    if missing:
        where = f" (with base '{base.id}')" if base is not None else ""
        return [
            f"{f}: required: lacks {', '.join(repr(m) for m in missing)}{where}, which the installer "
            f"requires of a '{kind.name}' bundle ({CHECKED_AGAINST}); add them so verify refuses what "
            f"the installer would"
        ]
    return []


def cross_field_problems(
    legs: dict[str, BundleSpec],
    files: dict[str, Path],
    release: Release | None,
    rel_path: Path,
    invalid: set[str],
    read: list[Path],
) -> list[str]:
    """The rules that need more than one table or file; one line per problem. They run on the
    specs that passed the schema; a reference to a leg whose file failed it (``invalid``) is not
    reported again. Each other file read (a wheels lock) is appended to ``read``."""
    out: list[str] = []
    root = rel_path.parent  # the bundles directory (lock paths are relative to it)
    seen_kind: dict[tuple[str, str, str], str] = {}
    seen_bundle: dict[str, str] = {}
    for lid, s in legs.items():
        f = files[lid]
        tc = TOOLCHAINS.get(s.toolchain)
        if tc is None:
            out.append(
                f"{f}: toolchain: unknown toolchain '{s.toolchain}'{did_you_mean(s.toolchain, TOOLCHAINS)}"
                f"; known: {', '.join(sorted(TOOLCHAINS))}"
            )
        else:
            if (tc.target_os, tc.target_arch) != (s.os, s.arch):
                out.append(
                    f"{f}: toolchain: '{s.toolchain}' builds for {tc.target_os}-{tc.target_arch}, "
                    f"the leg is {s.os}-{s.arch}"
                )
            b = backends.backend(s.backend)
            if b.COMPILER and not tc.has_binary(b.COMPILER):
                out.append(
                    f"{f}: toolchain: '{s.toolchain}' cannot compile {b.TITLE}; backend is '{s.backend}' (its "
                    f"machine file {Path(tc.file).name} names no [binaries] {b.COMPILER})"
                )
        if s.cmake_bool("GGML_CPU", True) is False and s.merge is None:
            out.append(
                f"{f}: cmake.GGML_CPU: OFF builds no CPU backend, so the leg needs "
                f"[merge] base = a CPU leg of {s.os}-{s.arch}"
            )
        base = legs.get(s.merge.base) if s.merge is not None else None
        if s.merge is not None and base is None and s.merge.base not in invalid:  # a broken base: reported on its own
            others = [l for l in legs if l != lid]
            out.append(
                f"{f}: merge.base: no leg '{s.merge.base}' in the bundles directory"
                + did_you_mean(s.merge.base, others)
            )
        if base is not None:
            if (base.os, base.arch) != (s.os, s.arch) or base.backend != "cpu":
                out.append(
                    f"{f}: merge.base: '{base.id}' is {base.os}-{base.arch} backend '{base.backend}'; "
                    f"a merge base must be a 'cpu' leg of {s.os}-{s.arch}"
                )
            if base.merge is not None:
                out.append(f"{f}: merge.base: '{base.id}' is itself merged; bases cannot be chained")
            for who, spec in (("this leg", s), (f"base '{base.id}'", base)):
                if spec.cmake_bool("GGML_BACKEND_DL", False) is not True:
                    out.append(
                        f"{f}: cmake.GGML_BACKEND_DL: a merge needs GGML_BACKEND_DL=ON on both legs; "
                        f"{who} ({files[spec.id].name}) does not set it"
                    )
        if (rules := backends.plug_in(backends.backend(s.backend), "rules")) is not None:
            out += rules.problems(f, s, root, read)  # its spec table's rules (backends/<name>/rules.py)
        if s.macos is not None:
            out += macos_problems(f, s)
        out += installer_problems(s, f, legs, release)
        out += cmake_problems(s, str(f), served_options(release))
        first = seen_kind.setdefault((s.install_kind, s.profile.name, s.arch), lid)
        if first != lid:
            out.append(
                f"{f}: install_kind: ('{s.install_kind}', profile '{s.profile.name}') is also used by "
                f"{files[first]}; each pair must be unique"
            )
        if release is not None:
            name = s.bundle_name(release.tag, release.bundle_prefix)
            first = seen_bundle.setdefault(name, lid)
            if first != lid:
                out.append(
                    f"{f}: produces the bundle {name}, as {files[first]} does: two legs would "
                    f"write one file (and one would satisfy the publish gate for both); give one of them "
                    f"another os, arch or profile.name"
                )
        # (the toolchain's machine file targets windows arm64: a leg of another os or arch is refused by its own rule)
        if s.toolchain == "msvc-amd64_arm64-cuda" and s.cmake_bool("GGML_CPU", True) is not False:
            out.append(
                f"{f}: cmake.GGML_CPU: must be OFF for toolchain msvc-amd64_arm64-cuda (MSVC cannot build "
                f"ggml-cpu for ARM64); the CPU backend comes from the merge base, built with clang"
            )
    if release is not None:
        if build_number_of(release.tag) != build_number_of(release.upstream_tag or ""):
            out.append(
                f"{rel_path}: tag: '{release.tag}' must start with upstream_tag's build "
                f"'{release.upstream_tag}' (installers read the build number from either); state the "
                f"upstream build of the pinned commit in upstream_tag and begin tag with it"
            )
        for i, leg in enumerate(release.default_legs):
            if leg not in legs and leg not in invalid:
                out.append(f"{rel_path}: default_legs[{i}]: no leg '{leg}'{did_you_mean(leg, legs)}")
    return out


def macos_problems(f: Path, s: BundleSpec) -> list[str]:
    """A macOS leg's ``CMAKE_OSX_DEPLOYMENT_TARGET`` must be its ``[macos] deployment_target`` (the
    floor verify holds every Mach-O's minos to), one line."""
    assert s.macos is not None
    got = s.cmake.get("CMAKE_OSX_DEPLOYMENT_TARGET")
    if got is None or str(got) != s.macos.deployment_target:
        return [
            f"{f}: cmake.CMAKE_OSX_DEPLOYMENT_TARGET: {got!r}, but macos.deployment_target is "
            f"'{s.macos.deployment_target}': set the one the binaries are held to"
        ]
    return []
