"""The release's published JSON formats (pydantic v2, ``extra="forbid"``):

- :class:`BundleInfo`: the info JSON inside every bundle (file name from
  ``Release.info_file``, e.g. ``BUNDLE_INFO.json`` / ``UNSLOTH_PREBUILT_INFO.json``). Written
  by ``package:<leg>``; the only source the manifest reads a bundle's facts from.
- :class:`Manifest`: ``dist/llama-prebuilt-manifest.json`` — header (``schema_version``,
  ``component: "llama.cpp"``, ``source_repo``, ``source_commit``, ``upstream_tag``,
  ``release_tag``) plus one :class:`ManifestArtifact` per bundle, in the shape installers read
  (each field copied from that bundle's :class:`BundleInfo`).
- :class:`ShaIndex`: ``dist/llama-prebuilt-sha256.json`` — the same header plus ``artifacts``:
  asset name -> :class:`IndexEntry` (``kind``, ``sha256``, ``source_commit``, ``size``). It lists
  every bundle, the manifest itself, the source archive ``llama.cpp-source-commit-<commit>.tar.gz``
  (kind ``upstream-source``; installers refuse a release without it) and every paired runtime
  asset (kind ``runtime``), for plain and mix releases alike; and what ``verify-release`` judges
  the release by without its spec files: the :class:`Promise` of every promised leg and the
  bundles' ``info_file`` name.

SM numbers: ``supported_sms`` are the GPUs the bundle's machine code runs on, derived from the
SASS targets its fatbins hold by NVIDIA's compatibility rule
(:func:`bundlegraph.schemas.archs.supported_sms_of`: plain ``sm_100`` also runs on sm_103,
arch-specific ``120a`` only on sm_120), sorted ascending; ``min_sm``/``max_sm`` their ends, or
None for CPU bundles. An installer requires every host SM to be listed. ``rank``: lower wins a
tie between bundles of the same SM span (the installer's rule). Sizes are bytes; hashes
lower-case hex sha256.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer, model_validator

from .asset_names import INDEX_NAME as INDEX_NAME  # the names live in asset_names (no pydantic)
from .asset_names import MANIFEST_NAME as MANIFEST_NAME
from .asset_names import source_archive_name as source_archive_name

SHA256 = Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
COMMIT = Annotated[str, Field(pattern=r"^[0-9a-f]{40}$")]


class Strict(BaseModel):
    """Base of these formats: ``extra="forbid"`` (a misspelled key is an error), frozen."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class RuntimeFileInfo(Strict):
    """A runtime file the bundle ships: ``name``, ``origin`` (``toolkit``/``toolchain``),
    ``version`` (toolkit version or the chosen redist version directory), ``source`` (path
    relative to the toolkit prefix / redist root it was taken from), ``sha256``."""

    name: str
    origin: Literal["toolkit", "toolchain"]
    version: str | None
    source: str
    sha256: SHA256


class VerifyFindings(Strict):
    """What verify found on the packed archive: ``machine`` (``arm64``/``x64`` or the raw PE/ELF
    machine name when mixed), ``fatbin_sms`` (SM numbers with SASS in the CUDA fatbins),
    ``fatbin_sass`` (each SASS target with its feature suffix as the fatbin flags it:
    ``["120a", "121a"]``; what ``supported_sms`` is derived from), ``passed``."""

    machine: str | None = None
    fatbin_sms: list[int] = []
    fatbin_sass: list[str] = []
    passed: bool


class ImportedBuild(Strict):
    """A leg's build output made on another runner and imported (doit ``built=DIR``): ``leg``,
    ``source`` (the folder it was imported from), ``files`` (name -> sha256 of each file)."""

    leg: str
    source: str
    files: dict[str, SHA256]


