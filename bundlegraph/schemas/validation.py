"""Validate a whole ``bundles/`` directory with the pydantic models: the release and every leg
spec, then the cross-field rules on their plain records (:mod:`.plain`). The loader
(:func:`bundlegraph.schemas.loader.load_matrix`) calls :func:`validate_matrix` only when the
spec cache has no entry for the directory's bytes.

Every problem in every file is collected and reported at once (:class:`SpecError`), each line
``<file>: <key.path>: <message>`` with a "did you mean" for misspelled keys. While any spec is
invalid nothing is returned, so no task can run.

Cross-field rules (need several specs or tables):

- the file stem equals ``id``; a Linux/Windows toolchain matches the leg's os and arch;
- ``GGML_CPU=OFF`` needs a merge base of the same os and arch with backend ``cpu``;
- a merge needs ``GGML_BACKEND_DL=ON`` on both legs;
- every GPU arch lies within the leg's CUDA version's range (:mod:`.archs`);
- a Windows ARM64 CUDA leg needs CUDA >= 13.4 (the first redist with ``windows-arm64``
  target libraries);
- ``(install_kind, profile)`` is unique; ``default_legs`` name existing legs.
"""

from __future__ import annotations

import difflib
import tomllib
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from ..errors import SpecError
from ..toolchains.registry import TOOLCHAINS
from . import plain
from .archs import arch_supported
from .cmake_rules import cmake_problems
from .plain import BundleSpec, CudaSpec, Matrix, Release, build_number_of
from .release import Release as ReleaseModel
from .spec import BundleSpec as BundleSpecModel
from .spec import CudaSpec as CudaSpecModel

RELEASE_FILE = "release.toml"
WINDOWS_ARM64_CUDA_MIN = (13, 4)


def to_plain(model: BaseModel) -> Any:
    """The record (:mod:`.plain`) of a validated model, nested models as nested records; its
    ``dump()`` is the model's ``model_dump(mode="json", by_alias=True)``. Raises ``KeyError``
    for a model without a record (a new model needs its record in :data:`plain.RECORDS`)."""
    cls = plain.RECORDS[type(model).__name__]
    values = {n: _plain_value(getattr(model, n)) for n in cls.FIELDS}
    return cls.make(values, model.model_dump(mode="json", by_alias=True))


def _plain_value(v: Any) -> Any:
    if isinstance(v, BaseModel):
        return to_plain(v)
    if isinstance(v, list):
        return [_plain_value(x) for x in v]
    if isinstance(v, dict):
        return {k: _plain_value(x) for k, x in v.items()}
    return v


def validate_leg(data: dict[str, Any]) -> BundleSpec:
    """One leg's table (a spec file's content, or a spec's ``dump()`` with changes) validated
    by the model and returned as its record. Raises pydantic's ``ValidationError``."""
    rec: BundleSpec = to_plain(BundleSpecModel.model_validate(data))
    return rec


def validate_cuda(data: dict[str, Any]) -> CudaSpec:
    """A ``[cuda]`` table validated by the model, as its record. Raises ``ValidationError``."""
    rec: CudaSpec = to_plain(CudaSpecModel.model_validate(data))
    return rec


def _model_fields(model: type[BaseModel], loc: tuple[Any, ...]) -> list[str]:
    """Field names (aliases) valid at ``loc`` inside ``model``, for did-you-mean."""
    cur: Any = model
    for part in loc:
        if isinstance(part, int) or cur is None:
            continue
        fields = getattr(cur, "model_fields", None)
        if not fields or (part not in fields and part not in {f.alias for f in fields.values() if f.alias}):
            return []
        fi = fields.get(part) or next(f for f in fields.values() if f.alias == part)
        cur = _inner_model(fi.annotation)
    if cur is None or not hasattr(cur, "model_fields"):
        return []
    return [f.alias or n for n, f in cur.model_fields.items()]


def _inner_model(ann: Any) -> Any:
    import typing

    if isinstance(ann, type) and issubclass(ann, BaseModel):
        return ann
    for arg in typing.get_args(ann):
        m = _inner_model(arg)
        if m is not None:
            return m
    return None


