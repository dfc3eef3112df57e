"""Ask Unsloth's own llama.cpp prebuilt installer which asset of a ``dist/`` a host gets.

The installer is ``studio/install_llama_prebuilt.py`` of the PyPI wheel ``unsloth==2026.10.9``
(AGPL-3.0). None of its code is in this repository: :func:`installer` fetches the wheel at test
time with pip (pinned by sha256, cached under ``<cache>/test-inputs/unsloth``), unpacks only its
``studio/`` package and imports it with importlib. Everything here is ours; the contract it
exercises (``select_backend_install``, the download-host and REST paths to a release,
``download_file_verified``, ``preferred_source_archive``) is stated in ``docs/installer-contract.md``.

Use::

    ilp = installer()                                    # the imported module (once per process)
    with released(ilp, dist) as srv:                     # dist/ served as unslothai/llama.cpp@<tag>
        row = {"os": "linux", "arch": "arm64", "sms": [121], "driver_cuda": "13.0",
               "runtime_lines": None}
        installer_choice(ilp, row, srv.release_tag)
        # -> {"choice": "app-...-linux-arm64-cuda13-blackwell.tar.gz", "install_kind": ...,
        #     "attempts": [...]}

Every network request of the installer goes through its module attribute ``_URL_OPENER``;
:func:`patched_installer` swaps it for :class:`RedirectingOpener` (same path, host rewritten to
the local :class:`ReleaseServer`, original URL recorded) and replaces the host probes it runs at
selection time (CUDA runtime libraries on disk, ``import torch``, Tegra, Vulkan, ROCm), so the
answer depends only on the host row and the dist.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import importlib.util
import json
import os
import subprocess
import sys
import threading
import urllib.parse
import urllib.request
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bundlegraph.core import paths
from bundlegraph.core.fsutil import atomic_dir, locked, sha256_file

UNSLOTH_VERSION = "2026.10.9"
WHEEL_NAME = f"unsloth-{UNSLOTH_VERSION}-py3-none-any.whl"
WHEEL_SHA256 = "feb40b99bc4f8c543a36cbd0fe6e1410d6e4ac16bd4d0c731f607adce3d63bb0"
INSTALLER_MEMBER = "studio/install_llama_prebuilt.py"
REPO = "unslothai/llama.cpp"  # the only published repo whose manifest the installer reads
MANIFEST_NAME = "llama-prebuilt-manifest.json"
INDEX_NAME = "llama-prebuilt-sha256.json"
MODULE_NAME = "unsloth_install_llama_prebuilt"
_STUDIO_TOPLEVEL = ("prebuilt_core", "nvidia_probe", "backend")  # imported from studio/ as top-level


# -- fetch, unpack, import ----------------------------------------------------------------------


def cache_dir() -> Path:
    """``<bundlegraph cache>/test-inputs/unsloth``: the wheel and its unpacked ``studio/``."""
    return paths.cache_root() / "test-inputs" / "unsloth"


def fetch_wheel() -> Path:
    """The pinned unsloth wheel (``pip download`` on a cold cache). A sha256 mismatch raises
    AssertionError (fails closed); a failed download fails the test saying what to fetch."""
    d = cache_dir()
    wheel = d / WHEEL_NAME
    with locked(d / "wheel.lock", what="test input unsloth"):
        if not wheel.is_file():
            argv = [
                sys.executable,
                "-m",
                "pip",
                "download",
                f"unsloth=={UNSLOTH_VERSION}",
                "--no-deps",
                "--only-binary=:all:",
                "-d",
                str(d),
            ]
            r = subprocess.run(argv, capture_output=True, text=True)
            if r.returncode != 0 or not wheel.is_file():
                pytest.fail(
                    f"the installer under test ({WHEEL_NAME}, sha256 {WHEEL_SHA256}) is not in "
                    f"{d} and could not be fetched: {' '.join(argv)} -> "
                    f"{(r.stderr.strip().splitlines() or ['no output'])[-1]}\nOn a machine that "
                    f"reaches PyPI run that command, or copy the wheel into {d}.",
                    pytrace=False,
                )
        got = sha256_file(wheel)
    assert got == WHEEL_SHA256, f"{wheel}: sha256 {got}, pinned {WHEEL_SHA256} (remove it to fetch again)"
    return wheel


def unpack_studio(wheel: Path) -> Path:
    """The wheel's ``studio/`` package (only), extracted once under the cache; returns its path."""
    out = cache_dir() / f"studio-{WHEEL_SHA256[:16]}"
    with locked(cache_dir() / "unpack.lock", what="test input unsloth"):
        if not (out / ".complete").is_file():
            with atomic_dir(out) as tmp, zipfile.ZipFile(wheel) as z:
                names = [n for n in z.namelist() if n.startswith("studio/") and not n.endswith("/")]
                assert INSTALLER_MEMBER in names, f"{wheel.name} has no {INSTALLER_MEMBER}"
                for n in names:
                    assert ".." not in n.split("/") and not n.startswith("/"), f"unsafe member {n}"
                    z.extract(n, tmp)
                (tmp / ".complete").write_text("ok")
    return out / "studio"


