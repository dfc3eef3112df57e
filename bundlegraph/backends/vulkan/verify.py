"""The Vulkan backend's verify rows (:mod:`bundlegraph.backends.vulkan`), found by
:func:`.table.registry_rows` under the backend's name. All gate on ``backend == "vulkan"``:

- ``vulkan-library``: the bundle holds the backend library (``libggml-vulkan.so`` /
  ``ggml-vulkan.dll``: :func:`bundlegraph.schemas.backend.library_file`); silent when the leg's
  ``required`` list already names it (the ``required`` row says it then, once);
- ``vulkan-loader``: the library's closure (it and what it imports from the bundle, followed to
  the end) takes nothing from outside the bundle but the Vulkan loader (``libvulkan.so.1``,
  ``vulkan-1.dll``: the backend's ``DRIVERS``) and the platform's own libraries (Linux: glibc,
  libstdc++, libgcc_s, :data:`bundlegraph.checks.closure.LINUX_BASELINE`; Windows: system DLLs,
  API sets and the Visual C++ runtime); the library imports the loader (a ggml-vulkan that does
  not was built without Vulkan); the bundle does not ship the loader (it would shadow the host's,
  which finds the host's drivers).

- ``vulkan-shaders``: the info file's ``build.vulkan.compiled_out`` (the shader extensions
  glslc could not compile at configure: :func:`bundlegraph.backends.vulkan.sdk_ref.VulkanSdk.configure_record`)
  names none that the spec does not waive (``[vulkan] waive_compiled_out``, by name, with a
  reason): a bundle without ggml's cooperative-matrix or integer-dot shaders is several times
  slower on GPUs that have them. Silent without an info file (a build tree, package's first
  pass) or a ``build`` record (an imported build), where nothing says what was compiled.

Imports the generic ``closure`` row refuses (missing, another backend's driver) are left to it,
so each problem is one line: this row refuses what that row lets through, a runtime declared
external (``runtime.external``) that the Vulkan library has no business importing. The machine of
every file, the library included, is the reader's check (``files`` row, policy ``arch``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...checks import Failure
from ...core.platforms import platform
from ...schemas.backend import backend, library_file
from ...verification.rows import Outcome, Row, Subject
from .spec import VULKAN

if TYPE_CHECKING:
    from ...schemas.records import BundleSpec
    from ...verification.policy import BackendFields, VerifyPolicy

NAME = "vulkan"
"""The backend these rows belong to."""


def _is_vulkan(p: VerifyPolicy) -> bool:
    return p.backend == NAME


def _libraries(p: VerifyPolicy) -> dict[str, str]:
    """os -> the Vulkan library's file name (both OSes when the policy names none)."""
    b = backend(NAME)
    return {o: library_file(b, o) for o in (b.DRIVERS if p.os is None else (p.os,))}


def _found(s: Subject, p: VerifyPolicy) -> list[tuple[str, str]]:
    """``(bundle path, os)`` of each Vulkan library in the bundle, by name (Windows folds case)."""
    out = []
    for path in s.names:
        base = path.rsplit("/", 1)[-1]
        for o, lib in _libraries(p).items():
            if (base.lower() == lib.lower()) if platform(o).fold else base == lib:
                out.append((path, o))
    return sorted(out)


def library(s: Subject, p: VerifyPolicy) -> Outcome:
    """One failure when no Vulkan library is in the bundle and ``required`` does not already
    ask for it."""
    from ...checks.content import required_matches

    if _found(s, p):
        return [], {}
    libs = sorted(set(_libraries(p).values()))
    if any(required_matches(lib, r, fold=True) for lib in libs for r in p.required):
        return [], {}  # the required row names it
    names = " or ".join(libs)
    return [Failure(names, "vulkan-library", f"a Vulkan leg's bundle has no {names} (ggml's Vulkan backend)")], {}


def _outside(path: str, os_name: str, s: Subject) -> list[str]:
    """What ``path`` and the bundle files it imports, transitively, import from outside the
    bundle (in first-seen order). A bundled dependency is any bundle file of that name (the
    ``closure`` row judges whether the loader would really find it)."""
    fold = platform(os_name).fold
    by_name: dict[str, list[str]] = {}
    for n in s.names:
        base = n.rsplit("/", 1)[-1]
        by_name.setdefault(base.lower() if fold else base, []).append(n)

    def deps(f: str) -> list[str]:
        if fold:
            pe = s.pe.get(f)
            return [i.dll for i in pe.imports] if pe else []
        elf = s.elf.get(f)
        return list(elf.needed) if elf else []

    seen, todo, out = {path}, [path], []
    while todo:
        for d in deps(todo.pop(0)):
            inside = by_name.get(d.lower() if fold else d)
            if inside is None:
                if d not in out:
                    out.append(d)
                continue
            for f in inside:
                if f not in seen:
                    seen.add(f)
                    todo.append(f)
    return out


