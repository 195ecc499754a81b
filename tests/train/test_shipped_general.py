"""The shipped general agent agents/checkpoints/distilled-oracle (train/distill.py): files, loading, actions."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from kairos_gym.agents import make_policy, run_policy
from kairos_gym.agents.checkpoint import SAFE_FILES, load_policy
from kairos_gym.agents.ppo import GENERAL_CHECKPOINT, DistilledOracle
from kairos_gym.train.distill import load_config

from kairos_gym.benchmark.suite import SUITE, on_track

CKPT = GENERAL_CHECKPOINT.parent
DATA = Path(__file__).resolve().parent / "data" / "distilled-oracle-actions.npz"
ROOT = Path(__file__).resolve().parents[2]


def test_shipped_files_are_safe_and_described() -> None:
    names = sorted(p.name for p in CKPT.iterdir())
    assert names == sorted([*SAFE_FILES, "README.md", "config.yaml", "meta.json", "history.jsonl"])
    assert not any(p.suffix in (".pkl", ".zip", ".pt") for p in CKPT.iterdir())
    spec = json.loads((CKPT / "policy.json").read_text())
    assert spec["provenance"]["trainer"] == "kairos_gym.train.distill" and spec["provenance"]["seed"] == 0
    # 57 observation features, then the one-hot of Kairos's action over the 13 actions (inputs observation+kairos)
    assert (spec["observation_size"], spec["action_count"], spec["hidden_sizes"]) == (70, 13, [128, 128])
    assert spec["inputs"] == "observation+kairos" and spec["provenance"]["hard_label"] == "kairos-if-best"
    # the shipped config is the recipe's (configs/ppo/distill-kairos-label.yaml), and it parses
    assert (CKPT / "config.yaml").read_text() == (ROOT / "configs" / "ppo" / "distill-kairos-label.yaml").read_text()
    cfg = load_config(CKPT / "config.yaml")
    assert cfg.hidden == (128, 128) and cfg.dagger_rounds == 0 and cfg.seeds == (0, 1, 2)
    assert (cfg.inputs, cfg.hard_label) == ("observation+kairos", "kairos-if-best")
    meta = json.loads((CKPT / "meta.json").read_text())
    assert meta["seed"] == 0 and set(meta["leaderboard"]["aggregates"]) == {"exact", "realistic"}
    assert meta["selection"]["decision"]["ship"] is True  # the second selection protocol (docs/training.md)


def test_shipped_actor_takes_the_recorded_actions() -> None:
    actor = load_policy(CKPT)
    with np.load(DATA, allow_pickle=False) as z:
        obs, mask, action = z["obs"], z["mask"], z["action"]
    got = np.array([actor.act(o, m) for o, m in zip(obs, mask, strict=True)])
    assert np.array_equal(got, action)
    assert mask[np.arange(len(action)), action].all()


@pytest.mark.parametrize("track", ["exact", "realistic"])
def test_distilled_oracle_runs_on_a_suite_task(track: str) -> None:
    task = next(t for t in SUITE if t.name == "bursty/strict")
    sc = on_track(task.base(), track).with_overrides({"workload": {"num_requests": 120}})
    agent = make_policy("distilled-oracle", sc, 0)
    assert isinstance(agent, DistilledOracle) and agent.path == str(GENERAL_CHECKPOINT)
    out = run_policy(agent, sc, 0)
    assert out["policy"] == "distilled-oracle" and out["n_completed"] == 120
    if track == "exact":
        assert out["n_invalid_actions"] == 0  # masked: on the exact track every offered action is taken
    assert 0.0 < out["deflection_rate"] < 1.0
