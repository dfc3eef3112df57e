"""The CUDA toolkit of a leg: its component set and identity (:mod:`.components`, :mod:`.identity`,
:mod:`.key`), where the components come from (NVIDIA's redist archives :mod:`.redist`, its wheels
:mod:`.wheels` pinned by :mod:`.lockfile`, or a toolkit already installed :mod:`.hostsrc`), and
their install into the cache (:mod:`.install`, :mod:`.layout`, :mod:`.stub`, :mod:`.validate`).
"""
