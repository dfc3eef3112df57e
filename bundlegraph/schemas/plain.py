"""The validated specs in plain-data form: what the graph is built from (issue 20).

The pydantic models (:mod:`.spec`, :mod:`.release`) say what a spec file may hold and validate
it; once a ``bundles/`` directory has passed, the loader turns every model into the record of
the same name here (``BundleSpec``, ``CudaSpec``, ``Release``, ``GitPin``, ...), and the graph,
the stages and the commands use only these. They import nothing but the standard library, so an
unchanged ``bundles/`` directory is loaded from the spec cache (:mod:`.loader`) without
importing pydantic at all.

A record holds:

- the model's fields as attributes, with the same names and values (nested models as nested
  records, archs as :class:`~.archs.Arch`, ``commit_date`` as a ``datetime``), read-only;
- :meth:`Record.dump`: the model's ``model_dump(mode="json", by_alias=True)``, taken from the
  validated model itself, so an action key that holds a spec is byte-identical to the one the
  model gave (``tests/unit/test_plain_records.py`` checks both on every real spec);
- the derived values the pipeline asks for (``profile_name``, ``bundle_name``, ``cmake_bool``,
  ``cmake_archs``, ``build_number``, ...).

Records are made by :func:`bundlegraph.schemas.validation.to_plain` (from a validated model), by
unpickling the spec cache and by :meth:`Record.replace`; nothing writes their attributes.
"""

from __future__ import annotations

import copy
import datetime as _dt
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal

from .archs import Arch, parse_version

OS = Literal["windows", "linux"]
CPUArch = Literal["x64", "arm64"]
CMakeValue = bool | int | str | list[str]


class Record:
    """Base of the plain records: read-only attributes (the model's fields) plus the model's
    JSON dump (:meth:`dump`). Equal when of one class with one dump."""

    FIELDS: ClassVar[tuple[str, ...]] = ()
    """The model's field names (Python names: ``from_``, not the alias ``from``)."""
    ALIASES: ClassVar[dict[str, str]] = {}
    """Field name -> the key its model writes (``from_`` -> ``from``)."""
    OMIT_NONE: ClassVar[tuple[str, ...]] = ()
    """Fields the model's dump leaves out while None (so release keys keep their form)."""
    NOT_DUMPED: ClassVar[tuple[str, ...]] = ()
    """Fields the model's dump never holds (``exclude=True``: what changes no output byte)."""

    _dump: dict[str, Any]

    def __init_subclass__(cls, **kw: Any) -> None:
        super().__init_subclass__(**kw)
        names: list[str] = []
        for klass in reversed(cls.__mro__):
            for n, ann in vars(klass).get("__annotations__", {}).items():
                if not n.startswith("_") and n not in names and not str(ann).startswith("ClassVar"):
                    names.append(n)
        cls.FIELDS = tuple(names)

    @classmethod
    def make(cls, values: dict[str, Any], dump: dict[str, Any]) -> Any:
        """A record of ``values`` (every name of :attr:`FIELDS`; raises ``KeyError`` naming a
        missing one, ``TypeError`` for an unknown one) whose :meth:`dump` is ``dump``."""
        unknown = set(values) - set(cls.FIELDS)
        if unknown:
            raise TypeError(f"{cls.__name__}: unknown fields {sorted(unknown)}")
        obj = object.__new__(cls)
        d = obj.__dict__
        for n in cls.FIELDS:
            d[n] = values[n]
        d["_dump"] = dump
        return obj

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"{type(self).__name__} is read-only (a validated spec): cannot set {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{type(self).__name__} is read-only (a validated spec): cannot delete {name!r}")

    def dump(self) -> dict[str, Any]:
        """The validated model's ``model_dump(mode="json", by_alias=True)`` (a fresh copy):
        plain JSON values, aliases as keys (``from``), archs in CMake spelling."""
        return copy.deepcopy(self._dump)

    def replace(self, **changes: Any) -> Any:
        """A copy with ``changes`` applied, not validated (like pydantic's
        ``model_copy(update=...)``: for tests and callers that build a spec by hand); its
        :meth:`dump` is the JSON form of the new values (:func:`json_form`). Raises
        ``TypeError`` naming an unknown field."""
        values = {n: changes.get(n, getattr(self, n)) for n in self.FIELDS}
        unknown = set(changes) - set(self.FIELDS)
        if unknown:
            raise TypeError(f"{type(self).__name__}: unknown fields {sorted(unknown)}")
        new = type(self).make(values, {})
        new.__dict__["_dump"] = json_form(new)
        return new

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other._dump == self._dump

    def __hash__(self) -> int:
        return hash((type(self).__name__, json.dumps(self._dump, sort_keys=True)))

    def __repr__(self) -> str:
        inner = ", ".join(f"{n}={getattr(self, n)!r}" for n in self.FIELDS)
        return f"{type(self).__name__}({inner})"


