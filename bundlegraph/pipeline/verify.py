"""Verify a bundle — a built tree, a merged tree or a finished archive — without running it.

:class:`VerifyPolicy` says what the leg promises (os, arch, GPU archs, external runtimes,
signing, glibc floors, required files, info JSON); :func:`policy_from_spec` derives it from a
:class:`~bundlegraph.schemas.records.BundleSpec`. :func:`verify_path` reads every file of a
directory or archive once and returns a :class:`Report`; it raises nothing for what it finds
(only for a path that is neither a directory nor a readable archive). The checks themselves
live in :mod:`bundlegraph.checks`.

Checks, in order: unsafe archive entries; per file (machine, parse, fatbin, signature); the
GPU backend's fatbin against the promised archs; PE and ELF import closure (file and symbol
level); glibc floors; required files; the info JSON.

Graph: :func:`plans` yields ``verify:<leg>`` (the built tree, after ``build:<leg>``, report in
``build/<leg>/verify.json``); the stage registry lists it (:data:`bundlegraph.pipeline.stages.STAGES`). The package stage
verifies the finished archive with :func:`policy_from_spec` + :func:`verify_path` and turns
``Report.failures`` into ``VerifyError`` (:meth:`Report.raise_for_failures`).
"""

from __future__ import annotations

import json
import os
from dataclasses import field, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ..backends import backend, library_file
from ..checks import Failure, content
from ..core.errors import BundleGraphError, VerifyError
from ..core.lightclass import frozen, mutable
from ..core.report import say
from ..platforms import OS_NAMES
from ..schemas.archs import Arch
from ..schemas.records import BundleSpec, Release
from .base import Context, Prepared, TaskPlan, run_plan, upstream_digest

NAME = "verify"
"""The stage's name: its tasks are ``verify:<leg>`` (:mod:`bundlegraph.pipeline.stages`)."""

if TYPE_CHECKING:  # the file checks are imported where a bundle is verified (never while planning)
    from ..checks.inspect import FileResult

BACKENDS = {os_name: (library_file(backend("cuda"), os_name),) for os_name in OS_NAMES}
"""The CUDA backend's file name per os (:mod:`bundlegraph.backends`): the file whose fatbin must
match the promised archs."""