def format_validation(path: Path, err: ValidationError, model: type[BaseModel]) -> list[str]:
    """One line per pydantic error: ``file: key.path: message`` (+ did-you-mean on extras)."""
    out = []
    for e in err.errors():
        loc = tuple(p for p in e["loc"] if not (isinstance(p, str) and p.startswith("function-")))
        # drop discriminator tags pydantic inserts (e.g. 'pip-sdist') from the path
        clean: list[object] = []
        for p in loc:
            if isinstance(p, str) and p in ("tarball", "git", "path", "pip-sdist") and clean and clean[-1] == "source":
                continue
            clean.append(p)
        key = ".".join(str(p) for p in clean) or "(top level)"
        msg = e["msg"].removeprefix("Value error, ").removeprefix("Assertion failed, ")
        if e["type"] == "extra_forbidden":
            parent = tuple(clean[:-1])
            choices = _model_fields(model, parent)
            close = difflib.get_close_matches(str(clean[-1]), choices, n=1)
            msg = "unknown key" + (f" (did you mean '{close[0]}'?)" if close else "")
            if choices:
                msg += f"; allowed here: {', '.join(choices)}"
        elif e["type"] == "missing":
            msg = "required key is missing"
        out.append(f"{path}: {key}: {msg}")
    return out


def _read_toml(path: Path, problems: list[str]) -> dict[str, Any] | None:
    try:
        with open(path, "rb") as f:
            return tomllib.load(f)
    except tomllib.TOMLDecodeError as e:
        problems.append(f"{path}: (TOML syntax): {e}")
    except OSError as e:
        problems.append(f"{path}: cannot read: {e}")
    return None


def validate_matrix(root: str | Path) -> tuple[Matrix, list[Path]]:
    """Validate ``root/release.toml`` and every other ``root/*.toml`` as a leg spec; returns
    the matrix (plain records) and the files read besides ``root/*.toml`` (the wheels locks the
    legs name), which the spec cache must also key on.

    Raises :class:`SpecError` listing every problem found (schema and cross-field) at once.
    """
    root = Path(root)
    problems: list[str] = []
    if not root.is_dir():
        raise SpecError([f"{root}: bundles directory not found"])
    rel_path = root / RELEASE_FILE
    release: Release | None = None
    if not rel_path.is_file():
        problems.append(f"{rel_path}: (file): missing; a bundles directory needs a release.toml")
    else:
        data = _read_toml(rel_path, problems)
        if data is not None:
            try:
                release = to_plain(ReleaseModel.model_validate(data))
            except ValidationError as e:
                problems += format_validation(rel_path, e, ReleaseModel)

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
        try:
            spec = validate_leg(data)
        except ValidationError as e:
            problems += format_validation(path, e, BundleSpecModel)
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


def cuda_problems(f: Path, os_: object, arch: object, cuda: CudaSpec) -> list[str]:
    """Each GPU arch within the CUDA version's range; Windows ARM64 needs CUDA >= 13.4."""
    out = []
    v = cuda.version_tuple
    for i, a in enumerate(cuda.parsed_archs):
        why = arch_supported(a, v)
        if why:
            out.append(f"{f}: cuda.archs[{i}]: '{cuda.archs[i].cmake}': {why}")
    if os_ == "windows" and arch == "arm64" and v < WINDOWS_ARM64_CUDA_MIN:
        out.append(
            f"{f}: cuda.version: a Windows ARM64 CUDA leg needs CUDA >= 13.4 (the first redist "
            f"with windows-arm64 target libraries); got {cuda.version}"
        )
    return out


def _partial_problems(path: Path, data: dict[str, Any]) -> list[str]:
    """Rules that can still be checked on a spec that failed the schema elsewhere (so a typo in
    one key does not hide an impossible arch): the [cuda] table on its own."""
    cuda = data.get("cuda")
    if not isinstance(cuda, dict):
        return []
    try:
        c = validate_cuda(cuda)
    except ValidationError:
        return []  # already reported with the file's other schema errors
    return cuda_problems(path, data.get("os"), data.get("arch"), c)


