"""One command line: every entry point is a ``kairos-gym`` subcommand, listed by group in ``kairos-gym --help``."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from kairos_gym.cli.commands import GROUPS
from kairos_gym.cli.main import build_parser, main

ROOT = Path(__file__).resolve().parents[2]
BUILD_SCRIPTS = {"kairos_gym/_source_hash.py"}
"""Run by CMake as ``python FILE`` before the package is built (stdlib only): not an entry point of the package."""


def _own_entry_points(path: Path) -> list[str]:
    """What in the file makes it a program of its own: an ``if __name__ == "__main__"`` or an ArgumentParser."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.If) and "__main__" in ast.unparse(node.test) and "__name__" in ast.unparse(node.test):
            found.append(f"line {node.lineno}: if __name__ == '__main__'")
        elif isinstance(node, ast.Call) and ast.unparse(node.func).endswith("ArgumentParser"):
            found.append(f"line {node.lineno}: ArgumentParser(...)")
    return found


def test_no_module_but_the_cli_package_is_a_program_of_its_own():
    bad = []
    for top in ("kairos_gym", "agents", "train"):
        for f in sorted((ROOT / top).rglob("*.py")):
            rel = f.relative_to(ROOT).as_posix()
            if rel.startswith("kairos_gym/cli/") or rel in BUILD_SCRIPTS:
                continue
            bad += [f"{rel} {what}" for what in _own_entry_points(f)]
    assert not bad, "entry points outside kairos_gym/cli/ (make them kairos-gym subcommands):\n" + "\n".join(bad)


def test_the_checker_sees_a_main_guard_and_a_parser(tmp_path):
    f = tmp_path / "x.py"
    f.write_text("import argparse\np = argparse.ArgumentParser()\nif __name__ == '__main__':\n    pass\n")
    assert len(_own_entry_points(f)) == 2


def test_help_lists_every_command_group_and_command(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    for title, _ in GROUPS:
        assert f"\n{title} (" in out
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    for name in sub.choices:
        assert f"\n  {name} " in out, name
    assert {"discover", "run", "benchmark", "train", "performance", "machine"} == {t for t, _ in GROUPS}
    assert {"perf", "check", "measure", "compare", "oracle-cache", "pull-compare", "distill", "select", "convert",
            "soak", "perf-env", "perf-scenario", "perf-components", "perf-pool", "perf-train"} <= set(sub.choices)
    assert "bench" not in sub.choices  # the throughput command is perf; benchmark is the leaderboard's group


def test_help_imports_no_heavy_library():
    code = ("import sys; from kairos_gym.cli.main import build_parser; build_parser(); "
            "print(sorted(m for m in ('torch', 'stable_baselines3', 'sb3_contrib', 'matplotlib', 'ray') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out == "[]\n"


def test_a_bad_check_flag_is_one_error_line(capsys):
    assert main(["check", "regime-shift", "--seeds", "0"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("kairos-gym check regime-shift: error:") and "--seeds" in err[0]


def test_convert_refuses_an_untrusted_checkpoint(tmp_path, capsys):
    (tmp_path / "model.zip").write_bytes(b"PK\x05\x06" + bytes(18))  # never opened
    assert main(["convert", str(tmp_path / "model.zip"), str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("kairos-gym convert: error:") and "--trust-checkpoint" in err
    assert not (tmp_path / "out").exists()


def test_the_unpickling_refusal_names_the_convert_command(tmp_path):
    from kairos_gym.agents.checkpoint import require_trust

    from kairos_gym.errors import ConfigError

    with pytest.raises(ConfigError, match="kairos-gym convert --trust-checkpoint SRC DEST"):
        require_trust(tmp_path / "model.zip", False)


@pytest.mark.parametrize("argv", [
    ["perf-env", "--seconds", "inf"], ["perf-env", "--vector", "0"], ["perf-pool", "--tasks", "0"],
    ["perf-components", "--ops", "10"], ["perf-scenario", "--repeats", "11"], ["soak", "--seed", "-1"],
    ["pull-compare", "--tasks", "nope"], ["oracle-cache", "--max-requests", "1.5"],
])
def test_the_performance_and_benchmark_commands_refuse_bad_flags(argv, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"kairos-gym {argv[0]}: error:"), err
