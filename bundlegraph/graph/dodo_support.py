"""What ``dodo.py`` needs, kept out of it so it stays thin: read the doit variables, load the
graph, and turn a spec error into a clear message and exit status 2 (no task runs while any
spec is invalid)."""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable
from pathlib import Path
from types import TracebackType

from ..core import paths, settings
from ..core.errors import BundleGraphError, did_you_mean, exit_code
from ..core.runlock import UNTOUCHED_COMMANDS, acquire, doit_command, doit_targets
from ..pipeline.compile import costs
from ..pipeline.compile.shards import ShardRef, parse_shard
from ..pipeline.stages import COMPILE_STAGES
from .context import Filters, Graph, load_graph

DOIT_VARS = (
    "bundles",
    "only_profile",
    "only_leg",
    "artifacts",
    "built",
    "archs",
    "toolkit_source",
    "build_targets",
    "shard",
)
"""Every ``key=value`` doit variable bundlegraph reads (README "Everyday commands")."""


def unknown_vars(argv: list[str]) -> list[str]:
    """The ``key=value`` arguments of a doit command line whose key bundlegraph does not know, each
    as a one-line problem with the closest known name (``only-leg=X`` would otherwise be ignored
    and start the whole main job)."""
    out = []
    for a in argv:
        if a.startswith("-") or "=" not in a:
            continue
        key, value = a.split("=", 1)
        if key not in DOIT_VARS:
            env = settings.PREFIX + key.replace("-", "_").upper()
            if key.replace("-", "_").lower() not in DOIT_VARS and any(s.var == env for s in settings.SETTINGS):
                # a setting with no doit variable (jobs=4): say where it is set instead
                out.append(f'{a}: not a doit variable; set the environment variable {env}={value} (README "Settings")')
                continue
            hint = did_you_mean(key.replace("-", "_"), DOIT_VARS)
            out.append(f"{a}: unknown doit variable '{key}'{hint}; known: {', '.join(DOIT_VARS)}")
    return out


def load_for_doit(bundles: Path, get_var: Callable[[str, object], object]) -> Graph:
    """Load the graph for doit. The bundles and work directories follow :func:`paths.choose`
    with dodo.py's folder as the root: ``bundles`` beside dodo.py unless ``doit bundles=DIR`` or
    ``BUNDLEGRAPH_BUNDLES`` names another (e.g. a copy with one more leg); the work directory is
    ``BUNDLEGRAPH_WORKDIR``, else dodo.py's folder.

    The garbage collector is off while the graph is built (dodo.py turns it off before the
    imports) and on again afterwards, with everything built so far frozen: the graph lives until
    the process ends, so no collection scans it again (issue 20). The youngest generation is
    collected after 10,000 allocations instead of 700: the 9-leg no-op's 68 up-to-date checks
    made 10 collections of short-lived plan values (41 in the whole run, 31 now; issue 30)."""
    import gc

    gc.disable()
    try:
        return _load_for_doit(bundles, get_var)
    finally:
        gc.freeze()
        gc.set_threshold(10_000, *gc.get_threshold()[1:])
        gc.enable()


def _load_for_doit(bundles: Path, get_var: Callable[[str, object], object]) -> Graph:
    bad = unknown_vars(sys.argv[1:]) + [
        f"{a}: bundlegraph's tasks are up to date by their action-key stamps, not by doit's file checker; "
        f"changing the checker would only make doit rerun every task (and again when it changes back): drop it"
        for a in sys.argv[1:]
        if a.startswith("--check_file_uptodate")
    ]
    if bad:
        print("bundlegraph: " + "\n".join(bad), file=sys.stderr)
        raise SystemExit(2)
    bundles, _ = paths.choose(_text(get_var("bundles", None)), bundles.parent)
    names = ("only_profile", "only_leg", "artifacts", "built", "archs", "toolkit_source")
    filters = Filters.from_env(**{n: _text(get_var(n, None)) for n in names})
    targets = doit_targets(sys.argv[1:])
    command = doit_command(sys.argv[1:])
    if targets and all(t.split(":", 1)[0] in COMPILE_STAGES for t in targets):
        filters = dataclasses.replace(filters, compile_only=True)
    _graceful_sigterm()
    try:
        settings.check_environment()
        shard = shard_filter(_text(get_var("shard", None)), command, targets, get_var)
        if shard is not None:
            filters = dataclasses.replace(filters, shard=shard)
        acquire(command)
        graph = load_graph(bundles, filters)
        graph.untouched = command in UNTOUCHED_COMMANDS
        check_task_names(graph, command, targets)
        if shard is not None:
            check_shard_targets(graph, shard, targets)
        return graph
    except BundleGraphError as e:
        print(f"bundlegraph: {e}", file=sys.stderr)
        raise SystemExit(exit_code(e)) from None


