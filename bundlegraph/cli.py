"""The bundlegraph command: everything that is not a graph task.

Subcommands live in :mod:`bundlegraph.commands`, one module each, listed in ``COMMANDS`` with
the command names each registers; each module has ``register(subparsers)`` which adds its
parser and sets ``func`` (a callable taking the parsed args and returning an exit status).
A command line naming one command imports that module only (issue 20: ``bundlegraph matrix``
does not pay for the graph's stage modules, ``plan`` not for pydantic); ``--help`` and
unknown names import them all.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from pathlib import Path

from .core import settings
from .core.errors import BUG, BundleGraphError, exit_code

COMMANDS: dict[str, tuple[str, ...]] = {
    "bundlegraph.commands.plan": ("plan",),
    "bundlegraph.commands.matrix": ("matrix",),
    "bundlegraph.commands.schema": ("schema",),
    "bundlegraph.commands.verify": ("verify",),
    "bundlegraph.commands.fatbin": ("fatbin",),
    "bundlegraph.commands.codeobjects": ("codeobjects",),
    "bundlegraph.commands.macho": ("macho",),
    "bundlegraph.commands.explain": ("explain",),
    "bundlegraph.commands.lock_wheels": ("lock-wheels",),
    "bundlegraph.commands.lock_debs": ("lock-debs",),
    "bundlegraph.commands.lock_sdks": ("lock",),
    "bundlegraph.commands.lock_redist": ("lock-redist",),
    "bundlegraph.commands.select": ("select", "coverage"),
    "bundlegraph.commands.upload": ("upload-release", "check-tag", "publish-release"),
    "bundlegraph.commands.upstream": ("upstream", "bump"),
    "bundlegraph.commands.operations": ("release-age", "rerun-cancelled", "start-release"),
    "bundlegraph.commands.verify_release": ("verify-release", "checksums"),
    "bundlegraph.commands.verify_attestation": ("verify-attestation",),
    "bundlegraph.commands.shards": ("shard-merge", "costs"),
    "bundlegraph.commands.sign_bundles": ("sign-bundles",),
}
"""Each command module and the command names its ``register`` adds (a test checks they agree)."""


def command_of(argv: list[str]) -> str | None:
    """The command name of a command line (the first word that is not an option or the value
    of ``--bundles``), or None."""
    it = iter(argv)
    for a in it:
        if a == "--bundles":
            next(it, None)
        elif a in ("-h", "--help"):
            return None
        elif not a.startswith("-"):
            return a
    return None


GLOBAL_OPTIONS = ("--bundles",)
"""Options of the ``bundlegraph`` command itself (each takes a value), not of a subcommand."""


def hoist_global_options(argv: list[str]) -> list[str]:
    """``argv`` with the global options written after the command name moved before it:
    ``bundlegraph plan --bundles DIR L`` is read as ``bundlegraph --bundles DIR plan L`` (issue 41;
    argparse alone would say "unrecognized arguments"). No subcommand has an option of the same
    name (a test checks). Where it is given twice, the last one counts, as argparse does."""
    name = command_of(argv)
    if name is None:
        return argv
    at = argv.index(name)
    head, rest, moved = list(argv[: at + 1]), [], []
    it = iter(argv[at + 1 :])
    for a in it:
        if a == "--":
            rest += [a, *it]
            break
        opt = a.split("=", 1)[0]
        if opt in GLOBAL_OPTIONS:
            moved += [a] if "=" in a else [a, next(it, "")]
        else:
            rest.append(a)
    return [*head[:at], *moved, *head[at:], *rest]


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The argument parser: with only the module of the command ``argv`` names (when it names
    one of :data:`COMMANDS`), else with every command."""
    p = argparse.ArgumentParser(prog="bundlegraph", description=__doc__.splitlines()[0])
    p.add_argument(
        "--bundles",
        default=None,
        help="the bundles directory (default: $BUNDLEGRAPH_BUNDLES, else ./bundles); before or after the command name",
    )
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    name = command_of(argv) if argv is not None else None
    chosen = [m for m, names in COMMANDS.items() if name in names] or list(COMMANDS)
    for mod in chosen:
        importlib.import_module(mod).register(sub)
    for action in sub._choices_actions:  # argparse keeps each add_parser(help=...) here
        # `bundlegraph COMMAND --help` opens with the line the command list shows (issue 41)
        parser = sub.choices[action.dest]
        if not parser.description and action.help:
            parser.description = action.help[0].upper() + action.help[1:] + "."
    return p


def resolve_bundles(args: argparse.Namespace) -> None:
    """Choose the bundles and work directories by the one rule ``doit`` follows too
    (:func:`bundlegraph.core.paths.choose`, the current directory as the root): ``--bundles DIR``, else
    ``$BUNDLEGRAPH_BUNDLES``, else ``./bundles``; the work directory ``$BUNDLEGRAPH_WORKDIR``, else
    the current directory. Sets ``args.bundles`` to the directory used."""
    from .core import paths

    bundles, _ = paths.choose(args.bundles, Path.cwd())
    args.bundles = str(bundles)


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the exit status (:func:`bundlegraph.core.errors.exit_code`: 1 a check answered
    no, 2 a user error, 3 a refused input, 4 a tool that failed, 70 a bug)."""
    import gc

    argv = hoist_global_options(sys.argv[1:] if argv is None else argv)
    was_on = gc.isenabled()
    gc.disable()  # the command's imports allocate much and free little (issue 20)
    try:
        parser = build_parser(argv)
    finally:
        if was_on:  # (not frozen: main() also runs inside long-lived processes, e.g. the tests)
            gc.enable()
    args = parser.parse_args(argv)
    resolve_bundles(args)
    try:
        settings.check_environment()
        return int(args.func(args) or 0)
    except BundleGraphError as e:
        print(f"bundlegraph: {e}", file=sys.stderr)
        return exit_code(e)
    except BrokenPipeError:  # `bundlegraph matrix | head`: the reader left; no traceback
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except Exception as e:  # a bug: its traceback, and the status that says so
        import traceback

        traceback.print_exc()
        print(
            f"bundlegraph: this is a bug in bundlegraph ({type(e).__name__}); please report it with the "
            "traceback above",
            file=sys.stderr,
        )
        return BUG


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
