"""Smoke test: train a few thousand steps on KairosSmall-v0, save, load, predict, resume, export;
the TensorBoard event files hold the ``kairos/`` scalars (read back with EventAccumulator)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("sb3_contrib")

from kairos_gym.train.callbacks import METRICS
from kairos_gym.train.checkpoints import GreedyActor, load_model, make_ppo_agent, resolve_model_path
from kairos_gym.train.config import load_config
from kairos_gym.train.envs import make_eval_env
from kairos_gym.train.trainer import export_checkpoint, train, with_overrides

ROOT = Path(__file__).resolve().parents[2]
SMOKE = ROOT / "configs" / "ppo" / "smoke.yaml"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("smoke")
    cfg = load_config(SMOKE)
    meta = train(cfg, out, progress=False, command="test")
    return out, cfg, meta


def test_run_folder_and_meta(run):
    out, cfg, meta = run
    assert meta["timesteps"] >= cfg.n_timesteps and meta["train_seconds"] > 0
    for rel in ("config.yaml", "meta.json", "eval_history.jsonl", "final/model.zip", "final/vecnormalize.pkl",
                "best/model.zip", "best/vecnormalize.pkl", "best/eval.json", "checkpoints/ckpt_1024_steps.zip",
                "checkpoints/ckpt_vecnormalize_1024_steps.pkl"):
        assert (out / rel).is_file(), rel
    hist = [json.loads(line) for line in (out / "eval_history.jsonl").read_text().splitlines()]
    assert [h["timesteps"] for h in hist] == [1024, 2048]
    assert all(0 <= h["slo_attainment"] <= 1 and h["ttft_p95"] > 0 for h in hist)
    assert meta["best_eval"]["reference"]["kairos"]["slo_attainment"] > 0


def test_tensorboard_has_kairos_scalars(run):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    out, _, _ = run
    acc = EventAccumulator(str(out / "tb"))
    acc.Reload()
    tags = set(acc.Tags()["scalars"])
    for m in METRICS:
        for tag in (f"kairos/{m}", f"kairos/gap_{m}", f"kairos/kairos_{m}"):
            assert tag in tags, tag
    assert "train/loss" in tags and "rollout/ep_rew_mean" in tags  # SB3's own
    slo = acc.Scalars("kairos/slo_attainment")
    gap = acc.Scalars("kairos/gap_slo_attainment")
    ref = acc.Scalars("kairos/kairos_slo_attainment")
    assert [e.step for e in slo] == [1024, 2048]
    assert all(0 <= e.value <= 1 for e in slo)
    assert gap[-1].value == pytest.approx(slo[-1].value - ref[-1].value, abs=1e-6)


def test_load_and_predict(run):
    out, cfg, _ = run
    model, norm = load_model(out / "final")
    assert type(model).__name__ == "MaskablePPO" and norm is not None and norm.norm_obs
    env = make_eval_env(cfg.env_id, {})
    obs, info = env.reset(seed=5)
    actor = GreedyActor(model, norm)
    for _ in range(30):
        mask = info["action_mask"].astype(bool)
        a, _ = model.predict(norm.normalize_obs(obs), deterministic=True, action_masks=mask)
        assert int(a) == actor.act(obs, mask) and mask[int(a)]
        obs, _, term, trunc, info = env.step(int(a))
        assert not info["invalid_action"]
        if term or trunc:
            break
    # through the simulator's policy hook, as `evaluate` runs policies
    from kairos_gym.agents.runner import run_policy

    s = run_policy(make_ppo_agent(out / "final", "small"), "small", seed=0)
    assert s["policy"] == "ppo" and s["n_invalid_actions"] == 0 and s["n_completed"] == 200


def test_resume_and_export(run, tmp_path):
    out, cfg, _ = run
    assert resolve_model_path(out).name == "ckpt_2048_steps.zip"  # a run folder: its latest checkpoint
    more = with_overrides(cfg, timesteps=3072, eval_freq=0)
    meta = train(more, out, resume=out, progress=False, command="test resume")
    assert meta["timesteps"] == 3072 and meta["resumed_from"] == str(out)
    assert (out / "checkpoints" / "ckpt_3072_steps.zip").is_file()
    dest = export_checkpoint(out, tmp_path / "shipped")
    assert sorted(p.name for p in dest.iterdir()) == ["config.yaml", "meta.json", "model.zip", "vecnormalize.pkl"]
    assert json.loads((dest / "meta.json").read_text())["exported"] == "best"


def test_plain_ppo_ablation(tmp_path):
    cfg = with_overrides(load_config(SMOKE), algo="ppo", timesteps=512, eval_freq=512)
    meta = train(cfg, tmp_path, progress=False, command="test ppo")
    model, norm = load_model(tmp_path / "final")
    assert type(model).__name__ == "PPO" and meta["last_eval"]["timesteps"] == 512
    obs = np.zeros(model.observation_space.shape, dtype=np.float32)
    assert 0 <= GreedyActor(model, norm).act(obs, np.ones(model.action_space.n, dtype=bool)) < model.action_space.n


def test_compare_table(run):
    from kairos_gym.train.compare import compare, markdown, parse_policy, parse_scenario

    out, _, _ = run
    assert parse_policy("kairos:alpha=1.5:staleness_s=0") == ("kairos", {"alpha": 1.5, "staleness_s": 0})
    label, sc = parse_scenario("small:workload.arrival.rate=10:workload.num_requests=60")
    assert sc.workload.arrival.rate == 10 and label.startswith("small:")
    res = compare(out / "final", [label], ["no-deflect", "always-deflect:chunk=1024", "ppo"], [0])
    assert [r["policy"] for r in res[0]["runs"]] == ["no-deflect", "always-deflect:chunk=1024", "ppo"]
    assert all(r["n_completed"] == 60 for r in res[0]["runs"])
    assert markdown(res).count("\n| small:") == 3