def shard_filter(
    raw: str | None, command: str, targets: list[str], get_var: Callable[[str, object], object]
) -> ShardRef | None:
    """The shard a run compiles: doit ``shard=I/N`` else ``BUNDLEGRAPH_SHARD``; None when unset.
    Refused (one line naming the value): a malformed value (:func:`parse_shard`), together with
    ``build_targets=``, and a ``doit run`` that names no task or a task that is not ``build:<leg>``
    (a shard compiles one slice; it is never verified, merged or packaged)."""
    where = "shard"
    if raw is None:
        raw, where = settings.get("SHARD"), "BUNDLEGRAPH_SHARD"
    if raw is None:
        return None
    shard = parse_shard(raw, where)
    if get_var("build_targets", None) or settings.get("BUILD_TARGETS"):
        raise BundleGraphError(f"{where}={raw}: a shard compiles its slice of the spec's targets; drop build_targets=")
    if command == "run":
        wrong = [t for t in targets if not t.startswith("build:")] or ([] if targets else ["(the default tasks)"])
        if wrong:
            raise BundleGraphError(
                f"{where}={raw}: a shard only compiles (doit build:L {where}={raw}); it cannot run {', '.join(wrong)}"
            )
    return shard


TASK_COMMANDS = ("run", "clean", "info", "forget", "ignore", "list")
"""doit commands whose positional arguments are task names."""


def check_task_names(graph: Graph, command: str, names: list[str]) -> None:
    """Refuse (exit 2) a task name the graph does not have, with the three closest names, before
    doit says "Invalid parameter" (``run``) or prints a traceback (``info``). Group names
    (``build``) and doit's wildcards pass."""
    if command not in TASK_COMMANDS or not _argv_is_doits():
        return
    known = {p.full_name for p in graph.plans} | {p.stage for p in graph.plans}
    for name in names:
        if name in known or any(c in name for c in "*?[/\\") or Path(name).exists():
            continue  # a task, a wildcard, or a file (doit also takes file targets)
        graph.find(name)  # raises, naming the closest tasks


def _argv_is_doits() -> bool:
    """Whether ``sys.argv`` is doit's own command line (``doit ...``, ``python -m doit ...``),
    not that of a program that runs doit inside it (``DoitMain().run([...])``), whose arguments
    are not doit's."""
    name = Path(sys.argv[0]).name.lower() if sys.argv else ""
    return name in ("doit", "doit.exe", "doit-script.py") or (name == "__main__.py" and "doit" in sys.argv[0])


def check_shard_targets(graph: Graph, shard: ShardRef, targets: list[str]) -> None:
    """Each ``build:<leg>`` a shard run names must be a leg of ``shards = N`` (N of ``shard``), and
    the cost record it splits by must be one (:func:`bundlegraph.pipeline.compile.costs.find` raises)."""
    for t in targets:
        leg = t.split(":", 1)[1] if ":" in t else ""
        if leg in graph.ctx.legs:
            have = graph.ctx.spec(leg).build.shards
            if have != shard.count:
                where = graph.ctx.matrix.files.get(leg, leg)
                raise BundleGraphError(
                    f"shard={shard}: {leg} has [build] shards = {have} ({where})"
                    + (": it is not sharded" if have == 1 else f"; give shard=I/{have}")
                )
            costs.find(leg, graph.ctx.matrix.root)  # a cost record that is not one: refused before anything runs


def _text(v: object) -> str | None:
    return None if v is None else str(v)


def _graceful_sigterm() -> None:
    """SIGINT and SIGTERM stop the run the same way: doit stops, running programs' process
    groups are ended, no stamp is written for the interrupted task, and one line (not a
    traceback) says how to resume. SIGINT is handled even when the shell started doit with it
    ignored (a backgrounded job)."""
    import signal

    def handler(signum: int, frame: object) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    for name in ("SIGTERM", "SIGINT"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), handler)
    previous = sys.excepthook

    def hook(kind: type[BaseException], value: BaseException, tb: TracebackType | None) -> None:
        if issubclass(kind, KeyboardInterrupt):
            print(
                "\nbundlegraph: interrupted; finished tasks are recorded, run the same command again "
                "to resume (`bundlegraph explain TASK` says why a task would run)",
                file=sys.stderr,
            )
            return
        previous(kind, value, tb)

    sys.excepthook = hook
