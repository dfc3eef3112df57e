"""What a leg promises its bundle: :class:`VerifyPolicy`, derived from a spec by
:func:`policy_from_spec` (and :func:`archive_policy` for a finished bundle). Pure: nothing here
reads a bundle. The check rows (:mod:`.rows`, :mod:`.table`) each read the policy fields their key
names; the graph stage ``verify:<leg>`` records :meth:`VerifyPolicy.to_json` in its key.
"""

from __future__ import annotations

from dataclasses import fields, replace
from typing import Any, Literal, TypedDict

from ..checks import content
from ..core.errors import BundleGraphError
from ..core.lightclass import frozen
from ..core.platforms import OS_NAMES, platform
from ..schemas.archs import Arch
from ..schemas.backend import BACKEND_NAMES, GPU_BACKENDS, backend, library_file, plug_in
from ..schemas.records import BundleSpec, Release
from ..toolchains.registry import TOOLCHAINS

BACKENDS = {os_name: tuple(library_file(b, os_name) for b in GPU_BACKENDS) for os_name in OS_NAMES}
"""The GPU backends' library file names per os (:mod:`bundlegraph.schemas.backend`: CUDA's, Vulkan's):
the files whose device code verify inventories, and whose fatbin must match promised CUDA archs."""


_KEY_IF_SET = ("gfx_targets", "macos_floor", "vulkan_waived", "driver_floor")
"""Fields added after verify keys existed: in the key only when set, so the keys of legs that do
not use them keep their form (``tests/integration/test_upgrade.py``)."""


class BackendFields(TypedDict, total=False):
    """The :class:`VerifyPolicy` fields a leg's backend sets (its verify module's
    ``policy_fields``): each as the policy documents it."""

    archs: tuple[Arch, ...]
    cuda: bool
    cuda_major: int | None
    driver_floor: str | None
    gfx_targets: tuple[str, ...]
    vulkan_waived: tuple[tuple[str, str], ...]


