"""``kairos-gym --help`` is lazy: it imports no command module and none of numpy, gymnasium, torch or the C++ core
(kairos_gym/cli/commands.py holds all it shows); a command imports its own module only."""

from __future__ import annotations

import argparse
import importlib
import json
import subprocess
import sys

import pytest

from kairos_gym.cli.commands import BY_NAME, COMMANDS, GROUPS, MODULES
from kairos_gym.cli.main import build_parser, command_of

HEAVY = ("numpy", "gymnasium", "torch", "stable_baselines3", "sb3_contrib", "matplotlib", "ray", "yaml",
         "kairos_gym._core", "kairos_gym.sim", "kairos_gym.scenario", "kairos_gym.agents", "kairos_gym.evaluation")
"""Modules (and their submodules) the top-level help must not import."""


def _loaded_after(argv: list[str]) -> list[str]:
    """The modules of :data:`HEAVY` (and the command modules) imported by ``main(argv)`` in a fresh interpreter."""
    code = (f"import json, sys\nfrom kairos_gym.cli.main import main\ntry:\n    main({argv!r})\nexcept SystemExit:\n"
            "    pass\nprint(json.dumps(sorted(sys.modules)), file=sys.stderr)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    return json.loads(out.stderr.strip().splitlines()[-1])


@pytest.mark.parametrize("argv", [["--help"], ["--version"], []])
def test_top_level_help_imports_nothing_heavy(argv):
    loaded = _loaded_after(argv)
    heavy = [m for m in loaded if any(m == h or m.startswith(h + ".") for h in HEAVY)]
    assert heavy == [], heavy
    assert not [m for m in loaded if m.startswith("kairos_gym.cli.") and m.split(".")[2] in MODULES]


def test_a_command_s_help_imports_its_own_module_only():
    loaded = _loaded_after(["simulate", "--help"])
    assert "kairos_gym.cli.run" in loaded
    assert not {f"kairos_gym.cli.{m}" for m in MODULES if m != "run"} & set(loaded)
    assert "torch" not in loaded


def test_the_table_and_the_modules_agree():
    """Each module registers exactly the commands the table gives it, with the table's description."""
    assert {c.group for c in COMMANDS} == {t for t, _ in GROUPS}
    for module in MODULES:
        sub = argparse.ArgumentParser().add_subparsers()
        importlib.import_module(f"kairos_gym.cli.{module}").add_commands(sub)
        assert set(sub.choices) == {c.name for c in COMMANDS if c.module == module}, module
        for name, p in sub.choices.items():
            assert p.description == BY_NAME[name].description, name


def test_a_partial_parser_lists_every_command_and_parses_its_own():
    parser = build_parser(["list"])
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    assert list(sub.choices) == [c.name for c in COMMANDS]
    assert parser.parse_args(["list", "tasks"]).what == "tasks"
    assert command_of(["--no-such", "list"]) == "list" and command_of(["nope"]) is None and command_of([]) is None
