"""The ``kairos-gym`` parser and entry point. Thin: parses flags, calls the library, prints or writes results.

Every flag value and every output path is checked before any work starts (:mod:`kairos_gym.flags`): a bad
one exits with status 2 and one line naming the flag, the value and what is allowed. Tables go to stdout
(:func:`kairos_gym.table.render_table`, at most 120 columns); progress bars to stderr, only on a terminal
(``--no-progress`` turns them off). The commands come in groups, one module each; a command imports what it
runs inside its function, so ``kairos-gym --help`` loads no torch, Stable-Baselines3 or matplotlib. A command
that needs a pip extra which is not installed (:mod:`kairos_gym.extras`) stops the same way, naming the extra.
"""

from __future__ import annotations

import argparse
import sys
import textwrap
from collections.abc import Callable, Sequence
from pathlib import Path

from kairos_gym.cli import benchmark, checks, machine, performance, run, train
from kairos_gym.cli.common import Subparsers
from kairos_gym.errors import ConfigError
from kairos_gym.evaluation.backends import BackendError
from kairos_gym.extras import MissingExtraError

GROUPS: tuple[tuple[str, str, tuple[Callable[[Subparsers], None], ...]], ...] = (
    ("run", "policies on scenarios", (run.add_commands,)),
    ("benchmark", "the standard suite, its reports and design checks", (benchmark.add_commands, checks.add_commands)),
    ("train", "agents: training, distillation, selection, conversion", (train.add_commands,)),
    ("performance", "throughput and memory on this machine", (performance.add_commands,)),
    ("machine", "the step-latency model; does this machine reproduce the results?", (machine.add_commands,)),
)
"""The command groups of ``kairos-gym --help``: (title, what its commands do, the functions registering them)."""
WIDTH = 110
"""Width of the grouped command list (characters)."""
NAME_WIDTH = 20
"""Width of its command-name column (characters)."""
DESCRIPTION = ("kairos-gym: a Gymnasium environment, simulator and benchmark for prefill deflection in "
               "disaggregated LLM serving.")


def _command_list(sub: Subparsers, groups: list[tuple[str, str, list[str]]]) -> str:
    """The grouped list of commands, each with its one-line help (wrapped to :data:`WIDTH`)."""
    lines = []
    for title, what, names in groups:
        lines.append(f"{title} ({what}):")
        for name in names:
            text = sub.choices[name].description or ""
            lines += textwrap.wrap(text, WIDTH, initial_indent=f"  {name:<{NAME_WIDTH - 3}} ",
                                   subsequent_indent=" " * NAME_WIDTH)
        lines.append("")
    lines.append("kairos-gym COMMAND --help shows a command's flags.")
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every command, listed by group in its help."""
    from kairos_gym import __version__

    parser = argparse.ArgumentParser(prog="kairos-gym", usage="kairos-gym [-h] [--version] COMMAND ...",
                                     description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"kairos-gym {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", help=argparse.SUPPRESS,
                               prog="kairos-gym")
    groups = []
    for title, what, adders in GROUPS:
        before = set(sub.choices)
        for add in adders:
            add(sub)
        groups.append((title, what, [n for n in sub.choices if n not in before]))
    parser.epilog = _command_list(sub, groups)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``kairos-gym`` console script: the command's exit status (2: bad input, one
    ``error:`` line on stderr)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    # the exact command, for headers that record it (leaderboard): as typed, or as main() was called
    args.argv = list(sys.argv[1:] if argv is None else argv)
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
    except BackendError as e:  # a run still failed after its retries (docs/scale-out.md)
        print(f"kairos-gym {args.command_name}: error: {e}", file=sys.stderr)
        return 1
