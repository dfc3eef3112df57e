"""A ``bundles/`` directory read as specs: the loader with its spec cache (``loader``) and every
rule a spec and the release must hold before anything builds (``validation``); the records they
produce are :mod:`bundlegraph.schemas`'."""