@frozen
class VerifyPolicy:
    """What a bundle must satisfy. Every field is optional; an unset one skips its check.

    - ``os``: ``windows``/``linux``; ``arch``: ``x64``/``arm64`` (PE machine 0x8664/0xAA64,
      ELF EM_X86_64/EM_AARCH64);
    - ``archs``: CUDA archs in CMake form (``120``, ``120a``, ``86-real``, ``75-virtual``);
      checked against the fatbin of ``gpu_backends`` (default: ``ggml-cuda.dll`` /
      ``libggml-cuda.so``); ``120a`` means SM 120 (:func:`~bundlegraph.schemas.archs.fatbin_sm`);
    - ``cuda``: a CUDA leg (the driver ``nvcuda.dll`` / ``libcuda.so.1`` may be imported);
    - ``external``: file names the bundle relies on without shipping (VC++ runtime, paired
      cudart, ``libgomp.so.1``);
    - ``signing_required``: every PE must carry a valid, trusted Authenticode signature;
      ``trust_roots``: extra trusted root certificates (PEM paths; tests only);
    - ``glibc_floor`` (``"2.36"``) / ``glibcxx_floor`` (``"3.4.30"``);
    - ``backend_dl``: ``GGML_BACKEND_DL=ON``: every ggml backend library exports
      ``ggml_backend_init``; ``cuda_major``: no file imports a CUDA library of another major
      (:mod:`bundlegraph.checks.backends`);
    - ``required``: file names that must be present; ``info_file``: the info JSON's name and
      ``info_expect``: ``(key, value)`` pairs it must agree with.

    Raises :class:`BundleGraphError` naming the field when a value is malformed.
    """

    os: Literal["windows", "linux"] | None = None
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
    host_paths: tuple[tuple[str, str], ...] = ()
    """``(what, path)`` pairs: build-host directories (the download cache, the work directory, the
    source tree, the home directory) that no shipped file may name: compiles map them to stable
    names (:mod:`bundlegraph.toolchains.prefix_maps`), so a file naming one would differ on
    another machine and leak the builder's paths."""

    def __post_init__(self) -> None:
        if self.os not in (None, "windows", "linux"):
            raise BundleGraphError(f"verify policy: os {self.os!r}: expected 'windows' or 'linux'")
        if self.arch not in (None, "x64", "arm64"):
            raise BundleGraphError(f"verify policy: arch {self.arch!r}: expected 'x64' or 'arm64'")
        for a in self.archs:
            if not isinstance(a, Arch):
                raise BundleGraphError(f"verify policy: archs: {a!r} is not a parsed arch (parse_arch)")
        for name, v in (("glibc_floor", self.glibc_floor), ("glibcxx_floor", self.glibcxx_floor)):
            if v is not None:
                from ..checks import glibc

                try:
                    glibc.parse_version(v)
                except ValueError as e:
                    raise BundleGraphError(f"verify policy: {name}: {e}") from None

    @property
    def backends(self) -> tuple[str, ...]:
        """``gpu_backends`` or the default backend names for ``os`` (both when unset)."""
        if self.gpu_backends:
            return self.gpu_backends
        return BACKENDS[self.os] if self.os else BACKENDS["windows"] + BACKENDS["linux"]

    def to_json(self) -> dict[str, Any]:
        """The policy as JSON values; archs in CMake spelling (``120a``, ``86-real``).
        ``backend_dl`` and ``cuda_major`` are left out: they follow the spec's ``GGML_BACKEND_DL``
        and CUDA version, which change the build (and so the verify key) anyway, and verify keys
        keep their form."""
        d = {k: getattr(self, k) for k in self.__dataclass_fields__ if k not in ("backend_dl", "cuda_major")}
        d["info_expect"] = dict(self.info_expect)
        d["archs"] = self.cmake_archs
        return d

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
    expect: list[tuple[str, object]] = [("install_kind", spec.install_kind), ("profile", spec.profile_name)]
    if spec.cuda is not None:
        expect.append(("archs", tuple(spec.cuda.cmake_archs)))
    return VerifyPolicy(
        os=spec.os,
        arch=spec.arch,
        archs=tuple(spec.cuda.archs) if spec.cuda else (),
        cuda=spec.backend == "cuda",
        external=tuple(external),
        signing_required=spec.signing == "required" and not built_tree,
        trust_roots=tuple(trust_roots),
        glibc_floor=spec.linux.glibc_floor if spec.linux else None,
        glibcxx_floor=spec.linux.glibcxx_floor if spec.linux else None,
        required=tuple(required),
        info_file=None if built_tree or release is None else release.info_file,
        info_expect=() if built_tree else tuple(expect),
        backend_dl=bool(spec.cmake_bool("GGML_BACKEND_DL", False)),
        cuda_major=spec.cuda.version.major if spec.cuda else None,
    )


@mutable
class Report:
    """The result of :func:`verify_path`: ``subject`` (what was verified), ``kind``
    (``directory``/``zip``/``tar``), ``failures`` (each one line naming the file and reason),
    ``files`` (bundle path -> finding: format, machine, fatbin inventory, signature),
    ``bundle`` (bundle-wide findings: fatbin SMs per backend, highest glibc needs)."""

    subject: str
    kind: str
    policy: VerifyPolicy
    failures: list[Failure] = field(default_factory=list)
    files: dict[str, dict[str, Any]] = field(default_factory=dict)
    bundle: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.failures

    def lines(self) -> list[str]:
        """One line per failure: ``<file>: <check>: <reason>``."""
        return [f.line() for f in self.failures]

    def to_json(self) -> dict[str, Any]:
        """``{"subject", "kind", "ok", "failures": [{file, check, reason}], "files": {...},
        "bundle": {...}, "policy": {...}}`` (JSON-serialisable)."""
        return {
            "subject": self.subject,
            "kind": self.kind,
            "ok": self.ok,
            "failures": [f.to_json() for f in self.failures],
            "files": self.files,
            "bundle": self.bundle,
            "policy": self.policy.to_json(),
        }

    def raise_for_failures(self) -> None:
        """Raise :class:`VerifyError` (one line per failure) unless the report is clean."""
        if self.failures:
            raise VerifyError(self.lines(), subject=self.subject)


