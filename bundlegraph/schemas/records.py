"""The records of the spec formats: ``bundles/<leg>.toml`` (:class:`BundleSpec`) and
``bundles/release.toml`` (:class:`Release`), one frozen dataclass per table. A backend's own
table (``[cuda]``, ``[vulkan]``) is its package's record (``bundlegraph/backends/<name>/spec.py``),
which :class:`BundleSpec` takes up as it loads.

Each record is written once, here, and everything else comes from it:

- **Fields and their docs.** A field's attribute docstring is its one description: the JSON
  Schema (``bundlegraph schema``) carries it, an editor shows it as you type.
- **Validation.** A spec file is validated on a spec-cache miss (:mod:`.validation`) by a
  pydantic ``TypeAdapter`` of these very classes. The rules of one field are ``Annotated``
  metadata (:mod:`.constraints`; :class:`~.archs.Arch` and :class:`~.archs.CudaVersion` carry
  their own core schema); a rule over several fields of one table is its ``__post_init__``
  (a ``ValueError`` whose text starts with the key it is about); rules over several tables or
  files are :func:`.validation.cross_field_problems`. This module imports no pydantic: a
  graph loaded from the spec cache never imports it.
- **Typed values.** Archs are :class:`~.archs.Arch`, the CUDA version a
  :class:`~.archs.CudaVersion`, ``commit_date`` a ``datetime``; they become text only at the
  CMake and JSON edges.
- **The JSON form** (:meth:`Record.dump`), what action keys hold: field by field, the TOML key
  (``from``) for the Python name (``from_``), archs in CMake spelling, datetimes in ISO 8601
  (UTC as ``Z``), fields of :attr:`Record.OMIT_NONE` left out while None and
  :attr:`Record.NOT_DUMPED` never written (what changes no output byte). It is byte-for-byte
  the dump of the pydantic models these records replaced (issue 30), so no stamp changes.

Records are read-only (``dataclasses.FrozenInstanceError``); :meth:`Record.replace` makes a
changed copy and runs the table's own rules again.
"""

from __future__ import annotations

import datetime as _dt
import re
import sys
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal

from ..core.lightclass import frozen
from ..core.platforms import PLATFORMS, platform
from . import backend as backends
from .constraints import ID, SHA256, Check, Tagged, unique
from .record_base import Record as Record
from .record_base import field_docs as _field_docs
from .record_base import json_form as json_form
from .record_base import record as record

OS = Literal["windows", "linux", "macos"]
CPUArch = Literal["x64", "arm64"]
CMakeValue = bool | int | str | list[str]
if TYPE_CHECKING:
    BackendName = str
else:  # the registry's names, so pydantic and the JSON Schema list exactly the backends there are
    BackendName = Literal[backends.BACKEND_NAMES]

_COMMIT = Check(pattern=r"^[0-9a-f]{40}$")
_BUILD_TAG = Check(pattern=r"^b\d+$")

_CMAKE_BOOLS = dict.fromkeys(("ON", "TRUE", "YES", "Y", "1"), True) | dict.fromkeys(
    ("OFF", "FALSE", "NO", "N", "0", "IGNORE", "NOTFOUND"), False
)
"""CMake's named boolean constants, upper case (they are case-insensitive), and what each means.
Source: CMake's ``if()`` documentation, "Basic Expressions": true if the constant is ``1``,
``ON``, ``YES``, ``TRUE``, ``Y`` (or a non-zero number); false if ``0``, ``OFF``, ``NO``,
``FALSE``, ``N``, ``IGNORE``, ``NOTFOUND``, the empty string, or it ends in ``-NOTFOUND``. Any
other text is not a false constant, so an ``option()`` reads it as true."""


def cmake_constant(value: str) -> bool | None:
    """What CMake's ``if()`` makes of the text ``value`` when it is one of its named boolean
    constants (:data:`_CMAKE_BOOLS`, ``*-NOTFOUND``, the empty string), else None."""
    v = value.strip().upper()
    if v in _CMAKE_BOOLS:
        return _CMAKE_BOOLS[v]
    return False if (v == "" or v.endswith("-NOTFOUND")) else None


# --- a leg: bundles/<leg>.toml ---------------------------------------------------------------


@record
class Profile(Record):
    """What an installer chooses a bundle by (:mod:`bundlegraph.installer.selection`)."""

    name: Annotated[str, ID]
    """the profile in the bundle name (cuda13-portable, cpu)"""
    line: Literal["cuda12", "cuda13"] | None = None
    """CUDA runtime line (cuda12/cuda13) of a cuda leg; must match cuda.version's major"""
    klass: Annotated[str, ID]
    """coverage class: older/newer/portable/legacy/blackwell/cpu"""
    rank: Annotated[int, Check(ge=0, le=1000, strict=True)]
    """an integer 0-1000; lower wins a tie between bundles of the same SM span"""


