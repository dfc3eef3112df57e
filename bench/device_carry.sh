# Sourced by the device scripts (bench/device_*_run.sh, device_build_bench.sh): unpack what
# bench/device_smoke_prepare.sh (and device_cache_prepare.sh) put in .carry/ on the GPU machine.
#   unpack_carry DIR   bundles/ to DIR/bundles, the llama.cpp tree to DIR/src, the wheels to /tmp/site
# (Issue 50: the floors are the pinned compiler's, checked as they are on this machine too;
# nothing rewrites them. The GPU machine has no Debian apt source: the compiler tasks take the
# pinned .debs from the cache blobs that bench/device_toolchain_prepare.sh carries and stashes.)
unpack_carry() {
  rm -rf "$1" && mkdir -p "$1/src" && cp -r .carry/bundles "$1/bundles" || return 2
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .carry/whl/*.whl || return 3
  tar -C "$1/src" -xJf .carry/llama.cpp.tar.xz || return 4
}
