"""bundlegraph: a declarative build graph for prebuilt llama.cpp / ggml bundles.

Layout: ``schemas`` (the spec records the graph uses, their validation, and pydantic models of
manifests and NVIDIA's redist JSON),
``toolchains`` (typed toolchain descriptions and CMake toolchain files), ``pipeline``
(one module per stage: a pure plan plus a run function), ``graph`` (turns plans into doit
task dicts; ``dodo.py`` only calls it) and ``cli`` (the ``bundlegraph`` command).
"""

__version__ = "0.1.0"