@frozen
class VerifyPolicy:
    """What a bundle must satisfy. Every field is optional; an unset one skips its check.

    - ``os``: ``windows``/``linux``; ``arch``: ``x64``/``arm64`` (PE machine 0x8664/0xAA64,
      ELF EM_X86_64/EM_AARCH64);
    - ``archs``: CUDA archs in CMake form (``120``, ``120a``, ``86-real``, ``75-virtual``);
      checked against the fatbin of ``gpu_backends`` (default: ``ggml-cuda.dll`` /
      ``libggml-cuda.so``); ``120a`` means SM 120 (:func:`~bundlegraph.schemas.archs.fatbin_sm`);
    - ``cuda``: a CUDA leg (the driver ``nvcuda.dll`` / ``libcuda.so.1`` may be imported);
    - ``backend``: the leg's backend (a name of :data:`bundlegraph.schemas.backend.BACKEND_NAMES`):
      its driver may be imported (``cuda=True`` says the same for ``cuda``), and its own verify
      rows apply (:mod:`bundlegraph.backends.vulkan.verify`);
    - ``external``: file names the bundle relies on without shipping (VC++ runtime, paired
      cudart, ``libgomp.so.1``);
    - ``signing_required``: every PE must carry a valid, trusted Authenticode signature;
      ``trust_roots``: extra trusted root certificates (PEM paths; tests only);
    - ``glibc_floor`` (``"2.35"``) / ``glibcxx_floor`` (``"3.4.30"``): the leg's toolchain's, its
      machine file's ``[compiler]`` (the pinned C library's; one place for every Linux leg);
    - ``backend_dl``: ``GGML_BACKEND_DL=ON``: every ggml backend library exports
      ``ggml_backend_init``; ``cuda_major``: no file imports a CUDA library of another major
      (:mod:`bundlegraph.checks.backends`);
    - ``required``: file names that must be present; ``info_file``: the info JSON's name and
      ``info_expect``: ``(key, value)`` pairs it must agree with.

    Raises :class:`BundleGraphError` naming the field when a value is malformed.
    """

    os: Literal["windows", "linux", "macos"] | None = None
    arch: Literal["x64", "arm64"] | None = None
    archs: tuple[Arch, ...] = ()
    cuda: bool = False
    external: tuple[str, ...] = ()
    signing_required: bool = False
    trust_roots: tuple[str, ...] = ()
    glibc_floor: str | None = None
    glibcxx_floor: str | None = None
    required: tuple[str, ...] = ()
    info_file: str | None = None
    info_expect: tuple[tuple[str, object], ...] = ()
    gpu_backends: tuple[str, ...] = ()
    backend_dl: bool = False
    cuda_major: int | None = None
    backend: str | None = None
    gfx_targets: tuple[str, ...] = ()
    """a HIP leg's ``mapped_targets``: its ``ggml-hip`` code objects must be exactly these
    (:mod:`.hip`)"""
    macos_floor: str | None = None
    """a macOS leg's deployment target (``13.3``): no Mach-O file may state a higher minimum macOS
    (:data:`.rows.ROWS`' ``macho`` rows)"""
    host_paths: tuple[tuple[str, str], ...] = ()
    """``(what, path)`` pairs: build-host directories (the download cache, the work directory, the
    source tree, the home directory) that no shipped file may name: compiles map them to stable
    names (:mod:`bundlegraph.toolchains.prefix_maps`), so a file naming one would differ on
    another machine and leak the builder's paths."""
    vulkan_waived: tuple[tuple[str, str], ...] = ()
    """a Vulkan leg's ``[vulkan] waive_compiled_out`` as ``(extension, reason)`` pairs: the shader
    paths its bundle may lack (:mod:`.vulkan`'s ``vulkan-shaders`` row refuses any other that the
    info file's ``build.vulkan.compiled_out`` names)"""
    fingerprint: str | None = None
    """The release's ``coverage.fingerprint``: every binary that links llama.cpp's build-info must
    hold it (:mod:`bundlegraph.checks.brand`); None checks nothing."""
    driver_floor: str | None = None
    """a leg with PTX-only archs: the oldest driver (its CUDA version, ``12.4``) the installer's rules
    send it to (:func:`bundlegraph.backends.cuda.oldest_driver`); the PTX ISA of every fatbin's PTX-only
    code must be one that driver JIT-compiles (:mod:`bundlegraph.checks.ptxisa`)"""

    def __post_init__(self) -> None:
        if self.os is not None and self.os not in OS_NAMES:
            raise BundleGraphError(f"verify policy: os {self.os!r}: expected one of {', '.join(OS_NAMES)}")
        if self.arch not in (None, "x64", "arm64"):
            raise BundleGraphError(f"verify policy: arch {self.arch!r}: expected 'x64' or 'arm64'")
        if self.backend is not None and self.backend not in BACKEND_NAMES:
            raise BundleGraphError(
                f"verify policy: backend {self.backend!r}: expected one of {', '.join(BACKEND_NAMES)}"
            )
        if self.cuda and self.backend not in (None, "cuda"):
            raise BundleGraphError(f"verify policy: cuda is set but backend is {self.backend!r}: a leg has one backend")
        for a in self.archs:
            if not isinstance(a, Arch):
                raise BundleGraphError(f"verify policy: archs: {a!r} is not a parsed arch (parse_arch)")
        if self.driver_floor is not None:
            from ..schemas.archs import parse_version

            try:
                parse_version(self.driver_floor)
            except ValueError as e:
                raise BundleGraphError(f"verify policy: driver_floor: {e}") from None
        for name, v in (("glibc_floor", self.glibc_floor), ("glibcxx_floor", self.glibcxx_floor)):
            if v is not None:
                from ..checks import glibc

                try:
                    glibc.parse_version(v)
                except ValueError as e:
                    raise BundleGraphError(f"verify policy: {name}: {e}") from None

    @property
    def backends(self) -> tuple[str, ...]:
        """``gpu_backends``, else the GPU library of the leg's ``backend``, else every GPU
        backend's library (:data:`BACKENDS`), for ``os`` (both when unset)."""
        if self.gpu_backends:
            return self.gpu_backends
        oses = (self.os,) if self.os else ("windows", "linux")
        if self.backend is not None and backend(self.backend).GPU:
            return tuple(library_file(backend(self.backend), o) for o in oses)
        return tuple(n for o in oses for n in BACKENDS[o])

    @property
    def driver_of(self) -> str | None:
        """The backend whose driver the bundle may import: ``backend``, or ``cuda`` when only
        ``cuda`` is set (None: no driver)."""
        return self.backend or ("cuda" if self.cuda else None)

    def to_json(self) -> dict[str, Any]:
        """The policy as JSON values; archs in CMake spelling (``120a``, ``86-real``).
        ``backend_dl``, ``cuda_major`` and ``backend`` are left out: they follow the spec's
        ``GGML_BACKEND_DL``, CUDA version and backend, which change the build (and so the verify
        key) anyway, and verify keys keep their form; so is ``fingerprint`` while None."""
        d = {k: getattr(self, k) for k in self.__dataclass_fields__ if k not in ("backend_dl", "cuda_major", "backend")}
        if self.fingerprint is None:  # a release without one keeps its verify keys
            del d["fingerprint"]
        for k in _KEY_IF_SET:  # fields of the ROCm and macOS legs: other legs keep their verify keys
            if not d[k]:
                del d[k]
        d["info_expect"] = dict(self.info_expect)
        d["archs"] = self.cmake_archs
        return d

    def only(self, key: tuple[str, ...]) -> VerifyPolicy:
        """This policy with every field outside ``key`` (field names) back at its default: what a
        check row with that key sees, so a row cannot read a field its key does not list.
        Raises KeyError naming a key entry that is no field."""
        names = {f.name for f in fields(self)}
        unknown = [k for k in key if k not in names]
        if unknown:
            raise KeyError(f"verify policy has no field {unknown}: expected some of {sorted(names)}")
        return replace(VerifyPolicy(), **{k: getattr(self, k) for k in key})

    @property
    def cmake_archs(self) -> list[str]:
        """``archs`` in CMake spelling."""
        return [a.cmake for a in self.archs]