def load_installer(studio: Path) -> Any:
    """Import ``install_llama_prebuilt.py`` from ``studio`` as module :data:`MODULE_NAME`.
    It puts its folder on ``sys.path[0]`` and imports ``prebuilt_core``, ``nvidia_probe`` and
    ``backend.*`` as top-level modules: same-named modules already loaded are hidden during the
    import and put back afterwards (the studio ones are then dropped from ``sys.modules``; the
    installer keeps its own references), and ``sys.path`` is restored."""
    saved_path = list(sys.path)
    hidden = {n: sys.modules.pop(n) for n in list(sys.modules) if n.split(".")[0] in _STUDIO_TOPLEVEL}
    spec = importlib.util.spec_from_file_location(MODULE_NAME, studio / "install_llama_prebuilt.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[MODULE_NAME] = mod
    try:
        spec.loader.exec_module(mod)
    except BaseException:
        sys.modules.pop(MODULE_NAME, None)
        raise
    finally:
        sys.path[:] = saved_path
        if hidden:
            for n in [n for n in sys.modules if n.split(".")[0] in _STUDIO_TOPLEVEL]:
                del sys.modules[n]
            sys.modules.update(hidden)
    return mod


@functools.cache
def installer() -> Any:
    """The installer module: fetched, verified, unpacked and imported once per process."""
    return load_installer(unpack_studio(fetch_wheel()))


# -- the release, served locally ----------------------------------------------------------------


class _Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a: Any) -> None:
        pass

    def _send(
        self,
        code: int,
        body: bytes = b"",
        ctype: str = "application/octet-stream",
        headers: dict[str, str] | None = None,
    ) -> None:
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def do_HEAD(self) -> None:
        self.do_GET()

    def do_GET(self) -> None:
        srv: ReleaseServer = self.server.owner  # type: ignore[attr-defined]
        parts = [urllib.parse.unquote(p) for p in urllib.parse.urlsplit(self.path).path.strip("/").split("/")]
        srv.requests.append((self.command, self.path))
        ours = "/".join(parts[:2]) == srv.repo
        if ours and len(parts) == 6 and parts[2:4] == ["releases", "download"]:  # github.com download host
            body = srv.asset(parts[5]) if parts[4] == srv.release_tag else None
            return self._send(200, body) if body is not None else self._send(404, b"Not Found")
        if ours and parts[2:] == ["releases", "latest"]:
            return self._send(302, headers={"Location": f"/{srv.repo}/releases/tag/{srv.release_tag}"})
        if ours and parts[2:4] == ["releases", "tag"] and len(parts) == 5:
            return self._send(200, b"<html></html>", "text/html")
        if parts[0] == "repos" and "/".join(parts[1:3]) == srv.repo:  # api.github.com
            if parts[3:] == ["releases", "tags", srv.release_tag]:
                return self._send(200, json.dumps(srv.api_release()).encode(), "application/json")
            if parts[3:] == ["releases"]:
                return self._send(200, json.dumps([srv.api_release()]).encode(), "application/json")
            return self._send(404, b'{"message": "Not Found"}', "application/json")
        srv.unexpected.append((self.command, self.path))
        self._send(404, b"Not Found")