def installer_problems(s: BundleSpec, f: Path, legs: dict[str, BundleSpec], release: Release | None) -> list[str]:
    """The installer contract (:mod:`bundlegraph.schemas.installer`) on one leg: its
    ``install_kind`` is one the installer asks for and describes this leg's os/arch/backend;
    its ``required`` list (with its merge base's) covers every file the installer requires of
    that kind, so verify refuses a bundle the installer would refuse."""
    from .installer import CHECKED_AGAINST, INSTALL_KINDS, kind_for, required_patterns

    try:
        want = kind_for(s.os, s.arch, s.backend)
    except KeyError:
        want = None
    kind = INSTALL_KINDS.get(s.install_kind)
    if kind is None:
        hint = f" (a {s.os}-{s.arch} {s.backend} leg is '{want}')" if want else ""
        return [
            f"{f}: install_kind: '{s.install_kind}' is not a kind the installer asks for{hint}"
            f"; kinds ({CHECKED_AGAINST}): {', '.join(INSTALL_KINDS)}"
        ]
    if (kind.os, kind.arch, kind.backend) != (s.os, s.arch, s.backend):
        return [
            f"{f}: install_kind: '{kind.name}' serves {kind.os}-{kind.arch} {kind.backend} hosts; "
            f"the leg is {s.os}-{s.arch} backend '{s.backend}'" + (f": use '{want}'" if want else "")
        ]
    have = list(s.required)
    base = legs.get(s.merge.base) if s.merge else None
    if s.merge is not None and base is None:
        return []  # the base spec is invalid or missing: reported on its own, the union is unknown
    if base is not None:
        have += base.required
    fold = s.os == "windows"

    def norm(x: str) -> str:
        return x.lower() if fold else x

    have_n = {norm(x) for x in have}
    missing = [
        p for p in required_patterns(kind.name, release.build_number if release else None) if norm(p) not in have_n
    ]
    if missing:
        where = f" (with base '{base.id}')" if base is not None else ""
        return [
            f"{f}: required: lacks {', '.join(repr(m) for m in missing)}{where}, which the installer "
            f"requires of a '{kind.name}' bundle ({CHECKED_AGAINST}); add them so verify refuses what "
            f"the installer would"
        ]
    return []


def _lock_problems(f: Path, version: str, lock_path: Path) -> list[str]:
    """A wheels lock of another CUDA version than the leg's (its ``cuda`` key); an unreadable
    lock is named."""
    import tomllib

    try:
        cuda = tomllib.loads(lock_path.read_text(encoding="utf-8")).get("cuda")
    except FileNotFoundError:
        return [f"{f}: cuda.toolkit.lock: {lock_path} does not exist; write it with `bundlegraph lock-wheels`"]
    except (OSError, ValueError) as e:
        return [f"{f}: cuda.toolkit.lock: {lock_path} is not a lock file ({e})"]
    if cuda != version:
        return [
            f"{f}: cuda.version: '{version}', but the wheels lock {lock_path.name} is CUDA {cuda}; make them agree "
            f"(or write a lock for {version} with `bundlegraph lock-wheels`)"
        ]
    return []


