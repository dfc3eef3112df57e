"""``bundlegraph schema``: the JSON Schema of the spec formats, generated from the records
(:mod:`bundlegraph.schemas.records`: each property's description is its field's docstring).

The committed copies live beside the specs, in ``bundles/schema/`` (``bundle-spec.schema.json``,
``release.schema.json``); a test keeps them equal to what this prints.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from ..schemas.records import BundleSpec, Record, Release

SCHEMAS: dict[str, type[Record]] = {"bundle-spec": BundleSpec, "release": Release}


def render(name: str) -> str:
    """The schema text of ``name`` (sorted keys, 2-space indent, trailing newline)."""
    from ..schemas.adapters import adapter
    from ..toolchains.registry import TOOLCHAINS

    s = adapter(SCHEMAS[name]).json_schema(by_alias=True)
    if name == "bundle-spec":  # "local" is set by the load-time overrides only: a spec file may not say it
        del s["properties"]["local"]
        del s["$defs"]["LocalBuild"]
        s["properties"]["toolchain"]["enum"] = sorted(TOOLCHAINS)  # what the loader refuses, where a schema can say it
    _fill_defaults(SCHEMAS[name], s)
    s["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    s["$id"] = f"urn:bundlegraph:schema:{name}"
    return json.dumps(s, indent=2, sort_keys=True) + "\n"


def _fill_defaults(root: type[Record], schema: dict[str, Any]) -> None:
    """Each property's description (its field's docstring), and the default of a field made by a
    factory (pydantic leaves those out), in its JSON form: what an editor shows as you type. The
    root is ``root``; every other record is the ``$defs`` entry of its class name."""
    import dataclasses

    from ..schemas import records

    defs = schema.get("$defs", {})
    for cls in records.all_records():
        node = schema if cls is root else defs.get(cls.__name__)
        if node is None:
            continue
        docs = records.field_docs(cls)
        for f in dataclasses.fields(cls):  # type: ignore[arg-type]
            prop = node.get("properties", {}).get(f.name.rstrip("_"))
            if prop is None:
                continue
            if f.name in docs:
                prop["description"] = docs[f.name]
            if f.default_factory is not dataclasses.MISSING:
                prop["default"] = records.json_form(f.default_factory())


def run(args: argparse.Namespace) -> int:
    if args.write:
        out = Path(args.write)
        out.mkdir(parents=True, exist_ok=True)
        for name in SCHEMAS:
            (out / f"{name}.schema.json").write_text(render(name), encoding="utf-8", newline="\n")
            print(f"wrote {out / (name + '.schema.json')}")
        return 0
    print(render(args.which), end="")
    return 0


def register(sub: Any) -> None:
    p = sub.add_parser("schema", help="print the JSON Schema of the spec format")
    p.add_argument("which", nargs="?", choices=sorted(SCHEMAS), default="bundle-spec")
    p.add_argument("--write", metavar="DIR", help="write every schema into DIR")
    p.set_defaults(func=run)
