"""``bundlegraph select`` and ``bundlegraph coverage``: what a host gets from a release.

``select --os linux --arch arm64 [--sm 121 ...] [--driver-cuda 13.0] [--runtime-line cuda13 ...]
[--gpu intel|amd] [--gfx gfx1100] [DIST|URL] [--json]``: the bundle a host of that description gets
(``--gpu``: a GPU besides NVIDIA's, ``amd`` meaning one without ROCm: such a host without an NVIDIA
driver asks for Vulkan; ``--gfx``: an AMD GPU with ROCm, its gfx target), the order an installer tries
bundles in, and why every other bundle was rejected (:mod:`bundlegraph.installer.selection`). Exit 0 when
the host gets a bundle, 1 when it gets none (an installer then falls back to a source build), 2 for
bad input (an unreadable release, a bad option).

A release whose manifest lists no bundle at all (``doit manifest`` with nothing packaged in
``dist/`` writes one) is said as such by both commands, and ``coverage`` then exits 1.

``coverage [DIST|URL] [--json|--summary]``: :func:`~bundlegraph.installer.selection.select` for every
host class (install kind x SM of NVIDIA's arch table x driver line; a Vulkan kind x GPU vendor;
an AMD host of each gfx target of the fork's ROCm families; a Mac of each arch), as a table,
``{"rows": [{host fields..., "asked", "install_kind", "choice", "attempts", "why_none"}]}``, or
grouped by the bundle each class gets (``--summary``).

DIST is a directory holding ``llama-prebuilt-manifest.json`` and ``llama-prebuilt-sha256.json``
(default ``dist/`` of the work directory); a URL is a release download base (both files are
fetched from it). ``--planned`` instead asks the release the specs of ``--bundles`` plan, built or
not (:mod:`bundlegraph.installer.planned`).

Each answer says what the host downloads: the chosen bundle's size in MB (10^6 bytes) and where
the figure comes from, ``measured`` (the SHA index's bytes of the built bundle) or ``estimated``
(a planned release: :func:`bundlegraph.installer.planned.estimate_mb`).
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any

from ..core import paths
from ..core.errors import BundleGraphError
from ..core.platforms import OS_NAMES, platform
from ..installer.selection import GPU_WORDS, Host, Selection, coverage, select
from ..schemas.manifest import INDEX_NAME, MANIFEST_NAME, Manifest, ShaIndex


def read_release(where: str | None) -> tuple[Manifest, ShaIndex | None]:
    """The manifest and SHA index of a dist directory or a release URL. Raises
    :class:`BundleGraphError` naming the file and what is wrong."""

    def parse(name: str, raw: bytes, model: Any) -> Any:
        try:
            return model.model_validate_json(raw)
        except ValueError as e:
            raise BundleGraphError(
                f"{name} at {where or paths.dist_dir()}: not a valid {name}: {str(e).splitlines()[0]}"
            ) from None

    if where and where.startswith(("http://", "https://")):
        from ..core.download import fetch_small

        base = where.rstrip("/")
        return (
            parse(MANIFEST_NAME, fetch_small(f"{base}/{MANIFEST_NAME}", allow_insecure=True), Manifest),
            parse(INDEX_NAME, fetch_small(f"{base}/{INDEX_NAME}", allow_insecure=True), ShaIndex),
        )
    d = Path(where) if where else paths.dist_dir()
    if not (d / MANIFEST_NAME).is_file():
        raise BundleGraphError(
            f"{d / MANIFEST_NAME}: no release manifest there (run `doit manifest`, or name "
            f"a dist directory or release URL)"
        )
    idx = parse(INDEX_NAME, (d / INDEX_NAME).read_bytes(), ShaIndex) if (d / INDEX_NAME).is_file() else None
    return parse(MANIFEST_NAME, (d / MANIFEST_NAME).read_bytes(), Manifest), idx


def _driver(text: str | None) -> tuple[int, int] | None:
    """``13.0`` -> (13, 0); ``13`` -> (13, 0)."""
    if not text:
        return None
    parts = text.split(".")
    if len(parts) == 1:
        parts.append("0")
    if len(parts) != 2 or not all(p.isdigit() for p in parts):
        raise BundleGraphError(f"--driver-cuda {text!r}: expected the driver's CUDA version MAJOR.MINOR, e.g. 13.0")
    return int(parts[0]), int(parts[1])


def _sms(values: list[int] | None) -> tuple[int, ...]:
    from ..schemas.archs import known_sms

    for sm in values or ():
        if sm not in known_sms():
            raise BundleGraphError(
                f"--sm {sm}: not an SM of NVIDIA's arch table; known: {', '.join(map(str, known_sms()))}"
            )
    return tuple(values or ())


def release_of(args: argparse.Namespace) -> tuple[Manifest, ShaIndex | None, dict[str, tuple[float, str]]]:
    """The release asked about: the one the specs plan (``--planned``: every promised leg, sizes
    estimated; with ``--with-unpromised`` every leg, as the release will be once the legs that
    wait for a first build ship) or a built one (DIST or URL: sizes measured, from its SHA index)."""
    from ..installer.selection import sizes_of

    every = bool(getattr(args, "with_unpromised", False))
    if every and not args.planned:
        raise BundleGraphError("--with-unpromised goes with --planned (a built release holds what it holds)")
    if args.planned:
        if args.release:
            raise BundleGraphError(
                f"{args.release}: --planned asks the specs of --bundles, not a release: leave it out"
            )
        from ..installer.planned import planned_manifest, planned_sizes
        from ..specs.loader import load_matrix

        m = load_matrix(args.bundles)
        sizes: dict[str, tuple[float, str]] = {k: (v.mb, v.source) for k, v in planned_sizes(m, every).items()}
        return planned_manifest(m, every=every), None, sizes
    manifest, index = read_release(args.release)
    return manifest, index, sizes_of(index)


def _mb(sel: Selection) -> str:
    return f"{sel.download_mb:g} MB {sel.size_from}" if sel.download_mb is not None else "size unknown"


def run_select(args: argparse.Namespace) -> int:
    manifest, index, sizes = release_of(args)
    host = Host(
        args.os,
        args.arch,
        _sms(args.sm),
        _driver(args.driver_cuda),
        tuple(args.runtime_line) if args.runtime_line else None,
        args.gpu,
        args.gfx,
    )
    if args.gfx and not re.fullmatch(r"gfx[0-9a-f]+", args.gfx, re.IGNORECASE):
        raise BundleGraphError(f"--gfx {args.gfx!r}: expected a gfx target as rocminfo reports it (gfx1100, gfx90a)")
    if args.gfx and (host.sms or host.driver_cuda or host.gpu):
        raise BundleGraphError("--gfx describes an AMD GPU with ROCm: give it without --sm/--driver-cuda/--gpu")
    if host.sms and host.driver_cuda is None:
        raise BundleGraphError("--sm needs --driver-cuda (a GPU without an NVIDIA driver gets CPU bundles only)")
    sel = select(host, manifest, index, sizes)
    if args.json:
        print(json.dumps(sel.to_json(), indent=2))
        return 0 if sel.choice else 1
    if empty := _empty(manifest):
        print(empty)
    print(f"{host.describe()} asks for {', '.join(sel.asked)}")
    print(
        f"  gets: {sel.choice or 'nothing (an installer falls back to a source build)'}"
        + (f" ({sel.install_kind}; downloads {_mb(sel)})" if sel.choice else "")
    )
    for i, a in enumerate(sel.attempts[1:], 2):
        print(f"  then: {a} (attempt {i})")
    for a, why in sel.rejected:
        print(f"  rejected {a}: {why}")
    return 0 if sel.choice else 1


def _empty(manifest: Manifest) -> str | None:
    """One line when the release holds no bundles at all, else None."""
    if manifest.artifacts:
        return None
    return (
        f"release {manifest.release_tag} holds no bundles at all: its manifest lists none (`doit` builds and "
        f"packages the default legs; `doit manifest` with nothing packaged refuses to write such a release)"
    )


def _why_none(sel: Selection) -> str | None:
    """For a host that gets nothing: the first reason a bundle of an asked kind was rejected, or
    that the release has none of that kind."""
    if sel.choice:
        return None
    reasons = [r for _a, r in sel.rejected if "is not asked for" not in r]
    return reasons[0] if reasons else f"no {' or '.join(sel.asked)} bundle"


def redownloads(where: str | None, manifest: Manifest) -> dict[str, bool | None]:
    """For each bundle of the release: whether the installer re-downloads it on every run (it
    lacks :data:`~bundlegraph.schemas.installer.BACKFILLED`); None where the bundle is not a
    local file (a release URL) and so was not looked into."""
    from ..pipeline.bundle.archive import member_names
    from ..schemas.installer import BACKFILLED

    d = None if where and where.startswith(("http://", "https://")) else (Path(where) if where else paths.dist_dir())
    out: dict[str, bool | None] = {}
    for a in manifest.artifacts:
        f = d / a.asset_name if d is not None else None
        if f is None or not f.is_file():
            out[a.asset_name] = None
            continue
        want = platform(a.os).program(BACKFILLED)
        out[a.asset_name] = want not in {Path(n).name for n in member_names(f)}
    return out


def run_coverage(args: argparse.Namespace) -> int:
    from ..schemas.installer import BACKFILLED, CHECKED_AGAINST

    manifest, index, sizes = release_of(args)
    again = {} if args.planned else redownloads(args.release, manifest)
    rows = [
        {
            **sel.host.to_json(),
            "asked": sel.asked,
            "install_kind": sel.install_kind,
            "choice": sel.choice,
            "attempts": sel.attempts,
            "why_none": _why_none(sel),
            "download_mb": sel.download_mb,
            "size_from": sel.size_from,
        }
        for sel in coverage(manifest, index, sizes)
    ]
    empty = _empty(manifest)
    if args.json:
        print(
            json.dumps(
                {
                    "release_tag": manifest.release_tag,
                    "planned": bool(args.planned),
                    "bundles": len(manifest.artifacts),
                    "rows": rows,
                    "redownloaded_every_run": again,
                },
                indent=2,
            )
        )
        return 1 if empty else 0
    if empty:
        print(empty)
        return 1
    if args.summary:
        _summary(rows)
        return 0
    print("| host | SM | driver | other GPU | asks for | gets | downloads |\n|---|---|---|---|---|---|---|")
    for r in rows:
        host = f"{r['os']} {r['arch']}"
        sm = ",".join(map(str, r["sms"])) or "-"
        got = (
            f"`{r['choice']}`" + (f" (then {', '.join(r['attempts'][1:])})" if len(r["attempts"]) > 1 else "")
            if r["choice"]
            else f"none: {r['why_none']}"
        )
        drv = r["driver_cuda"] or (f"AMD {r['gfx']} (ROCm)" if r.get("gfx") else "no NVIDIA GPU")
        other = r.get("gpu") or "-"
        print(f"| {host} | {sm} | {drv} | {other} | {', '.join(r['asked'])} | {got} | {_row_mb(r)} |")
    for name, yes in sorted(again.items()):
        if yes:
            print(
                f"\nnote: {name} has no {BACKFILLED}: the installer ({CHECKED_AGAINST}) downloads and extracts it "
                f"again on every install run to backfill it (a mix with the DiffusionGemma pull request ships it)"
            )
    return 0


def _row_mb(r: dict[str, Any]) -> str:
    return f"{r['download_mb']:g} MB ({r['size_from']})" if r.get("download_mb") is not None else "-"


def _summary(rows: list[dict[str, Any]]) -> None:
    """Which bundle serves which install kind, drivers and SMs (rows grouped by what they get;
    consecutive drivers that get the same for the same SMs joined as ``12.4-12.9``), its download
    size, then the host classes that get nothing, counted per kind and driver."""
    served: dict[tuple[Any, ...], list[int]] = {}
    none: dict[tuple[Any, ...], list[int]] = {}
    mb: dict[str, str] = {}
    for r in rows:
        drv = r["driver_cuda"] or (f"{r['gpu']} GPU" if r.get("gpu") else "AMD (ROCm)" if r.get("gfx") else "no GPU")
        key = (r["asked"][0], drv, r["choice"], tuple(r["attempts"][1:]))
        # an AMD host's gfx target stands in the SMs column
        (served if r["choice"] else none).setdefault(key, []).extend(r["sms"] or ([r["gfx"]] if r.get("gfx") else []))
        if r["choice"]:
            mb[r["choice"]] = _row_mb(r)
    joined: dict[tuple[Any, ...], list[str]] = {}
    for (kind, drv, choice, then), sms in served.items():
        joined.setdefault((kind, choice, then, tuple(sorted(set(sms)))), []).append(drv)
    print("| installer asks for | driver | SMs | gets | downloads | then |\n|---|---|---|---|---|---|")
    for (kind, choice, then, sms), drvs in sorted(
        joined.items(), key=lambda kv: (kv[0][0], _drv_key(kv[1][0]), kv[0][1])
    ):
        print(
            f"| {kind} | {_drv_span(drvs)} | {','.join(map(str, sms)) or '-'} | `{choice}` | {mb[choice]} | "
            f"{', '.join(f'`{t}`' for t in then) or '-'} |"
        )
    if none:
        print(
            "\nHost classes that get nothing: "
            + "; ".join(f"{kind} (driver {drv}): {len(sms) or 1}" for (kind, drv, _c, _t), sms in sorted(none.items()))
        )


def _drv_key(d: str) -> tuple[int, ...]:
    return tuple(int(x) for x in d.split(".")) if d[0].isdigit() else ()


def _drv_span(drvs: list[str]) -> str:
    """``["12.4", "12.5", "12.6"]`` -> ``12.4-12.6`` (the drivers of one summary row, sorted)."""
    ds = sorted(set(drvs), key=lambda d: (_drv_key(d), d))  # then by name: a set's order varies per process
    return ds[0] if len(ds) == 1 else f"{ds[0]}-{ds[-1]}"


_UNPROMISED = (
    "with --planned: the legs not promised too (ROCm, macOS, Vulkan: each spec says what it waits for), "
    "as the release will serve once they ship"
)


def register(sub: Any) -> None:
    p = sub.add_parser("select", help="the bundle a host of a given description gets from a release")
    p.add_argument("--os", required=True, choices=list(OS_NAMES))
    p.add_argument("--arch", required=True, choices=["x64", "arm64"])
    p.add_argument("--sm", type=int, action="append", metavar="N", help="a GPU's SM (repeat for several GPUs)")
    p.add_argument("--driver-cuda", metavar="M.m", help="the NVIDIA driver's CUDA version (none: no NVIDIA GPU)")
    p.add_argument(
        "--runtime-line",
        action="append",
        choices=["cuda12", "cuda13"],
        help="a CUDA runtime line whose libraries the host has (default: every line the driver allows)",
    )
    p.add_argument(
        "--gpu",
        choices=list(GPU_WORDS),
        help="a GPU besides NVIDIA's: intel, or amd (an AMD GPU without ROCm); without --driver-cuda the host asks "
        "for Vulkan",
    )
    p.add_argument("--gfx", metavar="GFX", help="an AMD GPU with ROCm: the gfx target rocminfo reports (gfx1100)")
    p.add_argument("release", nargs="?", help="dist directory or release URL (default: dist/)")
    p.add_argument("--json", action="store_true")
    p.add_argument("--planned", action="store_true", help="ask the release the specs plan (built or not)")
    p.add_argument("--with-unpromised", action="store_true", help=_UNPROMISED)
    p.set_defaults(func=run_select)
    c = sub.add_parser("coverage", help="which bundle every host class gets from a release")
    c.add_argument("release", nargs="?", help="dist directory or release URL (default: dist/)")
    c.add_argument("--json", action="store_true")
    c.add_argument("--planned", action="store_true", help="ask the release the specs plan (built or not)")
    c.add_argument("--with-unpromised", action="store_true", help=_UNPROMISED)
    c.add_argument(
        "--summary",
        action="store_true",
        help="group the rows by the bundle they get: which bundle serves which kind, driver and SMs",
    )
    c.set_defaults(func=run_coverage)
