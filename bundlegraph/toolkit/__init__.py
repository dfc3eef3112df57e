"""What a leg compiles with, installed into the cache from pinned sources: the CUDA toolkit, what
every backend's SDK shares, and the pinned Linux compilers. (Each backend's SDK module lives in
its package: ``bundlegraph/backends/<name>/sdk.py``, and ``sdk_ref.py`` beside it where its
reference is its own.)

- CUDA: its component set and identity (:mod:`.components`, :mod:`.identity`, :mod:`.key`), where
  the components come from (NVIDIA's redist archives :mod:`.redist` pinned by :mod:`.redistlock`,
  its wheels :mod:`.wheels` pinned by :mod:`.lockfile`, a toolkit already installed
  :mod:`.hostsrc`, or Debian packages :mod:`.debs`, :mod:`.debsrc`), their install into the
  cache (:mod:`.install`, :mod:`.installed`, :mod:`.layout`, :mod:`.stub`, :mod:`.validate`), which the CUDA
  backend's SDK module (:mod:`bundlegraph.backends.cuda.sdk`) is made of;
- every SDK: :mod:`.sdk` (the shape of a backend's SDK module), :mod:`.sdkpins` (``bundlegraph
  lock``'s pins, from each SDK module's ``pinned_files``), :mod:`.debs` (Debian packages by lock,
  which the Vulkan and OpenCL SDKs install from too), :mod:`.lockread` (what every lock reader shares);
- :mod:`.compiler`: the pinned GCC and binutils of the Linux legs (issue 50).
"""
