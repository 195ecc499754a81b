"""What the command groups share: help texts, the command registration, progress bars and the writing of results."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from kairos_gym.cli.commands import description
from kairos_gym.cli.help_format import DefaultsHelpFormatter
from kairos_gym.flags import MAX_SEEDS, SEED_LIMIT

if TYPE_CHECKING:
    from kairos_gym.progress import RunProgress

SEEDS_HELP = (f"seeds as a comma list and/or ranges a-b, e.g. 0-4 or 0,3,7 (distinct, each below {SEED_LIMIT}, at "
              f"most {MAX_SEEDS}; every policy runs on the same seeds)")
JSON_HELP = "write the results as JSON to this file ('-': print the JSON instead of the table)"
NO_PROGRESS_HELP = "no progress bar (bars go to stderr, and only when it is a terminal)"
MAX_CHUNK = 1 << 16
"""Largest ``latency --chunks`` / ``sweep --chunks`` value (tokens)."""

Subparsers = argparse._SubParsersAction
"""The ``add_subparsers`` object a command group registers its commands on."""
Handler = Callable[[argparse.Namespace], int]
"""A command: the parsed flags in, the exit status out (0 ok, 1 a failed check or run, 2 bad input)."""


def add_command(sub: Subparsers, name: str, func: Handler | None, help: str | None = None, *,
                prefix: str = "") -> argparse.ArgumentParser:
    """Register the command ``name`` (``prefix`` + ``name`` in messages, e.g. ``check fault-switch``) running
    ``func`` (None: a command that only holds subcommands). ``help``, the description of its own ``--help``,
    defaults to its line in the command table (:mod:`kairos_gym.cli.commands`, what ``kairos-gym --help``
    shows); a subcommand (``prefix``) gives its own. Every option's default is stated in the help
    (:class:`~kairos_gym.cli.help_format.DefaultsHelpFormatter`)."""
    text = help if help is not None else description(name)
    p = sub.add_parser(name, help=text, description=text, formatter_class=DefaultsHelpFormatter)
    if func is not None:
        p.set_defaults(func=func, command_name=f"{prefix}{name}")
    return p


def progress(args: argparse.Namespace, desc: str) -> RunProgress:
    """The run counter of a command: a bar on stderr when it is a terminal and --no-progress is not given."""
    from kairos_gym.progress import RunProgress, progress_enabled

    return RunProgress(desc, enabled=progress_enabled(getattr(args, "no_progress", False)))


def command_line(args: argparse.Namespace) -> str:
    """The command as typed (or as main() was called), for the headers of generated reports."""
    import shlex

    return " ".join([getattr(args, "prog", "kairos-gym"), shlex.join(getattr(args, "argv", [args.command_name]))])


def write_text(path: str | Path, text: str, *, where: str = "kairos-gym", flag: str = "--out") -> None:
    """Write a generated report (its folder created) all at once or not at all (kairos_gym/output_file.py: a
    write error is one error naming ``flag`` and the path)."""
    from kairos_gym.output_file import write_text as write_whole

    write_whole(path, text, where=where, flag=flag)


def write_json(path: str | None, obj: object, *, where: str = "kairos-gym", flag: str = "--json") -> None:
    """Write ``obj`` as indented JSON to ``path`` ('-': print it; None: nothing)."""
    if path is None:
        return
    text = json.dumps(obj, indent=2, sort_keys=True)
    if path == "-":
        print(text)
    else:
        write_text(path, text + "\n", where=where, flag=flag)
