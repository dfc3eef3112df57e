"""The plain records (bundlegraph.schemas.plain) stand for the pydantic models exactly: the same
fields, the same JSON dump (so every action key that holds a spec is unchanged), read-only, and
``replace`` dumps what a model would."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from bundlegraph.schemas import plain
from bundlegraph.schemas import release as release_models
from bundlegraph.schemas import spec as spec_models
from bundlegraph.schemas.plain import RECORDS, json_form
from bundlegraph.schemas.validation import validate_matrix

ROOT = Path(__file__).resolve().parents[2]


def _models() -> dict[str, type]:
    out = {}
    for mod in (spec_models, release_models):
        for name, obj in vars(mod).items():
            if (
                isinstance(obj, type)
                and hasattr(obj, "model_fields")
                and obj.__module__ == mod.__name__
                and not name.startswith("_")
            ):
                out[name] = obj
    return out


def test_every_model_has_a_record_with_its_fields():
    models = _models()
    assert set(models) == set(RECORDS), "a model without a record (or a record without a model)"
    for name, model in models.items():
        assert list(RECORDS[name].FIELDS) == list(model.model_fields), name
        aliases = {n: f.alias for n, f in model.model_fields.items() if f.alias}
        assert RECORDS[name].ALIASES == aliases, name


@pytest.fixture(scope="module")
def matrices(tmp_path_factory) -> list:
    standin = tmp_path_factory.mktemp("standin") / "bundles"
    shutil.copytree(ROOT / "tests/data/bundles", standin)
    shutil.copytree(ROOT / "bundles/locks", standin / "locks", dirs_exist_ok=True)
    return [validate_matrix(ROOT / "bundles")[0], validate_matrix(standin)[0]]


def _pairs(m):
    """(record, model validated from the same file) for the release and every leg."""
    import tomllib

    yield m.release, release_models.Release.model_validate(tomllib.loads((m.root / "release.toml").read_text()))
    for leg, rec in m.legs.items():
        yield rec, spec_models.BundleSpec.model_validate(tomllib.loads(m.files[leg].read_text()))


def test_records_dump_as_the_models_do(matrices):
    n = 0
    for m in matrices:
        for rec, model in _pairs(m):
            want = model.model_dump(mode="json", by_alias=True)
            assert rec.dump() == want
            assert json_form(rec) == want  # the generic form (replace) agrees with pydantic's
            assert rec.replace().dump() == want and rec.replace() == rec
            n += 1
    assert n >= 12


def test_records_carry_typed_values(matrices):
    m = matrices[0]
    cuda = next(s for s in m.legs.values() if s.cuda is not None)
    assert all(isinstance(a, plain.Arch) for a in cuda.cuda.archs)
    assert cuda.cuda.cmake_archs == [a.cmake for a in cuda.cuda.archs]
    assert isinstance(cuda.profile, plain.Profile) and isinstance(m.release, plain.Release)
    assert cuda.bundle_name("b1", "app").startswith(f"app-b1-{cuda.os}-{cuda.arch}-{cuda.profile.name}")


def test_records_are_read_only_and_replace_is_checked(matrices):
    spec = next(iter(matrices[0].legs.values()))
    with pytest.raises(AttributeError, match="read-only"):
        spec.id = "other"  # type: ignore[misc]
    with pytest.raises(TypeError, match="unknown fields"):
        spec.replace(nope=1)
    changed = spec.replace(cmake={**spec.cmake, "X": "ON"})
    assert changed.dump()["cmake"]["X"] == "ON" and "X" not in spec.dump()["cmake"]
    assert spec.dump() is not spec.dump()  # a copy each time: a caller cannot change the record
