"""The formats: pydantic v2 models of bundle specs (``spec``), the release (``release``), the
published JSON (``manifest``) and NVIDIA's redist manifests (``redist``); the validation of a
whole ``bundles/`` directory (``validation``); the plain records the graph is built from
(``plain``: no pydantic) and the loader that keeps them in the spec cache (``loader``)."""
