"""Seed groups on a v2 board (kairos_gym/benchmark/seed_groups.py, ``leaderboard --suite v2 --seed-group``): a
training recipe over its seeds, with a two-level bootstrap interval."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from kairos_gym.benchmark.board_v2_stats import columns
from kairos_gym.benchmark.seed_groups import MAX_GROUPS, check_groups, group_stats, parse_seed_group
from kairos_gym.errors import ConfigError

ROOT = Path(__file__).resolve().parents[2]
SEED0, SEED1 = "checkpoint:runs/ppo/v2-seen/export", "checkpoint:runs/ppo/v2-seen/export-seed1"


def _board(scores: dict[str, dict[str, list[float]]]) -> dict[str, Any]:
    tasks = [{"task": "u1", "split": "unseen"}, {"task": "u2", "split": "unseen"}, {"task": "s1", "split": "seen"}]
    return {"tasks": tasks, "scores": scores, "entries": [{"label": k, "kind": "policy"} for k in scores]}


def test_parse_and_check_the_flag() -> None:
    assert parse_seed_group("w", "--seed-group", "ppo=a,b, c") == ("ppo", ("a", "b", "c"))
    for bad in ("ppo", "ppo=a", "ppo=a,a", "=a,b", "p p=a,b", "ppo=a,,b", "ppo=" + ",".join(map(str, range(17)))):
        with pytest.raises(ConfigError, match=r"--seed-group.*NAME=LABEL"):
            parse_seed_group("w", "--seed-group", bad)
    assert check_groups("w", "--seed-group", [("g", ("a", "b"))], ["a", "b", "k"]) == {"g": ("a", "b")}
    with pytest.raises(ConfigError, match="not among them: z"):
        check_groups("w", "--seed-group", [("g", ("a", "z"))], ["a", "b"])
    with pytest.raises(ConfigError, match="not an entry's label"):
        check_groups("w", "--seed-group", [("a", ("a", "b"))], ["a", "b"])
    with pytest.raises(ConfigError, match="used once"):
        check_groups("w", "--seed-group", [("g", ("a", "b")), ("g", ("a", "b"))], ["a", "b"])
    with pytest.raises(ConfigError, match=f"at most {MAX_GROUPS}"):
        check_groups("w", "--seed-group", [(f"g{i}", ("a", "b")) for i in range(MAX_GROUPS + 1)], ["a", "b"])


def test_the_recipe_is_the_mean_of_its_seeds_and_its_interval_holds_their_spread() -> None:
    rng = np.random.default_rng(3)
    k = rng.uniform(0.5, 0.9, size=(3, 20))
    scores = {"kairos": {t: k[i].tolist() for i, t in enumerate(("u1", "u2", "s1"))},
              # three seeds whose instances are all equal: the spread is the seeds' alone (0.60, 0.70, 0.80)
              **{f"s{j}": {t: [0.6 + 0.1 * j] * 20 for t in ("u1", "u2", "s1")} for j in range(3)}}
    res = _board(scores)
    (row,) = group_stats(res, {"ppo": ("s0", "s1", "s2")}, reps=4000)
    assert row["unseen"]["per_seed"] == pytest.approx([60.0, 70.0, 80.0])
    assert row["unseen"]["mean"] == pytest.approx(70.0)
    assert 60.0 - 1e-9 <= row["unseen"]["low"] < 70.0 < row["unseen"]["high"] <= 80.0 + 1e-9  # the seeds' spread
    assert row["seen"]["mean"] == pytest.approx(70.0)
    want = 70.0 - 100 * np.mean([k[0].mean(), k[1].mean()])
    assert "vs_best-rule" not in row  # not on this board
    assert row["vs_kairos"]["mean"] == pytest.approx(want)
    assert row["vs_kairos"]["low"] < want < row["vs_kairos"]["high"]
    # two copies of kairos: the recipe is kairos, paired (zero up to the sums' rounding)
    (same,) = group_stats(_board({**scores, "k2": scores["kairos"]}), {"kk": ("kairos", "k2")}, reps=500)
    assert same["vs_kairos"] == pytest.approx({"mean": 0.0, "low": 0.0, "high": 0.0}, abs=1e-9)
    # identical seeds: the interval is the instances' alone, about the single entry's
    single = next(c for c in columns(res, reps=4000) if c["label"] == "kairos")["unseen"]
    assert abs((same["unseen"]["high"] - same["unseen"]["low"]) - (single["high"] - single["low"])) < 0.5
    assert group_stats(res, {"ppo": ("s0", "s1", "s2")}, reps=4000) == [row]  # seeded: it reproduces


def test_the_leaderboard_reports_a_seed_group_from_saved_runs(tmp_path: Path) -> None:
    out = tmp_path / "board.md"
    base = [sys.executable, "-m", "kairos_gym.cli", "leaderboard", "--suite", "v2", "--out", str(out),
            "--from-json", str(ROOT / "results/training/v2-seen-exact.json"),
            "--from-json", str(ROOT / "results/training/v2-seen-seed1-exact.json")]
    r = subprocess.run([*base, "--seed-group", f"v2-seen={SEED0},{SEED1}"], capture_output=True, text=True,
                       cwd=ROOT)
    assert r.returncode == 0, r.stderr
    md = out.read_text()
    assert "## Recipes over training seeds" in md
    line = next(s for s in md.splitlines() if s.startswith("| v2-seen | 2 |"))
    assert line.endswith("| 84.2, 68.5 |")  # each seed's own headline (docs/training.md's table)
    cells = [c.strip() for c in line.split("|")]
    assert cells[4].startswith("-") and cells[5].startswith("-")  # below kairos and below best-rule
    r = subprocess.run([*base, "--seed-group", f"v2-seen={SEED0},checkpoint:nowhere"], capture_output=True,
                       text=True, cwd=ROOT)
    assert r.returncode == 2 and "--seed-group" in r.stderr and "checkpoint:nowhere" in r.stderr
    r = subprocess.run([*base[:-4], "--seed-group", "x=a,b"], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 2 and "--seed-group" in r.stderr


def test_saved_runs_restricted_to_some_tasks_merge_with_a_run_of_those_tasks(tmp_path: Path) -> None:
    """``--tasks`` with ``--from-json``: the whole committed board reduced to its unseen tasks merges with a run of
    those tasks alone (here: the fine-tune evaluation), Kairos's scores agreeing; a task a run lacks is refused."""
    out = tmp_path / "board.md"
    base = [sys.executable, "-m", "kairos_gym.cli", "leaderboard", "--suite", "v2", "--out", str(out),
            "--from-json", str(ROOT / "results/leaderboard-v2-exact.json"),
            "--from-json", str(ROOT / "results/training/v2-finetune-distilled-unseen.json")]
    r = subprocess.run([*base, "--tasks", "servegen-sharegpt,arxiv-summ,mooncake-synthetic"], capture_output=True,
                       text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    md = out.read_text()
    assert "| best-rule |" in md and "checkpoint:/work/study/ft-b/seed0/export" in md
    assert "| bursty |" not in md and "| servegen-sharegpt |" in md  # the per-task tables hold the three tasks
    r = subprocess.run(base, capture_output=True, text=True, cwd=ROOT)  # all tasks against three: not mergeable
    assert r.returncode == 2 and "same tasks" in r.stderr
    r = subprocess.run([*base[:-2], "--tasks", "servegen-sharegpt,bursty"], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    r = subprocess.run([*base, "--tasks", "servegen-sharegpt,bursty"], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 2 and "--tasks" in r.stderr and "bursty" in r.stderr