def policy_from_spec(
    spec: BundleSpec,
    release: Release | None = None,
    *,
    base: BundleSpec | None = None,
    built_tree: bool = False,
    trust_roots: tuple[str, ...] = (),
) -> VerifyPolicy:
    """The policy of leg ``spec``.

    - the finished bundle (default): required files of the leg and of its merge ``base``
      (pass the base spec for a merged leg), external runtimes of both, signing as the spec
      says, the info JSON named by ``release.info_file`` checked against install_kind,
      profile name and (CUDA legs) archs;
    - ``built_tree=True``: the leg's own build output before merge/package: the runtimes the
      leg ships and the base's required files count as external, no signing, no info JSON.
    """
    external = list(spec.runtime.external)
    required = list(spec.required)
    if base is not None:
        external += [e for e in base.runtime.external if e not in external]
        if built_tree:
            external += [r for r in base.required if r not in external]
        else:
            required = [*base.required, *[r for r in required if r not in base.required]]
    if built_tree:
        shipped = [s.name for s in spec.runtime.ships]
        external += [n for n in shipped if n not in external]
        # runtimes are added by package: not expected in the build output
        required = [r for r in spec.required if not any(content.required_matches(n, r, fold=True) for n in shipped)]
    # what the leg's backend promises beyond every bundle (its verify module's policy_fields:
    # CUDA's archs, major and driver floor, HIP's targets, Vulkan's waived shader paths)
    own, own_expect = _backend_fields(spec)
    expect: list[tuple[str, object]] = [
        ("install_kind", spec.install_kind),
        ("profile", spec.profile_name),
        *own_expect,
    ]
    # the floors are the toolchain's pinned compiler's (its machine file's [compiler]), one place for every leg
    # (glibc's: ELF bundles only)
    elf = platform(spec.os).binary == "ELF"
    floors = TOOLCHAINS[spec.toolchain].floors() if elf and spec.toolchain in TOOLCHAINS else None
    policy = VerifyPolicy(
        os=spec.os,
        arch=spec.arch,
        backend=spec.backend,
        external=tuple(external),
        signing_required=spec.signing == "required" and not built_tree,
        trust_roots=tuple(trust_roots),
        glibc_floor=floors[0] if floors else None,
        glibcxx_floor=floors[1] if floors else None,
        required=tuple(required),
        info_file=None if built_tree or release is None else release.info_file,
        info_expect=() if built_tree else tuple(expect),
        backend_dl=bool(spec.cmake_bool("GGML_BACKEND_DL", False)),
        fingerprint=release.coverage.fingerprint if release is not None and release.coverage else None,
        macos_floor=spec.macos.deployment_target if spec.macos else None,
    )
    return replace(policy, **own)


def _backend_fields(spec: BundleSpec) -> tuple[BackendFields, list[tuple[str, object]]]:
    """``(fields, expect)`` leg ``spec``'s backend sets in its policy (:class:`VerifyPolicy` field
    name -> value) and the ``(key, value)`` pairs its bundle's info file must hold beyond every
    bundle's: its verify module's ``policy_fields(spec)`` (:func:`bundlegraph.schemas.backend.plug_in`),
    nothing for a backend without one."""
    mod = plug_in(backend(spec.backend), "verify")
    fields_of = getattr(mod, "policy_fields", None)
    if fields_of is None:
        return {}, []
    got: tuple[BackendFields, list[tuple[str, object]]] = fields_of(spec)
    return got


def archive_policy(
    spec: BundleSpec, release: Release, *, base: BundleSpec | None = None, trust_roots: tuple[str, ...] = ()
) -> VerifyPolicy:
    """The policy a finished bundle of ``spec`` is verified with by ``package``, ``merge`` and
    ``manifest`` (:mod:`bundlegraph.pipeline.archivecheck`) and by ``bundlegraph verify --leg``:
    :func:`policy_from_spec` with ``trust_roots`` (default ``BUNDLEGRAPH_TRUST_ROOTS``)."""
    if not trust_roots:
        from ..core import settings

        trust_roots = tuple(settings.get("TRUST_ROOTS") or ())
    return policy_from_spec(spec, release, base=base, trust_roots=trust_roots)
