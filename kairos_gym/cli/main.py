"""The ``kairos-gym`` parser and entry point. Thin: parses flags, calls the library, prints or writes results.

Every flag value and every output path is checked before any work starts (:mod:`kairos_gym.flags`): a bad
one exits with status 2 and one line naming the flag, the value and what is allowed. Tables go to stdout
(:func:`kairos_gym.table.render_table`, at most 120 columns); progress bars to stderr, only on a terminal
(``--no-progress`` turns them off). The commands come in groups, one module each.

Lazy by design: the top-level parser is built from the command table (:mod:`kairos_gym.cli.commands`) alone,
and only the module of the command being run (or asked for its ``--help``) is imported, inside which a command
imports what it runs. So ``kairos-gym --help`` imports no numpy, gymnasium, torch or C++ core (~0.1 s). A command
that needs a pip extra which is not installed (:mod:`kairos_gym.extras`) stops like a bad flag, naming the extra.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import textwrap
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from kairos_gym.cli.commands import BY_NAME, COMMANDS, GROUPS, MODULES
from kairos_gym.errors import ConfigError
from kairos_gym.extras import MissingExtraError

WIDTH = 110
"""Width of the grouped command list (characters)."""
NAME_WIDTH = 20
"""Width of its command-name column (characters)."""
DESCRIPTION = ("kairos-gym: a Gymnasium environment, simulator and benchmark for prefill deflection in "
               "disaggregated LLM serving.")


class _VersionAction(argparse.Action):
    """``--version``: the installed package's version, looked up only when asked (importlib.metadata: ~30 ms)."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS,
                 default: Any = argparse.SUPPRESS, help: str = "show the version and exit") -> None:
        super().__init__(option_strings, dest, nargs=0, default=default, help=help)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        from kairos_gym import __version__

        print(f"kairos-gym {__version__}")
        parser.exit()


def _command_list() -> str:
    """The grouped list of commands, each with its one-line description (wrapped to :data:`WIDTH`)."""
    lines = []
    for title, what in GROUPS:
        lines.append(f"{title} ({what}):")
        for c in COMMANDS:
            if c.group == title:
                lines += textwrap.wrap(c.description, WIDTH, initial_indent=f"  {c.name:<{NAME_WIDTH - 3}} ",
                                       subsequent_indent=" " * NAME_WIDTH)
        lines.append("")
    lines.append("kairos-gym COMMAND --help shows a command's flags.")
    return "\n".join(lines)


def build_parser(commands: Iterable[str] | None = None) -> argparse.ArgumentParser:
    """The argument parser, its commands listed by group in its help. ``commands``: the commands whose flags are
    registered (their modules imported; each module registers all of its commands); the others are present by
    name and description only. None: every command, fully (tests, docs)."""
    wanted = set(MODULES) if commands is None else {BY_NAME[c].module for c in commands}
    parser = argparse.ArgumentParser(prog="kairos-gym", usage="kairos-gym [-h] [--version] COMMAND ...",
                                     description=DESCRIPTION, epilog=_command_list(),
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action=_VersionAction)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", help=argparse.SUPPRESS,
                                prog="kairos-gym")
    for module in MODULES:
        if module in wanted:
            importlib.import_module(f"kairos_gym.cli.{module}").add_commands(sub)
    for c in COMMANDS:
        if c.name not in sub.choices:  # listed, not loaded: parsing it would need its module
            sub.add_parser(c.name, help=c.description, description=c.description)
    return parser


def command_of(argv: Sequence[str]) -> str | None:
    """The command an argument list runs: its first word that is not an option (the top-level options, -h and
    --version, take no value); None when there is none or it is not a command (argparse then says so)."""
    word = next((a for a in argv if not a.startswith("-")), None)
    return word if word in BY_NAME else None


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``kairos-gym`` console script: the command's exit status (2: bad input, one
    ``error:`` line on stderr)."""
    given = list(sys.argv[1:] if argv is None else argv)
    command = command_of(given)
    parser = build_parser([] if command is None else [command])
    args = parser.parse_args(given)
    # the exact command, for headers that record it (leaderboard): as typed, or as main() was called
    args.argv = given
    args.prog = ("python -m kairos_gym.cli" if argv is None and Path(sys.argv[0]).name == "__main__.py"
                 else "kairos-gym")
    try:
        return int(args.func(args) or 0)
    except BrokenPipeError:  # e.g. `kairos-gym latency | head`: the reader left; not an error of ours
        import os

        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # Python flushes stdout at exit: point it somewhere that accepts
        return 0
    except (ConfigError, MissingExtraError) as e:  # bad input, or a pip extra the command needs is not installed
        print(f"kairos-gym {args.command_name}: error: {e}", file=sys.stderr)
        return 2
    except Exception as e:
        backends = sys.modules.get("kairos_gym.evaluation.backends.base")  # loaded by any command that can raise it
        if backends is not None and isinstance(e, backends.BackendError):  # a run failed past its retries
            print(f"kairos-gym {args.command_name}: error: {e}", file=sys.stderr)
            return 1
        raise
