"""``bundlegraph schema``: the JSON Schema of the spec formats, generated from the models.

The committed copies live in ``bundlegraph/schemas/json/`` (``bundle-spec.schema.json``,
``release.schema.json``); a test keeps them equal to what this prints.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from ..schemas.release import Release
from ..schemas.spec import BundleSpec

SCHEMAS: dict[str, type[BaseModel]] = {"bundle-spec": BundleSpec, "release": Release}


def render(name: str) -> str:
    """The schema text of ``name`` (sorted keys, 2-space indent, trailing newline)."""
    from ..schemas.field_docs import add_descriptions
    from ..toolchains.registry import TOOLCHAINS

    model = SCHEMAS[name]
    s = add_descriptions(model.model_json_schema(by_alias=True), model.__name__)
    s["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    s["$id"] = f"urn:bundlegraph:schema:{name}"
    if name == "bundle-spec":  # what the loader refuses, where a schema can say it
        s["properties"]["toolchain"]["enum"] = sorted(TOOLCHAINS)
    return json.dumps(s, indent=2, sort_keys=True) + "\n"


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
