"""What ``dodo.py`` needs, kept out of it so it stays thin: read the doit variables, load the
graph, and turn a spec error into a clear message and exit status 2 (no task runs while any
spec is invalid)."""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from ..core import paths, settings
from ..core.errors import BundleGraphError, did_you_mean, exit_code
from ..core.runlock import UNTOUCHED_COMMANDS, acquire, doit_command, doit_targets
from . import noop_memo
from .doit_config import doit_config

if TYPE_CHECKING:  # the graph's modules load only when the graph does (not on a recalled no-op)
    from ..pipeline.compile.shards import ShardRef
    from .context import Graph

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


def load_for_doit(bundles: Path, get_var: Callable[[str, object], object]) -> Graph | Recalled:
    """Load the graph for doit. The bundles and work directories follow :func:`paths.choose`
    with dodo.py's folder as the root: ``bundles`` beside dodo.py unless ``doit bundles=DIR`` or
    ``BUNDLEGRAPH_BUNDLES`` names another (e.g. a copy with one more leg); the work directory is
    ``BUNDLEGRAPH_WORKDIR``, else dodo.py's folder.

    A ``doit run`` whose identical predecessor was a no-op, with nothing it looked at changed
    since, gets its tasks from the no-op memo instead (:class:`Recalled`,
    :mod:`bundlegraph.graph.noop_memo`); a run that may be a no-op records one.

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


class Recalled:
    """What dodo.py gets when the no-op memo holds: the same ``DOIT_CONFIG`` and task creators
    the graph would give, from the memo (:func:`bundlegraph.graph.noop_memo.task_creators`).
    ``load`` loads the real graph, for an action doit is made to run anyway; ``untouched``: the
    command leaves the work directory untouched (``list``)."""

    def __init__(self, memo: dict[str, Any], load: Callable[[], Graph], untouched: bool) -> None:
        self.memo = memo
        self._load = load
        self._graph: Graph | None = None
        self.untouched = untouched

    def graph(self) -> Graph:
        if self._graph is None:
            self._graph = self._load()
        return self._graph

    @property
    def doit_config(self) -> dict[str, Any]:
        return doit_config(list(self.memo["default_tasks"]), self.untouched)

    def task_creators(self) -> dict[str, Callable[[], Iterable[dict[str, Any]]]]:
        return noop_memo.task_creators(self.memo, self._act)

    def _act(self, task: str, clean: bool) -> object:
        """Run ``task``'s action (or its clean) as the loaded graph's task dict has it."""
        from .context import to_doit

        d = to_doit(self.graph().find(task))
        return (d["clean"] if clean else d["actions"])[0]()


def _load_for_doit(bundles: Path, get_var: Callable[[str, object], object]) -> Graph | Recalled:
    argv = sys.argv[1:]
    bad = unknown_vars(argv) + [
        f"{a}: bundlegraph's tasks are up to date by their action-key stamps, not by doit's file checker; "
        f"changing the checker would only make doit rerun every task (and again when it changes back): drop it"
        for a in argv
        if a.startswith("--check_file_uptodate")
    ]
    if bad:
        print("bundlegraph: " + "\n".join(bad), file=sys.stderr)
        raise SystemExit(2)
    try:
        # the run's key is taken before paths.choose sets BUNDLEGRAPH_WORKDIR
        key = noop_memo.run_key(argv, bundles.parent / "dodo.py") if _may_use_memo(argv) else None
        bundles, _ = paths.choose(_text(get_var("bundles", None)), bundles.parent)
        command, targets = doit_command(argv), doit_targets(argv)
        memo = noop_memo.recall(memo_folder(command), key) if key else None
        _graceful_sigterm()
        if memo is not None:
            acquire(command)
            untouched = command in UNTOUCHED_COMMANDS
            return Recalled(memo, lambda: _load_graph(bundles, get_var, command, targets), untouched)
        settings.check_environment()
        if key:
            noop_memo.RECORDING = noop_memo.Recorder(key, memo_folder(command))
        graph = _load_graph(bundles, get_var, command, targets)
        if noop_memo.RECORDING is not None:
            _plan_the_memo(noop_memo.RECORDING, graph, [] if command == "list" else targets)
            if command == "list" and noop_memo.RECORDING is not None:
                noop_memo.RECORDING.write()  # no task is checked: what the load looked at is all
                noop_memo.RECORDING = None
        return graph
    except BundleGraphError as e:
        print(f"bundlegraph: {e}", file=sys.stderr)
        raise SystemExit(exit_code(e)) from None


def memo_folder(command: str) -> Path:
    """Where the no-op memos of ``command`` live: ``.bundlegraph/noop`` of the work directory
    for ``run``; for ``list``, which leaves the work directory untouched, ``noop-list`` in the
    cache."""
    return paths.state_dir() / "noop" if command == "run" else paths.cache_root() / "noop-list"


def _may_use_memo(argv: list[str]) -> bool:
    """Whether this process may recall or record a no-op memo: the doit command itself runs it
    (not a program that runs doit inside it), with a command line the memo covers
    (:func:`noop_memo.eligible`), and ``BUNDLEGRAPH_NOOP_MEMO`` is not 0."""
    return _argv_is_doits() and noop_memo.eligible(argv) is not None and bool(settings.get("NOOP_MEMO"))


def _load_graph(bundles: Path, get_var: Callable[[str, object], object], command: str, targets: list[str]) -> Graph:
    """The graph as doit's ``command`` on ``targets`` needs it: the filters of the doit
    variables, a shard, the run lock, the names checked. Under the recorder's observer when a
    memo is being recorded."""

    from ..pipeline.stages import COMPILE_STAGES
    from .context import Filters, load_graph

    names = ("only_profile", "only_leg", "artifacts", "built", "archs", "toolkit_source")
    filters = Filters.from_env(**{n: _text(get_var(n, None)) for n in names})
    if targets and all(t.split(":", 1)[0] in COMPILE_STAGES for t in targets):
        filters = dataclasses.replace(filters, compile_only=True)
    shard = shard_filter(_text(get_var("shard", None)), command, targets, get_var)
    if shard is not None:
        filters = dataclasses.replace(filters, shard=shard)
    acquire(command)
    rec = noop_memo.RECORDING
    if rec is None:
        graph = load_graph(bundles, filters)
    else:
        with rec.observer:  # what loading looks at decides whether the next run may skip it
            graph = load_graph(bundles, filters)
            rec.default_tasks = graph.default_tasks()
    graph.untouched = command in UNTOUCHED_COMMANDS
    check_task_names(graph, command, targets)
    if shard is not None:
        check_shard_targets(graph, shard, targets)
    return graph


def _plan_the_memo(rec: noop_memo.Recorder, graph: Graph, targets: list[str]) -> None:
    """Tell ``rec`` which tasks this run must find up to date (the targets, else the default
    tasks, and everything they depend on) and the task dicts to store; a target that is not a
    task or a stage (a file) records nothing."""
    by_name = {p.full_name: [p] for p in graph.plans} | graph.by_stage()
    todo, expected = list(targets or rec.default_tasks), set()
    while todo:
        name = todo.pop()
        if name not in by_name:
            noop_memo.RECORDING = None
            return
        for p in by_name[name]:
            if p.full_name not in expected:
                expected.add(p.full_name)
                todo.extend(p.deps)
    rec.creators = {
        name: {"doc": gen.__doc__, "tasks": [noop_memo.without_callables(d) for d in gen()]}
        for name, gen in graph.task_creators().items()
    }
    rec.expected = expected


def shard_filter(
    raw: str | None, command: str, targets: list[str], get_var: Callable[[str, object], object]
) -> ShardRef | None:
    """The shard a run compiles: doit ``shard=I/N`` else ``BUNDLEGRAPH_SHARD``; None when unset.
    Refused (one line naming the value): a malformed value (:func:`parse_shard`), together with
    ``build_targets=``, and a ``doit run`` that names no task or a task that is not ``build:<leg>``
    (a shard compiles one slice; it is never verified, merged or packaged)."""
    from ..pipeline.compile.shards import parse_shard

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
            from ..pipeline.compile import costs

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
