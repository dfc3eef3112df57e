#!/bin/bash
# Issue 52 item 4, on the GPU machine, once the parts of bench/device_speed_prepare.sh are stashed in
# $STASH (bench/device_toolchain_stash.sh PART, one call per part):
#   start OUT   set up, then build detached with the release's pipeline (doit, the pinned compiler
#               from the stashed .debs, sm_90 local builds merged onto the carried linux-x64-cpu
#               bundle with artifacts=), in two work directories at once:
#               W13: the machine's CUDA 13.0 as the local toolkit: package:linux-x64-cuda13-portable,
#                    package:linux-x64-vulkan and smoke:reference-linux-x64-vulkan (upstream's
#                    ubuntu-vulkan flags, the leg's SDK); BG_REF13=1 adds
#                    smoke:reference-linux-x64-cuda13-portable (upstream's 13.x flags, same toolkit)
#               W12: the carried CUDA 12.4 toolkit: package:linux-x64-cuda12-newer (CUB 3.2 on) and,
#                    beside it, the CUDA 12 reference (upstream's 12.8 flags: bench/reference_build.py)
#               then watches WATCH_S (default 520 s). BG_NO_BUILD=1 builds nothing (the pairs of carried
#               builds only: cu12); BG_NO_CU12=1 skips W12 (the CUDA 12 reference then
#               comes carried from here: bench/device_speed_prepare.sh bench); BG_NO_CU12_LEG=1 builds only
#               the reference there (the cuda12 leg's bundle then comes carried, in $STASH/local)
#   watch OUT   watch again until both say done
#   bench OUT   the bench models, then bench/gpu_speed_table.py over the pairs BG_PAIRS names
#               (line vk vkdeg vkself ref12 cu12 ref13; default: every pair whose sides are here)
# Results under OUT: doit-13.log, doit-12.log, table-*.json/.md, gpu.txt.
set -uo pipefail
MODE="${1:?start|watch|bench}"; OUT="${2:?OUT}"
S="${STASH:-/root/stash}"
B="${BG_ROOT:-/root/bgs}"
C=$B/cache P=$B/code W13=$B/w13 W12=$B/w12 K=$B/ct12
PY="${PY:-python3}"
ICD=$(ls /usr/share/vulkan/icd.d/nvidia_icd.json /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json /etc/vulkan/icd.d/nvidia_icd.json 2>/dev/null | head -1)
setup_loader() { for f in "$S"/gl/*.deb; do dpkg -x "$f" /; done; ldconfig; }
done_both() { grep -q done "$W13/doit.rc" 2>/dev/null && grep -q done "$W12/doit.rc" 2>/dev/null; }
if [ "$MODE" = start ]; then
  . bench/device_parts.sh  # SDIST
  rm -rf "$W13" "$W12" "$P" "$K" && mkdir -p "$C/blobs/sha256" "$W13" "$W12" "$P" "$K" || exit 2
  unstash "$S" "$C" "$B/site" || exit $?
  cp -r bundlegraph dodo.py pyproject.toml bundles bench "$P/" || exit 5
  cp -r bundles "$P/bundles12"
  rm -f "$P"/bundles/*-cuda12-*.toml  # W13's toolkit is CUDA 13.0: a cuda12 leg is refused as a local override
  # the CUDA 12.4 toolkit: compile parts, then the runtime into its lib/ (with the link names CMake looks for)
  if [ -f "$S/cu12/ct12.tar.xz" ]; then
    tar -C "$K" -xJf "$S/cu12/ct12.tar.xz" || exit 6
    L=$K/ct12/targets/x86_64-linux/lib
  else  # no CUDA 12 toolkit carried: its runtime alone, for the CUDA 12 builds carried from here
    L=$K/rt12; mkdir -p "$L"; BG_NO_CU12=1
  fi
  cat "$S"/cu12/cu12rt.tar.xz.part-* | tar -C "$L" -xJf - || exit 6
  ln -sf libcublas.so.12 "$L/libcublas.so"; ln -sf libcublasLt.so.12 "$L/libcublasLt.so"
  setup_loader
  echo "host: $(. /etc/os-release; echo "$PRETTY_NAME"), $(nproc) cores, $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader), ICD ${ICD:-none}"
  # the toolkit's own CCCL: ggml takes CUB's top-k only from CCCL 3.2 on (top-k.cu)
  echo "toolkit CCCL: $(grep -rhs 'define CCCL_VERSION ' /usr/local/cuda/include/ | head -1)"
  REF13=""; [ -n "${BG_REF13:-}" ] && REF13="smoke:reference-linux-x64-cuda13-portable"
  VKREF="smoke:reference-linux-x64-vulkan"; [ -n "${BG_NO_VKREF:-}" ] && VKREF=""
  VK="package:linux-x64-vulkan"; [ -n "${BG_NO_VK:-}" ] && VK="" VKREF=""
  common="export PYTHONPATH=$B/site:$P PYTHONUNBUFFERED=1 BUNDLEGRAPH_CACHE=$C BUNDLEGRAPH_JOBS=16 \
BUNDLEGRAPH_CMAKE=$(command -v cmake) BUNDLEGRAPH_NINJA=$(command -v ninja) BUNDLEGRAPH_LAUNCHER=none \
BUNDLEGRAPH_ARTIFACTS=$S/local BUNDLEGRAPH_ARCHS=90"
  cat > "$B/job13.sh" <<EOF
$common BUNDLEGRAPH_WORKDIR=$W13 BUNDLEGRAPH_BUNDLES=$P/bundles BUNDLEGRAPH_VULKAN_ICD=$ICD BUNDLEGRAPH_TOOLKIT_SOURCE=host:/usr/local/cuda
cd $W13; t0=\$(date +%s)
$PY -m doit -f $P/dodo.py -n 3 -P thread package:linux-x64-cuda13-portable $VK $VKREF $REF13 > $W13/doit.log 2>&1
echo "doit \$? \$(( \$(date +%s) - t0 ))" >> $W13/doit.rc; echo done >> $W13/doit.rc
EOF
  cat > "$B/job12.sh" <<EOF
$common BUNDLEGRAPH_WORKDIR=$W12 BUNDLEGRAPH_BUNDLES=$P/bundles12 BUNDLEGRAPH_ONLY_LEG=linux-x64-cuda12-newer BUNDLEGRAPH_TOOLKIT_SOURCE=host:$K/ct12
cd $W12; t0=\$(date +%s)
$PY -m doit -f $P/dodo.py configure:linux-x64-cuda12-newer > $W12/doit-configure.log 2>&1
$PY $P/bench/reference_build.py linux-x64-cuda12-newer --sm 90 --out $W12/ref12 --jobs 16 > $W12/ref12.log 2>&1 &
if [ -z "${BG_NO_CU12_LEG:-}" ]; then
  $PY -m doit -f $P/dodo.py package:linux-x64-cuda12-newer > $W12/doit.log 2>&1
  echo "doit \$? \$(( \$(date +%s) - t0 ))" >> $W12/doit.rc
fi
wait; echo "ref12 \$(tail -1 $W12/ref12.log) \$(( \$(date +%s) - t0 ))" >> $W12/doit.rc; echo done >> $W12/doit.rc
EOF
  if [ -n "${BG_NO_BUILD:-}" ]; then echo "skipped (BG_NO_BUILD)" > "$W13/doit.rc"; echo done >> "$W13/doit.rc"
  else ( setsid nohup bash "$B/job13.sh" > "$W13/job.out" 2>&1 < /dev/null & ); fi
  if [ -n "${BG_NO_CU12:-}" ]; then echo "skipped (BG_NO_CU12)" > "$W12/doit.rc"; echo done >> "$W12/doit.rc"
  else ( setsid nohup bash "$B/job12.sh" > "$W12/job.out" 2>&1 < /dev/null & ); fi
fi
if [ "$MODE" = start ] || [ "$MODE" = watch ]; then
  end=$(( $(date +%s) + ${WATCH_S:-520} ))
  while [ $(date +%s) -lt $end ] && ! done_both; do sleep 10; done
  for w in 13 12; do
    echo "== W$w"; grep -E "^\.  |done in|FAILED|ERROR|error:|refused" "$B/w$w/doit.log" 2>/dev/null | tail -25
    cp "$B/w$w/doit.log" "$OUT/doit-$w.log" 2>/dev/null; cat "$B/w$w/doit.rc" 2>/dev/null
  done
  if done_both; then echo "done"; else echo "still running; call watch again"; fi
  exit 0
fi
# bench
setup_loader
export PYTHONPATH=$B/site:$P
U=$B/unpacked && mkdir -p $U
unpack() {  # unpack ARCHIVE DIR: a bundle (or a tree) with llama-bench at its top
  [ -x "$2/llama-bench" ] && return 0
  rm -rf "$2" && mkdir -p "$2" && tar -C "$2" -xf "$1" || return 1
  [ -x "$2/llama-bench" ] || { x=$(dirname "$(ls "$2"/*/llama-bench | head -1)"); mv "$x"/* "$2"/; }
}
CU13B=$(ls "$W13"/dist/app-*-linux-x64-cuda13-portable*.tar.gz 2>/dev/null); [ -n "$CU13B" ] && { unpack "$CU13B" $U/cu13 || exit 6; }
VKB=$(ls "$W13"/dist/app-*-linux-x64-vulkan.tar.gz 2>/dev/null); [ -n "$VKB" ] && { unpack "$VKB" $U/vk || exit 6; }
# the cuda12 leg's bundle: built there (W12) or carried from here (in pieces)
for f in "$S"/local/*.tar.gz.part-aa; do [ -f "$f" ] && [ ! -f "${f%.part-aa}" ] && cat "${f%aa}"* > "${f%.part-aa}"; done
CU12B=$(ls "$W12"/dist/app-*-linux-x64-cuda12-newer*.tar.gz "$S"/local/app-*-linux-x64-cuda12-newer*.tar.gz 2>/dev/null | head -1)
[ -n "$CU12B" ] && { unpack "$CU12B" $U/cu12 || exit 6; }
# the CUDA 12 reference: built there (W12) or carried from here (bench/device_speed_prepare.sh bench)
if [ -x $W12/ref12/reference/cmake/bin/llama-bench ]; then mkdir -p $U/ref12 && ln -sfn $W12/ref12/reference/cmake/bin $U/ref12/bin
elif [ -f "$S/local/ref12.tar.xz" ] && [ ! -x $U/ref12/bin/llama-bench ]; then mkdir -p $U/ref12 && tar -C $U/ref12 -xJf "$S/local/ref12.tar.xz"; fi
SRCT=$(ls -d "$C"/sources/*/tree/vendor/llama.cpp 2>/dev/null | head -1)
if [ -z "$SRCT" ]; then  # nothing was built here (BG_NO_BUILD): gguf-py and the vocabulary from the stashed sdist
  . bench/device_parts.sh  # SDIST
  mkdir -p "$C/sources/bench/tree" && tar -C "$C/sources/bench/tree" -xzf "$C/blobs/sha256/$SDIST" --strip-components=1 \
    --wildcards '*/vendor/llama.cpp/gguf-py/*' '*/vendor/llama.cpp/models/ggml-vocab-llama-spm.gguf' || exit 7
  SRCT=$C/sources/bench/tree/vendor/llama.cpp