def json_of(rec: Record) -> dict[str, Any]:
    """:meth:`Record.dump` without the copy, for serialisers (action keys, JSON output) that
    only read it: never modify the result."""
    return rec._dump


def json_form(v: Any) -> Any:
    """``v`` in the form the models' ``model_dump(mode="json", by_alias=True)`` writes it:
    records by field (aliases as keys, :attr:`Record.OMIT_NONE` fields left out while None),
    archs in CMake spelling, datetimes in ISO 8601 (UTC as ``Z``, as pydantic writes them)."""
    if isinstance(v, Record):
        out = {}
        for n in v.FIELDS:
            x = getattr(v, n)
            if (x is None and n in v.OMIT_NONE) or n in v.NOT_DUMPED:
                continue
            out[v.ALIASES.get(n, n)] = json_form(x)
        return out
    if isinstance(v, Arch):
        return v.cmake
    if isinstance(v, _dt.datetime):
        text = v.isoformat()
        return text[:-6] + "Z" if text.endswith("+00:00") else text
    if isinstance(v, list):
        return [json_form(x) for x in v]
    if isinstance(v, dict):
        return {k: json_form(x) for k, x in v.items()}
    return v


# --- bundle specs (models: bundlegraph.schemas.spec) -------------------------------------------


class Profile(Record):
    """What an installer chooses by (model: :class:`bundlegraph.schemas.spec.Profile`)."""

    name: str
    line: Literal["cuda12", "cuda13"] | None
    klass: str
    rank: int


class ToolkitSpec(Record):
    """Where the leg's CUDA toolkit comes from (model: :class:`bundlegraph.schemas.spec.ToolkitSpec`)."""

    source: Literal["redist", "wheels", "host"]
    manifest: str | None
    lock: str | None
    path: str | None
    host: list[str]
    target: list[str]
    host_platform: str | None
    target_platform: str


class CudaSpec(Record):
    """CUDA settings of a GPU leg (model: :class:`bundlegraph.schemas.spec.CudaSpec`)."""

    version: str
    archs: list[Arch]
    toolkit: ToolkitSpec

    @property
    def version_tuple(self) -> tuple[int, int]:
        """``"13.4"`` -> ``(13, 4)``."""
        return parse_version(self.version)

    @property
    def parsed_archs(self) -> list[Arch]:
        """The archs (parsed when the spec was validated)."""
        return list(self.archs)

    @property
    def cmake_archs(self) -> list[str]:
        """The archs in CMake's spelling (``["120", "121"]``)."""
        return [a.cmake for a in self.archs]


class BuildSpec(Record):
    """What ``cmake --build`` builds: ``targets`` (empty = all); ``shards``: compile jobs (>= 1),
    never in the dump (no action key holds it: sharding changes no byte of the outputs)."""

    NOT_DUMPED = ("shards",)
    targets: list[str]
    shards: int


class MergeSpec(Record):
    """The merge base of a backend-only leg and how a file clash is decided."""

    base: str
    prefer: Literal["error", "base", "backend"]


class PackageSpec(Record):
    """Which files of the merged tree go into the bundle (globs)."""

    keep: list[str]
    exclude: list[str]


class ShippedRuntime(Record):
    """A runtime file the bundle ships (``from_`` is the spec's ``from``)."""

    ALIASES = {"from_": "from"}

    name: str
    from_: Literal["toolkit", "toolchain"]
    path: str | None


class PairedAsset(Record):
    """A runtime asset published beside the bundles; its hash goes into the SHA index."""

    name: str
    url: str | None
    sha256: str | None


class RuntimeSpec(Record):
    """Runtime files: ``ships``, ``external``, ``paired``."""

    ships: list[ShippedRuntime]
    external: list[str]
    paired: list[PairedAsset]


class LinuxSpec(Record):
    """The glibc / libstdc++ floors of a Linux leg."""

    glibc_floor: str
    glibcxx_floor: str


class SmokeSpec(Record):
    """Why the leg's bundle may be published without a passed smoke."""

    waived: str


class LocalBuild(Record):
    """What makes a leg a local build (set by :mod:`bundlegraph.overrides` only)."""

    tag: str
    origin: str


