"""Build a redist pool at test time: component archives in NVIDIA's layout
(``<component>-<platform>-<version>-archive/`` top folder; tar.xz for Linux, zip for Windows)
and ``redistrib_<label>.json`` in NVIDIA's schema (size as a string, sha256, md5,
relative_path ``<component>/<platform>/<file>``), served by :class:`redistserver.RedistServer`.

File contents are small stand-ins; the layout, names, links and manifest are the real shapes.
"""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
import zipfile

LINK = object()

SH = b"#!/bin/sh\necho stand-in\n"
STD_PROFILE = b'TOP = $(_HERE_)/..\nINCLUDES += "-I$(TOP)/$(_TARGET_DIR_)/include"\n'


def linux_components(v: str = "13.9.1") -> dict[tuple[str, str], dict]:
    """(component, platform) -> {path: bytes | (LINK, target)} for an x86_64 host + sbsa target."""
    return {
        ("cuda_nvcc", "linux-x86_64"): {
            "bin/nvcc": SH,
            "bin/nvcc.profile": STD_PROFILE,
            "bin/crt/link.stub": b"stub",
            "include/fatbinary_section.h": b"/*f*/",
        },
        ("libnvvm", "linux-x86_64"): {"nvvm/bin/cicc": SH, "nvvm/libdevice/libdevice.10.bc": b"bc"},
        ("cuda_crt", "linux-x86_64"): {"include/crt/host_config.h": b"/*crt*/"},
        ("cccl", "linux-x86_64"): {"include/cccl/cuda/std/version": b"/*cccl*/"},
        ("cuda_cudart", "linux-sbsa"): {
            "include/cuda_runtime.h": b"/*rt*/",
            "include/cuda.h": b"CUresult cuInit(unsigned int);",
            "lib/libcudart.so.13.9.1": b"\x7fELF-rt",
            "lib/libcudart.so.13": (LINK, "libcudart.so.13.9.1"),
            "lib/libcudart.so": (LINK, "libcudart.so.13"),
            "lib/libcudart_static.a": b"!<arch>\n",
            "lib/libcudadevrt.a": b"!<arch>\n",
            "lib/stubs/libcuda.so": b"\x7fELF-stub",
            "LICENSE": b"license",
        },
        ("libcublas", "linux-sbsa"): {
            "include/cublas_v2.h": b"/*b*/",
            "lib/libcublas.so.13": b"\x7fELF-b",
            "lib/libcublasLt.so.13": b"\x7fELF-lt",
        },
    }


def windows_components() -> dict[tuple[str, str], dict]:
    """An x86_64 Windows host + arm64 target, as CUDA 13's Windows archives lay files out."""
    return {
        ("cuda_nvcc", "windows-x86_64"): {"bin/nvcc.exe": b"MZ", "bin/nvcc.profile": b"x", "bin/crt/link.stub": b"s"},
        ("libnvvm", "windows-x86_64"): {"nvvm/bin/cicc.exe": b"MZ"},
        ("cuda_crt", "windows-x86_64"): {"include/crt/host_config.h": b"c"},
        ("cccl", "windows-x86_64"): {"include/cccl/cuda/std/version": b"v"},
        ("cuda_cudart", "windows-arm64"): {
            "include/cuda_runtime.h": b"r",
            "bin/arm64/cudart64_13.dll": b"MZ-arm64",
            **{f"lib/arm64/{n}.lib": b"!<arch>\n" for n in ("cudart", "cudart_static", "cudadevrt", "cuda")},
        },
        ("libcublas", "windows-arm64"): {
            "bin/cublas64_13.dll": b"MZ",
            "bin/cublasLt64_13.dll": b"MZ",
            "lib/cublas.lib": b"!<arch>\n",
            "lib/cublasLt.lib": b"!<arch>\n",
        },
    }


def tar_xz(top: str, files: dict) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:xz") as tf:
        for path, data in sorted(files.items()):
            ti = tarfile.TarInfo(f"{top}/{path}" if not path.startswith(("/", "..")) else path)
            if isinstance(data, tuple):
                ti.type, ti.linkname = tarfile.SYMTYPE, data[1]
                tf.addfile(ti)
            else:
                ti.size, ti.mode = len(data), 0o755 if data.startswith(b"#!") else 0o644
                tf.addfile(ti, io.BytesIO(data))
    return buf.getvalue()


def zip_bytes(top: str, files: dict) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for path, data in sorted(files.items()):
            zf.writestr(f"{top}/{path}" if not path.startswith("..") else path, data)
    return buf.getvalue()


def build_pool(
    comps: dict, label: str = "13.9.1", version: str = "13.9.1", *, nested: set[tuple[str, str]] = frozenset()
) -> tuple[dict[str, bytes], dict]:
    """``(files by URL path, manifest dict)``; ``nested`` entries are written variant-nested
    (``"<platform>": {"cuda13": {...}}``)."""
    files: dict[str, bytes] = {}
    manifest: dict = {"release_date": "2026-11-30", "release_label": label, "release_product": "cuda"}
    for (comp, plat), content in comps.items():
        top = f"{comp}-{plat}-{version}-archive"
        if plat.startswith("windows"):
            data, ext = zip_bytes(top, content), "zip"
        else:
            data, ext = tar_xz(top, content), "tar.xz"
        rel = f"{comp}/{plat}/{top}.{ext}"
        files[f"/{rel}"] = data
        entry = manifest.setdefault(
            comp, {"name": comp, "license": "CUDA Toolkit", "license_path": f"{comp}/LICENSE.txt", "version": version}
        )
        art = {
            "relative_path": rel,
            "sha256": hashlib.sha256(data).hexdigest(),
            "md5": hashlib.md5(data).hexdigest(),
            "size": str(len(data)),
        }
        if (comp, plat) in nested:
            entry[plat] = {"cuda13": art}
            entry["cuda_variant"] = ["13"]
        else:
            entry[plat] = art
    files[f"/redistrib_{label}.json"] = json.dumps(manifest, indent=4).encode()
    return files, manifest
