#!/bin/bash
# Issue 52 item 4, on the GPU machine, once every part of bench/device_speed_prepare.sh is stashed in
# $STASH (bench/device_toolchain_stash.sh N, one call per part):
#   start OUT   set up, then build detached with the release's pipeline (doit, pinned compiler from
#               the stashed .debs, the machine's CUDA 13.0 as a local toolkit, sm_90):
#               package:linux-x64-cuda13-portable, package:linux-x64-vulkan (merged onto the carried
#               linux-x64-cpu bundle: artifacts=), smoke:reference-linux-x64-vulkan (upstream's
#               ubuntu-vulkan flags, the leg's SDK) and, unless BG_NO_REF13=1,
#               smoke:reference-linux-x64-cuda13-portable (upstream's 13.x flags, same toolkit);
#               watches WATCH_S (default 520 s)
#   watch OUT   watch again until it says done
#   bench OUT   the bench models, then bench/gpu_speed_table.py over every pair that was built
# Results under OUT: doit.log, table.json, table.md, times.
set -uo pipefail
MODE="${1:?start|watch|bench}"; OUT="${2:?OUT}"
S="${STASH:-/root/stash}"
B="${BG_ROOT:-/root/bgs}"
SDIST=832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e
C=$B/cache W=$B/work P=$B/code
PY="${PY:-python3}"
ICD=$(ls /usr/share/vulkan/icd.d/nvidia_icd.json /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json /etc/vulkan/icd.d/nvidia_icd.json 2>/dev/null | head -1)
setup_loader() { for f in "$S"/gl/*.deb; do dpkg -x "$f" /; done; ldconfig; }
if [ "$MODE" = start ]; then
  rm -rf "$W" "$P" && mkdir -p "$C/blobs/sha256" "$W" "$P" || exit 2
  for f in "$S"/blobs/*; do
    case "$f" in *.part*) ;; *) ln -f "$f" "$C/blobs/sha256/$(basename "$f")" 2>/dev/null || cp "$f" "$C/blobs/sha256/" ;; esac
  done
  [ -f "$C/blobs/sha256/$SDIST" ] || cat "$S/blobs/$SDIST".part* > "$C/blobs/sha256/$SDIST"
  echo "$SDIST  $C/blobs/sha256/$SDIST" | sha256sum -c - || exit 3
  $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$B/site" "$S"/whl/*.whl || exit 4
  cp -r bundlegraph dodo.py pyproject.toml bundles bench "$P/" || exit 5
  rm -f "$P"/bundles/*-cuda12-*.toml  # the machine's toolkit is CUDA 13.0 (a cuda12 leg is refused as a local override)
  setup_loader
  echo "host: $(. /etc/os-release; echo "$PRETTY_NAME"), $(nproc) cores, $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader), ICD ${ICD:-none}"
  # the toolkit's own CCCL: ggml takes CUB's top-k only from CCCL 3.2 on (top-k.cu)
  echo "toolkit CCCL: $(grep -rhs 'define CCCL_VERSION ' /usr/local/cuda/include/ | head -1)"
  REF13="smoke:reference-linux-x64-cuda13-portable"; [ -n "${BG_NO_REF13:-}" ] && REF13=""
  cat > "$B/job.sh" <<EOF
export PYTHONPATH=$B/site:$P PYTHONUNBUFFERED=1 BUNDLEGRAPH_CACHE=$C BUNDLEGRAPH_WORKDIR=$W BUNDLEGRAPH_JOBS=16
export BUNDLEGRAPH_BUNDLES=$P/bundles BUNDLEGRAPH_CMAKE=$B/site/cmake/data/bin/cmake BUNDLEGRAPH_NINJA=$B/site/bin/ninja
export BUNDLEGRAPH_LAUNCHER=none BUNDLEGRAPH_ARTIFACTS=$S/local BUNDLEGRAPH_VULKAN_ICD=$ICD
export BUNDLEGRAPH_ARCHS=90 BUNDLEGRAPH_TOOLKIT_SOURCE=host:/usr/local/cuda
cd $W
t0=\$(date +%s)
$PY -m doit -f $P/dodo.py -n 4 -P thread package:linux-x64-cuda13-portable package:linux-x64-vulkan \
    smoke:reference-linux-x64-vulkan $REF13 > $W/doit.log 2>&1
echo "doit \$? \$(( \$(date +%s) - t0 ))" >> $W/doit.rc
echo done >> $W/doit.rc
EOF
  ( setsid nohup bash "$B/job.sh" > "$W/job.out" 2>&1 < /dev/null & )
fi
if [ "$MODE" = start ] || [ "$MODE" = watch ]; then
  end=$(( $(date +%s) + ${WATCH_S:-520} ))
  while [ $(date +%s) -lt $end ] && ! grep -q done "$W/doit.rc" 2>/dev/null; do sleep 10; done
  grep -E "^\.  |done in|FAILED|ERROR|error:|refused" "$W/doit.log" 2>/dev/null | tail -40
  cp "$W/doit.log" "$OUT/" 2>/dev/null
  if grep -q done "$W/doit.rc" 2>/dev/null; then cat "$W/doit.rc"; echo "done"; else echo "still running; call watch again"; fi
  exit 0
fi
# bench
setup_loader
export PYTHONPATH=$B/site:$P
U=$B/unpacked && rm -rf $U && mkdir -p $U/cu13 $U/vk $U/cu12 $U/ref12 $U/rt12
tar -C $U/cu13 -xzf "$W"/dist/app-*-linux-x64-cuda13-portable*.tar.gz || exit 6
tar -C $U/vk -xzf "$W"/dist/app-*-linux-x64-vulkan*.tar.gz || exit 6
tar -C $U/cu12 -xzf "$S"/local/app-*-linux-x64-cuda12-newer*.tar.gz || exit 6
tar -C $U/ref12 -xJf "$S"/local/ref12.tar.xz || exit 6
cat "$S"/cu12/cu12rt.tar.xz.part-* | tar -C $U/rt12 -xJf - || exit 7
for d in cu13 vk cu12; do [ -x $U/$d/llama-bench ] || { x=$(dirname "$(ls $U/$d/*/llama-bench | head -1)"); mv "$x"/* $U/$d/; }; done
SRCT=$(ls -d "$C"/sources/*/tree/vendor/llama.cpp | head -1)
M=$B/models && mkdir -p $M
for shape in dense-1b moe; do
  [ -f $M/bench-$shape.gguf ] || $PY -m bundlegraph.pipeline.smoke.tinygguf --gguf-py "$SRCT/gguf-py" \
      --vocab "$SRCT/models/ggml-vocab-llama-spm.gguf" --out $M/bench-$shape.gguf --shape $shape || exit 8
done
CU13LIB=/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib
VKE="VK_DRIVER_FILES=$ICD,VK_ICD_FILENAMES=$ICD,GGML_VK_VISIBLE_DEVICES=0"
DEG="$VKE,GGML_VK_DISABLE_COOPMAT=1,GGML_VK_DISABLE_COOPMAT2=1,GGML_VK_DISABLE_INTEGER_DOT_PRODUCT=1,GGML_VK_DISABLE_BFLOAT16=1"
R13=$W/build/linux-x64-cuda13-portable/smoke-tools/reference/cmake/bin
RVK=$W/build/linux-x64-vulkan/smoke-tools/reference/cmake/bin
pairs=()
[ -x $R13/llama-bench ] && pairs+=(--pair "cuda13-portable vs reference (13.x flags, same toolkit)|$U/cu13|$R13|LD_LIBRARY_PATH=$CU13LIB|LD_LIBRARY_PATH=$CU13LIB")
pairs+=(--pair "cuda13-portable vs CUDA 12 build (12.8 flags, CUDA 12.4)|$U/cu13|$U/ref12/bin|LD_LIBRARY_PATH=$CU13LIB|LD_LIBRARY_PATH=$U/rt12")
pairs+=(--pair "cuda12-newer vs reference (12.8 flags, CUDA 12.4)|$U/cu12|$U/ref12/bin|LD_LIBRARY_PATH=$U/rt12|LD_LIBRARY_PATH=$U/rt12")
[ -x $RVK/llama-bench ] && pairs+=(--pair "vulkan (full shaders) vs reference (ubuntu-vulkan flags)|$U/vk|$RVK|$VKE|$VKE")
[ -x $RVK/llama-bench ] && pairs+=(--pair "vulkan (degraded: no coopmat/coopmat2/int-dot/bf16) vs reference|$U/vk|$RVK|$DEG|$VKE")
# BG_FROM/BG_COUNT: a slice of the pairs (in pairs), to split the benchmarks over calls of < 10 min
pairs=("${pairs[@]:$(( 2 * ${BG_FROM:-0} )):$(( 2 * ${BG_COUNT:-99} ))}")
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee "$OUT/gpu.txt"
$PY $P/bench/gpu_speed_table.py --models $M --out "$OUT/table-${BG_FROM:-0}.json" "${pairs[@]}" 2>&1 | tee "$OUT/table-${BG_FROM:-0}.md"
