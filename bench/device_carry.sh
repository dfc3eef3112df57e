# Sourced by the device scripts (bench/device_*_run.sh, device_build_bench.sh): unpack what
# bench/device_smoke_prepare.sh (and device_cache_prepare.sh) put in .carry/ on the GPU machine.
#   unpack_carry DIR   bundles/ to DIR/bundles, the llama.cpp tree to DIR/src, the wheels to /tmp/site
#   host_floors DIR    the x64 specs in DIR/bundles take this host's glibc/GLIBCXX as their floors
#                      (the machine's are newer than the release runner's; verify still checks them)
unpack_carry() {
  rm -rf "$1" && mkdir -p "$1/src" && cp -r .carry/bundles "$1/bundles" || return 2
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .carry/whl/*.whl || return 3
  tar -C "$1/src" -xJf .carry/llama.cpp.tar.xz || return 4
}
host_floors() {
  local G X
  G=$(ldd --version | head -1 | grep -oE '[0-9]+\.[0-9]+$')
  X=$(grep -aoE "GLIBCXX_3\.4\.[0-9]+" "$(g++ -print-file-name=libstdc++.so.6)" | sort -V | tail -1 | cut -d_ -f2)
  [ -n "$G" ] && [ -n "$X" ] || { echo "cannot read the host glibc/GLIBCXX versions"; return 5; }
  sed -i "s/^glibc_floor = .*/glibc_floor = \"$G\"/; s/^glibcxx_floor = .*/glibcxx_floor = \"$X\"/" \
    "$1/bundles/linux-x64-cpu.toml" "$1/bundles/linux-x64-cuda13-portable.toml"
  echo "host: glibc $G, GLIBCXX $X"
}
