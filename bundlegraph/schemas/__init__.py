"""The formats: the spec and release records (``records``: standard-library dataclasses, one per
TOML table, no pydantic), validated by pydantic when a ``bundles/`` directory is new or changed
(``validation``) and kept in the spec cache (``loader``); the published JSON (``manifest``) and
NVIDIA's redist manifests (``redist``) as pydantic models; the release's provenance statement
(``provenance``, in-toto/SLSA) and a bundle's smoke verdict beside it (``smoke_status``)."""
