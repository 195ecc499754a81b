"""Every default is stated in ``--help``: each option of every command (nested ones included) with a default to
state (kairos_gym/cli/help_format.py: not None, not suppressed, not a flag's False) mentions it."""

from __future__ import annotations

import argparse
from collections.abc import Iterator

from kairos_gym.cli.help_format import DefaultsHelpFormatter, stated_default
from kairos_gym.cli.main import build_parser


def commands(parser: argparse.ArgumentParser, prefix: str = "") -> Iterator[tuple[str, argparse.ArgumentParser]]:
    """(name, parser) of every command, nested ones (check NAME) included."""
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for name, p in sub.choices.items():
        yield prefix + name, p
        if any(isinstance(a, argparse._SubParsersAction) for a in p._actions):
            yield from commands(p, f"{prefix}{name} ")


def _help_line(parser: argparse.ArgumentParser, action: argparse.Action) -> str:
    """The help text of ``action`` as ``--help`` prints it (formatted, default substituted, unwrapped)."""
    formatter = parser._get_formatter()
    return formatter._expand_help(action) if action.help else ""


def test_every_default_is_stated_in_help():
    missing, checked = [], 0
    for cmd, p in commands(build_parser()):
        assert p.formatter_class is DefaultsHelpFormatter, cmd
        for a in p._actions:
            default = stated_default(a)
            if default is None:
                continue
            checked += 1
            text = _help_line(p, a)
            if "default" not in text.lower():  # the value itself, or in words ("default: the shipped agent")
                missing.append(f"{cmd} {'/'.join(a.option_strings) or a.dest}")
    assert not missing, "options whose --help does not state their default:\n" + "\n".join(missing)
    assert checked >= 60


def test_simulate_help_says_its_default_policy(capsys, monkeypatch):
    from kairos_gym.cli.main import main

    monkeypatch.setenv("COLUMNS", "400")  # no line breaks inside a value (argparse breaks at hyphens)
    try:
        main(["simulate", "--help"])
    except SystemExit:
        pass
    out = " ".join(capsys.readouterr().out.split())
    assert "(default: no-deflect)" in out and "(default: bursty)" in out and "(default: 0)" in out


def test_the_formatter_leaves_flags_and_unset_options_alone():
    p = argparse.ArgumentParser(formatter_class=DefaultsHelpFormatter)
    p.add_argument("--flag", action="store_true", help="a flag")
    p.add_argument("--opt", help="unset")
    p.add_argument("--many", action="append", default=[], help="repeatable")
    p.add_argument("--n", default="3", help="a number")
    p.add_argument("--said", default="x", help="a value (default x)")
    p.add_argument("--empty", default="", help="a list")
    text = " ".join(p.format_help().split())
    assert "a flag (default" not in text and "unset (default" not in text and "repeatable (default" not in text
    assert "a number (default: 3)" in text and "a value (default x)" in text and "a list (default: '')" in text