class ReleaseServer:
    """A flat ``dist/`` served on 127.0.0.1 as the GitHub release ``<repo>@<release_tag>``:
    the download host (``/<repo>/releases/download/<tag>/<name>``, ``/<repo>/releases/latest``
    -> 302 ``/releases/tag/<tag>``) and the REST API (``/repos/<repo>/releases/tags/<tag>``,
    ``/repos/<repo>/releases``: one non-draft release whose assets carry ``browser_download_url``
    and ``digest``). ``release_tag`` defaults to the SHA index's. ``overrides`` {name: bytes}
    serves other bytes under an asset's name (a tampered copy). Requests go to ``requests``;
    paths outside that release to ``unexpected``."""

    def __init__(self, dist: Path, *, repo: str = REPO, release_tag: str | None = None):
        self.dist, self.repo = Path(dist), repo
        self.release_tag = release_tag or json.loads((self.dist / INDEX_NAME).read_text())["release_tag"]
        self.overrides: dict[str, bytes] = {}
        self.requests: list[tuple[str, str]] = []
        self.unexpected: list[tuple[str, str]] = []
        self._httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._httpd.owner = self  # type: ignore[attr-defined]
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.05,), daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def asset(self, name: str) -> bytes | None:
        if name in self.overrides:
            return self.overrides[name]
        f = self.dist / name
        return f.read_bytes() if "/" not in name and f.is_file() else None

    def download_url(self, name: str) -> str:
        """The public URL of asset ``name`` (what the installer asks for)."""
        q = functools.partial(urllib.parse.quote, safe="")
        return f"https://github.com/{self.repo}/releases/download/{q(self.release_tag)}/{q(name)}"

    def api_release(self) -> dict[str, Any]:
        assets = [
            {"name": f.name, "browser_download_url": self.download_url(f.name), "digest": "sha256:" + sha256_file(f)}
            for f in sorted(self.dist.iterdir())
            if f.is_file()
        ]
        return {
            "id": 1,
            "tag_name": self.release_tag,
            "draft": False,
            "prerelease": False,
            "published_at": "2026-10-01T00:00:00Z",
            "assets": assets,
        }

    def __enter__(self) -> ReleaseServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


class RedirectingOpener:
    """Stands in for the installer's ``_URL_OPENER``: each request keeps its path, query, method
    and headers (less Authorization) but goes to ``base_url``; ``seen`` records the original
    URLs (the installer still builds real github.com / api.github.com ones)."""

    def __init__(self, base_url: str, inner: Any):
        self.base = urllib.parse.urlsplit(base_url)
        self.inner = inner
        self.seen: list[str] = []

    def open(self, request: Any, timeout: float | None = None) -> Any:
        if isinstance(request, str):
            request = urllib.request.Request(request)
        self.seen.append(request.full_url)
        u = urllib.parse.urlsplit(request.full_url)
        headers = {k: v for k, v in request.header_items() if k.lower() != "authorization"}
        url = urllib.parse.urlunsplit((self.base.scheme, self.base.netloc, u.path, u.query, ""))
        local = urllib.request.Request(url, data=request.data, headers=headers, method=request.get_method())
        return self.inner.open(local, timeout=timeout)

    def stray(self) -> list[str]:
        """URLs that were neither github.com nor api.github.com (should be none)."""
        return [u for u in self.seen if urllib.parse.urlsplit(u).netloc not in ("github.com", "api.github.com")]


