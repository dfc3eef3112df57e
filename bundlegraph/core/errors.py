"""Errors that describe a problem with the user's input or the world.

Everything the user can fix (a bad spec, a hash mismatch, a missing compiler, a download
that failed) raises a :class:`BundleGraphError` subclass whose message names the file, key
or artifact and says what was expected. Inside doit actions these are turned into a returned
``doit.exceptions.TaskFailed`` (see :func:`bundlegraph.graph.context._execute`), so no traceback is
printed. Any other exception is a bug and keeps its traceback.

Exit statuses of the ``bundlegraph`` command and of a ``doit`` run stopped before any task
(:func:`exit_code`; README "Exit codes"): 0 done; 1 a check answered no (``verify`` found
problems, ``select`` found no bundle, ``coverage`` an empty release); 2 a user error (usage, a
spec, a setting, an unknown task, the work directory held by another run); 3 a refused input (a
hash or size that differs, an unsafe archive, a bundle that fails verification, a host that
cannot run the task); 4 a tool that failed or is missing (a compiler, a download, a toolkit that
cannot be installed): running again may help; 70 a bug (any other exception, with its traceback;
``EX_SOFTWARE`` of BSD's sysexits.h). Inside a ``doit`` run a failed task is doit's own status 1.
"""

from __future__ import annotations

from collections.abc import Iterable


class BundleGraphError(Exception):
    """Base class of every expected failure (derives from Exception, not BaseException)."""


class SpecError(BundleGraphError):
    """One or more spec files are invalid. ``problems`` holds one line per problem,
    each starting with ``<file>: <key.path>: ``. The message is that line when there is one
    problem, else a head line counting them and one indented line each."""

    def __init__(self, problems: list[str]):
        self.problems = list(problems)
        n = len(self.problems)
        if n == 1:
            super().__init__(self.problems[0])
            return
        head = f"{n} problems in the bundle specs:"
        super().__init__("\n".join([head, *("  " + p for p in self.problems)]))


class HashMismatch(BundleGraphError):
    """A downloaded or cached file does not have the pinned sha256/size."""


class DownloadError(BundleGraphError):
    """A download failed (network, HTTP status, refused URL)."""


class UnsafeArchive(BundleGraphError):
    """An archive holds an entry that would land outside the extraction root (absolute path,
    ``..``, backslash traversal, a link pointing outside) or a device file."""


class ToolMissing(BundleGraphError):
    """A program the stage needs is not installed / not on the PATH it was given."""


class ToolFailed(BundleGraphError):
    """A program ran and exited non-zero. ``log`` is the path of its full output."""

    def __init__(self, message: str, *, returncode: int | None = None, log: str | None = None):
        self.returncode = returncode
        self.log = log
        super().__init__(message)


class HostMismatch(BundleGraphError):
    """The task cannot run on this host (e.g. a Windows leg's build on Linux)."""


class ToolkitError(BundleGraphError):
    """A CUDA toolkit cannot be resolved, installed or validated."""


class VerifyError(BundleGraphError):
    """A bundle failed verification; ``failures`` holds one line per failure."""

    def __init__(self, failures: list[str], *, subject: str = ""):
        self.failures = list(failures)
        head = f"verify failed{(' for ' + subject) if subject else ''}: {len(self.failures)} problem(s)"
        super().__init__("\n".join([head, *("  " + f for f in self.failures)]))


class SettingError(BundleGraphError):
    """A ``BUNDLEGRAPH_*`` variable has a value of the wrong form (:mod:`bundlegraph.core.settings`)."""


class StateError(BundleGraphError):
    """The bundlegraph state (stamps, locks) is unusable or held by another run."""


class TaskSkipped(BundleGraphError):
    """A task that could not apply on this host (e.g. ``smoke:<leg>`` without a matching GPU).
    Not a failure and never a pass: the graph prints the reason and records no stamp, so the
    task is evaluated again on the next run."""


USER_ERROR = 2
REFUSED_INPUT = 3
TOOL_FAILED = 4
BUG = 70
"""Exit statuses by error class (module docstring); 70 is ``EX_SOFTWARE`` of sysexits.h."""


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """`` (did you mean 'X'?)`` with the closest of ``choices`` to a misspelled ``word``
    (:func:`difflib.get_close_matches`, cutoff 0.6), or ``""`` when none is close. difflib is
    imported here, when a word is misspelled, not by the graph's load."""
    import difflib

    close = difflib.get_close_matches(word, list(choices), n=1)
    return f" (did you mean '{close[0]}'?)" if close else ""


def exit_code(error: BaseException) -> int:
    """The exit status for ``error`` (module docstring): a :class:`BundleGraphError` by its
    class, anything else :data:`BUG`."""
    if isinstance(error, (HashMismatch, UnsafeArchive, VerifyError, HostMismatch)):
        return REFUSED_INPUT
    if isinstance(error, (ToolFailed, ToolMissing, DownloadError, ToolkitError)):
        return TOOL_FAILED
    if isinstance(error, BundleGraphError):
        return USER_ERROR
    return BUG
