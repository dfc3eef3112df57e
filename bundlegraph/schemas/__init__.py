"""pydantic v2 models: bundle specs (``spec``), the release (``release``), NVIDIA's redist
manifests (``redist``), and the loader that validates a whole ``bundles/`` directory (``loader``)."""
