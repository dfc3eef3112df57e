"""Action keys and completion stamps: bundlegraph's own record of what each task consumed
and produced.

doit hashes ``file_dep`` but never targets, ignores changes to a task's command, environment
or code, and writes its state only at the end of a run (a killed run loses the run's
successes). So every bundlegraph task carries an *action key*: a canonical JSON document of
everything it consumed (spec tables, command lines, upstream output digests, tool versions,
environment), hashed with sha256. When the task's action succeeds it records a stamp
``<workdir>/.bundlegraph/stamps/<task>.json`` (atomic rename) holding the inputs, their key,
and a fingerprint (size, mtime, sha256) of each output file. The task is up to date only when
the stamp exists, its key equals the current key and every output still matches its
fingerprint; a failed or interrupted action never writes a stamp.

:func:`explain` compares a stored stamp with the current inputs and says which input changed,
from what to what.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from . import memo, paths
from .fsutil import atomic_write_json, parsed_once, sha256_file
from .lightclass import frozen

STAMP_VERSION = 1


def canonical(obj: Any) -> str:
    """Canonical JSON (sorted keys, no whitespace, paths as posix strings)."""

    def default(o: Any) -> Any:
        if isinstance(o, os.PathLike):
            return Path(o).as_posix()
        if isinstance(o, (set, frozenset)):
            return sorted(o)
        if isinstance(o, (_dt.date, _dt.datetime)):
            return o.isoformat()
        if callable(getattr(o, "dump", None)):  # a spec record (bundlegraph.schemas.records): its JSON form
            return o.dump()
        if hasattr(o, "model_dump"):
            return o.model_dump(mode="json", by_alias=True)
        raise TypeError(f"cannot put {type(o).__name__} into an action key")

    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=default)


def key_of(inputs: Mapping[str, Any]) -> str:
    """sha256 hex of the canonical JSON of ``inputs``."""
    return hashlib.sha256(canonical(inputs).encode()).hexdigest()


_STAMP_FILES: dict[tuple[Path, str], Path] = memo.table("state.stamp_files")


def stamp_path(task: str) -> Path:
    """``<work>/.bundlegraph/stamps/<task>.json``: where the stamp of ``task`` lives."""
    sd = paths.state_dir()
    f = _STAMP_FILES.get((sd, task))
    if f is None:
        safe = task.replace(":", "__").replace("/", "_").replace("\\", "_")
        f = _STAMP_FILES[(sd, task)] = sd / "stamps" / f"{safe}.json"
    return f


def fingerprint(path: Path) -> dict[str, Any]:
    """``{size, mtime_ns, sha256}`` of one output file."""
    st = path.stat()
    return {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "sha256": sha256_file(path)}


def _rel(path: Path) -> str:
    p = Path(path).resolve()
    try:
        return p.relative_to(paths.workdir()).as_posix()
    except ValueError:
        return p.as_posix()


@frozen
class Present:
    """An output whose presence, not content, belongs to a stamp: something a task creates
    that later tasks change legitimately, e.g. CMake's ``CMakeCache.txt`` (rewritten when a
    build re-runs CMake). Its absence makes the task out of date ("output ... is missing");
    it is never hashed and never part of :meth:`Stamp.output_digest`."""

    path: Path


@frozen
class Stamp:
    """A recorded completion: ``task``, ``key``, ``inputs`` and ``outputs`` fingerprints."""

    task: str
    key: str
    inputs: dict[str, Any]
    outputs: dict[str, dict[str, Any]]
    finished: str
    seconds: float | None = None
    present: tuple[str, ...] = ()

    def output_digest(self) -> str:
        """One digest over the outputs' sha256 values: what downstream keys consume. (Records
        written as outputs hold only what describes the outputs — no times — so an identical
        rebuild gives an identical digest.) Computed once per stamp: each downstream key asks."""
        d: str | None = self.__dict__.get("_output_digest")
        if d is None:
            d = self.__dict__["_output_digest"] = key_of({k: v["sha256"] for k, v in self.outputs.items()})
        return d


def load(task: str) -> Stamp | None:
    """The stamp of ``task``, or None (never run, or an unreadable stamp). Read once per
    process while its file is unchanged (:func:`~bundlegraph.core.fsutil.parsed_once`): a task's
    stamp is read by its own check and by each downstream key (issue 20)."""
    return parsed_once(stamp_path(task), _read_stamp)


def _read_stamp(f: Path) -> Stamp | None:
    task = f.stem.replace("__", ":")
    try:
        d = json.loads(f.read_text(encoding="utf-8"))
        return _stamp(d) if d.get("version") == STAMP_VERSION else None
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        if f not in _SAID_UNREADABLE:  # a cache: say it once, then the task simply runs again
            _SAID_UNREADABLE.add(f)
            from .report import warn

            warn(f"{f}: unreadable stamp ({type(e).__name__}); {task} will run again")
        return None


_SAID_UNREADABLE: set[Path] = set()


def _stamp(d: dict[str, Any]) -> Stamp:
    return Stamp(
        d["task"], d["key"], d["inputs"], d["outputs"], d["finished"], d.get("seconds"), tuple(d.get("present", ()))
    )


def record(
    task: str,
    inputs: Mapping[str, Any],
    outputs: Iterable[str | os.PathLike[str] | Present],
    seconds: float | None = None,
) -> Stamp:
    """Write the stamp of a successful action (atomically). Every output must exist; a
    :class:`Present` output is recorded by its path alone. ``seconds``: how long the action
    took (kept for reports; never part of a key). Raises FileNotFoundError for a missing output."""
    outs = {}
    present: list[str] = []
    for o in outputs:
        if isinstance(o, Present):
            if not o.path.exists():
                raise FileNotFoundError(f"{task}: output {o.path} was not created")
            present.append(_rel(o.path))
            continue
        p = Path(o)
        outs[_rel(p)] = fingerprint(p)
    d = {
        "version": STAMP_VERSION,
        "task": task,
        "key": key_of(inputs),
        "inputs": json.loads(canonical(inputs)),
        "outputs": outs,
        "finished": _dt.datetime.now(_dt.UTC).isoformat(),
        "seconds": None if seconds is None else round(seconds, 1),
        **({"present": present} if present else {}),
    }
    atomic_write_json(stamp_path(task), d)
    return _stamp(d)


def forget(task: str) -> None:
    """Drop the stamp of ``task`` (before its action starts, so an interrupted run reruns)."""
    stamp_path(task).unlink(missing_ok=True)


def _outputs_changed(stamp: Stamp) -> list[str]:
    out = []
    work = os.fspath(paths.workdir())
    for rel, fp in stamp.outputs.items():
        p = os.path.join(work, rel)  # (strings: a no-op stats every output of every task; an absolute rel stays)
        try:
            st = os.stat(p)
        except FileNotFoundError:
            out.append(f"output {rel} is missing")
            continue
        if st.st_size == fp["size"] and st.st_mtime_ns == fp["mtime_ns"]:
            continue
        if st.st_size != fp["size"] or sha256_file(p) != fp["sha256"]:
            out.append(f"output {rel} was changed outside bundlegraph (fingerprint differs)")
    out += [f"output {rel} is missing" for rel in stamp.present if not os.path.exists(os.path.join(work, rel))]
    return out


def _diff(old: Any, new: Any, prefix: str, out: list[str]) -> None:
    if isinstance(old, dict) and isinstance(new, dict):
        for k in sorted(set(old) | set(new)):
            p = f"{prefix}.{k}" if prefix else str(k)
            if k not in old:
                out.append(f"input {p} added: {_short(new[k])}")
            elif k not in new:
                out.append(f"input {p} removed (was {_short(old[k])})")
            else:
                _diff(old[k], new[k], p, out)
    elif (
        isinstance(old, list)
        and isinstance(new, list)
        and old != new
        and max(len(canonical(old)), len(canonical(new))) > _DUMP_LIMIT
    ):
        # a long list (a command line) is told by the items that differ, not by two truncated dumps
        import difflib

        sm = difflib.SequenceMatcher(a=[canonical(x) for x in old], b=[canonical(x) for x in new], autojunk=False)
        for op, i1, i2, j1, j2 in sm.get_opcodes():
            if op == "replace" and i2 - i1 == j2 - j1:
                for k in range(i2 - i1):
                    _diff(old[i1 + k], new[j1 + k], f"{prefix}[{i1 + k}]", out)
            elif op == "replace":
                out.append(f"input {prefix}[{i1}:{i2}] changed: {_short(new[j1:j2])} (was {_short(old[i1:i2])})")
            elif op == "insert":
                out.append(f"input {prefix}[{i1}] inserted: {_short(new[j1:j2])}")
            elif op == "delete":
                out.append(f"input {prefix}[{i1}:{i2}] removed (was {_short(old[i1:i2])})")
    elif old != new:
        # a changed path is the reason itself: cut short, two long paths under one temp folder
        # would print the same prefix twice and hide what changed
        out.append(f"input {prefix} changed: {_short(old, _PATH_LIMIT)} -> {_short(new, _PATH_LIMIT)}")


_DUMP_LIMIT = 120
"""Characters of a value that ``explain`` prints before cutting it short."""


_PATH_LIMIT = 1024
"""Characters of a changed *string* (a path, a version) that ``explain`` prints whole."""


def _short(v: Any, limit: int = _DUMP_LIMIT) -> str:
    s = canonical(v)
    if isinstance(v, str) and len(s) <= limit:
        return s
    return s if len(s) <= _DUMP_LIMIT else s[: _DUMP_LIMIT - 3] + "..."


def explain(task: str, inputs: Mapping[str, Any]) -> list[str]:
    """Why ``task`` would run now: a list of reasons; empty when it is up to date."""
    stamp = load(task)
    if stamp is None:
        return ["never completed (no stamp), or its last run failed or was interrupted"]
    reasons: list[str] = []
    text = canonical(inputs)  # key_of(inputs), without canonicalising twice
    if stamp.key != hashlib.sha256(text.encode()).hexdigest():
        _diff(stamp.inputs, json.loads(text), "", reasons)
        if not reasons:
            reasons.append("action key changed")
    reasons += _outputs_changed(stamp)
    return reasons


def is_current(task: str, inputs: Mapping[str, Any]) -> bool:
    """True when ``task``'s stamp matches ``inputs`` and its outputs are untouched."""
    return not explain(task, inputs)