class BundleSpec(Record):
    """One leg (model: :class:`bundlegraph.schemas.spec.BundleSpec`; the fields are documented there)."""

    OMIT_NONE = ("compile_runner", "smoke", "local")

    id: str
    os: OS
    arch: CPUArch
    backend: Literal["cpu", "cuda"]
    install_kind: str
    promised: bool
    runner: str
    compile_runner: str | None
    signing: Literal["none", "optional", "required"]
    toolchain: str
    profile: Profile
    cuda: CudaSpec | None
    cmake: dict[str, CMakeValue]
    build: BuildSpec
    required: list[str]
    merge: MergeSpec | None
    package: PackageSpec
    runtime: RuntimeSpec
    linux: LinuxSpec | None
    smoke: SmokeSpec | None
    local: LocalBuild | None

    @property
    def profile_name(self) -> str:
        """The bundle's profile: ``profile.name``, plus ``+<local tag>`` for a local build
        (``cuda13-portable+sm90-local``)."""
        return f"{self.profile.name}+{self.local.tag}" if self.local else self.profile.name

    def cmake_bool(self, key: str, default: bool | None = None) -> bool | None:
        """The cache entry ``key`` as a bool (ON/OFF/TRUE/FALSE/YES/NO/1/0 accepted), else ``default``."""
        v = self.cmake.get(key)
        if v is None:
            return default
        if isinstance(v, bool):
            return v
        s = str(v).strip().upper()
        if s in ("ON", "TRUE", "YES", "1"):
            return True
        if s in ("OFF", "FALSE", "NO", "0"):
            return False
        return default

    @property
    def archive_suffix(self) -> str:
        """``.zip`` on Windows, ``.tar.gz`` on Linux."""
        return ".zip" if self.os == "windows" else ".tar.gz"

    def bundle_name(self, tag: str, prefix: str = "app") -> str:
        """``<prefix>-<tag>-<os>-<arch>-<profile>.zip|.tar.gz`` (derived, never written in a spec)."""
        return f"{prefix}-{tag}-{self.os}-{self.arch}-{self.profile_name}{self.archive_suffix}"


# --- the release (models: bundlegraph.schemas.release) -----------------------------------------

IMPL_SPLIT_BUILD = 9283
"""The upstream build from which llama.cpp splits its tools into ``llama-server-impl`` /
``llama-quantize-impl`` shared libraries; installers require those libraries in bundles of
builds >= this number (unsloth's installer: ``LLAMA_SERVER_IMPL_SPLIT_BUILD``)."""


def build_number_of(tag: str) -> int | None:
    """``b11642`` / ``b11642-mix-0c1e570`` -> 11642; None for a tag of another form."""
    m = re.match(r"^b(\d+)(?:$|[-.])", tag)
    return int(m.group(1)) if m else None


class _Pin(Record):
    subdirectory: str | None
    commit: str | None
    commit_date: _dt.datetime | None


class TarballPin(_Pin):
    """``kind = "tarball"``: ``url`` + ``sha256`` of the archive."""

    kind: Literal["tarball"]
    url: str
    sha256: str


class GitPin(_Pin):
    """``kind = "git"``: ``url`` + full 40-hex ``commit``."""

    kind: Literal["git"]
    url: str
    commit: str


class PathPin(_Pin):
    """``kind = "path"``: a local directory, relative to the release file."""

    kind: Literal["path"]
    path: str


class PipSdistPin(_Pin):
    """``kind = "pip-sdist"``: ``requirement`` (``name==version``) + ``sha256`` of the sdist."""

    kind: Literal["pip-sdist"]
    requirement: str
    sha256: str

    @property
    def name(self) -> str:
        return self.requirement.split("==", 1)[0]

    @property
    def version(self) -> str:
        return self.requirement.split("==", 1)[1]


SourcePin = TarballPin | GitPin | PathPin | PipSdistPin


class Release(Record):
    """The release (model: :class:`bundlegraph.schemas.release.Release`; fields documented there)."""

    tag: str
    upstream_tag: str
    paired_runtime_tag: str
    source_repo: str
    bundle_prefix: str
    info_file: str
    default_legs: list[str]
    source: SourcePin

    @property
    def build_number(self) -> int:
        """The upstream build number (``b11642`` -> 11642): ``LLAMA_BUILD_NUMBER``."""
        n = build_number_of(self.upstream_tag)
        assert n is not None
        return n

    @property
    def is_mix(self) -> bool:
        return "-mix-" in self.tag


RECORDS: dict[str, type[Record]] = {
    c.__name__: c
    for c in (
        Profile,
        ToolkitSpec,
        CudaSpec,
        BuildSpec,
        MergeSpec,
        PackageSpec,
        ShippedRuntime,
        PairedAsset,
        RuntimeSpec,
        LinuxSpec,
        SmokeSpec,
        LocalBuild,
        BundleSpec,
        TarballPin,
        GitPin,
        PathPin,
        PipSdistPin,
        Release,
    )
}
"""Each record class by the name of the pydantic model it stands for."""


@dataclass(frozen=True)
class Matrix:
    """A validated ``bundles/`` directory: ``release``, ``legs`` by id (sorted), and the file
    each leg came from."""

    root: Path
    release: Release
    legs: dict[str, BundleSpec]
    files: dict[str, Path] = field(default_factory=dict)

    @property
    def promised(self) -> list[str]:
        """Ids of the legs whose bundles the release promises (``promised = true``)."""
        return [i for i, s in self.legs.items() if s.promised]

    def merged_into(self, base: str) -> list[str]:
        """Legs whose merge base is ``base``."""
        return [i for i, s in self.legs.items() if s.merge and s.merge.base == base]
