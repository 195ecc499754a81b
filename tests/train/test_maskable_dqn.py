"""MaskableDQN (train/maskable_dqn.py): exploration and greedy actions within the mask, the masked TD target, the
next-state masks in the replay buffer, reproducibility, the safe export, and the config's checks (fast)."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest
import torch as th
from kairos_gym.agents.checkpoint import load_policy
from kairos_gym.agents.sb3_checkpoint import actor_from_sb3
from kairos_gym.train.config import load_config, parse_config
from kairos_gym.train.envs import make_vec_env
from kairos_gym.train.maskable_dqn import MaskableDQN, masked_greedy, masked_td_target, random_valid
from kairos_gym.train.trainer import prepare_torch, train, with_overrides

from kairos_gym.env.actions import MaskedActionWarning
from kairos_gym.errors import ConfigError

ROOT = Path(__file__).resolve().parents[2]
SMALL = "kairos_gym/KairosSmall-v0"
KW = {"max_decisions": 40}  # short truncated episodes: the terminal masks are exercised


def _model(seed: int = 0, **hyper: object) -> tuple[MaskableDQN, object]:
    prepare_torch()
    venv = make_vec_env(SMALL, KW, 2, seed, {"norm_obs": True, "norm_reward": True}, 0.99)
    args = {"learning_starts": 64, "buffer_size": 2_000, "batch_size": 32, "train_freq": 1, "gradient_steps": 1,
            "target_update_interval": 100, "exploration_fraction": 0.5, **hyper}
    return MaskableDQN("MlpPolicy", venv, seed=seed, policy_kwargs={"net_arch": [16, 16]}, **args), venv


def test_random_valid_draws_only_and_every_valid_action():
    np.random.seed(3)
    masks = np.array([[0, 1, 0, 1, 1], [1, 0, 0, 0, 0], [0, 0, 0, 0, 1]], dtype=bool)
    seen = [set() for _ in masks]
    for _ in range(300):
        for i, a in enumerate(random_valid(masks)):
            assert masks[i, a]
            seen[i].add(int(a))
    assert seen == [{1, 3, 4}, {0}, {4}]


def test_masked_greedy_and_td_target_ignore_invalid_actions():
    q = th.tensor([[5.0, 1.0, 2.0], [0.0, 9.0, -1.0]])
    masks = th.tensor([[False, True, True], [True, False, True]])
    assert masked_greedy(q, masks).tolist() == [2, 0]
    rewards, dones = th.tensor([[1.0], [2.0]]), th.tensor([[0.0], [1.0]])
    target = masked_td_target(q, masks, rewards, dones, th.full((2, 1), 0.5))
    assert target.tolist() == [[2.0], [2.0]]  # 1 + 0.5 * max(1, 2); a terminal row: its reward only
    empty = th.zeros_like(masks)  # a terminal row's mask may be empty: still finite
    assert masked_td_target(q, empty, rewards, th.ones_like(dones), 0.5).tolist() == [[1.0], [2.0]]


def test_n_step_returns_stop_at_episode_ends_and_at_the_newest_transition():
    from gymnasium import spaces
    from kairos_gym.train.maskable_dqn import MaskedReplayBuffer

    buf = MaskedReplayBuffer(6, spaces.Box(-1, 1, (1,)), spaces.Discrete(2), "cpu", n_envs=1, n_steps=3, gamma=0.5)
    rewards, dones, timeouts = [1.0, 2.0, 4.0, 8.0, 16.0], [0, 0, 1, 0, 1], [0, 0, 0, 0, 1]
    for t, (r, d, tr) in enumerate(zip(rewards, dones, timeouts, strict=True)):
        buf.next_masks[buf.pos] = [True, t % 2 == 0]
        buf.add(np.array([[t]]), np.array([[t + 0.5]]), np.array([0]), np.array([r]), np.array([d]),
                [{"TimeLimit.truncated": bool(tr)}])
    ret, last, terminal, disc = buf.returns(np.arange(5), np.zeros(5, dtype=int))
    # t=0: 1 + 0.5*2 + 0.25*4 (the episode ends at 2, terminal); t=1: 2 + 0.5*4; t=2: 4;
    # t=3: 8 + 0.5*16 (a truncation at 4: bootstrap from its final state); t=4: 16 (the newest)
    assert ret.tolist() == [3.0, 4.0, 4.0, 16.0, 16.0]
    assert last.tolist() == [2, 2, 2, 4, 4] and terminal.tolist() == [1, 1, 1, 0, 0]
    assert disc.tolist() == [0.125, 0.25, 0.5, 0.25, 0.5]
    data = buf._get_samples(np.array([3]))
    assert float(data.next_observations[0, 0]) == 4.5 and data.next_action_masks.tolist() == [[True, True]]
    buf.add(np.array([[5]]), np.array([[5.5]]), np.array([0]), np.array([32.0]), np.array([0]), [{}])
    buf.add(np.array([[6]]), np.array([[6.5]]), np.array([0]), np.array([64.0]), np.array([0]), [{}])  # wraps
    ret, last, _, _ = buf.returns(np.array([5, 0]), np.zeros(2, dtype=int))
    assert ret.tolist() == [32.0 + 0.5 * 64.0, 64.0] and last.tolist() == [0, 0]  # t=5 then t=6, the newest


def test_learns_within_the_masks_and_stores_next_masks():
    model, venv = _model(exploration_initial_eps=1.0, exploration_final_eps=1.0)  # every action a random valid one
    with warnings.catch_warnings():
        warnings.simplefilter("error", MaskedActionWarning)  # a masked action would warn (KairosVectorEnv)
        model.learn(400)
    buf = model.replay_buffer
    n = buf.pos
    assert n == 200 and model._n_updates > 0
    acts, dones, nxt = buf.actions[:n, :, 0].astype(int), buf.dones[:n], buf.next_masks[:n]
    timeouts = buf.timeouts[:n]
    for t in range(n - 1):  # the next state's mask allows the action taken there (unless an episode ended)
        for i in range(2):
            if not dones[t, i]:
                assert nxt[t, i, acts[t + 1, i]]
    assert timeouts.any()  # episodes were truncated (max_decisions): their final masks were stored
    assert all(nxt[t, i].any() for t, i in zip(*np.nonzero(timeouts), strict=True))
    venv.close()


def test_same_seed_same_parameters():
    params = []
    for _ in range(2):
        model, venv = _model(seed=5, n_steps=4)
        model.learn(300)
        params.append(th.cat([p.detach().flatten() for p in model.policy.parameters()]).numpy())
        venv.close()
    assert params[0].tobytes() == params[1].tobytes()


def test_export_is_the_masked_greedy_policy(tmp_path):
    model, venv = _model(exploration_final_eps=0.0)
    model.learn(300)
    from kairos_gym.agents.checkpoint import write_policy
    from kairos_gym.agents.sb3_checkpoint import normalize_stats

    actor = actor_from_sb3(model, venv)
    assert actor.algo == "maskable_dqn" and actor.maskable and actor.hidden_sizes == [16, 16]
    write_policy(tmp_path, actor, normalize_stats(venv), {"timesteps": 300})
    loaded = load_policy(tmp_path)
    assert loaded.algo == "maskable_dqn"
    obs = venv.get_original_obs()
    rng = np.random.default_rng(0)
    for _ in range(50):
        o = obs[rng.integers(len(obs))] * rng.uniform(0.5, 1.5, size=obs.shape[1])
        mask = rng.random(actor.action_count) < 0.6
        mask[rng.integers(actor.action_count)] = True
        want, _ = model.predict(venv.normalize_obs(o), deterministic=True, action_masks=mask)
        assert loaded.act(o.astype(np.float32), mask.astype(np.int8)) == int(want)
    venv.close()


def test_config_checks_and_a_run(tmp_path):
    cfg = load_config(ROOT / "configs" / "dqn" / "v2-seen.yaml")
    assert cfg.algo == "maskable_dqn" and cfg.hyperparams["buffer_size"] == 500_000
    base = {"algo": "maskable_dqn", "n_envs": 2, "vec_backend": "native", "n_timesteps": 256,
            "env_kwargs": KW, "policy_kwargs": "dict(net_arch=[8])", "learning_starts": 32, "buffer_size": 500,
            "batch_size": 16, "eval": {"freq": 0}, "checkpoint_freq": 0}
    for key, value, field in (("n_steps", 1000, "n_steps"), ("replay_buffer_class", "x", "replay_buffer_class"),
                              ("policy_kwargs", "dict(net_arch=dict(pi=[8], vf=[8]))", "net_arch"),
                              ("policy_kwargs", "dict(ortho_init=False)", "ortho_init"),
                              ("batch_size", 600, "batch_size"), ("exploration_final_eps", 1.5, "exploration"),
                              ("buffer_size", 10**8, "buffer_size"), ("init_from", "agents/checkpoints/ppo-kairos-v0",
                                                                      "init_from")):
        with pytest.raises(ConfigError, match=field):
            parse_config({SMALL: {**base, key: value}})
    small = parse_config({SMALL: base})
    with pytest.raises(ConfigError, match="family"):
        with_overrides(small, algo="maskable_ppo")
    meta = train(small, tmp_path / "run", progress=False)
    assert meta["algo"] == "maskable_dqn" and meta["timesteps"] == 256
    assert load_policy(tmp_path / "run" / "final").algo == "maskable_dqn"
    with pytest.raises(ConfigError, match="replay buffer"):
        train(small, tmp_path / "run", resume=tmp_path / "run" / "final", trust_checkpoint=True, progress=False)


def test_a_dqn_checkpoint_runs_as_a_policy_and_acts_greedily_only(tmp_path):
    from kairos_gym.agents import make_policy, run_policy
    from kairos_gym.agents.checkpoint import write_policy
    from kairos_gym.agents.sb3_checkpoint import normalize_stats

    model, venv = _model()
    model.learn(200)
    write_policy(tmp_path, actor_from_sb3(model, venv), normalize_stats(venv), {"timesteps": 200})
    agent = make_policy("ppo", "small", path=str(tmp_path))
    assert agent.describe()["algo"] == "MaskableDQN"
    summary = run_policy(agent, "small", 0)
    assert summary["n_completed"] + summary["n_rejected"] == summary["n_requests"] == 200
    assert summary["n_invalid_actions"] == 0
    obs = venv.get_original_obs()[0]
    with pytest.raises(ConfigError, match="deterministic"):
        agent.predict(obs, deterministic=False)
    venv.close()
