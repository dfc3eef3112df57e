"""What the configure and build stages use: the spec's CMake cache entries and their check
against the configured tree (``cmake_cache``, ``cmake_keys``), the compiler cache and its launcher
(``compiler_cache``, ``launcher``), parallel jobs (``jobs``), the shards and their cost records
(``shards``, ``costs``, ``ninja_graph``, ``build_measure``)."""
