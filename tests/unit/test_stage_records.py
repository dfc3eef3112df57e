"""configure.json and build.json have one type and one reader each
(bundlegraph.pipeline.stage_records): what the stages write reads back typed, and a broken file
is an error naming it."""

from __future__ import annotations

import json

import pytest

from bundlegraph.core import memo
from bundlegraph.core.errors import BundleGraphError
from bundlegraph.pipeline.stage_records import BuildRecord, read_build, read_configure


@pytest.fixture
def work(tmp_path, monkeypatch):
    monkeypatch.setenv("BUNDLEGRAPH_WORKDIR", str(tmp_path))
    memo.clear()
    yield tmp_path
    memo.clear()


def test_a_build_record_reads_back_as_written(work):
    rec = BuildRecord(
        leg="L", targets=[], filtered=False, artifacts_dir="a", cmake_dir="c", outputs={"build/L/x.so": "ab" * 32}
    )
    f = work / "build" / "L" / "build.json"
    f.parent.mkdir(parents=True)
    f.write_text(json.dumps(rec.to_json()), encoding="utf-8")
    assert list(rec.to_json()) == ["leg", "targets", "filtered", "artifacts_dir", "cmake_dir", "outputs"]
    assert read_build("L") == rec and read_build("other") is None
    imported = BuildRecord(
        leg="L", targets=[], filtered=False, artifacts_dir="a", imported={"from": "d", "files": {}}, outputs={}
    )
    assert list(imported.to_json()) == ["leg", "targets", "filtered", "artifacts_dir", "imported", "outputs"]


def test_a_broken_record_is_named(work):
    f = work / "build" / "L" / "build.json"
    f.parent.mkdir(parents=True)
    f.write_text("{not json", encoding="utf-8")
    with pytest.raises(BundleGraphError, match=r"build\.json: unreadable .*run build:L again"):
        read_build("L")
    f.write_text(json.dumps({"leg": "L"}), encoding="utf-8")
    with pytest.raises(BundleGraphError, match=r"build\.json: not a build record"):
        read_build("L")
    c = f.parent / "configure.json"
    c.write_text("[]", encoding="utf-8")
    with pytest.raises(BundleGraphError, match=r"configure\.json: not a configure record"):
        read_configure("L")
