"""``BundleSpec``: one TOML file per leg in ``bundles/`` (the file stem is the leg id): the
pydantic models that validate it and give its JSON Schema.

A leg is one bundle's build, e.g. ``windows-arm64-cuda13-portable``. Everything a release
pipeline usually keeps in hand-written lists (coverage gate, profile filter, matrix, SHA
index) is derived from these specs. Cross-field rules that need several specs at once live in
:mod:`bundlegraph.schemas.validation`. Once valid, each model becomes the record of the same name in
:mod:`bundlegraph.schemas.plain` (what the graph uses; the derived values such as
``bundle_name`` and ``cmake_bool`` live there).
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import (
    BeforeValidator,
    Field,
    PlainSerializer,
    SerializerFunctionWrapHandler,
    ValidationInfo,
    WithJsonSchema,
    field_validator,
    model_serializer,
    model_validator,
)
from pydantic.json_schema import SkipJsonSchema

from .archs import Arch, parse_arch, parse_version
from .base import Strict


def _as_arch(v: object) -> Arch:
    return v if isinstance(v, Arch) else parse_arch(str(v))


ArchField = Annotated[
    Arch,
    BeforeValidator(_as_arch),
    PlainSerializer(lambda a: a.cmake, return_type=str),
    WithJsonSchema(
        {
            "type": "string",
            "pattern": r"^\d{2,3}[af]?(-real|-virtual)?$",
            "description": "a CUDA arch in CMake form: 120, 120a, 100f, 86-real, 75-virtual",
        }
    ),
]
"""A spec's arch: parsed once when the spec loads (an :class:`Arch`), written back in CMake's
spelling wherever the spec is serialised (JSON Schema, action keys, plan output)."""

OS = Literal["windows", "linux"]
CPUArch = Literal["x64", "arm64"]
RedistPlatform = Literal["linux-x86_64", "linux-sbsa", "linux-aarch64", "linux-all", "windows-x86_64", "windows-arm64"]
CMakeValue = bool | int | str | list[str]

_ID_RE = r"^[a-z0-9][a-z0-9._-]*$"


class Profile(Strict):
    """What an installer chooses by: ``name`` (``cuda13-portable``), ``line`` (``cuda12`` /
    ``cuda13``; absent for CPU legs), ``klass`` (older/newer/portable/legacy/blackwell/cpu)
    and ``rank`` (lower wins a tie between bundles of the same SM span, as the installer
    chooses; :mod:`bundlegraph.selection`)."""

    name: Annotated[str, Field(pattern=_ID_RE)]
    line: Literal["cuda12", "cuda13"] | None = None
    klass: Annotated[str, Field(pattern=_ID_RE)]
    rank: Annotated[int, Field(ge=0, le=1000, strict=True)]


class ToolkitSpec(Strict):
    """Where the leg's CUDA toolkit comes from and what it holds.

    - ``source``: ``redist`` (NVIDIA's per-component archives, resolved from
      ``redistrib_<manifest>.json``), ``wheels`` (NVIDIA's PyPI wheels, hashes in ``lock``),
      or ``host`` (a toolkit already installed: ``CUDA_PATH``, ``/usr/local/cuda`` or ``path``).
    - ``host``: components that run on the build machine (nvcc, crt, nvvm, cccl), installed
      for the build host's platform (``host_platform``; default from the toolchain).
    - ``target``: components linked into the output (cudart, cublas), installed for
      ``target_platform`` (NVIDIA's redist platform key, e.g. ``windows-arm64``, ``linux-sbsa``).
    """

    source: Literal["redist", "wheels", "host"] = "redist"
    manifest: str | None = None
    lock: str | None = None
    path: str | None = None
    host: list[str] = ["cuda_nvcc", "cuda_crt", "libnvvm", "cuda_cccl"]
    target: list[str] = ["cuda_cudart", "libcublas"]
    host_platform: RedistPlatform | None = None
    target_platform: RedistPlatform

    @model_validator(mode="after")
    def _source_fields(self) -> ToolkitSpec:
        if self.source == "redist" and not self.manifest:
            raise ValueError("source 'redist' needs 'manifest' (a redist release label such as '13.4.2')")
        if self.source == "wheels" and not self.lock:
            raise ValueError("source 'wheels' needs 'lock' (a lock file under bundles/locks/)")
        return self


class CudaSpec(Strict):
    """CUDA settings of a GPU leg: ``version`` (``"13.4"``), ``archs`` (written in CMake form,
    held as typed :class:`~bundlegraph.schemas.archs.Arch` values), toolkit."""

    version: str
    archs: Annotated[list[ArchField], Field(min_length=1)]
    toolkit: ToolkitSpec

    @field_validator("version")
    @classmethod
    def _version(cls, v: str) -> str:
        parse_version(v)
        return v

    @field_validator("archs")
    @classmethod
    def _archs(cls, v: list[Arch]) -> list[Arch]:
        if len(set(v)) != len(v):
            raise ValueError("archs holds duplicates")
        return v


class BuildSpec(Strict):
    """What ``cmake --build`` builds: ``targets`` (empty = all), and over how many CI jobs the
    compile of those targets is spread: ``shards`` (1 = one job; N > 1 = N shard jobs, each
    compiling a cost-balanced slice of the compile steps into the compiler cache, then one final
    compile that links from cache hits: :mod:`bundlegraph.pipeline.shards`)."""

    targets: list[str] = []
    # left out of the dump (and so of every action key that holds the spec): how many jobs compile
    # the leg changes no byte it makes (a sharded build's bundle is an unsharded one's)
    shards: Annotated[int, Field(ge=1, le=32, exclude=True)] = 1


class MergeSpec(Strict):
    """Merge this (backend-only) leg into ``base`` (another leg's id, a CPU leg of the same
    os and arch). ``prefer`` decides a clash of two different files with one name:
    ``error`` (default), ``base`` or ``backend``."""

    base: Annotated[str, Field(pattern=_ID_RE)]
    prefer: Literal["error", "base", "backend"] = "error"


class PackageSpec(Strict):
    """Which files of the merged tree go into the bundle (glob patterns on relative paths)."""

    keep: list[str] = ["**"]
    exclude: list[str] = []


class ShippedRuntime(Strict):
    """A runtime file the bundle ships: ``name`` (file name in the bundle) taken ``from`` the
    leg's target ``toolkit`` (``path`` relative to its prefix, e.g. ``bin/arm64/cudart64_13.dll``)
    or its ``toolchain`` (e.g. ``libomp140.aarch64.dll`` from MSVC's redist folders; the newest
    version directory is chosen)."""

    name: str
    from_: Annotated[Literal["toolkit", "toolchain"], Field(alias="from")]
    path: str | None = None


class PairedAsset(Strict):
    """A runtime asset published beside the bundles (e.g. upstream's
    ``cudart-llama-bin-win-cuda-13.4-arm64.zip``); its hash goes into the SHA index."""

    name: str
    url: str | None = None
    sha256: Annotated[str | None, Field(pattern=r"^[0-9a-f]{64}$")] = None


class RuntimeSpec(Strict):
    """Runtime files: ``ships`` (inside the bundle), ``external`` (DLL/so names the bundle
    relies on without shipping, e.g. the VC++ runtime or the paired cudart asset's DLLs),
    ``paired`` (assets published beside it)."""

    ships: list[ShippedRuntime] = []
    external: list[str] = []
    paired: list[PairedAsset] = []


class LinuxSpec(Strict):
    """Linux compatibility floors: the highest ``GLIBC_x.y`` / ``GLIBCXX_x.y.z`` any file may need."""

    glibc_floor: Annotated[str, Field(pattern=r"^\d+\.\d+$")]
    glibcxx_floor: Annotated[str, Field(pattern=r"^\d+\.\d+\.\d+$")]


class SmokeSpec(Strict):
    """``[smoke]``: ``waived``, why the leg's bundle may be published without a passed smoke (no
    runner of the release can start it: a Windows ARM64 bundle on x64 runners). Publish refuses
    a promised bundle whose smoke did not pass for exactly its bytes unless this says why."""

    waived: Annotated[str, Field(min_length=10)]


class LocalBuild(Strict):
    """What makes a leg a local build (:mod:`bundlegraph.overrides`; never written in a spec
    file): ``tag`` is the profile suffix after ``+`` (``sm90-local``, ``host13.0-local``) and
    ``origin`` the overrides that made it (``archs=90``)."""

    tag: str
    origin: str


class BundleSpec(Strict):
    """One leg: a bundle's build. See ``bundles/*.toml`` and ``schemas/bundle-spec.schema.json``."""

    id: Annotated[str, Field(pattern=_ID_RE)]
    os: OS
    arch: CPUArch
    backend: Literal["cpu", "cuda"]
    install_kind: Annotated[str, Field(pattern=_ID_RE)]
    promised: bool = True
    runner: str
    compile_runner: str | None = None
    """Where the leg compiles when that is not ``runner``: CI compiles there, hands the build
    output over as artifact ``built-<id>`` and ``runner`` imports it (doit ``built=DIR``) for
    verify, merge and package. Dumped only when set (release keys keep their form)."""
    signing: Literal["none", "optional", "required"] = "none"
    toolchain: str
    profile: Profile
    cuda: CudaSpec | None = None
    cmake: dict[str, CMakeValue] = {}
    build: BuildSpec = BuildSpec()
    required: list[str] = []
    merge: MergeSpec | None = None
    package: PackageSpec = PackageSpec()
    runtime: RuntimeSpec = RuntimeSpec()
    linux: LinuxSpec | None = None
    smoke: SmokeSpec | None = None
    local: SkipJsonSchema[LocalBuild | None] = None
    """Set by the load-time overrides only (the loader refuses it in a spec file). Dumped only
    when set, so a release leg's action keys keep their form and a local build's differ."""

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        d: dict[str, Any] = handler(self)
        for optional in ("local", "compile_runner", "smoke"):
            if getattr(self, optional) is None:
                d.pop(optional, None)
        return d

    @model_validator(mode="after")
    def _shape(self) -> BundleSpec:
        if self.backend == "cuda" and self.cuda is None:
            raise ValueError("backend 'cuda' needs a [cuda] table")
        if self.backend == "cpu" and self.cuda is not None:
            raise ValueError("backend 'cpu' must not have a [cuda] table")
        if self.backend == "cuda" and self.profile.line is None:
            raise ValueError("a CUDA leg needs profile.line ('cuda12' or 'cuda13')")
        if self.os == "linux" and self.linux is None:
            raise ValueError("a Linux leg needs a [linux] table with glibc_floor and glibcxx_floor")
        if self.os == "windows" and self.linux is not None:
            raise ValueError("[linux] is only for Linux legs")
        return self

    @field_validator("compile_runner")
    @classmethod
    def _compile_runner_is_another(cls, v: str | None, info: ValidationInfo) -> str | None:
        if v is not None and v == info.data.get("runner"):
            raise ValueError(
                f"'{v}' is runner: leave it out (set it only when the leg compiles on another runner "
                "than the one that packages it)"
            )
        return v


_TAG_RE = re.compile(r"^b\d+(-mix-[0-9a-f]{7})?$")
