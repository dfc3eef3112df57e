"""The committed JSON Schemas equal what the models generate (newline-normalised)."""

from pathlib import Path

import pytest

from bundlegraph.commands.schema import SCHEMAS, render

JSON_DIR = Path(__file__).resolve().parents[2] / "bundles" / "schema"


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_committed_schema_is_fresh(name):
    committed = (JSON_DIR / f"{name}.schema.json").read_text(encoding="utf-8").replace("\r\n", "\n")
    assert committed == render(name), f"run: bundlegraph schema --write {JSON_DIR.relative_to(JSON_DIR.parents[1])}"


def test_schema_forbids_unknown_keys():
    import json

    s = json.loads(render("bundle-spec"))
    assert s["additionalProperties"] is False
    assert "id" in s["required"] and "install_kind" not in s["required"]  # derived: bundlegraph/specs/derive.py


def test_every_field_is_described_and_the_schema_says_what_the_loader_refuses():
    import json
    import re

    for name in SCHEMAS:
        s = json.loads(render(name))
        assert s["$id"] == f"urn:bundlegraph:schema:{name}"
        missing = [
            f"{title}.{k}"
            for title, node in [(s["title"], s), *s.get("$defs", {}).items()]
            for k, v in node.get("properties", {}).items()
            if not v.get("description")
        ]
        assert missing == [], missing
    s = json.loads(render("bundle-spec"))
    from bundlegraph.toolchains.registry import TOOLCHAINS

    assert s["properties"]["toolchain"]["enum"] == sorted(TOOLCHAINS)  # an unknown toolchain is refused
    arch = s["$defs"]["CudaSpec"]["properties"]["archs"]["items"]["pattern"]
    assert re.match(arch, "120a") and not re.match(arch, "sm_120")


def test_editors_validate_the_specs_as_you_type():
    """taplo (the TOML language server most editors use) maps bundles/*.toml to the schema."""
    import tomllib

    cfg = tomllib.loads((JSON_DIR.parents[1] / ".taplo.toml").read_text(encoding="utf-8"))
    rules = {tuple(r["include"]): r["schema"]["path"] for r in cfg["rule"]}
    assert rules[("bundles/*.toml", "tests/data/bundles/*.toml")] == "./bundles/schema/bundle-spec.schema.json"
    assert rules[("bundles/release.toml", "tests/data/bundles/release.toml")] == "./bundles/schema/release.schema.json"


def test_the_real_specs_pass_the_schema_and_what_it_refuses_fails():
    import copy
    import datetime
    import json
    import tomllib

    import jsonschema

    def as_json(v):  # TOML date-times are strings of format date-time to a JSON Schema (as taplo sees them)
        return json.loads(json.dumps(v, default=lambda o: o.isoformat() if isinstance(o, datetime.datetime) else o))

    root = JSON_DIR.parents[1]
    spec_schema = json.loads(render("bundle-spec"))
    for d in (root / "bundles", root / "tests" / "data" / "bundles"):
        for f in sorted(d.glob("*.toml")):
            data = as_json(tomllib.loads(f.read_text(encoding="utf-8")))
            jsonschema.validate(data, json.loads(render("release")) if f.name == "release.toml" else spec_schema)
    leg = tomllib.loads((root / "bundles" / "windows-arm64-cuda13-portable.toml").read_text(encoding="utf-8"))
    for path, bad in (
        (("cuda", "archs"), ["sm_120"]),
        (("toolchain",), "msvc-arm64-cuda"),
        (("profile", "rank"), "60"),
    ):
        broken = copy.deepcopy(leg)
        node = broken
        for k in path[:-1]:
            node = node[k]
        node[path[-1]] = bad
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(broken, spec_schema)
