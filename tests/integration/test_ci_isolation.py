"""Tests never write into the CI job's step summary or annotations: run under a workflow
runner (``GITHUB_STEP_SUMMARY`` and ``GITHUB_ACTIONS`` set), the suite's own manifest tasks
leave the runner's summary file untouched and print no ``::error`` lines."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_a_manifest_test_under_a_workflow_runner_leaves_the_job_summary_alone(tmp_path):
    summary = tmp_path / "step-summary.md"
    summary.write_text("")
    env = dict(__import__("os").environ.items())
    env.update(GITHUB_ACTIONS="true", GITHUB_STEP_SUMMARY=str(summary), GITHUB_OUTPUT=str(tmp_path / "out"))
    # the manifest task writes a step summary when GITHUB_STEP_SUMMARY is set (bundlegraph.pipeline.ci)
    node = "tests/integration/test_publish_graph.py::test_doit_publish_refuses_listing_every_missing_bundle"
    r = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", node],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=600,
    )
    assert r.returncode == 0 and "1 passed" in r.stdout, r.stdout[-3000:] + r.stderr[-2000:]
    assert summary.read_text() == "", "a test appended to the job's step summary"
    assert not (tmp_path / "out").exists()
    assert "::error" not in r.stdout + r.stderr