def _platforms_own(name: str, os_name: str) -> bool:
    from ...checks.closure import LINUX_BASELINE
    from ...checks.systemdlls import is_vc_runtime, is_windows_dll

    if platform(os_name).binary == "PE":  # a PE import names a DLL of Windows or of the VC runtime
        return is_windows_dll(name) or is_vc_runtime(name)
    return name in LINUX_BASELINE


def loader(s: Subject, p: VerifyPolicy) -> Outcome:
    """Per Vulkan library: one failure per declared-external import of its closure that is
    neither the loader nor the platform's own, one when it does not import the loader; one
    failure per shipped copy of the loader."""
    b = backend(NAME)
    fails = []
    for path, os_name in _found(s, p):
        fold = platform(os_name).fold
        want = b.DRIVERS[os_name]
        external = {e.lower() if fold else e for e in p.external}
        direct = [i.dll for i in s.pe[path].imports] if fold and path in s.pe else []
        if not fold and path in s.elf:
            direct = list(s.elf[path].needed)
        if (path in s.pe or path in s.elf) and not any((d.lower() if fold else d) == want.lower() for d in direct):
            fails.append(
                Failure(path, "vulkan-loader", f"does not import {b.DRIVER_WHAT} {want}: not a Vulkan build of ggml")
            )
        for dep in _outside(path, os_name, s):
            key = dep.lower() if fold else dep
            if key == (want.lower() if fold else want) or _platforms_own(dep, os_name):
                continue
            if key not in external:
                continue  # the closure row refuses it already (missing, or another backend's driver)
            fails.append(
                Failure(
                    path,
                    "vulkan-loader",
                    f"imports {dep} from outside the bundle (declared external): the Vulkan backend may take only "
                    f"{b.DRIVER_WHAT} {want} and the platform's own libraries from the host",
                )
            )
    for os_name, loader_name in b.DRIVERS.items():
        if p.os not in (None, os_name):
            continue
        for n in s.names:
            base = n.rsplit("/", 1)[-1]
            if (base.lower() == loader_name.lower()) if platform(os_name).fold else base == loader_name:
                fails.append(
                    Failure(
                        n,
                        "vulkan-loader",
                        f"the bundle ships {b.DRIVER_WHAT}: the host's must load (it finds the host's Vulkan drivers)",
                    )
                )
    return fails, {}


def compiled_out(info: bytes) -> list[str] | None:
    """``build.vulkan.compiled_out`` of an info JSON's bytes; None when it holds no such record
    (or is no JSON object: the ``info`` row says so)."""
    import json

    try:
        doc = json.loads(info)
    except ValueError:
        return None
    vk = (doc.get("build") or {}).get("vulkan") if isinstance(doc, dict) else None
    out = vk.get("compiled_out") if isinstance(vk, dict) else None
    return [str(x) for x in out] if isinstance(out, list) else None


def shaders(s: Subject, p: VerifyPolicy) -> Outcome:
    """One failure per shader extension the info file reports compiled out and the spec does
    not waive. No facts: package's two passes (without, then with the info file) must agree."""
    from . import SHADER_EXTENSIONS

    if s.info_doc is None:
        return [], {}
    out = compiled_out(s.info_doc[1])
    if out is None:
        return [], {}
    waived = dict(p.vulkan_waived)
    fails = [
        Failure(
            s.info_doc[0],
            "vulkan-shaders",
            f"{ext} compiled out: glslc could not compile it, so the bundle lacks "
            f"{SHADER_EXTENSIONS.get(ext, 'its shader path')}; pin a glslc that can (the leg's Vulkan SDK) or "
            f"waive it with a reason ([vulkan] waive_compiled_out)",
        )
        for ext in out
        if ext not in waived
    ]
    return fails, {}


def policy_fields(spec: BundleSpec) -> tuple[BackendFields, list[tuple[str, object]]]:
    """What a Vulkan leg promises its bundle: every shader path glslc could compile, but those its
    spec waives (``[vulkan] waive_compiled_out``, as ``(extension, reason)`` pairs)."""
    vulkan = VULKAN.of(spec)
    return {"vulkan_waived": tuple(sorted((vulkan.waive_compiled_out or {}).items()))}, []


ROWS: tuple[Row, ...] = (
    Row("vulkan-library", library, ("backend", "os", "required"), "required", gate=_is_vulkan),
    Row("vulkan-loader", loader, ("backend", "os", "external"), "imports", gate=_is_vulkan),
    Row("vulkan-shaders", shaders, ("backend", "vulkan_waived"), "info", gate=_is_vulkan),
)
"""The Vulkan backend's rows, gated on a Vulkan leg's policy (``backend="vulkan"``)."""