@record
class MacosSpec(Record):
    """The floor of a macOS leg."""

    deployment_target: Annotated[str, Check(pattern=r"^\d+\.\d+$")]
    """CMAKE_OSX_DEPLOYMENT_TARGET, and the highest minos any Mach-O file may state (13.3)"""


MAX_SHARDS = 32
"""The most CI jobs one leg's compile is spread over (``[build] shards``, ``shard=I/N``)."""


@record
class BuildSpec(Record):
    """What ``cmake --build`` builds, and over how many CI jobs its compile is spread
    (:mod:`bundlegraph.pipeline.compile.shards`)."""

    NOT_DUMPED = ("shards",)

    targets: list[str] = field(default_factory=list)
    """the CMake targets built (empty: all; left out of a backend-only leg's spec file: its backend's library,
    ggml-cuda)"""
    shards: Annotated[int, Check(ge=1, le=MAX_SHARDS, strict=True)] = 1
    """CI jobs the compile is spread over (an integer 1-32, default 1; ``"2"`` and ``2.0`` are refused, like ``rank``): each shard compiles a cost-balanced slice of the
    targets' compile steps into the compiler cache; one final compile links. Never in an action key: a sharded
    build's bundle is an unsharded one's."""


@record
class MergeSpec(Record):
    """The merge base of a backend-only leg and how a file clash is decided."""

    base: Annotated[str, ID]
    """the id of the CPU leg (same os and arch) whose packaged bundle this backend joins"""
    prefer: Literal["error", "base", "backend"] = "error"
    """which file wins when base and backend hold different files of one name: error, base or backend"""


@record
class PackageSpec(Record):
    """Which files of the merged tree go into the bundle (glob patterns on relative paths)."""

    keep: list[str] = field(default_factory=lambda: ["**"])
    """globs of built files to pack (default: all)"""
    exclude: list[str] = field(default_factory=list)
    """globs of built files never packed"""


@record
class ShippedRuntime(Record):
    """A runtime file the bundle ships, taken from the leg's target toolkit or its toolchain
    (the newest version directory of MSVC's redist folders)."""

    name: str
    """the file's name in the bundle (cudart64_13.dll)"""
    from_: Literal["toolkit", "toolchain"]
    """toolkit or toolchain"""
    path: str | None = None
    """toolkit: the file's path under the toolkit prefix (bin/arm64/cudart64_13.dll)"""


@record
class PairedAsset(Record):
    """A runtime asset published beside the bundles (upstream's
    ``cudart-llama-bin-win-cuda-13.4-arm64.zip``); its hash goes into the SHA index."""

    name: str
    """the asset's file name (cudart-llama-bin-win-cuda-13.4-arm64.zip)"""
    url: str | None = None
    """where to fetch it when the upstream release does not list it"""
    sha256: Annotated[str, SHA256] | None = None
    """its sha256 when pinned (else hashed from a local copy or the upstream release)"""


@record
class RuntimeSpec(Record):
    """Runtime files: shipped inside the bundle, relied on without shipping, or published beside it."""

    ships: list[ShippedRuntime] = field(default_factory=list)
    """runtime files copied into the bundle (from the toolkit or the toolchain's redist)"""
    external: list[str] = field(default_factory=list)
    """libraries the bundle imports but does not ship (the installer provides them)"""
    paired: list[PairedAsset] = field(default_factory=list)
    """upstream assets published beside the bundle and hashed in the SHA index"""


@record
class LinuxSpec(Record):
    """Refused since issue 50: a Linux leg's glibc / libstdc++ floors are its toolchain's, the
    machine file's ``[compiler]`` (the pinned C library sets them, once for every leg)."""

    glibc_floor: Annotated[str, Check(pattern=r"^\d+\.\d+$")]
    """the highest GLIBC_x.y version any ELF file may need (2.36)"""
    glibcxx_floor: Annotated[str, Check(pattern=r"^\d+\.\d+\.\d+$")]
    """the highest GLIBCXX_x.y.z version any ELF file may need (3.4.30)"""


@record
class SmokeSpec(Record):
    """Why the leg's bundle may be published without a passed smoke: publish refuses a promised
    bundle whose smoke did not pass for exactly its bytes unless this says why."""

    waived: Annotated[str, Check(min_length=10)]
    """why no runner of the release can start this bundle (publish refuses an unsmoked bundle otherwise)"""


@record
class LocalBuild(Record):
    """What makes a leg a local build (:mod:`bundlegraph.backends.cuda.overrides`; never in a spec file)."""

    tag: str
    """the profile suffix after + (sm90-local, host13.0-local)"""
    origin: str
    """the overrides that made it (archs=90)"""