def verify_path(path: str | os.PathLike[str], policy: VerifyPolicy) -> Report:
    """Verify the directory or archive at ``path`` against ``policy`` (see the module
    docstring). Each file is read once. Raises :class:`BundleGraphError` only when ``path``
    is neither a directory nor a readable archive."""
    from ..checks import backends, closure
    from ..checks.bundle import read_bundle
    from ..checks.inspect import inspect_file

    bundle, files = read_bundle(path)
    from ..toolchains.prefix_maps import embedded

    results: dict[str, FileResult] = {}
    report_paths: list[Failure] = []
    info_doc: tuple[str, bytes] | None = None
    for rel, data in files:
        r = inspect_file(
            rel,
            data,
            os_name=policy.os,
            arch=policy.arch,
            signatures=policy.signing_required,
            trust_roots=policy.trust_roots,
        )
        if r.format:
            results[rel] = r
        for what, root in embedded(data, policy.host_paths):
            report_paths.append(
                Failure(
                    rel,
                    "host-path",
                    f"names the build host's {what} {root!r}: a compile did not map it to a stable name "
                    f"(-ffile-prefix-map, /d1trimfile); the bytes would differ on another machine",
                )
            )
        if policy.info_file and rel.rsplit("/", 1)[-1] == policy.info_file:
            if info_doc is None or rel.count("/") < info_doc[0].count("/"):
                info_doc = (rel, bytes(data))
    report = Report(str(path), bundle.kind, policy)
    report.failures += bundle.failures
    report.failures += report_paths
    for r in results.values():
        report.failures += r.failures
        report.files[r.path] = r.finding()
    _gpu(report, results, policy)
    names = bundle.names
    pe = {p: r.pe for p, r in results.items() if r.pe is not None}
    elf = {p: r.elf for p, r in results.items() if r.elf is not None}
    report.failures += closure.pe_closure(pe, names, external=policy.external, cuda=policy.cuda)
    report.failures += closure.elf_closure(elf, names, external=policy.external, cuda=policy.cuda)
    if elf:
        from ..checks import glibc

        fails, highest = glibc.check_floors(elf, glibc=policy.glibc_floor, glibcxx=policy.glibcxx_floor)
        report.failures += fails
        report.bundle["glibc"] = highest
    report.failures += content.missing_required(names, policy.required, fold=policy.os != "linux")
    if policy.backend_dl:
        report.failures += backends.missing_entry_points(pe, elf)
    if policy.cuda_major is not None:
        report.failures += backends.foreign_cuda_imports(pe, elf, policy.cuda_major)
    if info_doc is not None:
        report.failures += content.check_info(info_doc[0], info_doc[1], dict(policy.info_expect))
    return report


def _gpu(report: Report, results: dict[str, FileResult], policy: VerifyPolicy) -> None:
    backends = {b.lower() for b in policy.backends}
    found = [r for p, r in sorted(results.items()) if p.rsplit("/", 1)[-1].lower() in backends]
    report.bundle["fatbin"] = {r.path: r.fatbin.summary() for r in found if r.fatbin is not None}
    if not policy.archs:
        return
    promised = ",".join(policy.cmake_archs)
    if not found:
        names = " or ".join(policy.backends)
        report.failures.append(
            Failure(names, "gpu-code", f"the leg promises CUDA archs {promised} but the bundle has no {names}")
        )
        return
    archs = list(policy.archs)
    for r in found:
        if r.failures and r.fatbin is None and any(f.check in ("parse", "gpu-code") for f in r.failures):
            continue
        if r.fatbin is None:
            report.failures.append(
                Failure(r.path, "gpu-code", f"no CUDA fatbin section, the leg promises archs {promised}")
            )
            continue
        from ..checks.fatbin import check_archs

        for problem in check_archs(r.fatbin, archs):
            report.failures.append(
                Failure(r.path, "gpu-code", f"{problem} (promised {promised}; found {r.fatbin.summary()})")
            )


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


def leg_policy(ctx: Context, leg: str, *, built_tree: bool) -> VerifyPolicy:
    """The one policy the graph applies to ``leg``: ``verify:<leg>``'s on its build output
    (``built_tree``, :func:`built_tree_policy`: with the build host's paths), else the archive
    check's (:func:`archive_policy`). ``bundlegraph verify --leg`` calls this, so the standalone
    command and the graph cannot check different things."""
    if built_tree:
        return built_tree_policy(ctx, leg)
    spec = ctx.spec(leg)
    return archive_policy(spec, ctx.release, base=ctx.matrix.legs.get(spec.merge.base) if spec.merge else None)


# ---------------------------------------------------------------- graph stage (built tree)


