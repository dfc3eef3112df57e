"""The one way bundlegraph runs a program.

No other module calls :mod:`subprocess` directly. :func:`run` resolves the program on the
PATH of the environment it is given (``shutil.which`` also finds ``.exe`` on Windows), echoes
the command, streams the full output into a log file, runs the child in its own process group
(POSIX session / Windows ``CREATE_NEW_PROCESS_GROUP``) and ends that whole group when the
caller is interrupted, so no compiler outlives an interrupted build.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import signal
import sys
import threading
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import memo
from .errors import ToolFailed, ToolMissing
from .lightclass import frozen

if TYPE_CHECKING:  # imported where a process starts (planning starts none)
    import subprocess

IS_WINDOWS = os.name == "nt"
IS_LINUX = sys.platform.startswith("linux")


def _pdeathsig() -> None:  # pragma: no cover - runs in the child between fork and exec
    """Ask Linux to send SIGTERM to this child when the thread that started it dies
    (``prctl(PR_SET_PDEATHSIG)``), so a SIGKILLed parent still stops its build."""
    import ctypes

    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM, 0, 0, 0)


def _own_group(pdeathsig: bool) -> dict[str, Any]:
    """``Popen`` arguments that start the child in a process group of its own (Windows:
    ``CREATE_NEW_PROCESS_GROUP``; POSIX: a new session), on Linux with :func:`_pdeathsig` where
    ``pdeathsig``."""
    import subprocess

    if IS_WINDOWS:
        return {"creationflags": subprocess.CREATE_NEW_PROCESS_GROUP}  # type: ignore[attr-defined]  # Windows only
    return {"start_new_session": True, **({"preexec_fn": _pdeathsig} if pdeathsig else {})}


@frozen
class Completed:
    """Result of :func:`run`: ``argv`` as executed (program resolved), exit code 0 only
    (non-zero raises), ``output`` the combined stdout+stderr text when ``capture`` was set."""

    argv: tuple[str, ...]
    returncode: int
    output: str


def env_get(env: Mapping[str, str], name: str, *, windows: bool = IS_WINDOWS) -> str | None:
    """``env[name]``, by Windows' rule where ``windows``: names are case-insensitive there
    (``set`` prints ``Path=``, and ``dict(os.environ)`` holds upper-case names: ``VCTOOLSINSTALLDIR``)."""
    if name in env:
        return env[name]
    if windows:
        up = name.upper()
        return next((v for k, v in env.items() if k.upper() == up), None)
    return None


def which(program: str, env: Mapping[str, str] | None = None) -> str | None:
    """Resolve ``program`` on ``env['PATH']`` (or this process's PATH). Absolute or
    relative paths with a directory part are returned as-is when the file exists."""
    if os.path.dirname(program):
        p = Path(program)
        if p.is_file():
            return str(p)
        if IS_WINDOWS and Path(program + ".exe").is_file():
            return program + ".exe"
        return None
    path = env_get(env or os.environ, "PATH")
    search = os.defpath if path is None else path
    key = (program, search, env_get(env or os.environ, "PATHEXT") if IS_WINDOWS else None)
    if key in _FOUND:
        hit = _FOUND[key]
        if hit is None or os.path.isfile(hit):
            return hit
    _FOUND[key] = found = shutil.which(program, path=search)
    return found


_FOUND: dict[tuple[str, str, str | None], str | None] = memo.table("proc.which")
""":func:`which` answers of this process by (program, PATH, PATHEXT): every task's key asks
for its compilers, launcher and emulator, and each lookup stats every PATH directory (issue 20).
A remembered path that is gone is looked up again."""


def quote(argv: Sequence[str]) -> str:
    """A copy-pasteable rendering of ``argv`` for logs (POSIX quoting; Windows list2cmdline)."""
    if IS_WINDOWS:
        import subprocess

        return subprocess.list2cmdline(list(argv))
    return shlex.join(list(argv))


STOP_WAIT_S = 5.0
"""Seconds an unsupervised child's group gets between SIGTERM and SIGKILL."""


def _kill_group(proc: subprocess.Popen[bytes], supervised: bool) -> None:
    """End the child's process tree and wait for it, bounded.

    A supervised child (Linux) is the supervisor: SIGTERM makes it end every descendant and
    exit only when none is left (SIGKILL to the tree after ``_supervise.KILL_AFTER_S``), so
    waiting for it is waiting for the whole build. It gets that grace period plus
    ``STOP_WAIT_S`` before it is killed itself. Elsewhere the group gets ``STOP_WAIT_S``."""
    import subprocess

    if proc.poll() is not None:
        return
    from ._supervise import KILL_AFTER_S

    grace = KILL_AFTER_S + STOP_WAIT_S if supervised else STOP_WAIT_S
    with contextlib.suppress(OSError):  # the group is gone (ProcessLookupError) or not ours
        if IS_WINDOWS:
            proc.send_signal(signal.CTRL_BREAK_EVENT)  # type: ignore[attr-defined]  # Windows only
        else:
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            if IS_WINDOWS:
                subprocess.run(["taskkill", "/F", "/T", "/PID", str(proc.pid)], capture_output=True)
            else:
                os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(STOP_WAIT_S)


def _masked(text: str, hidden: Sequence[str]) -> str:
    """``text`` with each of ``hidden`` (longest first) written as ``***``."""
    for s in hidden:
        text = text.replace(s, "***")
    return text


def run(
    argv: Sequence[str | os.PathLike[str]],
    *,
    cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    log: str | os.PathLike[str] | None = None,
    capture: bool = False,
    echo: bool = True,
    on_line: Callable[[str], None] | None = None,
    check: bool = True,
    what: str = "",
    secrets: Sequence[str] = (),
) -> Completed:
    """Run ``argv`` (a list, never a shell string) and wait for it.

    - ``env``: the complete environment for the child (default: this process's). The program
      is resolved on *its* PATH; a missing program raises :class:`ToolMissing` naming it.
    - ``log``: a file that receives the command line and the full output (appended).
    - ``capture``: also return the output text in :attr:`Completed.output`.
    - ``on_line``: called with each output line (e.g. ninja's ``[n/N]`` progress).
    - ``echo``: print the command line before running it.
    - ``secrets``: strings written as ``***`` wherever this function writes: the echoed command,
      the log, the captured output, ``on_line`` and the error's last lines (a program may print a
      credential of its environment or configuration: ccache prints a bad URL's user part).
    - ``check``: a non-zero exit raises :class:`ToolFailed` with the command, exit code and
      the last lines of output; ``what`` names the step in that message.

    On KeyboardInterrupt/SystemExit the child is ended before re-raising, and this function
    returns only when it is gone (bounded: SIGKILL after a grace period). On Linux the child
    runs under :mod:`bundlegraph.core._supervise`, which ends and waits for every descendant,
    also those in process groups of their own (ninja's jobs), and also when this process is
    killed outright (SIGKILL).
    """
    args = [os.fspath(a) for a in argv]
    resolved = which(args[0], env)
    if resolved is None:
        raise ToolMissing(
            f"{what + ': ' if what else ''}program {args[0]!r} was not found on the PATH"
            f" it was given; install it or put it on PATH"
        )
    args[0] = resolved
    hidden = sorted((s for s in secrets if s), key=len, reverse=True)
    shown = _masked(quote(args), hidden)
    if echo:
        from . import report

        report.say(f"$ {shown}")
    logf = None
    if log is not None:
        Path(log).parent.mkdir(parents=True, exist_ok=True)
        logf = open(log, "a", encoding="utf-8", errors="replace")
        logf.write(f"$ {shown}\n")
        logf.flush()
    import subprocess

    # on Linux a supervisor owns the child's process group and ends it if we die (even SIGKILL)
    spawn = [sys.executable, "-m", "bundlegraph.core._supervise", "--", *args] if IS_LINUX else args
    tail: deque[str] = deque(maxlen=20)  # the last lines, for the error message
    captured: list[str] = []
    proc = subprocess.Popen(
        spawn,
        cwd=os.fspath(cwd) if cwd is not None else None,
        env=dict(env) if env is not None else None,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        encoding="utf-8",
        errors="replace",
        bufsize=1,
        **_own_group(pdeathsig=IS_LINUX),
    )

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            if hidden:
                line = _masked(line, hidden)
            if logf:
                logf.write(line)
            if capture:
                captured.append(line)
            tail.append(line)
            if on_line:
                on_line(line.rstrip("\n"))

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    try:
        rc = proc.wait()
        reader.join()
    except BaseException:
        _kill_group(proc, IS_LINUX)
        raise
    finally:
        if logf:
            logf.write(f"[exit {proc.returncode}]\n")
            logf.close()
    if rc != 0 and check:
        last = "".join(tail).rstrip()
        where = f"; full log: {log}" if log else ""
        raise ToolFailed(
            f"{what + ': ' if what else ''}command failed with exit code {rc}: {shown}{where}\n"
            f"--- last lines ---\n{last}",
            returncode=rc,
            log=os.fspath(log) if log else None,
        )
    return Completed(tuple(args), rc, "".join(captured))


class Background:
    """A program left running (a server under test): ``with Background(argv, env=..., log=...) as b:``
    starts it in its own process group (Linux: it gets SIGTERM when this process dies), its
    output appended to ``log``; :meth:`stop` asks it to end (SIGTERM; CTRL_BREAK on Windows) and
    returns its exit code, or None when it had to be killed after ``timeout`` seconds. Leaving
    the block ends the whole group in any case."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        log: str | os.PathLike[str],
        cwd: str | os.PathLike[str] | None = None,
    ):
        self.argv, self.env, self.log, self.cwd = list(argv), env, log, cwd
        self.proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> Background:
        import subprocess

        self._logf = open(self.log, "ab")
        self.proc = subprocess.Popen(
            self.argv,
            env=dict(self.env) if self.env is not None else None,
            cwd=os.fspath(self.cwd) if self.cwd is not None else None,
            stdin=subprocess.DEVNULL,
            stdout=self._logf,
            stderr=subprocess.STDOUT,
            **_own_group(pdeathsig=IS_LINUX),
        )
        return self

    def poll(self) -> int | None:
        assert self.proc is not None
        return self.proc.poll()

    def stop(self, timeout: float) -> int | None:
        import subprocess

        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.CTRL_BREAK_EVENT if IS_WINDOWS else signal.SIGTERM)  # type: ignore[attr-defined]
            try:
                return self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                _kill_group(self.proc, False)
                return None
        return self.proc.returncode

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None:
            _kill_group(self.proc, False)
        self._logf.close()


def python_exe() -> str:
    """The interpreter running bundlegraph (used for ``python -m pip ...``)."""
    return sys.executable