# environment the installer reads at selection time: tokens and probes off, no overrides
_ENV: dict[str, str | None] = {
    **dict.fromkeys(
        (
            "GH_TOKEN",
            "GITHUB_TOKEN",
            "HF_TOKEN",
            "HUGGING_FACE_HUB_TOKEN",
            "UNSLOTH_LLAMA_CPP_BACKEND",
            "UNSLOTH_FORCE_VULKAN",
            "UNSLOTH_ROCM_GFX_ARCH",
            "UNSLOTH_ROCM_GFX_REMEMBERED",
            "UNSLOTH_LLAMA_ARM64_CUDA",
            "UNSLOTH_FORCE_ROCM_TORCH",
            "UNSLOTH_LLAMA_DISABLE_DOWNLOAD_HOST_RESOLVE",
            "UNSLOTH_LLAMA_STAGED_VALIDATION",
            "UNSLOTH_LLAMA_RELEASE_TAG",
            "UNSLOTH_LLAMA_RELEASE_MANIFEST_ASSET",
            "UNSLOTH_LLAMA_RELEASE_SHA256_ASSET",
            "UNSLOTH_LLAMA_MAX_PREBUILT_RELEASE_FALLBACKS",
            "CUDA_VISIBLE_DEVICES",
            "HIP_VISIBLE_DEVICES",
            "ROCR_VISIBLE_DEVICES",
            "GGML_VK_VISIBLE_DEVICES",
        )
    ),
    "UNSLOTH_VULKAN_DEVICE_PROBE": "0",
    "UNSLOTH_NVIDIA_LIBRARY_PROBE": "0",
}


@contextlib.contextmanager
def swapped(ilp: Any, attrs: dict[str, Any], env: dict[str, str | None] | None = None) -> Iterator[None]:
    """Within: module attributes of ``ilp`` set to ``attrs`` and environment variables to
    ``env`` (None: unset); both restored on exit."""
    env = env or {}
    saved_attrs, saved_env = {k: getattr(ilp, k) for k in attrs}, {k: os.environ.get(k) for k in env}

    def apply(a: dict[str, Any], e: dict[str, str | None]) -> None:
        for k, v in a.items():
            setattr(ilp, k, v)
        for k, v in e.items():
            os.environ.pop(k, None) if v is None else os.environ.__setitem__(k, v)

    apply(attrs, env)
    try:
        yield
    finally:
        apply(saved_attrs, saved_env)


def _runtime_line_probes(lines: list[str]) -> dict[str, Any]:
    """The installer's scans for CUDA runtime libraries (Linux: libcudart+libcublas; Windows:
    cudart64/cublas64/cublasLt64 DLLs), answering that exactly ``lines`` are on disk."""
    found = (list(lines), {x: ["/fake/cuda"] for x in lines})
    return {"detected_linux_runtime_lines": lambda: found, "detected_windows_runtime_lines": lambda: found}


@contextlib.contextmanager
def patched_installer(
    ilp: Any,
    base_url: str,
    *,
    runtime_lines: list[str] = (),
    torch_runtime_line: str | None = None,
    tegra: bool = False,
    env: dict[str, str | None] | None = None,
) -> Iterator[RedirectingOpener]:
    """Within: every request of ``ilp`` goes to ``base_url``, and its selection-time probes
    answer as data -- ``runtime_lines``: the CUDA lines (``"cuda13"``) on disk;
    ``torch_runtime_line``: torch's CUDA line (None: no torch); ``tegra``; no Vulkan devices, no
    ROCm torch, no AMD Vulkan ICD. Environment: :data:`_ENV` plus ``env``. Yields the opener."""
    opener = RedirectingOpener(base_url, ilp._URL_OPENER)
    attrs = {
        "_URL_OPENER": opener,
        **_runtime_line_probes(list(runtime_lines)),
        "detect_torch_cuda_runtime_preference": lambda host, **_: ilp.CudaRuntimePreference(
            runtime_line=torch_runtime_line, selection_log=[f"(test) torch runtime_line={torch_runtime_line}"]
        ),
        "_is_tegra": lambda: tegra,
        "_vulkan_gpu_devices": lambda: (),
        "_rocm_torch_preferred": lambda: False,
        "_amd_vulkan_icd_present": lambda: False,
        "_METADATA_MEMO": None,
    }
    with swapped(ilp, attrs, {**_ENV, **(env or {})}):
        yield opener


