"""The earlier name of the paired no-op bench (BENCHMARKS.md's first issue-20 figures): it
runs :func:`noop_graph.main`.

    .venv/bin/python bench/noop_paired.py [--rounds 9] [--work DIR]
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import noop_graph

if __name__ == "__main__":
    raise SystemExit(noop_graph.main())
