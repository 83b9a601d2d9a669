"""Every numeric flag of every command (``popejoan simulate/play/serve`` and the training commands) reads through one
shared kind of value (``cli.Integer`` / ``cli.Number``): NaN, infinities, 0, -1 and a huge value are each either
inside the flag's stated range, or refused when the command line is read — one line, exit status 2, before any work."""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import re

import pytest

from popejoan_env.__main__ import build_parser
from popejoan_env.cli import Integer, Number
from popejoan_env.training import COMMANDS
from popejoan_env.training.common import flag_parser

VALUES = ["nan", "inf", "-inf", "0", "-1", "1e300", "9" * 30, "2.5"]
"""What each numeric flag is fed."""
REQUIRED = {"simulate": ["--out", "x.jsonl"], "evaluate": ["stops_first"], "exploit": ["stops_first"]}
"""Flags a command cannot be read without."""


def _training_parsers() -> list[tuple[str, argparse.ArgumentParser]]:
    out = []
    for name, command in COMMANDS.items():
        module = importlib.import_module(f"popejoan_env.training.{command.module}")
        out.append((name, flag_parser(module.Args, "")))
    return out


def _popejoan_parsers() -> list[tuple[str, argparse.ArgumentParser]]:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return [(name, parser) for name, parser in sub.choices.items() if name not in COMMANDS]


PARSERS = _training_parsers() + _popejoan_parsers()
NUMERIC = [(name, parser, action) for name, parser in PARSERS for action in parser._actions
           if isinstance(action.type, (Integer, Number))]


def test_every_number_flag_of_every_training_command_has_a_kind() -> None:
    for name, command in COMMANDS.items():
        module = importlib.import_module(f"popejoan_env.training.{command.module}")
        for f in dataclasses.fields(module.Args):
            if f.type in ("int", "float"):
                assert isinstance(f.metadata["kind"], (Integer, Number)), f"{name} --{f.name}"


def test_every_number_flag_of_the_command_line_has_a_kind() -> None:
    for name, parser in _popejoan_parsers():
        for action in parser._actions:
            if action.type is int or action.type is float:
                raise AssertionError(f"popejoan {name} {action.option_strings} reads a bare {action.type.__name__}")
    assert {name for name, _, _ in NUMERIC} >= {"simulate", "play", "serve", "train", "benchmark"}


def _inside(kind: Integer | Number, text: str) -> bool:
    """Whether ``text`` is a value of ``kind``, judged here independently of the kind's own reading."""
    try:
        value = float(text) if isinstance(kind, Number) else int(text)
    except ValueError:
        return False
    if value != value or value in (float("inf"), float("-inf")):
        return False
    low_ok = kind.low < value if getattr(kind, "low_open", False) else kind.low <= value
    return low_ok and value <= kind.high


@pytest.mark.parametrize(("name", "parser", "action"), NUMERIC,
                         ids=[f"{n}{a.option_strings[0]}" for n, _, a in NUMERIC])
def test_nan_infinities_zero_negative_and_huge_are_in_range_or_refused_in_one_line(
        name: str, parser: argparse.ArgumentParser, action: argparse.Action,
        capsys: pytest.CaptureFixture[str]) -> None:
    flag = action.option_strings[0]
    for text in VALUES:
        argv = [*REQUIRED.get(name, []), flag, text]
        if _inside(action.type, text):
            value = getattr(parser.parse_args(argv), action.dest)
            assert action.type.low <= value <= action.type.high
            continue
        with pytest.raises(SystemExit) as info:
            parser.parse_args(argv)
        err = capsys.readouterr().err
        assert info.value.code == 2, (flag, text)
        assert len(err.splitlines()) == 1 and f"argument {flag}: " in err, (flag, text, err)
        assert "Traceback" not in err and "usage:" not in err


def _stated(default: object) -> set[str]:
    """How a help text may write a default: as it is, and a whole number also with thousands separators."""
    return {str(default), f"{default:,}"} if isinstance(default, int) and not isinstance(default, bool) else {
        str(default)}


def test_a_default_or_a_range_a_help_text_writes_is_the_flags_own() -> None:
    # The popejoan commands' help texts are written by hand ("seats at the table, 3..8 (default 4)"); the training
    # commands' defaults are added by argparse, their ranges by hand.
    checked = 0
    for name, parser in PARSERS:
        for action in parser._actions:
            text = action.help or ""
            for stated in re.findall(r"\(default:? ([^);,:]+)", text):
                if action.default is not None and not isinstance(action.default, (bool, list)):
                    assert stated.strip() in _stated(action.default), (
                        f"{name} {action.option_strings[0]}: help says (default {stated}), the default is "
                        f"{action.default!r}")
                    checked += 1
            for low, high in re.findall(r"(-?\d[\d,]*)(?:\.\.| to )(-?\d[\d,]*)", text):
                if isinstance(action.type, (Integer, Number)):
                    written = (float(low.replace(",", "")), float(high.replace(",", "")))
                    assert written == (action.type.low, action.type.high), (
                        f"{name} {action.option_strings[0]}: help says {low}..{high}, the flag takes "
                        f"{action.type.low}..{action.type.high}")
                    checked += 1
    assert checked >= 20
