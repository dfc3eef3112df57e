#!/bin/bash
# Issue 52 item 4 with every binary built on the 2-core machine and carried to the GPU machine (no
# build there: its time is scarce). One call per part, in quick succession (a warm machine keeps
# what earlier calls left outside the checkout):
#   prepare FILE...   (here) .carry/c<N>/: each FILE into local/ (split in 50 MB pieces, joined there),
#                     numpy + PyYAML wheels for the GPU machine's Python 3.12 into whl/, and
#                     local/gguf.tar.gz (gguf-py and the llama vocabulary from the cached llama.cpp
#                     source, for the bench models); parts of at most 58 MB, one call each
#   stash PART        copy the carried .carry/PART/ into $STASH (default /root/stash)
#   build-ref13       (there) build the CUDA 13 reference on the GPU machine's 16 cores, where a
#                     build takes minutes, not the 2-core machine's hour: $STASH/local/llama-src.tar.xz
#                     (the pinned llama.cpp tree, without models/ and docs/) configured with
#                     $STASH/local/ref13-flags.txt (the flags bench/reference_build.py derived from
#                     upstream's release.yml for linux-x64-cuda13-portable, its toolchain file left
#                     out) and the machine's CUDA 13.0 nvcc and GCC; its bin/ becomes the ref13 side
#   bench OUT PAIRS   set up (the Vulkan loader .debs, numpy + PyYAML for gguf-py unpacked into a
#                     private folder), write the two bench models (bundlegraph.pipeline.smoke.tinygguf),
#                     then bench/gpu_speed_table.py over PAIRS (vk vkdeg line ref12 cu12), whose
#                     sides are the carried builds:
#                       $STASH/local/app-*-linux-x64-vulkan.tar.gz           the leg's bundle (full shaders)
#                       $STASH/local/vkref.tar.xz                          upstream's ubuntu-vulkan flags (bin/)
#                       $STASH/local/app-*-linux-x64-cuda13-portable*.tar.gz + cudart135.tar.xz (13.5's cudart;
#                                                                          cuBLAS is the machine's 13.0)
#                       $STASH/local/app-*-cuda12-newer*.tar.gz.part-*      the cuda12 leg (joined here)
#                       $STASH/local/ref12.tar.xz                          a CUDA 12.4 build with upstream's 12.8 flags
#                       $STASH/local/ref13.tar.xz                          a build with upstream's CUDA 13 flags and the
#                                                                          leg's own toolkit (bench/reference_build.py)
#                       $STASH/cu12/cu12rt.tar.xz.part-*                   CUDA 12.4's cudart + cuBLAS
# The bench modules (tinygguf, bench, gpu_speed_table) use the standard library only (tinygguf: numpy
# and the source's gguf-py); they are loaded by file, without bundlegraph's package __init__, which
# imports the whole house and wheels the GPU machine lacks.
set -uo pipefail
MODE="${1:?stash|bench}"
S="${STASH:-/root/stash}" B="${BG_ROOT:-/root/bgc}"
if [ "$MODE" = prepare ]; then  # here, on the 2-core machine
  . bench/device_parts.sh
  shift; rm -rf .carry/c* .carry/stage && mkdir -p .carry/stage/local .carry/stage/whl || exit 2
  grep -qx '/.carry/' .gitignore .git/info/exclude 2>/dev/null || echo '/.carry/' >> .git/info/exclude
  for f in "$@"; do
    if [ "$(stat -c %s "$f")" -gt 50000000 ]; then split -b 50000000 "$f" ".carry/stage/local/$(basename "$f").part-"
    else cp "$f" .carry/stage/local/; fi
  done
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    -d .carry/stage/whl "numpy<2.3" PyYAML || exit 3
  T=$(ls -d "${BUNDLEGRAPH_CACHE:-$HOME/.cache/bundlegraph}"/sources/*/tree/vendor/llama.cpp 2>/dev/null | head -1)
  [ -n "$T" ] || { echo "no cached llama.cpp source: run a leg's source task first"; exit 4; }
  tar -C "$T" -czf .carry/stage/local/gguf.tar.gz gguf-py models/ggml-vocab-llama-spm.gguf || exit 5
  pack_parts .carry/stage 58000000 c && du -sh .carry/c*; exit 0
fi
if [ "$MODE" = stash ]; then
  PART="${2:?PART}"; mkdir -p "$S" && cp -r ".carry/$PART/." "$S/" || exit 2
  du -sh "$S"; exit 0
fi
if [ "$MODE" = build-ref13 ]; then
  R=$B/ref13src && rm -rf "$R" && mkdir -p "$R" "$B/u/ref13" || exit 2
  tar -C "$R" -xJf "$S/local/llama-src.tar.xz" || exit 3
  mapfile -t FLAGS < "$S/local/ref13-flags.txt"
  t0=$(date +%s)
  cmake -S "$R" -B "$R/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc \
    "${FLAGS[@]}" > "$B/ref13-configure.log" 2>&1 || { tail -30 "$B/ref13-configure.log"; exit 4; }
  grep -E "CUDA Toolkit|compiler identification|GGML_CUDA|CUB" "$B/ref13-configure.log" | head -12
  cmake --build "$R/build" --target llama-bench ggml-cuda ggml-cpu -j "$(nproc)" > "$B/ref13-build.log" 2>&1 \
    || { tail -30 "$B/ref13-build.log"; exit 5; }
  rm -rf "$B/u/ref13/bin" && cp -a "$R/build/bin" "$B/u/ref13/bin" && ls "$B/u/ref13/bin" | head -20
  echo "ref13 built in $(( $(date +%s) - t0 )) s ($(nproc) jobs)"; exit 0
fi
OUT="${2:?OUT}"; PAIRS="${3:-vk vkdeg line ref12 cu12 ref13}"
mkdir -p "$B" "$OUT" || exit 2
for f in "$S"/gl/*.deb; do dpkg -x "$f" /; done; ldconfig
SITE=$B/site; if [ ! -d "$SITE/numpy" ]; then
  mkdir -p "$SITE" && for w in "$S"/whl/*.whl; do python3 -m zipfile -e "$w" "$SITE" || exit 3; done
fi
LITE=$B/lite.py; cat > "$LITE" <<'PY'
"""Run a bench module of the checkout at argv[1] by file, its packages as bare namespaces."""
import runpy, sys, types
root, target = sys.argv[1], sys.argv[2]
for name in ("bundlegraph", "bundlegraph.pipeline", "bundlegraph.pipeline.smoke"):
    m = types.ModuleType(name)
    m.__path__ = [f"{root}/{name.replace('.', '/')}"]
    sys.modules[name] = m
sys.path.insert(0, root)
sys.argv = [target, *sys.argv[3:]]
if target.endswith(".py"):
    runpy.run_path(target, run_name="__main__")
else:
    runpy.run_module(target, run_name="__main__")
PY
U=$B/u && mkdir -p "$U"
unpack() {  # unpack ARCHIVE DIR: a bundle with llama-bench at its top
  [ -x "$2/llama-bench" ] && return 0
  rm -rf "$2" && mkdir -p "$2" && tar -C "$2" -xf "$1" || return 1
  [ -x "$2/llama-bench" ] || { x=$(dirname "$(ls "$2"/*/llama-bench | head -1)"); mv "$x"/* "$2"/; }
}
for f in "$S"/local/*.tar.gz.part-aa; do [ -f "$f" ] && [ ! -f "${f%.part-aa}" ] && cat "${f%aa}"* > "${f%.part-aa}"; done
pick() { ls $1 2>/dev/null | head -1; }
VKB=$(pick "$S/local/app-*-linux-x64-vulkan.tar.gz"); [ -n "$VKB" ] && { unpack "$VKB" $U/vk || exit 6; }
CU13B=$(pick "$S/local/app-*-linux-x64-cuda13-portable*.tar.gz"); [ -n "$CU13B" ] && { unpack "$CU13B" $U/cu13 || exit 6; }
CU12B=$(pick "$S/local/app-*-linux-x64-cuda12-newer*.tar.gz"); [ -n "$CU12B" ] && { unpack "$CU12B" $U/cu12 || exit 6; }
[ -f "$S/local/vkref.tar.xz" ] && [ ! -x $U/vkref/bin/llama-bench ] && { mkdir -p $U/vkref && tar -C $U/vkref -xJf "$S/local/vkref.tar.xz"; }
[ -f "$S/local/ref12.tar.xz" ] && [ ! -x $U/ref12/bin/llama-bench ] && { mkdir -p $U/ref12 && tar -C $U/ref12 -xJf "$S/local/ref12.tar.xz"; }
[ -f "$S/local/ref13.tar.xz" ] && [ ! -x $U/ref13/bin/llama-bench ] && { mkdir -p $U/ref13 && tar -C $U/ref13 -xJf "$S/local/ref13.tar.xz"; }
RT13=$B/rt13; [ -f "$S/local/cudart135.tar.xz" ] && { mkdir -p $RT13 && tar -C $RT13 -xJf "$S/local/cudart135.tar.xz"; }
RT12=$B/rt12; if ls "$S"/cu12/cu12rt.tar.xz.part-* >/dev/null 2>&1 && [ ! -f $RT12/.done ]; then
  mkdir -p $RT12 && cat "$S"/cu12/cu12rt.tar.xz.part-* | tar -C $RT12 -xJf - && touch $RT12/.done || exit 6
fi
SRC=$B/src && mkdir -p $SRC && tar -C $SRC -xzf "$S/local/gguf.tar.gz" || exit 7
M=$B/models && mkdir -p $M
for shape in dense-1b moe; do
  [ -f $M/bench-$shape.gguf ] || PYTHONPATH=$SITE python3 "$LITE" "$PWD" bundlegraph.pipeline.smoke.tinygguf \
    --gguf-py $SRC/gguf-py --vocab $SRC/models/ggml-vocab-llama-spm.gguf --out $M/bench-$shape.gguf --shape $shape || exit 8
done
ls -la $M
ICD=$(ls /usr/share/vulkan/icd.d/nvidia_icd.json /etc/vulkan/icd.d/nvidia_icd.json /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json 2>/dev/null | head -1)
VKE="VK_DRIVER_FILES=$ICD,VK_ICD_FILENAMES=$ICD,GGML_VK_VISIBLE_DEVICES=0"
DEG="$VKE,GGML_VK_DISABLE_COOPMAT=1,GGML_VK_DISABLE_COOPMAT2=1,GGML_VK_DISABLE_INTEGER_DOT_PRODUCT=1,GGML_VK_DISABLE_BFLOAT16=1"
CU13LIB=$RT13:/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib
R12LIB=$(dirname "$(find $RT12 -name 'libcublas.so.12*' 2>/dev/null | head -1)")
pairs=()
for p in $PAIRS; do
  case $p in
  vk) [ -x $U/vkref/bin/llama-bench ] && pairs+=(--pair "vulkan (full shaders) vs reference (ubuntu-vulkan flags)|$U/vk|$U/vkref/bin|$VKE|$VKE") ;;
  vkdeg) [ -x $U/vkref/bin/llama-bench ] && pairs+=(--pair "vulkan (degraded: no coopmat, coopmat2, int-dot, bf16) vs reference|$U/vk|$U/vkref/bin|$DEG|$VKE") ;;
  line) [ -x $U/cu12/llama-bench ] && [ -x $U/cu13/llama-bench ] && pairs+=(--pair "cuda13-portable vs the release's CUDA 12 bundle (cuda12-newer)|$U/cu13|$U/cu12|LD_LIBRARY_PATH=$CU13LIB|LD_LIBRARY_PATH=$R12LIB") ;;
  ref12) [ -x $U/ref12/bin/llama-bench ] && [ -x $U/cu13/llama-bench ] && pairs+=(--pair "cuda13-portable vs CUDA 12 build (12.8 flags, CUDA 12.4)|$U/cu13|$U/ref12/bin|LD_LIBRARY_PATH=$CU13LIB|LD_LIBRARY_PATH=$R12LIB") ;;
  ref13) [ -x $U/ref13/bin/llama-bench ] && [ -x $U/cu13/llama-bench ] && pairs+=(--pair "cuda13-portable vs reference (upstream's CUDA 13 flags: ref13.tar.xz built with the leg's toolkit, or build-ref13's with the machine's)|$U/cu13|$U/ref13/bin|LD_LIBRARY_PATH=$CU13LIB|LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib") ;;
  cu12) [ -x $U/ref12/bin/llama-bench ] && [ -x $U/cu12/llama-bench ] && pairs+=(--pair "cuda12-newer vs reference (12.8 flags, CUDA 12.4)|$U/cu12|$U/ref12/bin|LD_LIBRARY_PATH=$R12LIB|LD_LIBRARY_PATH=$R12LIB") ;;
  esac
done
[ ${#pairs[@]} -gt 0 ] || { echo "no pair to measure"; exit 9; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee "$OUT/gpu.txt"
tag=$(echo "$PAIRS" | tr ' ' '-')
python3 "$LITE" "$PWD" bench/gpu_speed_table.py --models $M --out "$OUT/table-$tag.json" "${pairs[@]}" 2>&1 | tee "$OUT/table-$tag.md"