fi
M=$B/models && mkdir -p $M
for shape in dense-1b moe; do
  [ -f $M/bench-$shape.gguf ] || $PY -m bundlegraph.pipeline.smoke.tinygguf --gguf-py "$SRCT/gguf-py" \
      --vocab "$SRCT/models/ggml-vocab-llama-spm.gguf" --out $M/bench-$shape.gguf --shape $shape || exit 8
done
CU13LIB=/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib
RT12=$K/ct12/targets/x86_64-linux/lib; [ -d "$RT12" ] || RT12=$K/rt12
VKE="VK_DRIVER_FILES=$ICD,VK_ICD_FILENAMES=$ICD,GGML_VK_VISIBLE_DEVICES=0"
DEG="$VKE,GGML_VK_DISABLE_COOPMAT=1,GGML_VK_DISABLE_COOPMAT2=1,GGML_VK_DISABLE_INTEGER_DOT_PRODUCT=1,GGML_VK_DISABLE_BFLOAT16=1"
R13=$W13/build/linux-x64-cuda13-portable/smoke-tools/reference/cmake/bin
RVK=$W13/build/linux-x64-vulkan/smoke-tools/reference/cmake/bin
pairs=()
for p in ${BG_PAIRS:-line vk vkdeg ref12 cu12 ref13}; do
  case $p in
  line) [ -x $U/cu12/llama-bench ] && [ -x $U/cu13/llama-bench ] && pairs+=(--pair "cuda13-portable vs the release's CUDA 12 bundle (cuda12-newer)|$U/cu13|$U/cu12|LD_LIBRARY_PATH=$CU13LIB|LD_LIBRARY_PATH=$RT12") ;;
  vk) [ -x $RVK/llama-bench ] && pairs+=(--pair "vulkan (full shaders) vs reference (ubuntu-vulkan flags)|$U/vk|$RVK|$VKE|$VKE") ;;
  vkdeg) [ -x $RVK/llama-bench ] && pairs+=(--pair "vulkan (degraded: no coopmat, coopmat2, int-dot, bf16) vs reference|$U/vk|$RVK|$DEG|$VKE") ;;
  vkself) [ -x $U/vk/llama-bench ] && pairs+=(--pair "vulkan degraded (no coopmat, coopmat2, int-dot, bf16) vs the same bundle with full shaders|$U/vk|$U/vk|$DEG|$VKE") ;;
  ref12) [ -x $U/ref12/bin/llama-bench ] && [ -x $U/cu13/llama-bench ] && pairs+=(--pair "cuda13-portable vs CUDA 12 build (12.8 flags, CUDA 12.4)|$U/cu13|$U/ref12/bin|LD_LIBRARY_PATH=$CU13LIB|LD_LIBRARY_PATH=$RT12") ;;
  cu12) [ -x $U/ref12/bin/llama-bench ] && [ -x $U/cu12/llama-bench ] && pairs+=(--pair "cuda12-newer vs reference (12.8 flags, CUDA 12.4)|$U/cu12|$U/ref12/bin|LD_LIBRARY_PATH=$RT12|LD_LIBRARY_PATH=$RT12") ;;
  ref13) [ -x $R13/llama-bench ] && pairs+=(--pair "cuda13-portable vs reference (13.x flags, same toolkit)|$U/cu13|$R13|LD_LIBRARY_PATH=$CU13LIB|LD_LIBRARY_PATH=$CU13LIB") ;;
  esac
done
[ ${#pairs[@]} -gt 0 ] || { echo "no pair to measure"; exit 9; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee "$OUT/gpu.txt"
tag=$(echo ${BG_PAIRS:-all} | tr ' ' '-')
$PY $P/bench/gpu_speed_table.py --models $M --out "$OUT/table-$tag.json" "${pairs[@]}" 2>&1 | tee "$OUT/table-$tag.md"
