"""What a leg compiles with, installed into the cache from pinned sources: the CUDA toolkit, the
Vulkan SDK, ROCm, and the pinned Linux compilers.

- CUDA: its component set and identity (:mod:`.components`, :mod:`.identity`, :mod:`.key`), where
  the components come from (NVIDIA's redist archives :mod:`.redist` pinned by :mod:`.redistlock`,
  its wheels :mod:`.wheels` pinned by :mod:`.lockfile`, a toolkit already installed
  :mod:`.hostsrc`, or Debian packages :mod:`.debs`, :mod:`.debsrc`), and their install into the
  cache (:mod:`.install`, :mod:`.layout`, :mod:`.stub`, :mod:`.validate`);
- the other SDKs: :mod:`.vulkan` (headers, loader and glslc: Debian packages or LunarG's SDK), :mod:`.therock`
  (ROCm from TheRock's tarballs), :mod:`.cuda_sdk` (CUDA as one of them), :mod:`.sdk` and :mod:`.sdkpins` (what every SDK shares, and
  ``bundlegraph lock``'s pins);
- :mod:`.compiler`: the pinned GCC and binutils of the Linux legs (issue 50).
"""
