"""The committed JSON Schemas equal what the models generate (newline-normalised)."""

from pathlib import Path

import pytest

from bundlegraph.commands.schema import SCHEMAS, render

JSON_DIR = Path(__file__).resolve().parents[2] / "bundlegraph" / "schemas" / "json"


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_committed_schema_is_fresh(name):
    committed = (JSON_DIR / f"{name}.schema.json").read_text(encoding="utf-8").replace("\r\n", "\n")
    assert committed == render(name), f"run: bundlegraph schema --write {JSON_DIR.relative_to(JSON_DIR.parents[2])}"


def test_schema_forbids_unknown_keys():
    import json

    s = json.loads(render("bundle-spec"))
    assert s["additionalProperties"] is False
    assert "install_kind" in s["required"]
