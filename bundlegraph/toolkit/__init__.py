"""The CUDA toolkit of a leg: its component set and identity (:mod:`.components`, :mod:`.identity`,
:mod:`.key`), where the components come from (NVIDIA's redist archives :mod:`.redist`, its wheels
:mod:`.wheels` pinned by :mod:`.lockfile`, a toolkit already installed :mod:`.hostsrc`, or Debian packages
:mod:`.debs`), and
their install into the cache (:mod:`.install`, :mod:`.layout`, :mod:`.stub`, :mod:`.validate`).
"""