def _plug_in_tables(declared: dict[str, Any]) -> dict[str, type[Record]]:
    """Each backend's spec table that no field of :class:`BundleSpec` declares (``declared``: its
    annotations so far), by table name -> the record its package's ``spec`` module holds as
    ``TABLE`` (:func:`bundlegraph.schemas.backend.plug_in`): a backend added as one folder brings its
    table with it, and no field is written here for it. A backend naming a ``SPEC_TABLE`` whose
    package has no such record gets no field: the check after :class:`BundleSpec` names it."""
    out: dict[str, type[Record]] = {}
    for b in backends.BACKENDS:
        if not b.SPEC_TABLE or b.SPEC_TABLE in declared:
            continue
        mod = backends.plug_in(b, "spec")
        rec = getattr(mod, "TABLE", None)
        if isinstance(rec, type) and issubclass(rec, Record):
            out[b.SPEC_TABLE] = rec
    return out


def _writes_null(rec: type[Record]) -> bool:
    """Whether the package of table record ``rec`` says ``WRITE_NULL = True``: a leg of another
    backend then writes ``<table>: null`` in its JSON form instead of leaving the key out
    (``[cuda]``: the form every action key has held since issue 30, so no stamp changes)."""
    return bool(getattr(sys.modules[rec.__module__], "WRITE_NULL", False))


def field_docs(cls: type[Record]) -> dict[str, str]:
    """Each field's attribute docstring by field name (:func:`.record_base.field_docs`); a spec
    table :class:`BundleSpec` took from a backend's package (:data:`PLUG_IN_TABLES`) is described
    by its record's docstring."""
    docs = _field_docs(cls)
    if cls is BundleSpec:
        docs |= {t: " ".join((rec.__doc__ or "").split()) for t, rec in PLUG_IN_TABLES.items()}
    return docs


def all_records() -> list[type[Record]]:
    """Every record class defined so far (this module's, a backend's spec table and the tables
    it holds, other modules'), in definition order: what the JSON Schema's descriptions are
    filled from."""
    out: list[type[Record]] = []
    todo = list(Record.__subclasses__())
    while todo:
        c = todo.pop(0)
        if c not in out:
            out.append(c)
            todo += c.__subclasses__()
    return out


