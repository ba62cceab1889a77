"""``--help``: every optional option that takes a value and has a default states it (and those whose
absence means something, named below), and each command words its options for itself
(pipelines.cli.build_parser)."""
from __future__ import annotations

import argparse

import pytest

from pipelines.cli import build_parser


def _commands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


# options without a default value whose absence still means something the help must say
MEANINGFUL_ABSENCE = {("lookup", "--max"), ("dump", "--count"), ("rebuild", "--tables"), ("rebuild", "--split-size"),
                      ("sample", "--config"), ("sample", "--broker-version"), ("verify", "--work"),
                      ("validate", "--docs"), ("audit", "--config"), ("repair", "--backup")}


@pytest.mark.parametrize("command", sorted(_commands()))
def test_every_optional_value_states_its_default(command: str) -> None:
    missing = []
    for action in _commands()[command]._actions:
        if action.required or action.nargs == 0 or not action.option_strings or action.help == argparse.SUPPRESS:
            continue
        if action.default is None and (command, action.option_strings[-1]) not in MEANINGFUL_ABSENCE:
            continue
        if "default" not in (action.help or "").lower():
            missing.append(action.option_strings[-1])
    assert missing == [], f"{command}: {missing} take a value but do not say their default"


def test_sample_words_its_own_options() -> None:
    commands = _commands()

    def help_of(command: str, option: str) -> str:
        return next(a.help or "" for a in commands[command]._actions if option in a.option_strings)

    for option in ("--config", "--broker-version"):
        assert help_of("sample", option) != help_of("rebuild", option)
    assert help_of("sample", "--messages") and help_of("sample", "--seed")
