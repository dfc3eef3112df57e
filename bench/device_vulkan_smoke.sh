#!/bin/bash
# Issue 42: the Vulkan smoke by hand on the GPU machine (docs/vulkan-smoke-by-hand.md), on the
# NVIDIA driver's Vulkan ICD. Prepare here, after `doit smoke:linux-x64-vulkan` passed on lavapipe:
#   .carry/vk: the linux-x64-vulkan bundle, its test-backend-ops, tiny.gguf (tinygguf)
#   .carry/gl: Debian 12's libvulkan1, libglvnd0, libegl1 (.deb; the machine has no loader)
# Then device `run` with carry [".carry"]: bash bench/device_vulkan_smoke.sh .carry   (about 3 min)
# Prints each command and its output; exits non-zero when a step the smoke requires fails.
set -u -o pipefail
C="${1:-.carry}"
fail=0
step() { echo "+ $*"; "$@"; local rc=$?; echo "= exit $rc"; return $rc; }
for f in "$C"/gl/*.deb; do dpkg -x "$f" /; done
ldconfig
ICD=$(ls /usr/share/vulkan/icd.d/nvidia_icd.json /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json 2>/dev/null | head -1)
echo "ICD: ${ICD:-none}; GPU: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)"
export VK_DRIVER_FILES=$ICD VK_ICD_FILENAMES=$ICD GGML_VK_VISIBLE_DEVICES=0
B=/tmp/vkb && rm -rf $B && mkdir -p $B
tar xzf "$C"/vk/app-*-linux-x64-vulkan.tar.gz -C $B && cp "$C"/vk/test-backend-ops $B/ || exit 6
ls $B | head -40
step $B/llama-cli --list-devices 2>&1 | tee /tmp/vk-devices.txt
grep -q "Vulkan0: NVIDIA" /tmp/vk-devices.txt || { echo "FAIL: no Vulkan0 on the NVIDIA driver"; fail=1; }
t0=$(date +%s%N)
step timeout 120 $B/llama-simple -m "$C"/vk/tiny.gguf -n 8 -ngl 99 Hello 2>&1 | tee /tmp/vk-simple.txt | grep -E "offloaded|decoded|Vulkan|error|Hello" | head -20
echo "llama-simple: $(( ($(date +%s%N) - t0) / 1000000 )) ms"
grep -q "decoded 8 tokens" /tmp/vk-simple.txt || { echo "FAIL: llama-simple did not decode 8 tokens"; fail=1; }
grep -q "offloaded" /tmp/vk-simple.txt || { echo "FAIL: no layers offloaded"; fail=1; }
# the smoke's own filter (45 MUL_MAT cases), then whole ops as far as 150 s each allows
F='type_a=(f32|f16|q4_0|q8_0),type_b=f32,m=16,n=[0-9]+,k=256,bs=\[1,1\],nr=\[1,1\],per=\[0,1,2,3\],k_v=0,o=1,src_overlap=0'
t0=$(date +%s%N)
# straight to a file (a pipe into tail showed nothing of a run that never ended), and killed 5 s after
# the TERM: on the H100 (2026-12-05) this step printed nothing in over 500 s and outlived `timeout 300`
timeout -k 5 300 stdbuf -oL -eL $B/test-backend-ops test -b Vulkan0 -o MUL_MAT -p "$F" > /tmp/vk-ops.txt 2>&1
echo "= exit $?"; tail -5 /tmp/vk-ops.txt
echo "45 cases: $(( ($(date +%s%N) - t0) / 1000000 )) ms"
grep -q "Backend Vulkan0: OK" /tmp/vk-ops.txt || { echo "FAIL: the smoke's MUL_MAT cases"; fail=1; }
for op in MUL_MAT GET_ROWS RMS_NORM SOFT_MAX; do
  t0=$(date +%s%N)
  timeout -k 5 150 stdbuf -oL -eL $B/test-backend-ops test -b Vulkan0 -o $op > /tmp/vk-$op.txt 2>&1; rc=$?
  echo "op $op (all cases): exit $rc, $(grep -c ' OK$' /tmp/vk-$op.txt) OK, $(grep -c 'FAIL' /tmp/vk-$op.txt) FAIL lines, $(( ($(date +%s%N) - t0) / 1000000 )) ms; $(grep -E 'tests passed|Backend Vulkan0' /tmp/vk-$op.txt | tr '\n' ' ')"
done
[ -n "${OUT:-}" ] && tar -czf "$OUT"/vk.tgz -C /tmp $(cd /tmp && ls vk-*.txt) 2>/dev/null
echo "vulkan smoke by hand: $([ $fail = 0 ] && echo PASS || echo FAIL)"
exit $fail
