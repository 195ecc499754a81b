"""RLlib (masked PPO) and Ray Tune (SB3 sweeps): short real runs on a local 2-CPU Ray (docs/scale-out.md)."""

from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
import pytest
from kairos_gym.train.rllib.env import MaskedObservation, make_masked_env

import kairos_gym  # noqa: F401 - registers the env ids
from kairos_gym.cli.main import main
from kairos_gym.errors import ConfigError
from tests.ray.common import needs_ray

SMOKE = "configs/ppo/rllib-smoke.yaml"
TUNE_CFG = """kairos_gym/KairosSmall-v0:
  n_envs: 1
  n_timesteps: 256
  normalize: false
  policy_kwargs: "dict(net_arch=dict(pi=[16], vf=[16]))"
  n_steps: 128
  batch_size: 64
  n_epochs: 1
  eval: {freq: 256, seeds: [0]}
  checkpoint_freq: 0
"""
SPACE = """metric: slo_attainment
space:
  learning_rate: {grid: [1.0e-4, 3.0e-4]}
"""


def test_masked_observation_carries_the_envs_own_mask():
    env = make_masked_env({"env_id": "kairos_gym/KairosSmall-v0"})
    obs, _ = env.reset(seed=3)
    assert env.observation_space.contains(obs)
    rng = np.random.default_rng(0)
    masked = 0
    for _ in range(400):
        mask = env.unwrapped.action_masks()
        np.testing.assert_array_equal(obs["action_mask"], mask.astype(np.float32))
        masked += int(mask.sum() < mask.size)
        obs, _, term, trunc, info = env.step(int(rng.choice(np.flatnonzero(mask))))
        assert not info["invalid_action"] and env.observation_space.contains(obs)
        if term or trunc:
            break
    assert masked > 0  # some decisions had invalid actions, and the observation said so
    with pytest.raises(ConfigError, match="obs_mode"):
        MaskedObservation(gym.make("kairos_gym/KairosSmall-v0", obs_mode="dict"))
    with pytest.raises(ConfigError, match="env_id"):
        make_masked_env({"env_id": "CartPole-v1"})


@needs_ray
@pytest.mark.parametrize("runners", ["0", "1"])  # sampling in the driver; in a remote EnvRunner actor
def test_rllib_ppo_run_never_takes_a_masked_action(runners, ray_session, tmp_path, capsys):
    out = tmp_path / "rl"
    argv = ["train", "--backend", "rllib", "--config", SMOKE, "--out", str(out), "--num-env-runners", runners]
    assert main(argv) == 0
    meta = json.loads((out / "meta.json").read_text())
    assert meta["iterations"] == 3 and meta["env_steps"] == 1200  # 3 x (n_steps 200 x n_envs 2)
    assert meta["invalid_actions"] == 0  # summed from the env's own info["invalid_action"]
    lines = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    assert [x["iteration"] for x in lines] == [1, 2, 3] and (out / "checkpoint").is_dir()
    assert "invalid actions 0" in capsys.readouterr().out


@needs_ray
def test_the_invalid_action_count_sees_an_unmasked_module(ray_session, tmp_path):
    """The control of the test above: the same run with RLlib's plain PPO module (logits not masked) is sent
    invalid actions, and the counter reports them."""
    from kairos_gym.train.config import load_config
    from kairos_gym.train.rllib.module import MaskedPPOTorchModule
    from kairos_gym.train.rllib.train import train_rllib
    from ray.rllib.algorithms.ppo.torch.default_ppo_torch_rl_module import DefaultPPOTorchRLModule

    class Unmasked(MaskedPPOTorchModule):
        @staticmethod
        def _mask(out, mask):
            return out

    assert issubclass(Unmasked, DefaultPPOTorchRLModule)
    meta = train_rllib(load_config(SMOKE), tmp_path / "control", module_class=Unmasked)
    assert meta["invalid_actions"] > 0


