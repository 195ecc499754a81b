"""The help formatter of every command: each option's default is stated in its ``--help`` line.

An option whose help text already says its default (the word "default", e.g. ``(default: bursty)`` or
``(default 3000)``) is left as written; any other option with a default gets `` (default: VALUE)`` appended.
Options without a stated value to give are left alone: a default of None (the option is off unless given; its
help says what happens then), flags (``store_true``: off), repeatable options that start empty and counters
starting at 0. :func:`stated_default` is the rule; ``tests/cli/test_help_defaults.py`` walks every command with it.
"""

from __future__ import annotations

import argparse
from typing import Any

_NOTHING_TO_STATE = (argparse._StoreTrueAction, argparse._StoreFalseAction, argparse._StoreConstAction,
                     argparse._AppendConstAction, argparse._CountAction, argparse._HelpAction,
                     argparse._VersionAction, argparse._SubParsersAction)


def stated_default(action: argparse.Action) -> Any:
    """The default ``action``'s help must state, or None when there is nothing to state (see the module)."""
    default = action.default
    if default is None or default is argparse.SUPPRESS or isinstance(action, _NOTHING_TO_STATE):
        return None
    if isinstance(action, argparse._AppendAction) and not default:
        return None
    return default


class DefaultsHelpFormatter(argparse.HelpFormatter):
    """``argparse.HelpFormatter`` that appends `` (default: VALUE)`` to an option's help when it has a default to
    state and its help does not mention one."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        default = stated_default(action)
        if default is None or "default" in text.lower():
            return text
        shown = "''" if default == "" else "%(default)s"
        return f"{text} (default: {shown})"


__all__ = ["DefaultsHelpFormatter", "stated_default"]
