"""A release after its bundles are built: the CI jobs that build it and their critical path
(``jobs``, ``critical_path``), signing its bundles in their own job (``signbundles``,
``signone``), publishing it on GitHub (``github_release``, ``ops``), upstream's assets and the
mix release's source (``upstream``, ``source_proof``), and checking a published release as anyone
can (``verify_release``, ``provenance_check``, ``authenticity``, ``rebuild``)."""