@contextlib.contextmanager
def released(
    ilp: Any, dist: Path, *, env: dict[str, str | None] | None = None, **server_kw: Any
) -> Iterator[ReleaseServer]:
    """``dist`` served (:class:`ReleaseServer`, ``server_kw``) and ``ilp`` patched to fetch from
    it (:func:`patched_installer`; ``env`` e.g. ``{"UNSLOTH_LLAMA_DISABLE_DOWNLOAD_HOST_RESOLVE":
    "1"}`` for the REST-API path); the server's ``opener`` is the :class:`RedirectingOpener`."""
    with ReleaseServer(dist, **server_kw) as srv, patched_installer(ilp, srv.base_url, env=env) as opener:
        srv.opener = opener  # type: ignore[attr-defined]
        yield srv


# -- a host as data -> the installer's selection --------------------------------------------------


def make_host(ilp: Any, row: dict[str, Any]) -> Any:
    """The installer's ``HostInfo`` for a host row ``{"os": "linux"|"windows"|"macos", "arch": "x64"|
    "arm64", "sms": [121, ...], "driver_cuda": "13.0"|None, "gpu": "intel"|"amd"|None, "gfx": "gfx1100"|absent, ...}``: an
    NVIDIA host (nvidia-smi present, usable GPU) when it has SMs or a driver; SMs as compute
    capabilities ``"121"``; an AMD host with ROCm reporting ``gfx`` when the row has one; a Mac
    (macOS 14.5) for ``os`` macos."""
    os_name, arch = row["os"], row["arch"]
    caps = ilp.normalize_compute_caps([str(s) for s in row.get("sms") or []])
    drv = row.get("driver_cuda")
    driver = tuple(int(x) for x in drv.split(".")[:2]) if drv else None
    nvidia = bool(caps) or driver is not None
    gfx = row.get("gfx")
    machine = {
        ("linux", "x64"): "x86_64",
        ("linux", "arm64"): "aarch64",
        ("windows", "x64"): "AMD64",
        ("windows", "arm64"): "ARM64",
        ("macos", "x64"): "x86_64",
        ("macos", "arm64"): "arm64",
    }[(os_name, arch)]
    return ilp.HostInfo(
        system={"linux": "Linux", "windows": "Windows", "macos": "Darwin"}[os_name],
        machine=machine,
        is_windows=os_name == "windows",
        is_linux=os_name == "linux",
        is_macos=os_name == "macos",
        is_x86_64=arch == "x64",
        is_arm64=arch == "arm64",
        nvidia_smi="/usr/bin/nvidia-smi" if nvidia else None,
        driver_cuda_version=driver,
        compute_caps=list(caps),
        physical_compute_caps=list(caps),
        visible_cuda_devices=None,
        has_physical_nvidia=nvidia,
        has_usable_nvidia=nvidia,
        # probed only without a usable NVIDIA driver (detect_host)
        has_intel_gpu=not nvidia and row.get("gpu") == "intel",
        has_amd_gpu_without_rocm=not nvidia and row.get("gpu") == "amd",
        has_rocm=gfx is not None,
        rocm_gfx_target=gfx,
        rocm_gfx_targets=[gfx] if gfx else [],
        macos_version=(14, 5) if os_name == "macos" else None,
    )


def runtime_lines(ilp: Any, host: Any, row: dict[str, Any]) -> list[str]:
    """The CUDA lines on the host's disk: the row's ``runtime_lines``, or when null every line
    its driver allows (the installer's own ``compatible_*_runtime_lines``; none without one)."""
    if row.get("runtime_lines") is not None:
        return list(row["runtime_lines"])
    if host.driver_cuda_version is None:
        return []
    allowed = ilp.compatible_windows_runtime_lines if host.is_windows else ilp.compatible_linux_runtime_lines
    return list(allowed(host))