def built_tree_policy(ctx: Context, leg: str) -> VerifyPolicy:
    """``policy_from_spec(..., built_tree=True)`` for ``leg`` of a graph context (pure)."""
    spec = ctx.spec(leg)
    base = ctx.matrix.legs.get(spec.merge.base) if spec.merge else None
    policy = policy_from_spec(spec, ctx.release, base=base, built_tree=True)
    if ctx.imported_build(leg) is not None:  # made on another runner: its paths are not ours to know
        return policy
    return replace(policy, host_paths=host_paths(ctx, leg))


def host_paths(ctx: Context, leg: str) -> tuple[tuple[str, str], ...]:
    """The build-host directories no binary of ``leg`` may name: the download cache, the work
    directory, the source tree (a path pin lies outside both) and the home directory."""
    from .source import plan_source, source_record_if_any

    rec = source_record_if_any(leg)
    tree = Path(rec.tree) if rec is not None else plan_source(ctx.release, ctx.matrix.root).tree
    out = [
        ("download cache", ctx.cache.as_posix()),
        ("work directory", ctx.workdir.as_posix()),
        ("source tree", tree.as_posix()),
    ]
    try:
        out.append(("home directory", Path.home().as_posix()))
    except RuntimeError:  # no HOME (nor USERPROFILE): nothing to look for
        pass
    return tuple(out)


@frozen
class VerifyTreePlan:
    """``verify:<leg>``'s plan value: the built ``tree`` (``build/<leg>/cmake/bin``), the
    ``policy`` it is checked against and the ``report`` path (``build/<leg>/verify.json``)."""

    leg: str
    tree: Path
    policy: VerifyPolicy
    report: Path
    build_digest: str = "missing"
    """``build:<leg>``'s output digest when prepared (:func:`prepare`)."""

    def key(self) -> dict[str, Any]:
        """The built files (the build's output digest) and the policy."""
        return {"build": self.build_digest, "policy": _policy_json(self.policy)}

    def describe(self) -> dict[str, Any]:
        return {"tree": self.tree.as_posix(), "policy": _policy_json(self.policy)}


def _policy_json(policy: VerifyPolicy) -> dict[str, Any]:
    out: dict[str, Any] = json.loads(json.dumps(policy.to_json(), default=list))
    return out


def prepare(ctx: Context, leg: str) -> Prepared[VerifyTreePlan]:
    """The plan value of ``verify:<leg>`` and its key (the build's output digest, the policy)."""
    return Prepared.of(replace(plan_verify(ctx, leg), build_digest=upstream_digest(f"build:{leg}")))


def plan_verify(ctx: Context, leg: str) -> VerifyTreePlan:
    """The :class:`VerifyTreePlan` of ``leg`` (pure; its build digest is read by :func:`prepare`)."""
    from ..core import paths
    from .build import plan_build

    return VerifyTreePlan(
        leg, plan_build(ctx, leg).artifacts_dir, built_tree_policy(ctx, leg), paths.build_dir(leg) / "verify.json"
    )


def run_verify_built(plan: VerifyTreePlan) -> list[Any]:
    """``verify:<leg>``: verify the build stage's artifacts directory, write the report and
    raise :class:`VerifyError` on any failure."""
    from ..core.fsutil import atomic_write_json

    if not plan.tree.is_dir():
        raise BundleGraphError(f"verify:{plan.leg}: {plan.tree} does not exist; run build:{plan.leg}")
    report = verify_path(plan.tree, plan.policy)
    atomic_write_json(plan.report, report.to_json())
    say(f"verify:{plan.leg}: {len(report.files)} binaries, {len(report.failures)} failure(s); report {plan.report}")
    report.raise_for_failures()
    return [plan.report]


def plans(ctx: Context) -> list[Any]:
    """``verify:<leg>`` for every selected leg, after ``build:<leg>``: the checks of this
    module on the built tree (``built_tree=True`` policy). The finished archive is verified
    again by the package stage (:mod:`bundlegraph.pipeline.archivecheck`)."""
    return [
        TaskPlan(
            stage=NAME,
            name=leg,
            leg=leg,
            doc=f"verify the built tree of {leg} (machine, GPU code, imports)",
            prepare=partial(prepare, ctx, leg),
            apply=partial(run_plan, run_verify_built),
            deps=[f"build:{leg}"],
            preview=partial(plan_verify, ctx, leg),
        )
        for leg in ctx.legs
    ]