def cross_field_problems(
    legs: dict[str, BundleSpec],
    files: dict[str, Path],
    release: Release | None,
    rel_path: Path,
    invalid: frozenset[str] | set[str] = frozenset(),
    read: list[Path] | None = None,
) -> list[str]:
    """The rules that need more than one table or file; one line per problem. They run on the
    specs that passed the schema; a reference to a leg whose file failed it (``invalid``) is not
    reported again. Each other file read (a wheels lock) is appended to ``read``."""
    out: list[str] = []
    root = rel_path.parent  # the bundles directory (lock paths are relative to it)
    seen_kind: dict[tuple[str, str], str] = {}
    seen_bundle: dict[str, str] = {}
    for lid, s in legs.items():
        f = files[lid]
        tc = TOOLCHAINS.get(s.toolchain)
        if tc is None:
            close = difflib.get_close_matches(s.toolchain, list(TOOLCHAINS), n=1)
            out.append(
                f"{f}: toolchain: unknown toolchain '{s.toolchain}'"
                + (f" (did you mean '{close[0]}'?)" if close else "")
                + f"; known: {', '.join(sorted(TOOLCHAINS))}"
            )
        else:
            if (tc.target_os, tc.target_arch) != (s.os, s.arch):
                out.append(
                    f"{f}: toolchain: '{s.toolchain}' builds for {tc.target_os}-{tc.target_arch}, "
                    f"the leg is {s.os}-{s.arch}"
                )
            if s.backend == "cuda" and not tc.cuda:
                out.append(f"{f}: toolchain: '{s.toolchain}' cannot compile CUDA; backend is 'cuda'")
        if s.cmake_bool("GGML_CPU", True) is False:
            if s.merge is None:
                out.append(
                    f"{f}: cmake.GGML_CPU: OFF builds no CPU backend, so the leg needs "
                    f"[merge] base = a CPU leg of {s.os}-{s.arch}"
                )
        if s.merge is not None:
            base = legs.get(s.merge.base)
            if base is None:
                if s.merge.base not in invalid:  # a broken base spec is reported on its own
                    close = difflib.get_close_matches(s.merge.base, [l for l in legs if l != lid], n=1)
                    out.append(
                        f"{f}: merge.base: no leg '{s.merge.base}' in the bundles directory"
                        + (f" (did you mean '{close[0]}'?)" if close else "")
                    )
            else:
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
        if s.cuda is not None:
            out += cuda_problems(f, s.os, s.arch, s.cuda)
        out += installer_problems(s, f, legs, release)
        out += cmake_problems(s, str(f))
        key = (s.install_kind, s.profile.name)
        if key in seen_kind:
            out.append(
                f"{f}: install_kind: ('{s.install_kind}', profile '{s.profile.name}') is also used by "
                f"{files[seen_kind[key]]}; each pair must be unique"
            )
        else:
            seen_kind[key] = lid
        if release is not None:
            name = s.bundle_name(release.tag, release.bundle_prefix)
            if name in seen_bundle:
                out.append(
                    f"{f}: produces the bundle {name}, as {files[seen_bundle[name]]} does: two legs would "
                    f"write one file (and one would satisfy the publish gate for both); give one of them "
                    f"another os, arch or profile.name"
                )
            else:
                seen_bundle[name] = lid
        if s.cuda is not None:
            major = s.cuda.version_tuple[0]
            tk = s.cuda.toolkit
            if tk.source == "redist" and tk.manifest and ".".join(tk.manifest.split(".")[:2]) != s.cuda.version:
                out.append(
                    f"{f}: cuda.version: '{s.cuda.version}', but cuda.toolkit.manifest '{tk.manifest}' is "
                    f"CUDA {'.'.join(tk.manifest.split('.')[:2])}; the toolkit installed is the manifest's: "
                    f"make them agree"
                )
            if tk.source == "wheels" and tk.lock:
                out += _lock_problems(f, s.cuda.version, root / tk.lock)
                if read is not None:
                    read.append(root / tk.lock)
            if s.profile.line is not None and s.profile.line != f"cuda{major}":
                out.append(
                    f"{f}: profile.line: '{s.profile.line}', but cuda.version {s.cuda.version} is CUDA {major}; "
                    f"installers choose the runtime line by it: set profile.line = 'cuda{major}'"
                )
        if (s.os, s.arch, s.toolchain) == ("windows", "arm64", "msvc-amd64_arm64-cuda") and s.cmake_bool(
            "GGML_CPU", True
        ) is not False:
            out.append(
                f"{f}: cmake.GGML_CPU: must be OFF for toolchain msvc-amd64_arm64-cuda (MSVC cannot build "
                f"ggml-cpu for ARM64); the CPU backend comes from the merge base, built with clang"
            )
    if release is not None:
        if build_number_of(release.tag) != build_number_of(release.upstream_tag):
            out.append(
                f"{rel_path}: tag: '{release.tag}' must start with upstream_tag's build "
                f"'{release.upstream_tag}' (installers read the build number from either); state the "
                f"upstream build of the pinned commit in upstream_tag and begin tag with it"
            )
        for i, leg in enumerate(release.default_legs):
            if leg not in legs and leg not in invalid:
                close = difflib.get_close_matches(leg, list(legs), n=1)
                out.append(
                    f"{rel_path}: default_legs[{i}]: no leg '{leg}'"
                    + (f" (did you mean '{close[0]}'?)" if close else "")
                )
    return out