def installer_selection(ilp: Any, row: dict[str, Any], release_tag: str) -> tuple[Any, list[Any], str | None]:
    """``select_backend_install(backend=None, llama_tag="latest", published_repo=REPO,
    published_release_tag=release_tag, host=<row>)`` with the row's runtime lines, inside
    :func:`released`. Returns ``(selection, attempts, None)`` -- ``attempts``: the
    ``AssetChoice``\\ s of every release plan, in the installer's order -- or ``(None, [],
    reason)`` when the installer finds no prebuilt (``PrebuiltFallback``: it would build from
    source)."""
    assert isinstance(ilp._URL_OPENER, RedirectingOpener), "select only inside installerkit.released()"
    host = make_host(ilp, row)
    lines = runtime_lines(ilp, host, row)
    with swapped(ilp, _runtime_line_probes(lines)):
        try:
            sel = ilp.select_backend_install(
                backend=None, llama_tag="latest", published_repo=REPO, published_release_tag=release_tag, host=host
            )
            attempts = [a for plan in sel.release_plans for a in plan.attempts]  # plans are lazy
        except ilp.PrebuiltFallback as e:
            return None, [], str(e).splitlines()[0] if str(e) else type(e).__name__
    return sel, attempts, None if attempts else "no attempts"


def installer_choice(ilp: Any, row: dict[str, Any], release_tag: str) -> dict[str, Any]:
    """What the installer picks for host ``row`` from the release being served:
    ``{"choice": asset name | None, "install_kind": str | None, "attempts": [asset names]}``
    (None/None/[] when it finds no prebuilt and would build from source;
    :func:`installer_selection` says why)."""
    _sel, attempts, _why = installer_selection(ilp, row, release_tag)
    return {
        "choice": attempts[0].name if attempts else None,
        "install_kind": attempts[0].install_kind if attempts else None,
        "attempts": [a.name for a in attempts],
    }


# -- the installer's verification -----------------------------------------------------------------


def verify_download(ilp: Any, url: str, sha256: str, dest: Path) -> str:
    """Fetch ``url`` to ``dest`` through the installer's ``download_file_verified`` against
    ``sha256`` (raises ``ilp.PrebuiltFallback`` on a mismatch, after one retry); the sha256 of
    what landed."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    ilp.download_file_verified(url, dest, expected_sha256=sha256, label=f"test {dest.name}")
    return sha256_file(dest)


def source_archive(ilp: Any, plan: Any) -> dict[str, Any]:
    """The source archive the installer hydrates for release plan ``plan``
    (``preferred_source_archive`` + ``exact_source_asset_url``): ``{"exact": bool, "repo",
    "ref", "asset": name | None, "sha256", "url": release-asset URL | None}``."""
    repo, ref, archive, exact = ilp.preferred_source_archive(plan.approved_checksums, plan.llama_tag)
    url = ilp.exact_source_asset_url(plan.approved_checksums, repo, archive, exact, plan.release_tag)
    return {
        "exact": exact,
        "repo": repo,
        "ref": ref,
        "asset": archive.asset_name if archive else None,
        "sha256": archive.sha256 if archive else None,
        "url": url,
    }


def backfill_after_install(ilp: Any, rows: list[dict], served: Any, tmp_path: Path) -> dict[str, bool]:
    """Each distinct chosen bundle installed by the installer; then, for each, whether the
    installer's next run would download and extract it again to backfill the DiffusionGemma
    visual server (``diffusion_visual_server_backfill_needed``: a published bundle of the fork
    whose install lacks ``llama-diffusion-gemma-visual-server``)."""
    out: dict[str, bool] = {}
    for row in rows:
        _sel, attempts, _why = installer_selection(ilp, row, served.release_tag)
        if not attempts or attempts[0].name in out:
            continue
        choice, host = attempts[0], make_host(ilp, row)
        stage, work = tmp_path / choice.name / "stage", tmp_path / choice.name / "work"
        work.mkdir(parents=True)
        ilp.install_from_archives(choice, host, stage, work)
        out[choice.name] = ilp.diffusion_visual_server_backfill_needed(stage, host, choice)
    return out
