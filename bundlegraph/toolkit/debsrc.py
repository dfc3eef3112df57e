"""Fourth toolkit source, ``source = "debs"``: a CUDA toolkit made of Debian's packages (Debian 13
non-free ``nvidia-cuda-toolkit`` 12.4 and what nvcc and ggml-cuda's link need), pinned by sha256
in a debs lock (:mod:`bundlegraph.toolkit.debs`), extracted into ``<cache>/toolkits/<name>/`` and
laid out in NVIDIA's standard Linux form so it is used through the same
:class:`~bundlegraph.toolchains.cuda.CudaToolkit` as the redist and wheels toolkits.

Debian's own layout (as its packages ship it; paths below ``debian/`` in the prefix)::

    usr/bin/{ptxas,fatbinary,nvlink,cudafe++,bin2c,...}   host tools (usr/bin/nvcc is a wrapper script)
    usr/lib/nvidia-cuda-toolkit/bin/{nvcc,cicc,crt/}       the real nvcc, cicc and link stubs
    usr/lib/nvidia-cuda-toolkit/bin/nvcc.profile -> /etc/nvcc.profile   (absolute: the host's!)
    usr/lib/nvidia-cuda-toolkit/libdevice/libdevice.10.bc
    usr/include/                                           CUDA, cub, thrust and libcu++ headers
    usr/lib/x86_64-linux-gnu/{libcudart.so,...,stubs/libcuda.so}

The standard form made from it (what :mod:`bundlegraph.toolkit.layout` documents)::

    bin/nvcc, bin/ptxas, ... bin/crt/          hard links (nvcc finds its profile, ptxas and the
                                               stubs beside its own *resolved* path, so no symlinks)
    bin/nvcc.profile                           NVIDIA's standard profile, relative to bin/ (_HERE_)
    nvvm/bin/cicc, nvvm/libdevice/             hard links
    targets/<dir>/include -> ../../debian/usr/include          relative symlinks
    targets/<dir>/lib     -> ../../debian/usr/lib/<multiarch>
    include, lib64                             -> targets/<dir>/...  (:func:`layout.host_aliases`)

It is the tests' and benches' CUDA 12 compiler. The release's real cuda12 legs use CUDA 12.8
from NVIDIA's redist manifest (``redistrib_12.8.x.json``, ``source = "redist"``, every archive
hash-checked like CUDA 13), which the development machine cannot reach; NVIDIA's ``-cu12`` wheels
hold no nvcc.

FINDINGS.md (issue 43): with the profile relative to the prefix, Debian's nvcc 12.4.131 compiles
sm_50..sm_90 and compute_50/61 PTX on a glibc 2.34+ host; it has no sm_100/sm_120.

Static archives no CUDA build links are dropped (:data:`KEEP_STATIC`, the receipt's ``pruned``).
The receipt has one ``components`` entry per package (name, version, sha256, its Debian
``copyright`` file as ``license``, and for libraries the prefix-relative ``files`` it placed in the
target's library directory), so ``package`` ships each runtime file with its license.
"""

from __future__ import annotations

import os
import re
import shutil
import time
from pathlib import Path, PurePosixPath
from typing import Any

from ..core.errors import ToolkitError
from ..core.fsutil import atomic_dir, atomic_write_json, locked, sha256_file
from ..core.report import say
from ..toolchains.cuda import target_dir
from . import debs, layout, validate
from .identity import ComponentSet
from .installed import receipt_of, say_installed
from .key import LAYOUT_VERSION
from .ref import RECEIPT, CudaToolkit

DEBIAN_ARCH = {"linux-x86_64": ("amd64", "x86_64-linux-gnu"), "linux-sbsa": ("arm64", "aarch64-linux-gnu")}
"""NVIDIA redist platform -> (Debian architecture, multiarch triplet), Debian's names."""

NVCC_PACKAGE = "nvidia-cuda-toolkit"
"""The package whose upstream version (``12.4.131`` of ``12.4.131~12.4.1-2``) is nvcc's."""

TOOLKIT_BIN = "usr/lib/nvidia-cuda-toolkit/bin"
LIBDEVICE = "usr/lib/nvidia-cuda-toolkit/libdevice"
DEBS_LAYOUT = 2
"""The layout this module makes (receipt ``debs_layout``); a change reinstalls debs toolkits only
(2: no ``include/cccl`` line in a CUDA 12 profile)."""
RAW = "debian"
"""The folder of the prefix holding the packages' own trees."""

KEEP_STATIC = ("libcudart_static.a", "libcudadevrt.a", "libculibos.a", "libcublas_static.a", "libcublasLt_static.a")
"""The static libraries a CUDA build links (CMake's compiler check: cudart_static, cudadevrt;
a static ggml-cuda: cublas, cublasLt, culibos). ``nvidia-cuda-dev`` ships every CUDA library's
static archive (cufft, cusparse, npp, nvrtc, ... 1.6 GB of the 3.2 GB extracted); the others are
dropped from the prefix so a cached toolkit stays about half the size (see :func:`prune`)."""

