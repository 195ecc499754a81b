"""Smoke test: train a few thousand steps on KairosSmall-v0, save (safe format + SB3 training state), load,
predict, resume (trusted only), export; the TensorBoard event files hold the ``kairos/`` scalars (read back
with EventAccumulator); the progress bar and the lin_ schedule end where the run ends."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("sb3_contrib")

from kairos_gym.agents.checkpoint import load_policy
from kairos_gym.agents.sb3_checkpoint import actor_from_sb3, load_actor, load_model, make_ppo_agent, resolve_model_path
from kairos_gym.train.callbacks import METRICS, ProgressBar
from kairos_gym.train.config import load_config, parse_config
from kairos_gym.train.envs import make_eval_env, make_vec_env
from kairos_gym.train.trainer import build_model, export_checkpoint, train, with_overrides

from kairos_gym.errors import ConfigError
from tests.fixtures import silent_logger

SAFE = ("policy.json", "policy.npz", "normalize.json")

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
                "checkpoints/ckpt_vecnormalize_1024_steps.pkl",
                *(f"{d}/{n}" for d in ("final", "best", "checkpoints/ckpt_1024_steps") for n in SAFE)):
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


def test_safe_actor_acts_exactly_as_sb3_predict(run):
    """The safe export (no pickles) gives the same action as SB3's model.predict with the VecNormalize
    statistics, observation by observation, and bit-identical logits to the in-memory conversion."""
    out, cfg, _ = run
    model, norm = load_model(out / "final", trust_checkpoint=True)
    assert type(model).__name__ == "MaskablePPO" and norm is not None and norm.norm_obs
    safe = load_actor(out / "final")  # policy.json: nothing unpickled
    live = actor_from_sb3(model, norm)
    env = make_eval_env(cfg.env_id, {})
    obs, info = env.reset(seed=5)
    for _ in range(300):
        mask = info["action_mask"].astype(bool)
        a, _ = model.predict(norm.normalize_obs(obs), deterministic=True, action_masks=mask)
        assert int(a) == safe.act(obs, mask) and mask[int(a)]
        assert np.array_equal(safe.logits(obs), live.logits(obs))
        obs, _, term, trunc, info = env.step(int(a))
        assert not info["invalid_action"]
        if term or trunc:
            obs, info = env.reset(seed=6)
    # through the simulator's policy hook, as `evaluate` runs policies
    from kairos_gym.agents.runner import run_policy

    s = run_policy(make_ppo_agent(out / "final", "small"), "small", seed=0)
    assert s["policy"] == "ppo" and s["n_completed"] == 200 and s["n_invalid_actions"] == 0
    # a run folder resolves to its latest safe periodic checkpoint
    assert load_actor(out).hidden_sizes == [32, 32]
    assert load_policy(out / "checkpoints" / "ckpt_2048_steps").observation_size == model.observation_space.shape[0]


def test_resume_needs_trust_then_continues_and_exports(run, tmp_path):
    out, cfg, _ = run
    assert resolve_model_path(out).name == "ckpt_2048_steps.zip"  # a run folder: its latest checkpoint
    more = with_overrides(cfg, timesteps=3072, eval_freq=0)
    before = sorted(p.name for p in (out / "checkpoints").iterdir())
    with pytest.raises(ConfigError, match="--trust-checkpoint"):
        train(more, out, resume=out, progress=False, command="test resume")
    assert sorted(p.name for p in (out / "checkpoints").iterdir()) == before  # refused before any work
    meta = train(more, out, resume=out, trust_checkpoint=True, progress=False, command="test resume")
    assert meta["timesteps"] == 3072 and meta["resumed_from"] == str(out)
    assert (out / "checkpoints" / "ckpt_3072_steps.zip").is_file()
    assert (out / "checkpoints" / "ckpt_3072_steps" / "policy.json").is_file()
    dest = export_checkpoint(out, tmp_path / "shipped")
    assert sorted(p.name for p in dest.iterdir()) == ["config.yaml", "meta.json", *sorted(SAFE)]
    assert json.loads((dest / "meta.json").read_text())["exported"] == "best"
    assert load_actor(dest).maskable


def test_plain_ppo_ablation(tmp_path):
    cfg = with_overrides(load_config(SMOKE), algo="ppo", timesteps=512, eval_freq=512)
    meta = train(cfg, tmp_path, progress=False, command="test ppo")
    actor = load_actor(tmp_path / "final")
    assert actor.algo == "ppo" and not actor.maskable and meta["last_eval"]["timesteps"] == 512
    obs = np.zeros(actor.observation_size, dtype=np.float32)
    assert 0 <= actor.act(obs, np.ones(actor.action_count, dtype=bool)) < actor.action_count


def test_partial_last_rollout_lr_clamped_and_progress_bar_full():
    """100 timesteps asked, rollouts of 64: SB3 runs 128, and its last update sees progress 1 - 128/100 < 0.
    The lin_ schedule stays at 0 there and the bar's total is the 128 the run reaches (not
    128/100)."""
    cfg = parse_config({"kairos_gym/KairosSmall-v0": {
        "n_envs": 1, "n_timesteps": 100, "n_steps": 64, "batch_size": 64, "n_epochs": 1,
        "learning_rate": "lin_1e-3", "eval": {"freq": 0}}})
    venv = make_vec_env(cfg.env_id, cfg.env_kwargs, cfg.n_envs, cfg.seed, cfg.normalize, 0.99)
    model = build_model(cfg, venv)
    bar = ProgressBar(cfg.n_timesteps, file=io.StringIO())
    model.set_logger(silent_logger())  # SB3 would make an empty SB3-<date> folder in /tmp
    model.learn(total_timesteps=cfg.n_timesteps, callback=bar)
    assert model.num_timesteps == 128
    assert model.policy.optimizer.param_groups[0]["lr"] == 0.0
    assert bar.bar.n == bar.bar.total == 128
    venv.close()


def test_compare_table(run):
    from kairos_gym.agents.policy_file_loader import policy_from_checkpoint

    from kairos_gym.evaluation.compare import compare, markdown, parse_policy, parse_scenario

    out, _, _ = run
    assert parse_policy("kairos:alpha=1.5:staleness_s=0") == ("kairos", {"alpha": 1.5, "staleness_s": 0})
    label, sc = parse_scenario("small:workload.arrival.rate=10:workload.num_requests=60")
    assert sc.workload.arrival.rate == 10 and label.startswith("small:")
    final = policy_from_checkpoint(str(out / "final"), "compare", "--checkpoint", trust_checkpoint=False)
    res = compare([label], ["no-deflect", "always-deflect:chunk=1024"], [0], externals=[final])
    with pytest.raises(ConfigError, match="--trust-checkpoint"):  # checked when the flag is read, before any run
        policy_from_checkpoint(str(out / "final" / "model.zip"), "compare", "--checkpoint", trust_checkpoint=False)
    zipped = policy_from_checkpoint(str(out / "final" / "model.zip"), "compare", "--checkpoint", trust_checkpoint=True)
    log = io.StringIO()
    both = compare([label], [], [0], externals=[final, zipped], log=log)
    assert both[0]["runs"][0]["ttft_p95"] == both[0]["runs"][1]["ttft_p95"]  # the safe export acts as the zip
    assert log.getvalue().count(label) == 2
    assert [r["policy"] for r in res[0]["runs"]] == ["no-deflect", "always-deflect:chunk=1024",
                                                     f"checkpoint:{out / 'final'}"]
    assert all(r["n_completed"] == 60 for r in res[0]["runs"])
    assert markdown(res).count("\n| small:") == 3