@needs_ray
@pytest.mark.parametrize("change,needle", [
    ("learning_rate: lin_3.0e-4", "no lin_ schedules"),
    ("normalize: {norm_obs: true, norm_reward: false}", "normalize.norm_obs"),
    ("policy_kwargs: \"dict(net_arch=dict(pi=[32], vf=[64]))\"", "the same pi and vf"),
    ("clip_range_vf: 0.2", "hyperparameters the rllib backend maps"),
])
def test_rllib_backend_refuses_what_it_cannot_map(change, needle, tmp_path, capsys):
    key = change.split(":")[0]
    body = [ln for ln in open(SMOKE).read().splitlines() if not ln.startswith(f"  {key}:")]
    cfg = tmp_path / "c.yaml"
    cfg.write_text("\n".join([*body, f"  {change}"]) + "\n")
    assert main(["train", "--backend", "rllib", "--config", str(cfg), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and needle in err[0], err
    assert not (tmp_path / "o").exists()


@needs_ray
def test_tune_sweep_of_the_sb3_pipeline_writes_tensorboard_logs(ray_session, tmp_path, capsys):
    cfg, space, out = tmp_path / "c.yaml", tmp_path / "space.yaml", tmp_path / "tune"
    cfg.write_text(TUNE_CFG)
    space.write_text(SPACE)
    assert main(["train", "--config", str(cfg), "--tune", str(space), "--out", str(out)]) == 0
    res = json.loads((out / "tune.json").read_text())
    assert sorted(t["params"]["learning_rate"] for t in res["trials"]) == [1e-4, 3e-4]
    assert all(t["timesteps"] == 256 and 0 <= t["slo_attainment"] <= 1 for t in res["trials"])
    best = max(res["trials"], key=lambda t: t["slo_attainment"])
    assert res["best"]["slo_attainment"] == best["slo_attainment"]
    assert len(list(out.glob("*/events.out.tfevents*"))) == 2  # Tune's per-trial TensorBoard files
    assert len(list(out.glob("*/run/tb/events.out.tfevents*"))) == 2  # each trial's SB3 TensorBoard log
    assert "tuned 2 trials" in capsys.readouterr().out


@pytest.mark.parametrize("space,needle", [
    ("space: {nope: {grid: [1]}}", "space.nope"),
    ("space: {learning_rate: {grid: []}}", "a list of 1 to"),
    ("space: {learning_rate: {uniform: [1, 0]}}", "low < high"),
    ("space: {learning_rate: {grid: [1.0e-4, lin_x]}}", "values the config accepts"),
    ("metric: reward\nspace: {n_epochs: {grid: [2]}}", "metric"),
    ("num_samples: 0\nspace: {n_epochs: {grid: [2]}}", "num_samples"),
])
def test_bad_tune_space_is_refused_by_its_check(space, needle, tmp_path):
    from kairos_gym.train.config import load_config
    from kairos_gym.train.tune import load_space

    cfg, sp = tmp_path / "c.yaml", tmp_path / "s.yaml"
    cfg.write_text(TUNE_CFG)
    sp.write_text(space + "\n")
    with pytest.raises(ConfigError, match=needle):
        load_space(sp, load_config(cfg))


@needs_ray
def test_bad_tune_space_exits_2_before_ray_starts(tmp_path, capsys, monkeypatch):
    import ray

    cfg, sp = tmp_path / "c.yaml", tmp_path / "s.yaml"
    cfg.write_text(TUNE_CFG)
    sp.write_text("space: {nope: {grid: [1]}}\n")
    monkeypatch.setattr(ray, "init", lambda *a, **k: pytest.fail("Ray started"))
    assert main(["train", "--config", str(cfg), "--tune", str(sp), "--out", str(tmp_path / "t")]) == 2
    assert "space.nope" in capsys.readouterr().err and not (tmp_path / "t").exists()


@pytest.mark.parametrize("argv,needle", [
    (["--backend", "keras"], "--backend = 'keras'"),
    (["--workers", "2"], "only with --backend rllib or --tune"),
    (["--backend", "rllib", "--tune", "x.yaml"], "only with --backend sb3"),
    (["--backend", "rllib", "--export", "d"], "only with the plain SB3 run"),
    (["--backend", "rllib", "--num-env-runners", "-1"], "--num-env-runners"),
])
def test_bad_scale_out_train_flags_exit_2(argv, needle, capsys):
    assert main(["train", "--config", SMOKE, *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and needle in err[0], err


def test_train_backend_rllib_without_ray_is_one_clear_line(monkeypatch, capsys):
    import sys

    monkeypatch.setitem(sys.modules, "ray", None)
    assert main(["train", "--backend", "rllib", "--config", SMOKE]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "Ray is not installed" in err[0], err
