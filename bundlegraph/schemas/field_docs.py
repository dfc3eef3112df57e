"""One sentence per field of the spec formats, for the JSON Schemas editors validate with as you
type (``bundlegraph schema``; a test checks every property has one). Keyed ``Model.field``.
The models' docstrings say the same in prose; the rules that need more than one field are the
validation's (:mod:`bundlegraph.schemas.validation`)."""

from __future__ import annotations

from typing import Any

_PIN = {
    "commit": "the 40-hex upstream commit the source is (llama.cpp's build number and the release's source commit)",
    "commit_date": "the commit's date (archive timestamps)",
    "subdirectory": "the llama.cpp tree inside the fetched source (e.g. vendor/llama.cpp of a Python sdist)",
}

FIELD_DOCS: dict[str, str] = {
    "BundleSpec.id": "the leg's id; must equal the file name stem (windows-arm64-cuda13-portable)",
    "BundleSpec.os": "target operating system: windows or linux",
    "BundleSpec.arch": "target CPU architecture: x64 or arm64",
    "BundleSpec.backend": "cpu, or cuda (then a [cuda] table and profile.line are required)",
    "BundleSpec.install_kind": "what an installer asks for (windows-arm64-cuda, linux-cuda, ...): one the installer knows",
    "BundleSpec.promised": "the publish gate requires this leg's bundle (default true)",
    "BundleSpec.runner": "the CI runner label the leg's job runs on (windows-2022, ubuntu-24.04)",
    "BundleSpec.compile_runner": (
        "the CI runner label the leg compiles on when that is not runner: its build "
        "output is handed over as artifact built-<id> and imported on runner (doit built=DIR)"
    ),
    "BundleSpec.smoke": "[smoke] waived = why the bundle may be published without a passed smoke (no runner starts it)",
    "SmokeSpec.waived": "why no runner of the release can start this bundle (publish refuses an unsmoked bundle otherwise)",
    "BundleSpec.signing": "Authenticode signing: none, optional (unsigned if no signer is set) or required",
    "BundleSpec.toolchain": "the toolchain that compiles the leg (see bundlegraph/toolchains)",
    "BundleSpec.profile": "what an installer chooses by: name, line, klass, rank",
    "BundleSpec.cuda": "CUDA version, archs and toolkit of a cuda leg",
    "BundleSpec.cmake": "CMake cache entries for the configure (NAME = true/false/number/text); a key the project "
    "does not use fails the configure",
    "BundleSpec.build": "what the build compiles",
    "BundleSpec.required": "file names (globs) the bundle must hold; verify refuses a bundle without them",
    "BundleSpec.merge": "a backend-only leg: the CPU leg whose bundle it is merged into",
    "BundleSpec.package": "which built files go into the bundle",
    "BundleSpec.runtime": "runtime files shipped in the bundle, declared external, or paired as separate assets",
    "BundleSpec.linux": "the glibc and libstdc++ floors every ELF file must keep (Linux legs)",
    "Profile.name": "the profile in the bundle name (cuda13-portable, cpu)",
    "Profile.line": "CUDA runtime line (cuda12/cuda13) of a cuda leg; must match cuda.version's major",
    "Profile.klass": "coverage class: older/newer/portable/legacy/blackwell/cpu",
    "Profile.rank": "an integer 0-1000; lower wins a tie between bundles of the same SM span",
    "CudaSpec.version": "the CUDA toolkit version major.minor (13.4)",
    "CudaSpec.archs": "GPU archs in CMake form (120, 120a, 86-real, 75-virtual); each must be buildable with version",
    "CudaSpec.toolkit": "where the toolkit comes from and its components",
    "ToolkitSpec.source": "redist (NVIDIA's archives), wheels (NVIDIA's PyPI wheels) or host (already installed)",
    "ToolkitSpec.manifest": "redist: the redistrib_<label>.json label (13.4.2); its major.minor must be cuda.version",
    "ToolkitSpec.lock": "wheels: the lock file (bundles/locks/...) pinning each wheel by sha256",
    "ToolkitSpec.path": "host: the toolkit root (default CUDA_PATH, else /usr/local/cuda)",
    "ToolkitSpec.host": "components that run on the build machine (nvcc, crt, nvvm, cccl)",
    "ToolkitSpec.target": "components linked into the output (cudart, cublas)",
    "ToolkitSpec.host_platform": "NVIDIA's platform key of the build machine (default: the toolchain's)",
    "ToolkitSpec.target_platform": "NVIDIA's platform key of the target libraries (windows-arm64, linux-sbsa)",
    "BuildSpec.targets": "the CMake targets built (empty: all)",
    "BuildSpec.shards": (
        "CI jobs the compile is spread over (1-32, default 1): each shard compiles a cost-balanced "
        "slice of the targets' compile steps into the compiler cache; one final compile links"
    ),
    "MergeSpec.base": "the id of the CPU leg (same os and arch) whose packaged bundle this backend joins",
    "MergeSpec.prefer": "which file wins when base and backend hold different files of one name: error, base or backend",
    "PackageSpec.keep": "globs of built files to pack (default: all)",
    "PackageSpec.exclude": "globs of built files never packed",
    "LinuxSpec.glibc_floor": "the highest GLIBC_x.y version any ELF file may need (2.36)",
    "LinuxSpec.glibcxx_floor": "the highest GLIBCXX_x.y.z version any ELF file may need (3.4.30)",
    "RuntimeSpec.ships": "runtime files copied into the bundle (from the toolkit or the toolchain's redist)",
    "RuntimeSpec.external": "libraries the bundle imports but does not ship (the installer provides them)",
    "RuntimeSpec.paired": "upstream assets published beside the bundle and hashed in the SHA index",
    "ShippedRuntime.name": "the file's name in the bundle (cudart64_13.dll)",
    "ShippedRuntime.from": "toolkit or toolchain",
    "ShippedRuntime.path": "toolkit: the file's path under the toolkit prefix (bin/arm64/cudart64_13.dll)",
    "PairedAsset.name": "the asset's file name (cudart-llama-bin-win-cuda-13.4-arm64.zip)",
    "PairedAsset.sha256": "its sha256 when pinned (else hashed from a local copy or the upstream release)",
    "PairedAsset.url": "where to fetch it when the upstream release does not list it",
    "Release.tag": "the release tag (b11642-mix-0c1e570): the GitHub release and the SHA index's release_tag",
    "Release.upstream_tag": "llama.cpp's build tag of the pinned commit (b11642); tag must begin with it",
    "Release.source_repo": "the upstream repository the source comes from (owner/name)",
    "Release.paired_runtime_tag": "the upstream release whose paired runtime assets are hashed",
    "Release.bundle_prefix": "the bundle name prefix (app): <prefix>-<tag>-<os>-<arch>-<profile>",
    "Release.info_file": "the info JSON's name inside every bundle",
    "Release.default_legs": "the legs a bare doit builds (the main job)",
    "Release.source": "the llama.cpp source pin (git, tarball, pip-sdist or path)",
    "GitPin.kind": "git",
    "GitPin.url": "the git URL",
    "TarballPin.kind": "tarball",
    "TarballPin.url": "the archive's URL",
    "TarballPin.sha256": "the archive's sha256",
    "PipSdistPin.kind": "pip-sdist",
    "PipSdistPin.requirement": "the sdist requirement (llama-cpp-python==0.3.36)",
    "PipSdistPin.sha256": "the sdist's sha256",
    "PathPin.kind": "path",
    "PathPin.path": "a local directory (relative to the bundles directory)",
    **{f"{m}.{k}": v for m in ("GitPin", "TarballPin", "PipSdistPin", "PathPin") for k, v in _PIN.items()},
}


def add_descriptions(schema: dict[str, Any], root_title: str) -> dict[str, Any]:
    """Fill every property's ``description`` from :data:`FIELD_DOCS` (in place; returns it)."""

    def fill(model: str, node: dict[str, Any]) -> None:
        for name, prop in node.get("properties", {}).items():
            doc = FIELD_DOCS.get(f"{model}.{name}")
            if doc and "description" not in prop:
                prop["description"] = doc

    fill(root_title, schema)
    for name, node in schema.get("$defs", {}).items():
        fill(name, node)
    return schema
