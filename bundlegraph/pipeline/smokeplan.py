"""The plan values of ``smoke:<leg>`` (:class:`SmokePlan`, its :class:`Check` steps), apart from
the stage's run (:mod:`.smoke`) and its GPU part (:mod:`.smokegpu`), which both use them: so
neither imports the other for a type (issue 30: the two formed the code's one import circle)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Check:
    """One smoke step: ``name`` (``devices``, ``op:MUL_MAT``, ``generate``, ...), ``argv`` with
    ``{bundle}``/``{model}``/``{dev}`` placeholders filled at run time."""

    name: str
    argv: list[str]


@dataclass(frozen=True)
class SmokePlan:
    """What ``smoke:<leg>`` would do (pure). ``bundle``: the archive; ``record``/``log``;
    ``tools_dir``: the test-backend-ops build; ``checks`` in order; ``model_argv`` writes the tiny
    model; ``runtime_dir``: the toolkit directory holding the external CUDA runtime; ``info_file``:
    the release's info JSON name inside the bundle."""

    leg: str
    base: str | None
    os: str
    arch: str
    bundle: Path
    record: Path
    log: Path
    tools_dir: Path
    source_tree: Path
    checks: list[Check]
    model_argv: list[str]
    runtime_dir: Path | None
    exe: str = ""
    info_file: str = "BUNDLE_INFO.json"
    work_dir: Path = Path("build")
    """The leg's build directory: the unpacked bundle goes under it while the smoke runs, and a
    bundle that fails is moved to ``<work_dir>/smoke-failed/`` (out of ``dist/``)."""
    cuda: bool = False
    build_number: int = 0
    commit: str | None = None

    def program(self, name: str) -> str:
        return f"{{bundle}}/{name}{self.exe}"


__all__ = ["Check", "SmokePlan"]
