"""The spec records (bundlegraph.schemas.records) are the one type of each spec table: pydantic
validates files into them, their JSON form round-trips, every field is documented once, and they
are read-only (their module imports no pydantic: tests/integration/test_load_path.py)."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest

from bundlegraph.schemas import records
from bundlegraph.schemas.adapters import adapter
from bundlegraph.schemas.archs import Arch, CudaVersion
from bundlegraph.specs.validation import validate_leg, validate_matrix

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def matrices(tmp_path_factory) -> list:
    standin = tmp_path_factory.mktemp("standin") / "bundles"
    shutil.copytree(ROOT / "tests/data/bundles", standin)
    shutil.copytree(ROOT / "bundles/locks", standin / "locks", dirs_exist_ok=True)
    return [validate_matrix(ROOT / "bundles")[0], validate_matrix(standin)[0]]


def test_the_json_form_round_trips_through_validation(matrices):
    n = 0
    for m in matrices:
        # [coverage] and [[fetchcontent]] are no part of the JSON form (a rule rebuilds nothing; a pin
        # reaches only the configure keys of the legs that use it): given back here
        cov = {"coverage": m.release.coverage.dump()} if m.release.coverage else {}
        cov["fetchcontent"] = [p.dump() for p in m.release.fetchcontent]
        assert adapter(records.Release).validate_python({**m.release.dump(), **cov}) == m.release
        for rec in m.legs.values():
            again = validate_leg({**rec.dump(), "build": {**rec.build.dump(), "shards": rec.build.shards}})
            assert again == rec and again.dump() == rec.dump() and hash(again) == hash(rec)
            assert rec.replace() == rec
            n += 1
    assert n >= 12


def test_the_json_form_is_what_the_pydantic_models_wrote(matrices):
    """The JSON form of the stand-in release and its legs equals, key order included, what the
    pydantic models of main @128dff8 dumped (``tests/data/golden/standin-spec-json.json``,
    written by them). Every action key holds it: a changed form would rebuild every work
    directory."""
    import json

    want = json.loads((ROOT / "tests/data/golden/standin-spec-json.json").read_text(encoding="utf-8"))
    m = matrices[1]
    got = {"release": m.release.dump(), "legs": {k: v.dump() for k, v in m.legs.items()}}
    assert json.dumps(got) == json.dumps(want)


def test_records_carry_typed_values(matrices):
    m = matrices[0]
    cuda = next(s for s in m.legs.values() if s.cuda is not None)
    assert all(isinstance(a, Arch) for a in cuda.cuda.archs)
    assert isinstance(cuda.cuda.version, CudaVersion) and cuda.cuda.version.major == 13
    assert cuda.cuda.cmake_archs == [a.cmake for a in cuda.cuda.archs] == cuda.dump()["cuda"]["archs"]
    assert isinstance(cuda.profile, records.Profile) and isinstance(m.release, records.Release)
    assert cuda.bundle_name("b1", "app").startswith(f"app-b1-{cuda.os}-{cuda.arch}-{cuda.profile.name}")
    assert "shards" not in cuda.dump()["build"]  # changes no byte: never in an action key


def test_records_are_read_only_and_replace_runs_the_tables_rules(matrices):
    spec = next(s for s in matrices[0].legs.values() if s.os == "linux")
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.id = "other"  # type: ignore[misc]
    with pytest.raises(TypeError, match="unknown fields"):
        spec.replace(nope=1)
    with pytest.raises(ValueError, match="linux: the glibc/GLIBCXX floors are the toolchain's now"):
        spec.replace(linux=records.LinuxSpec(glibc_floor="2.36", glibcxx_floor="3.4.30"))
    changed = spec.replace(cmake={**spec.cmake, "X": "ON"})
    assert changed.dump()["cmake"]["X"] == "ON" and "X" not in spec.dump()["cmake"]


def test_every_field_has_one_docstring():
    classes = [c for c in vars(records).values() if isinstance(c, type) and issubclass(c, records.Record)]
    assert len(classes) >= 18
    for cls in classes:
        if cls is records.Record:
            continue
        docs = records.field_docs(cls)
        assert set(docs) == set(cls.FIELDS), (cls.__name__, set(cls.FIELDS) - set(docs))


def test_a_spec_error_names_the_key_of_a_tables_own_rule(tmp_path):
    from bundlegraph.core.errors import SpecError

    bundles = tmp_path / "bundles"
    shutil.copytree(ROOT / "bundles", bundles)
    f = bundles / "linux-x64-cpu.toml"
    f.write_text(f.read_text().replace("[profile]", "[profil]"), encoding="utf-8")
    with pytest.raises(SpecError) as e:
        validate_matrix(bundles)
    text = str(e.value)
    assert f"{f}: profil: unknown key (did you mean 'profile'?)" in text, text


def test_a_linux_table_is_refused_naming_where_the_floors_are_now(tmp_path):
    """Issue 50: the floors are the toolchain's pinned compiler's, not 40 spec files'."""
    from bundlegraph.core.errors import SpecError

    bundles = tmp_path / "bundles"
    shutil.copytree(ROOT / "bundles", bundles)
    f = bundles / "linux-x64-cpu.toml"
    f.write_text(f.read_text() + '\n[linux]\nglibc_floor = "2.36"\nglibcxx_floor = "3.4.30"\n', encoding="utf-8")
    with pytest.raises(SpecError) as e:
        validate_matrix(bundles)
    assert "linux: the glibc/GLIBCXX floors are the toolchain's now" in str(e.value)
    assert "[compiler] glibc_floor" in str(e.value)