_UPSTREAM = re.compile(r"^(?:\d+:)?(\d+\.\d+(?:\.\d+)*)")


def lock_path(cs: ComponentSet, bundles: Path) -> Path:
    """The debs lock of ``cs`` (``cuda.toolkit.lock``, relative to ``bundles/``)."""
    return (bundles / str(cs.pins["lock"])).resolve()


def nvcc_version(lock: debs.DebLock) -> str:
    """nvcc's version from the lock's ``nvidia-cuda-toolkit`` row (``12.4.131``). Raises
    :class:`ToolkitError` naming the lock when the package is missing."""
    row = next((p for p in lock.packages if p.name == NVCC_PACKAGE), None)
    m = _UPSTREAM.match(row.version) if row else None
    if row is None or m is None:
        raise ToolkitError(
            f"{lock.path}: no {NVCC_PACKAGE} package with a version like 12.4.131~...; nvcc comes from it"
        )
    return m.group(1)


def check_set(cs: ComponentSet, lock: debs.DebLock) -> None:
    """Refuse a debs set the packages cannot make: a host or target that is not Linux on the
    packages' architecture, or a lock whose nvcc is not ``cuda.version``. Messages name the spec
    file and key, or the lock file."""
    arch = DEBIAN_ARCH.get(cs.host_platform)
    if arch is None or cs.target_platform != cs.host_platform:
        raise ToolkitError(
            f"{cs.spec_file}: cuda.toolkit.source: 'debs' builds on and for one Linux platform "
            f"({', '.join(DEBIAN_ARCH)}), not {cs.host_platform} for {cs.target_platform}"
        )
    wrong = [p for p in lock.packages if p.architecture not in (arch[0], "all")]
    if wrong:
        raise ToolkitError(
            f"{lock.path}: package {wrong[0].name} is for {wrong[0].architecture}; "
            f"{cs.host_platform} needs {arch[0]} (or all)"
        )
    v = nvcc_version(lock)
    if tuple(v.split(".")[:2]) != tuple(str(cs.cuda_version).split(".")[:2]):
        raise ToolkitError(
            f"{lock.path}: nvcc {v} ({NVCC_PACKAGE}), but {cs.spec_file} asks for cuda.version {cs.cuda_version}"
        )


