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
