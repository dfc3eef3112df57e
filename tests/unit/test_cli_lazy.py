"""The CLI imports only the module of the command it runs (issue 20), and its table of
command names agrees with what each module registers."""

from __future__ import annotations

import argparse

from bundlegraph.cli import COMMANDS, build_parser, command_of


def _choices(p: argparse.ArgumentParser) -> set[str]:
    sub = next(a for a in p._actions if isinstance(a, argparse._SubParsersAction))
    return set(sub.choices)


def test_the_table_names_what_each_module_registers():
    assert _choices(build_parser()) == {n for names in COMMANDS.values() for n in names}
    for names in COMMANDS.values():
        for n in names:
            assert _choices(build_parser([n])) == set(names), n


def test_the_command_word_is_found_past_global_options():
    assert command_of(["--bundles", "plan", "matrix"]) == "matrix"  # 'plan' is the directory here
    assert command_of(["plan", "--keys"]) == "plan"
    assert command_of(["-h"]) is None and command_of([]) is None
    assert _choices(build_parser(["nope"])) == _choices(build_parser())  # unknown: argparse lists them all


def test_every_subcommands_help_opens_with_what_it_does(capsys):
    """``bundlegraph COMMAND --help``: after the usage, one line saying what the command does (the
    line the command list shows), for every command (issue 41)."""
    import pytest

    from bundlegraph.cli import main

    for name in sorted(_choices(build_parser())):
        with pytest.raises(SystemExit) as ei:
            main([name, "--help"])
        assert ei.value.code == 0, name
        out = capsys.readouterr().out
        after_usage = " ".join(out.split("\n\n")[1].split())  # argparse wraps it to the terminal's width
        assert after_usage.endswith(".") and len(after_usage) > 20, (name, out[:600])
        assert not after_usage.startswith(("positional arguments", "options")), (name, out[:600])


def test_global_options_may_follow_the_command_name():
    from bundlegraph.cli import GLOBAL_OPTIONS, hoist_global_options

    assert hoist_global_options(["plan", "--bundles", "B", "L"]) == ["--bundles", "B", "plan", "L"]
    assert hoist_global_options(["plan", "--bundles=B", "--keys"]) == ["--bundles=B", "plan", "--keys"]
    assert hoist_global_options(["--bundles", "B", "plan", "L"]) == ["--bundles", "B", "plan", "L"]
    assert hoist_global_options(["explain", "--", "--bundles"]) == ["explain", "--", "--bundles"]
    # no subcommand has an option of a global option's name (it would be taken from it)
    top = build_parser()
    sub = next(a for a in top._actions if isinstance(a, argparse._SubParsersAction))
    for name, p in sub.choices.items():
        own = {o for a in p._actions for o in a.option_strings}
        assert not own & set(GLOBAL_OPTIONS), name
