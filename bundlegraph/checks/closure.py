"""Import closure of a bundle: every library a file needs is present, and provides what is used.

Windows (PE), following the loader's rules for a bundle laid out as one application directory:

- file level: each DLL a file imports (ordinary or delay-load; names compared
  case-insensitively) is in the bundle *beside the importer*, provided by Windows
  (:mod:`.systemdlls`), declared by the leg as an external runtime, a backend's driver
  (:func:`bundlegraph.schemas.backend.driver_owners`: ``nvcuda.dll`` in CUDA legs only, ``vulkan-1.dll``
  in Vulkan legs only) or the host
  process of an addon (``node.exe`` for ``.node``);
- symbol level: each name/ordinal imported from a bundled DLL is exported by it; forwarded
  exports (``DLL.Function``) are followed into bundled DLLs.

Linux (ELF), following ld.so(8):

- ``DT_NEEDED`` must be a soname, never a path; every ``RPATH``/``RUNPATH`` entry must start
  with ``$ORIGIN`` (a build directory or an absolute path would ship);
- each needed soname resolves inside the bundle through an ``$ORIGIN`` entry, or is in the
  baseline (:data:`LINUX_BASELINE`: glibc, libstdc++, libgcc_s), declared external
  (``libgomp.so.1`` counts only then) or a backend's driver (``libcuda.so.1`` in CUDA legs only,
  ``libvulkan.so.1`` in Vulkan legs only);
- symbol versions: every version a file needs from a bundled library (verneed) is defined by
  it (verdef).

Failures name the importing file and carry the chain from a top-level file, e.g.
``llama.dll -> ggml.dll -> libiomp5md.dll (missing)``.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Mapping

from ..schemas.backend import Backend, driver_owners
from . import Failure
from .content import required_matches
from .elf import ELFInfo
from .pe import PEInfo
from .systemdlls import host_process, is_vc_runtime, is_windows_dll

LINUX_BASELINE: frozenset[str] = frozenset(
    {
        # glibc's sonames (glibc source tree: shlib-versions)
        "libc.so.6",
        "libm.so.6",
        "libpthread.so.0",
        "libdl.so.2",
        "librt.so.1",
        "libresolv.so.2",
        "libutil.so.1",
        "libanl.so.1",
        "libmvec.so.1",
        "ld-linux-x86-64.so.2",
        "ld-linux-aarch64.so.1",
        # GCC's runtime libraries present on every glibc distribution
        "libstdc++.so.6",
        "libgcc_s.so.1",
    }
)
"""Libraries a Linux host always has; versions are bounded by :mod:`.glibc` instead."""

LINUX_OPTIONAL = {"libgomp.so.1": "GCC's OpenMP runtime"}


def _driver(owner: Backend, driver_of: str | None, noun: str, verb: str) -> str | None:
    """A GPU driver's library (:func:`bundlegraph.schemas.backend.driver_owners`) is allowed unshipped in
    its own backend's legs only (``driver_of``: the leg's backend name, None for none)."""
    if driver_of == owner.NAME:
        return None
    return f"{owner.DRIVER_WHAT} {noun}, which only {owner.TITLE} legs may {verb}"


def _base(path: str) -> str:
    return path.rsplit("/", 1)[-1]


def _dir(path: str) -> str:
    return path.rsplit("/", 1)[0] if "/" in path else ""


def _chain(file: str, importers: Mapping[str, list[str]], dep: str, reason: str) -> str:
    """``root -> ... -> file -> dep (missing|unresolved)``, up the first importers (cycle-safe)."""
    seq = [file]
    seen = {file}
    while importers.get(seq[0]):
        up = next((p for p in sorted(importers[seq[0]]) if p not in seen), None)
        if up is None:
            break
        seq.insert(0, up)
        seen.add(up)
    label = "missing" if reason.startswith("missing") else "unresolved"
    return " -> ".join([*(_base(s) for s in seq), f"{dep} ({label})"])


class _Names:
    """Every file name of the bundle: by (directory, lower name) and by lower name."""

    def __init__(self, names: Iterable[str], fold: bool):
        self.by_dir: dict[tuple[str, str], str] = {}
        self.anywhere: dict[str, list[str]] = {}
        for n in names:
            k = _base(n).lower() if fold else _base(n)
            self.by_dir[(_dir(n), k)] = n
            self.anywhere.setdefault(k, []).append(n)


class _Externals:
    """Declared external runtimes: exact names, or globs (``libllama.so*``: a merge base's
    required files, which a backend's built tree links against). ``name in ext`` matches either;
    ``fold``: compare case-insensitively (Windows)."""

    def __init__(self, names: Iterable[str], *, fold: bool) -> None:
        self.fold = fold
        self.names = list(names)
        self.exact = {n.lower() if fold else n for n in self.names}

    def __contains__(self, name: object) -> bool:
        n = str(name)
        # exact names by set lookup; globs by the one required-file matcher (content.required_matches)
        return (n.lower() if self.fold else n) in self.exact or any(
            required_matches(n, g, fold=self.fold) for g in self.names if any(c in g for c in "*?[")
        )


def pe_closure(
    files: Mapping[str, PEInfo],
    names: Iterable[str],
    *,
    external: Iterable[str] = (),
    driver_of: str | None = None,
) -> list[Failure]:
    """File- and symbol-level closure of the PE files ``files`` (bundle path -> info);
    ``names`` are all file paths of the bundle (parsed or not); ``driver_of``: the leg's backend,
    whose driver may be imported (``"cuda"``: ``nvcuda.dll``). Returns failures."""
    idx = _Names(names, fold=True)
    ext = _Externals(external, fold=True)
    edges: dict[str, list[tuple[str, str]]] = {}  # importer -> [(provider path, import dll)]
    importers: dict[str, list[str]] = {}
    for path, info in files.items():
        for imp in info.imports:
            prov = idx.by_dir.get((_dir(path), imp.dll.lower()))
            if prov is not None:
                edges.setdefault(path, []).append((prov, imp.dll))
                importers.setdefault(prov, []).append(path)
    out: list[Failure] = []
    for path, info in sorted(files.items()):
        for imp in info.imports:
            reason = _pe_unresolved(path, imp.dll, idx, ext, driver_of)
            if reason:
                chain = _chain(path, importers, imp.dll, reason)
                what = f"{imp.dll} (delay-load)" if imp.delay else imp.dll
                out.append(Failure(path, "imports", f"{what}: {reason} [chain: {chain}]"))
        for prov, dll in edges.get(path, []):
            pinfo = files.get(prov)
            if pinfo is None:
                continue  # the provider did not parse: its own failure says so
            imp_names = [n for i in info.imports if i.dll.lower() == dll.lower() for n in i.names]
            imp_ords = [o for i in info.imports if i.dll.lower() == dll.lower() for o in i.ordinals]
            keys = [*dict.fromkeys(imp_names), *(f"#{o}" for o in dict.fromkeys(imp_ords))]
            bad = [
                f"{k} (forwarded to {pinfo.forwarders[k]})" if k in pinfo.forwarders else k
                for k in keys
                if not _exports(prov, k, files, idx, 0)
            ]
            if bad:
                shown = ", ".join(bad[:8]) + (f" and {len(bad) - 8} more" if len(bad) > 8 else "")
                why = f"imports {len(bad)} name(s) from {_base(prov)} that it does not export: {shown}"
                out.append(Failure(path, "symbols", why))
    return out


def _pe_unresolved(path: str, dll: str, idx: _Names, ext: _Externals, driver_of: str | None) -> str | None:
    low = dll.lower()
    if (_dir(path), low) in idx.by_dir or is_windows_dll(low) or low in ext:
        return None
    owner = driver_owners("windows").get(low)
    if owner is not None:
        return _driver(owner, driver_of, "DLL", "import")
    if host_process(path) == low:
        return None
    elsewhere = idx.anywhere.get(low)
    if elsewhere:
        return f"in the bundle at {elsewhere[0]} but not beside the importer (Windows looks in the importing module's directory)"
    if is_vc_runtime(low):
        return "the Visual C++ runtime, neither in the bundle nor declared as an external runtime (runtime.external / --runtime)"
    return "missing: not in the bundle, not a Windows DLL, not declared as an external runtime"


def _exports(prov: str, name: str, files: Mapping[str, PEInfo], idx: _Names, depth: int) -> bool:
    """Does bundled DLL ``prov`` export ``name`` (``#N`` for an ordinal), following forwarders
    into bundled DLLs? Forwarders into Windows or external DLLs are accepted."""
    info = files.get(prov)
    if info is None or depth > 8:
        return info is None
    if not (int(name[1:]) in info.export_ordinals if name.startswith("#") else name in info.exports):
        return False
    fwd = info.forwarders.get(name)
    if not fwd:
        return True
    target_dll, _, target = fwd.rpartition(".")
    target_file = idx.by_dir.get((_dir(prov), (target_dll + ".dll").lower()))
    if target_file is None:
        return True  # forwarded outside the bundle (e.g. kernel32): the loader's business
    return _exports(target_file, target, files, idx, depth + 1)


def elf_closure(
    files: Mapping[str, ELFInfo],
    names: Iterable[str],
    *,
    external: Iterable[str] = (),
    driver_of: str | None = None,
) -> list[Failure]:
    """Paths, file-level closure and symbol versions of the ELF files ``files`` (bundle path
    -> info); ``names`` are all file paths of the bundle; ``driver_of`` as for
    :func:`pe_closure`. Returns failures."""
    idx = _Names(names, fold=False)
    ext = _Externals(external, fold=False)
    resolved: dict[str, list[tuple[str, str]]] = {}
    importers: dict[str, list[str]] = {}
    out: list[Failure] = []
    for path, info in sorted(files.items()):
        for tag, entries in (("RPATH", info.rpath), ("RUNPATH", info.runpath)):
            for entry in entries:
                if not entry.startswith(("$ORIGIN", "${ORIGIN}")):
                    why = f"{tag} entry {entry!r} is not relative to $ORIGIN (it would point into the build machine)"
                    out.append(Failure(path, "elf-paths", why))
        for soname in info.needed:
            if "/" in soname:
                why = f"DT_NEEDED holds a path instead of a soname: {soname!r} (the linked library had no SONAME)"
                out.append(Failure(path, "elf-paths", why))
                continue
            prov = _search(path, soname, info, idx)
            if prov is not None:
                resolved.setdefault(path, []).append((prov, soname))
                importers.setdefault(prov, []).append(path)
    for path, info in sorted(files.items()):
        done = {s for _, s in resolved.get(path, [])}
        for soname in info.needed:
            if "/" in soname or soname in done:
                continue
            reason = _elf_unresolved(soname, idx, ext, driver_of, info)
            if reason:
                chain = _chain(path, importers, soname, reason)
                out.append(Failure(path, "imports", f"{soname}: {reason} [chain: {chain}]"))
        for prov, soname in resolved.get(path, []):
            pinfo = files.get(prov)
            if pinfo is None:
                continue
            for v in sorted(info.verneed.get(soname, frozenset()) - pinfo.verdef):
                sym = info.verneed_symbols.get((soname, v))
                defined = ", ".join(sorted(pinfo.verdef)) or "no versions"
                why = f"needs version {v} of {soname}{f' (symbol {sym})' if sym else ''}, which {prov} does not define"
                out.append(Failure(path, "symbols", f"{why} (it defines {defined})"))
    return out


def _search(path: str, soname: str, info: ELFInfo, idx: _Names) -> str | None:
    """The bundle file ld.so would load for ``soname`` through ``$ORIGIN`` entries."""
    for entry in (*info.rpath, *info.runpath):
        for origin in ("${ORIGIN}", "$ORIGIN"):
            if entry.startswith(origin):
                d = posixpath.normpath(posixpath.join(_dir(path) or ".", entry[len(origin) :].lstrip("/")))
                d = "" if d == "." else d
                hit = idx.by_dir.get((d, soname))
                if hit is not None:
                    return hit
    return None


def _elf_unresolved(soname: str, idx: _Names, ext: _Externals, driver_of: str | None, info: ELFInfo) -> str | None:
    if soname in LINUX_BASELINE or soname in ext:
        return None
    owner = driver_owners("linux").get(soname)
    if owner is not None:
        return _driver(owner, driver_of, "library", "need")
    elsewhere = idx.anywhere.get(soname)
    if elsewhere:
        have = ", ".join((*info.rpath, *info.runpath)) or "none"
        return f"in the bundle at {elsewhere[0]} but not reachable through an $ORIGIN RPATH/RUNPATH (has: {have})"
    if soname in LINUX_OPTIONAL:
        return f"{LINUX_OPTIONAL[soname]}, which counts only when the leg declares it (runtime.external / --runtime)"
    return "missing: not in the bundle, not in the Linux baseline, not declared as an external runtime"
