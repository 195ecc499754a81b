"""``kairos-gym leaderboard``'s default ``--out`` is a file under the git-ignored output folder, never the tracked
results/leaderboard.md; ``--out results/leaderboard.md`` stays the explicit way to regenerate the tracked board."""

from __future__ import annotations

import argparse
from pathlib import Path

import kairos_gym.benchmark.suite as suite_mod
from kairos_gym.cli.benchmark import LEADERBOARD_OUT
from kairos_gym.cli.main import build_parser, main
from tests.fixtures import TINY_SUITE

REPO = Path(__file__).resolve().parents[2]


def _leaderboard_parser() -> argparse.ArgumentParser:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices["leaderboard"]


def test_the_default_out_is_under_the_ignored_output_folder_not_the_tracked_board():
    out = next(a for a in _leaderboard_parser()._actions if "--out" in a.option_strings)
    assert out.default == LEADERBOARD_OUT == "out/leaderboard.md"
    assert "out/" in (REPO / ".gitignore").read_text().splitlines()
    assert (REPO / "results" / "leaderboard.md").is_file()  # the tracked board, which the default leaves alone
    assert "results/leaderboard.md regenerates the tracked board" in out.help


def test_a_run_without_out_writes_out_leaderboard_md_and_creates_the_folder(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(suite_mod, "SUITE", TINY_SUITE)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "results").mkdir()
    board = tmp_path / "results" / "leaderboard.md"
    board.write_text("the tracked board\n")
    assert main(["leaderboard", "--policies", "no-deflect,kairos,oracle", "--tasks", "tiny", "--track", "exact",
                 "--no-progress", "--oracle-cache", str(tmp_path / "none.json")]) == 0
    assert capsys.readouterr().out.startswith("wrote out/leaderboard.md (")
    assert (tmp_path / "out" / "leaderboard.md").read_text().startswith("# Leaderboard")
    assert board.read_text() == "the tracked board\n"
