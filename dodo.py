"""doit entry point: loads the specs in bundles/ and yields the graph's tasks. Nothing else.

Filters: `doit only_profile=P`, `doit only_leg=L`, `doit artifacts=DIR` (or the
BUNDLEGRAPH_ONLY_PROFILE / BUNDLEGRAPH_ONLY_LEG / BUNDLEGRAPH_ARTIFACTS variables).
"""

import gc
from pathlib import Path

from doit import get_var

gc.disable()  # importing and building the graph allocate much and free little: load_for_doit enables it again
from bundlegraph.graph.dodo_support import load_for_doit

_graph = load_for_doit(Path(__file__).parent / "bundles", get_var)
DOIT_CONFIG = _graph.doit_config
globals().update(_graph.task_creators())
