"""What a leg compiles with, installed into the cache from pinned sources: the CUDA toolkit, what
every backend's SDK shares, and the pinned Linux compilers. (The Vulkan, ROCm and OpenCL SDKs live
in their backends' packages: ``bundlegraph/backends/<name>/sdk.py`` and ``sdk_ref.py``.)

- CUDA: its component set and identity (:mod:`.components`, :mod:`.identity`, :mod:`.key`), where
  the components come from (NVIDIA's redist archives :mod:`.redist` pinned by :mod:`.redistlock`,
  its wheels :mod:`.wheels` pinned by :mod:`.lockfile`, a toolkit already installed
  :mod:`.hostsrc`, or Debian packages :mod:`.debs`, :mod:`.debsrc`), their install into the
  cache (:mod:`.install`, :mod:`.layout`, :mod:`.stub`, :mod:`.validate`) and the SDK module the
  toolkit stage asks (:mod:`.cuda_sdk`);
- every SDK: :mod:`.sdk` (the shape of a backend's SDK module), :mod:`.sdkpins` (``bundlegraph
  lock``'s pins, from each SDK module's ``pinned_files``), :mod:`.debs` (Debian packages by lock,
  which the Vulkan and OpenCL SDKs install from too);
- :mod:`.compiler`: the pinned GCC and binutils of the Linux legs (issue 50).
"""