def _after(key: str, fields: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """``fields`` with ``new`` inserted right after ``key`` (the order of a record's fields is
    the order of its JSON form and of its JSON Schema's properties)."""
    out: dict[str, Any] = {}
    for k, v in fields.items():
        out[k] = v
        if k == key:
            out |= new
    return out


PLUG_IN_TABLES: dict[str, type[Record]] = {}
"""The spec tables :class:`BundleSpec` took from the backends' packages (:func:`_plug_in_tables`),
by table name; their field docs are their records' docstrings (:func:`field_docs`)."""


@record
class BundleSpec(Record):
    """One leg: a bundle's build (``bundles/<id>.toml``; ``bundlegraph schema`` prints its JSON
    Schema)."""

    OMIT_NONE: ClassVar[tuple[str, ...]] = (
        "compile_runner",
        "smoke",
        "local",
        "macos",
        "upstream_differs",
    )

    id: Annotated[str, ID]
    """the leg's id; must equal the file name stem (windows-arm64-cuda13-portable)"""
    os: OS
    """target operating system: windows, linux or macos"""
    arch: CPUArch
    """target CPU architecture: x64 or arm64"""
    backend: BackendName
    """a backend of the registry (cpu, cuda, vulkan): a GPU backend's leg needs its table ([cuda], [vulkan]) and no
    other backend's; a cuda leg also profile.line"""
    install_kind: Annotated[str, ID] = ""
    """what an installer asks for (windows-arm64-cuda, linux-cuda, ...): one the installer knows; a spec file leaves it
    out: it follows from os, arch and backend (bundlegraph/specs/derive.py)"""
    promised: bool = True
    """the publish gate requires this leg's bundle (default true)"""
    runner: str
    """the CI runner label the leg's job runs on (windows-2022, ubuntu-24.04)"""
    compile_runner: str | None = None
    """the CI runner label the leg compiles on when that is not runner: its build output is handed over as
    artifact built-<id> and imported on runner (doit built=DIR)"""
    signing: Literal["none", "optional", "required"] = "none"
    """Authenticode signing: none, optional (unsigned if no signer is set) or required"""
    toolchain: str
    """the toolchain that compiles the leg (see bundlegraph/toolchains)"""
    profile: Profile
    """what an installer chooses by: name, line, klass, rank"""
    cmake: dict[str, CMakeValue] = field(default_factory=dict)
    """CMake cache entries for the configure (NAME = true/false/number/text); a key the project does not use fails
    the configure. The backend's own option (GGML_CUDA, GGML_HIP ...) is on unless the file says otherwise, and a HIP
    leg's GPU_TARGETS are its mapped_targets (bundlegraph/specs/derive.py)"""
    upstream_differs: dict[str, str] | None = None
    """speed-relevant CMake flags (GGML_CUDA_*, the CPU backend's variants, instruction sets and OpenMP) whose value in
    this leg's configure differs from upstream's release build of its backend and platform (llama.cpp's
    .github/workflows/release.yml): NAME = why (tests/integration/test_upstream_flags.py)"""
    build: BuildSpec = field(default_factory=BuildSpec)
    """what the build compiles"""
    required: list[str] = field(default_factory=list)
    """file names (globs) the bundle must hold; verify refuses a bundle without them. Left out of a spec file: what the
    installer requires of the install kind and the smoke runs (a whole bundle), or the backend's library and runtime
    files (a backend-only leg: bundlegraph/specs/derive.py)"""
    merge: MergeSpec | None = None
    """a backend-only leg: the CPU leg whose bundle it is merged into"""
    package: PackageSpec = field(default_factory=PackageSpec)
    """which built files go into the bundle"""
    runtime: RuntimeSpec = field(default_factory=RuntimeSpec)
    """runtime files shipped in the bundle, declared external, or paired as separate assets"""
    linux: LinuxSpec | None = None
    """the glibc and libstdc++ floors every ELF file must keep (Linux legs)"""
    macos: MacosSpec | None = None
    """the deployment target (minos floor) of a macOS leg"""
    smoke: SmokeSpec | None = None
    """[smoke] waived = why the bundle may be published without a passed smoke (no runner starts it)"""
    local: LocalBuild | None = None
    """set by the load-time overrides only (the loader refuses it in a spec file; not in the JSON Schema)"""

    # each backend's own table (its package's spec.py), a field like those above, placed after
    # profile in registry order: None unless the leg is of that backend, and left out of the JSON
    # form while None
    PLUG_IN_TABLES.update(_plug_in_tables(__annotations__))
    __annotations__ = _after("profile", __annotations__, {table: rec | None for table, rec in PLUG_IN_TABLES.items()})
    locals().update(dict.fromkeys(PLUG_IN_TABLES))
    OMIT_NONE = (*OMIT_NONE, *(t for t, rec in PLUG_IN_TABLES.items() if not _writes_null(rec)))

    def __post_init__(self) -> None:
        own = backends.BY_NAME[self.backend].SPEC_TABLE if self.backend in backends.BY_NAME else None
        for table in backends.spec_tables():  # the spec is a tagged union on backend
            there = getattr(self, table) is not None
            if table == own and not there:
                raise ValueError(f"{table}: backend '{self.backend}' needs a [{table}] table")
            if table != own and there:
                raise ValueError(f"{table}: backend '{self.backend}' must not have a [{table}] table")
        for plat in PLATFORMS.values():  # and on os: an OS's own table (macOS: its deployment target)
            if not plat.spec_table:
                continue
            there = getattr(self, plat.spec_table) is not None
            if plat.name == self.os and not there:
                raise ValueError(f"{plat.spec_table}: a {plat.title} leg needs a [{plat.spec_table}] table")
            if plat.name != self.os and there:
                raise ValueError(f"{plat.spec_table}: [{plat.spec_table}] is only for {plat.title} legs")
        if self.backend == "cuda" and self.profile.line is None:
            raise ValueError("profile.line: a CUDA leg needs profile.line ('cuda12' or 'cuda13')")
        if self.backend != "cuda" and self.profile.line is not None:
            raise ValueError(f"profile.line: only a CUDA leg has a runtime line; backend is '{self.backend}'")
        if self.linux is not None:
            raise ValueError(
                "linux: the glibc/GLIBCXX floors are the toolchain's now (its machine file's [compiler] glibc_floor "
                "and glibcxx_floor, set by the pinned C library); remove [linux]"
            )
        if self.compile_runner is not None and self.compile_runner == self.runner:
            raise ValueError(
                f"compile_runner: '{self.compile_runner}' is runner: leave it out (set it only when the leg "
                "compiles on another runner than the one that packages it)"
            )

    @property
    def profile_name(self) -> str:
        """The bundle's profile: ``profile.name``, plus ``+<local tag>`` for a local build
        (``cuda13-portable+sm90-local``)."""
        return f"{self.profile.name}+{self.local.tag}" if self.local else self.profile.name

    def cmake_bool(self, key: str, default: bool | None = None) -> bool | None:
        """The cache entry ``key`` as a bool (a TOML boolean or one of CMake's constants,
        :func:`cmake_constant`), else ``default`` (unset, or a value the specs' load refuses for a
        BOOL option: :mod:`bundlegraph.schemas.cmake_rules`)."""
        v = self.cmake.get(key)
        if isinstance(v, bool):
            return v
        if v is None or isinstance(v, list):
            return default
        got = cmake_constant(str(v))
        return default if got is None else got

    @property
    def archive_suffix(self) -> str:
        """``.zip`` on Windows, ``.tar.gz`` on Linux (:data:`bundlegraph.core.platforms.PLATFORMS`)."""
        return platform(self.os).archive

    def bundle_name(self, tag: str, prefix: str = "app") -> str:
        """``<prefix>-<tag>-<os>-<arch>-<profile>.zip|.tar.gz`` (derived, never written in a spec), or
        the OS's fixed asset name where the installer expects one (macOS:
        ``llama-<tag>-bin-macos-<arch>.tar.gz``, :attr:`bundlegraph.core.platforms.Platform.asset_name`;
        a local build keeps the derived form, so it never takes a published name)."""
        pattern = platform(self.os).asset_name
        if pattern and not self.local:
            return pattern.format(tag=tag, arch=self.arch) + self.archive_suffix
        return f"{prefix}-{tag}-{self.os}-{self.arch}-{self.profile_name}{self.archive_suffix}"


if _untabled := set(backends.spec_tables()) - set(BundleSpec.FIELDS):  # a backend's SPEC_TABLE with no field: a bug
    raise RuntimeError(f"bundlegraph.schemas.records: BundleSpec has no field for the spec tables {sorted(_untabled)}")


# --- the release: bundles/release.toml -------------------------------------------------------

IMPL_SPLIT_BUILD = 9283
"""The upstream build from which llama.cpp splits its tools into ``llama-server-impl`` /
``llama-quantize-impl`` shared libraries; installers require those libraries in bundles of
builds >= this number (unsloth's installer: ``LLAMA_SERVER_IMPL_SPLIT_BUILD``)."""


def build_number_of(tag: str) -> int | None:
    """``b11642`` / ``b11642-mix-0c1e570`` -> 11642; None for a tag of another form."""
    m = re.match(r"^b(\d+)(?:$|[-.])", tag)
    return int(m.group(1)) if m else None


@record
class _Pin(Record):
    """What every source pin may say: the tree inside the fetched source, and the commit and
    its date when the source carries no git metadata (they become ``LLAMA_BUILD_COMMIT`` and the
    archives' timestamp)."""

    subdirectory: str | None = None
    """the llama.cpp tree inside the fetched source (e.g. vendor/llama.cpp of a Python sdist)"""
    commit: Annotated[str, _COMMIT] | None = None
    """the 40-hex upstream commit the source is (llama.cpp's build number and the release's source commit)"""
    commit_date: _dt.datetime | None = None
    """the commit's date (archive timestamps)"""


@record
class TarballPin(_Pin):
    """``kind = "tarball"``: an archive by ``url`` and ``sha256``."""

    kind: Literal["tarball"]
    """tarball"""
    url: str
    """the archive's URL"""
    sha256: Annotated[str, SHA256]
    """the archive's sha256"""


@record
class GitPin(_Pin):
    """``kind = "git"``: a git ``url`` and a full 40-hex ``commit``."""

    kind: Literal["git"]
    """git"""
    url: str
    """the git URL"""
    commit: Annotated[str, _COMMIT] = field()  # required here (optional in _Pin)
    """the 40-hex commit fetched (llama.cpp's build number and the release's source commit)"""


@record
class PathPin(_Pin):
    """``kind = "path"``: a local directory, used as is."""

    kind: Literal["path"]
    """path"""
    path: str
    """a local directory (relative to the bundles directory)"""


@record
class PipSdistPin(_Pin):
    """``kind = "pip-sdist"``: a Python sdist that vendors llama.cpp, fetched with ``pip download
    --no-deps --no-binary <name>`` (``subdirectory = "vendor/llama.cpp"`` for llama-cpp-python)."""

    kind: Literal["pip-sdist"]
    """pip-sdist"""
    requirement: Annotated[str, Check(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*==[A-Za-z0-9.+!-]+$")]
    """the sdist requirement (llama-cpp-python==0.3.36)"""
    sha256: Annotated[str, SHA256]
    """the sdist's sha256"""

    @property
    def name(self) -> str:
        """The distribution's name (``llama-cpp-python``)."""
        return self.requirement.split("==", 1)[0]

    @property
    def version(self) -> str:
        """The distribution's version (``0.3.36``)."""
        return self.requirement.split("==", 1)[1]


@record
class BaseBuild(Record):
    """The upstream build a mix release starts from: its tag and commit, and the sha256 of its
    tree as ``git archive --format=tar <commit>`` writes it (checked after the fetch: the base
    is the bytes it was when pinned; ``bundlegraph bump`` computes it)."""

    tag: Annotated[str, _BUILD_TAG]
    """the upstream build tag (b11642): the release's upstream_tag and LLAMA_BUILD_NUMBER"""
    commit: Annotated[str, _COMMIT]
    """the 40-hex commit the tag names"""
    sha256: Annotated[str, SHA256]
    """sha256 of `git archive --format=tar <commit>` of the base (its tree, byte for byte)"""


@record
class PullPin(Record):
    """A pull request merged on top of the base, pinned at the head commit it was reviewed at."""

    repo: Annotated[str, Check(pattern=r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")]
    """the repository the pull request is in (owner/name)"""
    number: Annotated[int, Check(ge=1, strict=True)]
    """the pull request's number"""
    sha: Annotated[str, _COMMIT]
    """the 40-hex head commit merged (a head that moved since is refused)"""
    title: str | None = None
    """what the pull request does (the SHA index's merged_prs title; cosmetic: neither the tag, the merge commit nor
    any bundle depends on it)"""

    @property
    def pin_text(self) -> str:
        """``owner/name#number:sha``: the line the mix tag's digest is taken over."""
        return f"{self.repo}#{self.number}:{self.sha}"

    @property
    def url(self) -> str:
        """The pull request's page on GitHub."""
        return f"https://github.com/{self.repo}/pull/{self.number}"


def mix_tag(base_tag: str, prs: list[PullPin]) -> str:
    """The release tag of ``base_tag`` with ``prs`` merged on top: ``base_tag`` itself without
    pull requests, else ``<base_tag>-mix-<7 hex>``, the hex the first seven of the sha256 of the
    pins' :attr:`PullPin.pin_text` joined by newlines, in merge order (as the fork's pipeline
    derives it)."""
    import hashlib

    if not prs:
        return base_tag
    digest = hashlib.sha256("\n".join(p.pin_text for p in prs).encode()).hexdigest()
    return f"{base_tag}-mix-{digest[:7]}"


_GITHUB_REPO_URL = re.compile(r"^(?:https://|ssh://git@|git@)github\.com[/:]([^/]+/[^/]+?)(?:\.git)?/?$")
"""A GitHub repository's git URL, its ``owner/name`` captured."""


def _check_mix_repos(source_repo: str, src: MixPin) -> None:
    """Every pull request of a mix is fetched from ``[source] url`` (``refs/pull/<n>/head``), so
    each pin's ``repo`` must be that repository, ``source_repo``; and a GitHub ``url`` must be
    ``source_repo``'s. Otherwise the SHA index's ``merged_prs`` would name a repository the code
    did not come from. Raises ValueError naming the key and both repositories."""
    m = _GITHUB_REPO_URL.match(src.url)
    if m and m.group(1).lower() != source_repo.lower():
        raise ValueError(
            f"source.url: '{src.url}' is repository {m.group(1)}, but source_repo is '{source_repo}': the base "
            f"and the pull request heads are fetched from the url; make them name one repository"
        )
    for i, pr in enumerate(src.prs):
        if pr.repo.lower() != source_repo.lower():
            raise ValueError(
                f"source.prs[{i}].repo: '{pr.repo}', but its head is fetched from [source] url {src.url} "
                f"(source_repo '{source_repo}') as refs/pull/{pr.number}/head: pin a pull request of "
                f"{source_repo}, or cut the mix from a source_repo that holds {pr.repo}#{pr.number}"
            )


@record
class MixPin(_Pin):
    """``kind = "mix"``: an upstream build (``[source.base]``) with pull requests merged on top
    in order (``[[source.prs]]``), fetched with git from ``url`` and merged with real git; the
    merged commit is the release's source commit."""

    kind: Literal["mix"]
    """mix"""
    url: str
    """the git URL of the base repository (https://github.com/ggml-org/llama.cpp.git); pull request heads are
    fetched from it as refs/pull/<number>/head"""
    base: BaseBuild
    """the upstream build the release starts from"""
    prs: list[PullPin] = field(default_factory=list)
    """the pull requests merged on top, in order"""

    def __post_init__(self) -> None:
        seen = [p.number for p in self.prs]
        if len(set(seen)) != len(seen):
            raise ValueError("prs: a pull request is listed twice")


SourcePin = TarballPin | GitPin | PathPin | PipSdistPin | MixPin


_PLATFORM = Check(pattern=r"^(linux|windows)-(x64|arm64)$")
FINGERPRINT_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9 ._+,:/-]{2,98}[A-Za-z0-9.]$"
"""What a fingerprint may hold: 4-100 characters of letters, digits, space and ``._+,:/-``,
starting with a letter or digit. It travels as a ``-D`` value, a CMake string, a C string
literal (llama.cpp's ``build-info.cpp.in``) and a byte pattern, so quotes, backslashes,
semicolons, ``$``, ``@`` and non-ASCII are refused rather than escaped four ways."""


@record
class EqualClasses(Record):
    """A coverage rule: on each of ``platforms``, the ``classes`` every line of ``lines`` ships
    are the same set, and it is not empty (the fork's gate: cuda12 and cuda13 each ship
    older/newer/portable for linux-x64 and windows-x64)."""

    platforms: Annotated[list[Annotated[str, _PLATFORM]], Check(min_length=1)]
    """the platforms the rule holds on, <os>-<arch> (linux-x64, windows-x64)"""
    lines: Annotated[list[Literal["cuda12", "cuda13"]], Check(min_length=2)]
    """the CUDA runtime lines whose class sets must be equal (cuda12, cuda13)"""
    classes: Annotated[list[Annotated[str, ID]], Check(min_length=1)]
    """the coverage classes compared (older, newer, portable); a bundle of another class is not counted"""

    def __post_init__(self) -> None:
        unique("platforms", self.platforms)
        unique("lines", self.lines)
        unique("classes", self.classes)


@record
class RequiredBundles(Record):
    """A coverage rule: every profile of ``profiles`` ships for every platform of ``platforms``
    (bundle ``<prefix>-<tag>-<os>-<arch>-<profile>``), whatever the leg specs promise."""

    platforms: Annotated[list[Annotated[str, _PLATFORM]], Check(min_length=1)]
    """the platforms, <os>-<arch> (linux-x64, windows-arm64)"""
    profiles: Annotated[list[Annotated[str, ID]], Check(min_length=1)]
    """the bundle profiles each platform must ship (cpu, cuda12-legacy)"""

    def __post_init__(self) -> None:
        unique("platforms", self.platforms)
        unique("profiles", self.profiles)


@record
class CoverageRules(Record):
    """The release's coverage gate as data (``[coverage]`` of ``release.toml``): ``publish``
    refuses a release that breaks a rule, naming each missing bundle; ``bundlegraph plan`` reports
    the rules against the specs before anything builds (:mod:`bundlegraph.installer.coverage`)."""

    equal_classes: list[EqualClasses] = field(default_factory=list)
    """[[coverage.equal_classes]]: per platform, the lines' class sets are non-empty and equal"""
    required: list[RequiredBundles] = field(default_factory=list)
    """[[coverage.required]]: bundles (platform x profile) the release must ship"""
    fingerprint: Annotated[str, Check(pattern=FINGERPRINT_PATTERN)] | None = None
    """a string every shipped binary that links llama.cpp's build-info must hold: configure appends it to
    BUILD_TARGET (as " (<fingerprint>)"), verify refuses a bundle with an unbranded binary"""


@record
class FetchContentPin(Record):
    """A source that llama.cpp's CMake would download with ``FetchContent`` at configure, served
    offline instead (``[[fetchcontent]]`` of ``release.toml``): a Python wheel pinned by sha256 whose
    CMake package configure hands to ``FetchContent_MakeAvailable(<name>)`` through
    ``FETCHCONTENT_SOURCE_DIR_<NAME>`` (:mod:`bundlegraph.pipeline.compile.fetchcontent`). A leg may
    then turn ``option`` on (a download option is otherwise forced OFF: :mod:`.cmake_rules`)."""

    name: Annotated[str, Check(pattern=r"^[A-Za-z][A-Za-z0-9_]*$")]
    """the name FetchContent_Declare gives it in llama.cpp's CMake (CCCL)"""
    option: Annotated[str, Check(pattern=r"^[A-Z][A-Z0-9_]*$")]
    """the llama.cpp option that makes CMake fetch it (GGML_CUDA_CUB_3DOT2)"""
    requirement: Annotated[str, Check(pattern=r"^[A-Za-z0-9_.-]+==[A-Za-z0-9_.+-]+$")]
    """the wheel as pip names it (nvidia-cuda-cccl==13.2.27)"""
    filename: Annotated[str, Check(pattern=r"^[A-Za-z0-9_.+-]+\.whl$")]
    """the wheel file pip gives for that requirement"""
    sha256: Annotated[str, SHA256]
    """the wheel's sha256; a download with other bytes is refused"""
    size: Annotated[int, Check(ge=1, strict=True)]
    """the wheel's size in bytes"""
    package: Annotated[str, Check(pattern=r"^[A-Za-z][A-Za-z0-9_]*$")]
    """the CMake package find_package loads from the wheel (CCCL)"""
    version: Annotated[str, Check(pattern=r"^[0-9]+(\.[0-9]+)*$")]
    """the package version required EXACT, the release the download would have given (3.2.0 for GIT_TAG v3.2.0)"""
    config_dir: Annotated[str, Check(pattern=r"^[A-Za-z0-9_./-]+$")]
    """the folder inside the wheel that holds <package>-config.cmake (nvidia/cu13/lib/cmake/cccl)"""


@record
class Release(Record):
    """The release (``bundles/release.toml``): the tag, the llama.cpp source pin and the main job."""

    NOT_DUMPED = ("coverage", "fetchcontent")
    """The rules change no byte by themselves (what the fingerprint changes, the configure and verify
    keys hold): editing a rule rebuilds nothing. A FetchContent pin reaches only the configure keys
    of the legs that turn its option on (the source folder named by its sha256)."""

    tag: Annotated[str, Check(pattern=r"^b\d+(-mix-[0-9a-f]{7})?$")]
    """the release tag (b11642-mix-0c1e570): the GitHub release and the SHA index's release_tag"""
    upstream_tag: Annotated[str, _BUILD_TAG] | None = None
    """llama.cpp's build tag of the pinned commit (b11642); tag must begin with it. It becomes LLAMA_BUILD_NUMBER
    and gates the *-impl libraries. A mix source's comes from [source.base] and is never stated"""
    paired_runtime_tag: Annotated[str, _BUILD_TAG]
    """the upstream release whose paired runtime assets are hashed"""
    source_repo: Annotated[str, Check(pattern=r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")]
    """the upstream repository the source comes from (owner/name)"""
    bundle_prefix: Annotated[str, Check(pattern=r"^[a-z0-9][a-z0-9-]*$")] = "app"
    """the bundle name prefix (app): <prefix>-<tag>-<os>-<arch>-<profile>"""
    info_file: Annotated[str, Check(pattern=r"^[A-Za-z0-9_.-]+\.json$")] = "BUNDLE_INFO.json"
    """the info JSON's name inside every bundle"""
    default_legs: Annotated[list[str], Check(min_length=1)]
    """the legs a bare doit builds (the main job)"""
    source: Annotated[SourcePin, Tagged("kind")]
    """the llama.cpp source pin (git, tarball, pip-sdist, path, or mix: an upstream build plus pull requests)"""
    coverage: CoverageRules | None = None
    """[coverage]: the rules publish holds the release to (class sets equal across lines, required bundles, a
    fingerprint in every binary); none when left out"""
    fetchcontent: list[FetchContentPin] = field(default_factory=list)
    """[[fetchcontent]]: sources llama.cpp's CMake would download at configure, pinned and served offline"""

    def __post_init__(self) -> None:
        unique("default_legs", self.default_legs)
        unique("fetchcontent names", [p.name for p in self.fetchcontent])
        unique("fetchcontent options", [p.option for p in self.fetchcontent])
        src = self.source
        if isinstance(src, MixPin):
            if self.upstream_tag is not None and self.upstream_tag != src.base.tag:
                raise ValueError(
                    f"upstream_tag: '{self.upstream_tag}' is stated, but a mix source's upstream build is its "
                    f"[source.base] tag '{src.base.tag}': remove upstream_tag"
                )
            object.__setattr__(self, "upstream_tag", src.base.tag)
            _check_mix_repos(self.source_repo, src)
            want = mix_tag(src.base.tag, src.prs)
            if self.tag != want:
                how = (
                    "(the sha256 of the newline-joined repo#number:sha pins)"
                    if src.prs
                    else "(a base without pull requests is tagged as the base build)"
                )
                raise ValueError(
                    f"tag: '{self.tag}', but the base {src.base.tag} with "
                    f"{len(src.prs)} pinned pull request{'' if len(src.prs) == 1 else 's'} is '{want}' {how}; "
                    f'set tag = "{want}"'
                )
        else:
            if self.upstream_tag is None:
                raise ValueError("upstream_tag: required key is missing (the upstream build of the pinned commit)")
            if "-mix-" in self.tag:
                raise ValueError(
                    f"tag: '{self.tag}' names a mix, but the source (kind '{src.kind}') merges no pull request: "
                    f"a release of one upstream build is tagged '{self.upstream_tag}' (a mix is [source] kind = \"mix\")"
                )

    @property
    def source_ref_kind(self) -> str:
        """What the source is, as the SHA index and manifest say it (the fork pipeline's words):
        ``mix`` (an upstream build with pull requests merged), ``tag`` (an upstream build as it
        is), or ``ref`` (another commit)."""
        if isinstance(self.source, MixPin):
            return "mix" if self.source.prs else "tag"
        return "tag" if self.tag == self.upstream_tag else "ref"

    @property
    def build_number(self) -> int:
        """The upstream build number (``b11642`` -> 11642): ``LLAMA_BUILD_NUMBER``."""
        n = build_number_of(self.upstream_tag or "")
        if n is None:
            raise ValueError(f"upstream_tag {self.upstream_tag!r} is not b<digits>")
        return n

    @property
    def is_mix(self) -> bool:
        """A mix release (``b<N>-mix-<7 hex>``)."""
        return "-mix-" in self.tag


@frozen
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
