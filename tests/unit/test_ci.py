"""Step summary and ::error annotations for GitHub Actions."""

from __future__ import annotations

import io
import json

from bundlegraph.pipeline import ci
from bundlegraph.pipeline.bundle.archive import Entry, write_archive


def test_annotations_only_on_actions_and_escaped(monkeypatch):
    buf = io.StringIO()
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    assert ci.annotate(["x"], "a.zip", out=buf) == 0 and buf.getvalue() == ""
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    assert ci.annotate(["ggml-cuda.dll: machine: x64\nsecond line 100%"], "app-b1-windows-arm64-cpu.zip", out=buf) == 1
    assert (
        buf.getvalue()
        == "::error file=app-b1-windows-arm64-cpu.zip::ggml-cuda.dll: machine: x64%0Asecond line 100%25\n"
    )


def test_summary_table_from_index_and_info(tmp_path, workdir, monkeypatch):
    dist = tmp_path / "dist"
    info = {"leg": "leg-a", "verify": {"fatbin_sms": [120, 121]}}
    write_archive(dist / "app-b1-linux-arm64-x.tar.gz", [Entry("INFO.json", data=json.dumps(info).encode())], 0)
    from bundlegraph.core import state

    bundle = dist / "app-b1-linux-arm64-x.tar.gz"
    state.record("package:leg-a", {"x": 1}, [bundle], seconds=12.4)  # times live in the stamps
    idx = tmp_path / "index.json"
    idx.write_text(
        json.dumps(
            {
                "release_tag": "b1",
                "artifacts": {
                    "app-b1-linux-arm64-x.tar.gz": {"kind": "bundle", "sha256": "ab" * 32},
                    "src.tar.gz": {"kind": "upstream-source", "sha256": "cd" * 32},
                },
            }
        )
    )
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    assert ci.write_summary(dist, idx, "INFO.json") is False
    out = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(out))
    assert ci.write_summary(dist, idx, "INFO.json") is True
    text = out.read_text()
    assert "| bundle | size | sha256 | SMs | time per stage |" in text
    assert f"| app-b1-linux-arm64-x.tar.gz | 0.0 MiB | `{'ab' * 32}` | 120,121 | package 12s |" in text
    assert "src.tar.gz" not in text