class BundleInfo(Strict):
    """The info JSON inside a bundle. ``schema_version`` 1. ``profile`` (= ``bundle_profile``)
    and ``archs`` (the spec's CUDA archs in CMake form) are what verify's info check reads."""

    schema_version: Literal[1] = 1
    component: Literal["llama.cpp"] = "llama.cpp"
    asset_name: str
    leg: str
    os: Literal["windows", "linux", "macos"]
    arch: Literal["x64", "arm64"]
    install_kind: str
    source_repo: str
    source_commit: COMMIT
    source_digest: SHA256
    upstream_tag: str
    release_tag: str
    platform: str
    profile: str
    archs: list[str] = []
    bundle_profile: str
    runtime_line: Literal["cuda12", "cuda13"] | None
    coverage_class: str
    bundle_rank: int
    toolkit_version: str | None
    supported_sms: list[int]
    min_sm: int | None
    max_sm: int | None
    ggml_backend_dl: bool
    merged_from: str | None = None
    runtime_files: list[RuntimeFileInfo] = []
    external_runtime: list[str] = []
    paired_assets: list[str] = []
    signing: Literal["not-required", "signed", "unsigned", "pending"]
    """``pending``: packaged with ``BUNDLEGRAPH_SIGN=later``, its PE files not signed yet
    (``bundlegraph sign-bundles`` signs it; the manifest refuses it until then)."""
    verify: VerifyFindings
    imported_builds: list[ImportedBuild] = []
    """Provenance of build output compiled on other runners (this leg's, and its merge base's);
    written only when there is some, so a bundle built here keeps its bytes."""
    gfx_target: str | None = None
    """A ROCm bundle's gfx family label (``gfx110X``; the spec's ``hip.gfx_target``): the installer
    serves a host whose gfx is this label; left out for other bundles."""
    mapped_targets: list[str] | None = None
    """A ROCm bundle's gfx targets (``gfx1100`` ... ``gfx1103``): the installer serves a host whose
    gfx is one of them (``published_rocm_choice_for_host``); left out for other bundles."""
    sdk: dict[str, Any] | None = None
    """A leg's pinned SDK where it is not the CUDA toolkit (TheRock: ``source``, ``version``,
    ``tarball``, ``sha256``: :meth:`bundlegraph.backends.hip.sdk.SdkPlan.receipt`); left out when
    None."""
    build: dict[str, Any] | None = None
    """How this leg was compiled, as its configure recorded it where it compiled
    (:func:`bundlegraph.schemas.provenance.build_recipe`: ``toolchain``, ``compilers`` and ``tools`` with
    their versions, ``cmake_cache``, ``flags`` per language, ``prefix_maps``, and for a CUDA leg
    ``cuda`` and ``toolkit``: each component's name, version, platform, role and sha256; every
    build-host root written as its stable name, so the bytes do not depend on the machine). The
    provenance states the same recipe (the components as dependencies), and ``verify-release``
    compares the two key by key. None (left out) for a build imported from another runner, and in
    bundles packaged before it was recorded."""

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        d: dict[str, Any] = handler(self)
        if not self.imported_builds:
            d.pop("imported_builds", None)
        if self.build is None:
            d.pop("build", None)
        for k in ("gfx_target", "mapped_targets", "sdk"):
            if d.get(k) is None:
                d.pop(k, None)
        return d

    @model_validator(mode="after")
    def _sm_ends(self) -> BundleInfo:
        sms = self.supported_sms
        if sms != sorted(set(sms)):
            raise ValueError("supported_sms must be sorted ascending without duplicates")
        want = (min(sms), max(sms)) if sms else (None, None)
        if (self.min_sm, self.max_sm) != want:
            raise ValueError(f"min_sm/max_sm {self.min_sm}/{self.max_sm} do not match supported_sms {sms}")
        return self


class MergedPr(Strict):
    """A pull request merged into a mix release's source (the fork pipeline's ``merged_prs``)."""

    repo: str
    number: int
    sha: COMMIT
    url: str
    title: str | None = None


class ReleaseHeader(Strict):
    """Header shared by the manifest and the SHA index. ``upstream_tag``: the upstream build the
    source starts from; ``source_commit``: the source's commit (a mix's merge commit);
    ``source_ref_kind``: ``tag`` (an upstream build as it is), ``mix`` (pull requests merged on
    top: ``merged_prs``, in merge order) or ``ref`` (another commit); ``ggml_tree``: ``git
    rev-parse <commit>:ggml`` of the source (the ggml ABI key installers record), None when the
    source carries no git metadata. Older headers lack the last three."""

    schema_version: Literal[1] = 1
    component: Literal["llama.cpp"] = "llama.cpp"
    source_repo: str
    source_commit: COMMIT
    upstream_tag: str
    release_tag: str
    source_ref_kind: Literal["tag", "mix", "ref"] | None = None
    merged_prs: list[MergedPr] = []
    ggml_tree: Annotated[str | None, Field(pattern=r"^[0-9a-f]{40}$")] = None


