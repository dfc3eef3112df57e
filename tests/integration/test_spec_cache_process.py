"""In a fresh process, an unchanged bundles directory loads from the spec cache without importing
pydantic (issue 20), and an edited one is validated (with it) again."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import json, sys
from bundlegraph.specs.loader import load_matrix
m = load_matrix(sys.argv[1])
print(json.dumps({"legs": list(m.legs), "tag": m.release.tag, "pydantic": "pydantic" in sys.modules}))
"""


def _probe(bundles: Path, cache: Path) -> dict:
    env = {**os.environ, "BUNDLEGRAPH_CACHE": str(cache)}
    r = subprocess.run(
        [sys.executable, "-c", PROBE, str(bundles)], capture_output=True, text=True, env=env, timeout=120
    )
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_unchanged_directory_loads_without_pydantic(tmp_path):
    bundles, cache = tmp_path / "bundles", tmp_path / "cache"
    shutil.copytree(ROOT / "bundles", bundles)
    first = _probe(bundles, cache)
    assert first["pydantic"] is True and len(first["legs"]) >= 9  # validated, then stored
    second = _probe(bundles, cache)
    assert second == {**first, "pydantic": False}
    f = bundles / "linux-x64-cpu.toml"
    f.write_text(f.read_text() + "\n# an edit\n")
    assert _probe(bundles, cache)["pydantic"] is True  # edited: validated again
    assert _probe(bundles, cache)["pydantic"] is False