def _link(src: Path, dest: Path) -> None:
    """Hard-link ``src`` to ``dest`` (a copy where the file system refuses links)."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(src, dest)
    except OSError:
        shutil.copy2(src, dest)


def _link_tree(src: Path, dest: Path) -> None:
    for f in sorted(src.rglob("*")):
        if f.is_file() and not f.is_symlink():
            _link(f, dest / f.relative_to(src))


def lay_out(tree: Path, platform: str, cuda_major: int = 12) -> None:
    """Make the standard form (module docstring) in ``tree`` beside its ``debian/`` folder.
    Raises :class:`ToolkitError` naming the file a package should have provided."""
    raw = tree / RAW
    multiarch = DEBIAN_ARCH[platform][1]
    for need in (f"{TOOLKIT_BIN}/nvcc", f"{TOOLKIT_BIN}/cicc", f"{LIBDEVICE}/libdevice.10.bc", "usr/bin/ptxas"):
        if not (raw / need).is_file():
            raise ToolkitError(
                f"debs toolkit: {need} is missing from the extracted packages ({NVCC_PACKAGE} provides it)"
            )
    bin_dir = tree / "bin"
    for f in sorted((raw / "usr/bin").iterdir()):
        # usr/bin/nvcc is Debian's wrapper script (absolute paths); the real one is TOOLKIT_BIN's
        if f.name != "nvcc" and f.is_file() and not f.is_symlink():
            _link(f, bin_dir / f.name)
    _link(raw / TOOLKIT_BIN / "nvcc", bin_dir / "nvcc")
    _link_tree(raw / TOOLKIT_BIN / "crt", bin_dir / "crt")
    _link(raw / TOOLKIT_BIN / "cicc", tree / "nvvm" / "bin" / "cicc")
    _link_tree(raw / LIBDEVICE, tree / "nvvm" / "libdevice")
    layout.install_profile(tree, cuda_major)
    tdir = tree / "targets" / target_dir(platform)
    tdir.mkdir(parents=True, exist_ok=True)
    for name, real in (("include", PurePosixPath("usr/include")), ("lib", PurePosixPath("usr/lib", multiarch))):
        os.symlink(PurePosixPath("..", "..", RAW, real).as_posix(), tdir / name)
    layout.host_aliases(tree, platform)


def prune(tree: Path, platform: str) -> list[str]:
    """Delete the static archives (``lib*_static*.a``) of the library directory that are not in
    :data:`KEEP_STATIC`; returns their prefix-relative paths, sorted (the receipt's ``pruned``)."""
    libdir = tree / RAW / "usr" / "lib" / DEBIAN_ARCH[platform][1]
    gone = []
    for f in sorted(libdir.glob("lib*_static*.a")):
        if f.name not in KEEP_STATIC:
            f.unlink()
            gone.append(f.relative_to(tree).as_posix())
    return gone


def _package_files(blob: Path) -> list[str]:
    """Paths (``usr/lib/...``, no leading ``./``) of a .deb's regular files and symlinks
    (``dpkg-deb -c``: ``tar tv``-style lines, the path after the date and time, a link's
    ``-> target`` cut off)."""
    from ..core import proc

    out = proc.run(["dpkg-deb", "-c", blob], capture=True, echo=False, what=f"dpkg-deb -c {blob.name}").output
    files = []
    for line in out.splitlines():
        if not line or line[0] not in "-lh":
            continue
        path = line.split(None, 5)[5].split(" -> ")[0].split(" link to ")[0]
        files.append(path[2:] if path.startswith("./") else path)
    return files


def components(lock: debs.DebLock, blobs: list[Path], platform: str) -> list[dict[str, Any]]:
    """The receipt's ``components``: one entry per package with its pins, ``license`` (its
    ``usr/share/doc/<name>/copyright``, prefix-relative, None when it has none) and ``files``:
    the prefix-relative paths (through ``targets/<dir>/lib``) of what it put in the library
    directory."""
    libdir = f"usr/lib/{DEBIAN_ARCH[platform][1]}/"
    shown = f"targets/{target_dir(platform)}/lib/"
    out = []
    for p, blob in zip(lock.packages, blobs, strict=True):
        files = _package_files(blob)
        lic = f"usr/share/doc/{p.name}/copyright"
        out.append(
            {
                "component": p.name,
                "role": "debs",
                "platform": platform,
                "version": p.version,
                "sha256": p.sha256,
                "size": p.size,
                "source": "debs",
                "origin": f"{p.suite}/{p.name}_{p.version}_{p.architecture}",
                "filename": p.filename,
                "license": f"{RAW}/{lic}" if lic in files else None,
                "files": sorted(shown + f[len(libdir) :] for f in files if f.startswith(libdir)),
            }
        )
    return out


def install_debs(cs: ComponentSet, ref: CudaToolkit, bundles: Path) -> Path:
    """Install (or reuse) the debs toolkit of ``cs`` at ``ref.prefix``; returns the receipt path.

    Fetches the locked packages into the blob cache (:func:`debs.fetch`, sha256-checked), then
    builds the whole prefix beside the old one (extract, :func:`prune`, lay out, validate,
    receipt) and swaps
    it in; a failure leaves the previous prefix as it was. Raises :class:`ToolkitError`,
    :class:`~bundlegraph.core.errors.HashMismatch` or
    :class:`~bundlegraph.core.errors.ToolFailed`."""
    lock = debs.load_lock(lock_path(cs, bundles))
    check_set(cs, lock)
    prefix = ref.prefix
    receipt = prefix / RECEIPT
    with locked(prefix.parent / f".{prefix.name}.lock", what=f"toolkit {cs.name}"):
        if _reusable(receipt, cs) and not validate.problems(prefix, cs):
            say(f"toolkit {cs.name}: already installed at {prefix}")
            return receipt
        t0 = time.monotonic()
        blobs = debs.fetch(lock)
        fetched = time.monotonic() - t0
        with atomic_dir(prefix) as tmp:
            debs.extract(lock, tmp / RAW)
            pruned = prune(tmp, cs.host_platform)
            lay_out(tmp, cs.host_platform, cs.cuda_version.major)
            comps = components(lock, blobs, cs.host_platform)
            for c in comps:  # a pruned archive was not placed
                c["files"] = [
                    f for f in c["files"] if f.rsplit("/", 1)[-1] not in {p.rsplit("/", 1)[-1] for p in pruned}
                ]
            atomic_write_json(tmp / "version.json", {"cuda": {"name": "CUDA SDK", "version": nvcc_version(lock)}})
            validate.check(tmp, cs, what=cs.name)
            os.chmod(tmp, 0o755)  # mkdtemp made it private; the toolkit is shared by runs and users
            profile = tmp / "bin" / "nvcc.profile"
            atomic_write_json(
                tmp / RECEIPT,
                {
                    "name": cs.name,
                    "set_digest": cs.digest,
                    "layout": LAYOUT_VERSION,
                    "source": "debs",
                    "cuda": cs.cuda_version,
                    "host_platform": cs.host_platform,
                    "target_platform": cs.target_platform,
                    "target_dir": target_dir(cs.target_platform),
                    "components": comps,
                    "generated": [],
                    "pruned": pruned,
                    "debs_layout": DEBS_LAYOUT,
                    "profile": {
                        "path": "bin/nvcc.profile",
                        "sha256": sha256_file(profile),
                        "form": "standard (targets/<dir>)",
                    },
                    "lock": {"path": cs.pins["lock"], "sha256": sha256_file(lock.path), "debs": lock.digest()},
                },
            )
        say_installed(cs, f"{len(lock.packages)} Debian packages", prefix, fetched, t0)
        return receipt


def _reusable(receipt: Path, cs: ComponentSet) -> bool:
    rec = receipt_of(receipt, cs)
    return rec is not None and rec.get("debs_layout") == DEBS_LAYOUT