class ManifestArtifact(Strict):
    """One bundle in the manifest; every field is read back from its :class:`BundleInfo`."""

    asset_name: str
    install_kind: str
    os: Literal["windows", "linux", "macos"]
    arch: Literal["x64", "arm64"]
    bundle_profile: str
    runtime_line: Literal["cuda12", "cuda13"] | None
    coverage_class: str
    supported_sms: list[int]
    min_sm: int | None
    max_sm: int | None
    rank: int
    toolkit_version: str | None
    ggml_backend_dl: bool
    paired_assets: list[str] = []
    gfx_target: str | None = None
    """A ROCm bundle's gfx family label (the installer reads it); left out for other bundles."""
    mapped_targets: list[str] | None = None
    """A ROCm bundle's gfx targets (the installer matches a host's gfx against them); left out for
    other bundles."""
    smoke: str | None = None
    """The bundle's smoke before publishing (``passed (qemu-aarch64 -L ...)``), or
    ``waived: <why>`` (the spec's ``[smoke] waived``, also in the index's :class:`Promise`); None
    when it did not run and nothing waives it (an older manifest wrote None for a waived one too).
    Installers may ignore it."""

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        d: dict[str, Any] = handler(self)
        for k in ("gfx_target", "mapped_targets"):  # only ROCm bundles have them: other artifacts keep their form
            if d.get(k) is None:
                d.pop(k, None)
        return d

    @classmethod
    def from_info(cls, info: BundleInfo, smoke: str | None = None) -> ManifestArtifact:
        """The artifact of the bundle ``info`` describes: its fields of the same name, ``rank``
        from ``bundle_rank``, and ``smoke``."""
        same = info.model_dump(include=set(cls.model_fields) & set(BundleInfo.model_fields))
        return cls(smoke=smoke, rank=info.bundle_rank, **same)


class Manifest(ReleaseHeader):
    """``llama-prebuilt-manifest.json``: artifacts sorted by asset name."""

    artifacts: list[ManifestArtifact]


class IndexEntry(Strict):
    """One asset of the SHA index. ``kind``: ``bundle``, ``manifest``, ``upstream-source`` or
    ``runtime`` (a paired upstream asset; ``source_commit`` is None, ``upstream_tag`` names its
    release). ``size`` in bytes when known (None for a runtime hashed from its published digest)."""

    kind: Literal["bundle", "manifest", "upstream-source", "runtime"]
    sha256: SHA256
    source_commit: COMMIT | None
    size: int | None = None
    upstream_tag: str | None = None


WAIVED = "waived: "
"""How a manifest entry's ``smoke`` starts when the spec waived the smoke (the reason follows)."""


class Promise(Strict):
    """A leg the release promises (``promised = true``, the default), as the index records it for
    anyone verifying the release without its spec files (``bundlegraph verify-release``): the
    ``leg``, its bundle's ``asset_name``, the ``paired_assets`` (upstream runtime assets) that
    ship with it, and ``smoke_waived``: the spec's ``[smoke] waived`` reason, None when its
    smoke must have passed."""

    leg: str
    asset_name: str
    paired_assets: list[str] = []
    smoke_waived: str | None = None


class ShaIndex(ReleaseHeader):
    """``llama-prebuilt-sha256.json``: asset name -> :class:`IndexEntry` (keys sorted), plus what
    a verifier judges the release by (the index is the file the release workflow attests, and it
    holds the manifest's sha256): ``promised``, every promised leg (sorted by leg; None in an
    index written before it was recorded) and ``info_file``, the bundles' info JSON name (None:
    older index, ``BUNDLE_INFO.json``). Readers that predate them ignore unknown keys (the
    installer reads ``artifacts`` and the header)."""

    artifacts: dict[str, IndexEntry]
    promised: list[Promise] | None = None
    info_file: str | None = None

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        d: dict[str, Any] = handler(self)
        for k in ("promised", "info_file"):  # an index without them keeps its bytes
            if d.get(k) is None:
                d.pop(k, None)
        return d

    def of_kind(self, kind: str) -> dict[str, IndexEntry]:
        return {k: v for k, v in self.artifacts.items() if v.kind == kind}
