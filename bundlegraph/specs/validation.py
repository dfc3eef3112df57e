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
- every GPU arch lies within the leg's CUDA version's range (:mod:`.archs`);
- a Windows ARM64 CUDA leg needs CUDA >= 13.4 (the first redist with ``windows-arm64``
  target libraries);
- ``(install_kind, profile)`` is unique; ``default_legs`` name existing legs;
- a HIP leg's ``gfx_target`` is one of the fork's families, its ``mapped_targets`` and
  ``GPU_TARGETS`` are that family's targets, and its TheRock lock pins its build
  (:func:`hip_problems`); a macOS leg's ``CMAKE_OSX_DEPLOYMENT_TARGET`` is its floor
  (:func:`macos_problems`).
"""

from __future__ import annotations

import re
import tomllib
import typing
from pathlib import Path
from typing import Any, TypeVar

from pydantic import ValidationError

from .. import backends
from ..core.errors import SpecError, did_you_mean
from ..core.platforms import platform
from ..schemas.adapters import adapter
from ..schemas.archs import CudaVersion, arch_supported, fatbin_sm
from ..schemas.cmake_rules import cmake_problems, served_options
from ..schemas.records import BundleSpec, CudaSpec, Matrix, Record, Release, build_number_of
from ..toolchains.registry import TOOLCHAINS
from .derive import fill

RELEASE_FILE = "release.toml"
CUDA_TARGET_SINCE: dict[tuple[str, str], tuple[tuple[int, int], str]] = {
    ("windows", "arm64"): ((13, 4), "the first redist with windows-arm64 target libraries"),
}
"""``(os, arch)`` -> the first CUDA version whose redist has target libraries for it, and why
(NVIDIA's ``redistrib_<ver>.json``: ``windows-arm64`` keys appear in 13.4); an ``(os, arch)``
not named has them in every version the specs may name."""

T = TypeVar("T")


def validate_leg(data: dict[str, Any]) -> BundleSpec:
    """One leg's table (a spec file's content, or a spec's ``dump()`` with changes), validated
    as a :class:`BundleSpec`. Raises pydantic's ``ValidationError``."""
    return adapter(BundleSpec).validate_python(data)


def validate_cuda(data: dict[str, Any]) -> CudaSpec:
    """A ``[cuda]`` table validated as a :class:`CudaSpec`. Raises ``ValidationError``."""
    return adapter(CudaSpec).validate_python(data)


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


def cuda_problems(f: Path, os_: object, arch: object, cuda: CudaSpec) -> list[str]:
    """Each GPU arch within the CUDA version's range; Windows ARM64 needs CUDA >= 13.4."""
    out = []
    v = cuda.version.parts
    for i, a in enumerate(cuda.archs):
        why = arch_supported(a, v)
        if why:
            out.append(f"{f}: cuda.archs[{i}]: '{a.cmake}': {why}")
    since = CUDA_TARGET_SINCE.get((str(os_), str(arch)))
    if since is not None and v < since[0]:
        want = ".".join(map(str, since[0]))
        plat = platform(str(os_))
        out.append(
            f"{f}: cuda.version: a {plat.title} {str(arch).upper()} CUDA leg needs CUDA >= {want} ({since[1]}); "
            f"got {cuda.version}"
        )
    return out


def ptx_jit_problems(f: Path, s: BundleSpec) -> list[str]:
    """A leg with PTX-only archs (``61-virtual``): its toolkit's PTX ISA must be one the oldest
    driver selection sends the leg to JIT-compiles (:func:`bundlegraph.installer.selection.oldest_driver`,
    :mod:`bundlegraph.checks.ptxisa`), the rule verify's ``ptx-isa`` row holds the built fatbin to."""
    from ..backends.cuda import oldest_driver
    from ..checks.ptxisa import emitted_isa, first_driver, fmt, max_isa

    assert s.cuda is not None
    sass = {fatbin_sm(a) for a in s.cuda.archs if a.sass}
    ptx_only = [a.cmake for a in s.cuda.archs if a.ptx and fatbin_sm(a) not in sass]
    isa, driver = emitted_isa(s.cuda.version.parts), oldest_driver(s.profile.line, s.cuda.version.major)
    top = max_isa(driver)
    if not ptx_only or isa is None or (top is not None and isa <= top):
        return []
    return [
        f"{f}: cuda.version: CUDA {s.cuda.version} writes PTX ISA {fmt(isa)} (which needs {first_driver(isa)}), but "
        f"the PTX-only archs {', '.join(ptx_only)} are JIT-compiled by drivers from CUDA {fmt(driver)}, the oldest "
        f"selection sends this leg to, which read PTX ISA up to {fmt(top) if top else 'none'}: build with CUDA "
        f"{fmt(driver)} or raise the leg's driver floor"
    ]


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


def _lock_problems(f: Path, version: str, lock_path: Path) -> list[str]:
    """A wheels lock of another CUDA version than the leg's (its ``cuda`` key); an unreadable
    lock is named."""
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
        if s.cuda is not None:
            out += cuda_problems(f, s.os, s.arch, s.cuda)
            out += ptx_jit_problems(f, s)
        if s.hip is not None:
            out += hip_problems(f, s, root, read)
        if s.macos is not None:
            out += macos_problems(f, s)
        if s.metal is not None:
            out += metal_problems(f, s)
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
        if s.cuda is not None:
            major = s.cuda.version.major
            tk = s.cuda.toolkit
            if tk.source == "redist" and tk.manifest and CudaVersion(tk.manifest).parts != s.cuda.version.parts:
                out.append(
                    f"{f}: cuda.version: '{s.cuda.version}', but cuda.toolkit.manifest '{tk.manifest}' is "
                    f"CUDA {'.'.join(tk.manifest.split('.')[:2])}; the toolkit installed is the manifest's: "
                    f"make them agree"
                )
            if tk.source == "wheels" and tk.lock:
                out += _lock_problems(f, s.cuda.version, root / tk.lock)
                read.append(root / tk.lock)
            if s.profile.line is not None and s.profile.line != f"cuda{major}":
                out.append(
                    f"{f}: profile.line: '{s.profile.line}', but cuda.version {s.cuda.version} is CUDA {major}; "
                    f"installers choose the runtime line by it: set profile.line = 'cuda{major}'"
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


def _cmake_list(v: object) -> list[str] | None:
    """A CMake list entry as a list (``"a;b"`` or ``["a", "b"]``); None when unset."""
    if v is None:
        return None
    return [str(x) for x in v] if isinstance(v, list) else [x for x in str(v).split(";") if x]


def hip_problems(f: Path, s: BundleSpec, root: Path, read: list[Path]) -> list[str]:
    """A HIP leg's ``[hip]`` against the fork's families (:data:`bundlegraph.backends.hip.FAMILIES`),
    its ``GPU_TARGETS`` and its TheRock lock (:func:`bundlegraph.toolkit.therock.load_lock`), one
    line each. The lock is appended to ``read``. A tarball the lock does not pin is not a spec
    problem: the SDK stage refuses it when it runs, so plan and keys work before it is pinned."""
    from ..backends import hip
    from ..core.errors import ToolkitError
    from ..toolkit.therock import load_lock

    assert s.hip is not None
    out = []
    want = hip.FAMILIES.get(s.hip.gfx_target)
    if want is None:
        out.append(
            f"{f}: hip.gfx_target: '{s.hip.gfx_target}' is not one of the fork's families "
            f"({', '.join(hip.FAMILIES)}){did_you_mean(s.hip.gfx_target, hip.FAMILIES)}"
        )
    elif list(s.hip.mapped_targets) != list(want):
        out.append(
            f"{f}: hip.mapped_targets: {s.hip.mapped_targets}, but family {s.hip.gfx_target} is {list(want)} "
            f"(the installer serves a host by this list)"
        )
    gpu = _cmake_list(s.cmake.get("GPU_TARGETS"))
    if gpu != list(s.hip.mapped_targets):
        out.append(
            f"{f}: cmake.GPU_TARGETS: {gpu}, but hip.mapped_targets is {s.hip.mapped_targets}: the bundle must "
            f"hold code objects for exactly the targets it promises"
        )
    # what verify must refuse: a bundle without the runtime ggml-hip imports (a Windows one without
    # hipblas.dll: ggml-org/llama.cpp#26996) or without a rocBLAS kernel file of one of its targets
    want_req = [*hip.RUNTIME_REQUIRED[s.os], *(f"{hip.ROCBLAS_FOLDER}/*{t}*" for t in s.hip.mapped_targets)]
    if missing := [r for r in want_req if r not in s.required]:
        out.append(
            f"{f}: required: lacks {', '.join(missing)}: a HIP bundle must hold the runtime ggml-hip imports "
            f"and a rocBLAS kernel file for every mapped target"
        )
    lock = root / s.hip.sdk.lock
    read.append(lock)
    try:
        got = load_lock(lock)
    except ToolkitError as e:
        out.append(f"{f}: hip.sdk.lock: {e}")
    else:
        if got.therock != s.hip.sdk.version:
            out.append(f"{f}: hip.sdk.version: '{s.hip.sdk.version}', but {s.hip.sdk.lock} pins TheRock {got.therock}")
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


def metal_problems(f: Path, s: BundleSpec) -> list[str]:
    """A Metal leg's ``GGML_METAL`` must be on and its ``GGML_METAL_EMBED_LIBRARY`` must be its
    ``[metal] embed_library`` (verify and the smoke rely on where the shader library is), one line each."""
    assert s.metal is not None
    out = []
    if s.cmake_bool("GGML_METAL", False) is not True:
        out.append(f"{f}: cmake.GGML_METAL: a Metal leg builds ggml-metal: set GGML_METAL = true")
    if bool(s.cmake_bool("GGML_METAL_EMBED_LIBRARY", False)) != s.metal.embed_library:
        out.append(
            f"{f}: cmake.GGML_METAL_EMBED_LIBRARY: {s.cmake.get('GGML_METAL_EMBED_LIBRARY')!r}, but "
            f"metal.embed_library is {str(s.metal.embed_library).lower()}: set the one the bundle is built with"
        )
    return out
