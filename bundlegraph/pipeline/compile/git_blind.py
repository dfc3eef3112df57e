"""Configure and build with git blind to the source tree, so the bytes do not depend on how the
tree was fetched (issue 32: a rebuild from the release's source archive gives the release's bytes).

ggml's ``CMakeLists.txt`` asks git for the tree's commit (``git rev-parse --short HEAD``) and
whether it is dirty (``git diff-index --quiet HEAD``), and compiles the answer into
``libggml-base`` (its commit string). The answer depends on the fetch, not the source: the
llama-cpp-python sdist's tree carries a ``.git`` file and gave ``0c1e570-dirty``, the same tree
from the release's source archive (no git metadata) gave ``unknown`` (measured on the main job's
CPU leg: the one differing member of ``verify-release --rebuild``). With ``GIT_DIR`` naming a
directory that does not exist, every git command of the configure fails, on every fetch: ggml's
commit string is ``unknown`` in every bundle. llama.cpp's own build commit is not git's: the
configure sets ``LLAMA_BUILD_COMMIT`` from the release (``llama-cli --version`` prints it).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

NO_REPOSITORY = "no-git-repository"
"""The name, under the leg's build directory, that ``GIT_DIR`` points at (never created)."""


def without_git(env: Mapping[str, str], build_dir: Path) -> dict[str, str]:
    """``env`` with ``GIT_DIR`` set to ``<build_dir>/no-git-repository`` (which does not exist),
    for cmake and ninja (a build may run cmake again)."""
    return {**env, "GIT_DIR": str(build_dir / NO_REPOSITORY)}
