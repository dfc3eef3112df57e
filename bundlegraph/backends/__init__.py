"""The backends, one package each (``cpu``, ``cuda``, ``vulkan``, ``hip``, ``metal``, ``opencl``):
its facts in its ``__init__`` and its plug-ins beside them (smoke side, verify rows, spec table,
configure, manifest and install sides, SDK). Adding a backend is adding a folder here; the
registry that finds them by name is :mod:`bundlegraph.schemas.backend`. This package imports
nothing: the floors reach a backend only through that registry."""
