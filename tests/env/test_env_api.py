"""Gymnasium / SB3 API conformance: registration, checkers, vector envs, pickling, MaskablePPO."""

from __future__ import annotations

import pickle
import warnings
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import kairos_gym.env as kenv
from kairos_gym.env import KairosEnv, MaskedActionWarning
from kairos_gym.scenario import scenario_names
from tests.fixtures import silent_logger

from .common import SMALL_OVERRIDES, TINY, assert_same, make_or_skip, random_actions, rollout

IDS = kenv.env_ids()


def test_ids_registered():
    assert "kairos_gym/Kairos-v0" in IDS and "kairos_gym/KairosSmall-v0" in IDS
    assert gym.spec("kairos_gym/Kairos-v0").kwargs == {"scenario": "bursty"}
    assert gym.spec("kairos_gym/KairosSmall-v0").kwargs == {"scenario": "small"}
    from kairos_gym.env.registration import env_compatible

    for name in scenario_names():  # every shipped scenario but the streaming-metrics soak
        assert (kenv.scenario_env_id(name) in IDS) == env_compatible(name) == (name not in ("soak-24h", "soak-10x-24h"))
    assert kenv.register_envs() == IDS  # idempotent, no re-registration


@pytest.mark.parametrize("env_id", IDS)
def test_gymnasium_and_sb3_check_env(env_id):
    from stable_baselines3.common.env_checker import check_env as sb3_check_env

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any warning fails the test
        warnings.simplefilter("ignore", MaskedActionWarning)  # but this one: the checkers step unmasked
        env = make_or_skip(env_id, **SMALL_OVERRIDES)
        check_env(env.unwrapped)
        sb3_check_env(make_or_skip(env_id, **SMALL_OVERRIDES).unwrapped, warn=True)


def test_check_env_dict_mode_oracle_and_largest_safe():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.simplefilter("ignore", MaskedActionWarning)
        check_env(gym.make("kairos_gym/Kairos-v0", scenario=TINY, obs_mode="dict").unwrapped)
        check_env(gym.make("kairos_gym/Kairos-v0", scenario=TINY, oracle=True, reward="slo",
                           deflection={"largest_safe_action": True}).unwrapped)
        check_env(gym.make("kairos_gym/Kairos-v0", scenario=TINY, render_mode="ansi").unwrapped,
                  skip_render_check=False)
        check_env(gym.make("kairos_gym/Kairos-v0", scenario=TINY, render_mode="rgb_array").unwrapped,
                  skip_render_check=False)


def test_make_with_scenario_and_overrides():
    env = gym.make("kairos_gym/Kairos-v0", scenario=TINY, workload={"num_requests": 30}, slo={"tbt_s": 0.05})
    sc = env.unwrapped.scenario
    assert sc.name == "tiny" and sc.workload.num_requests == 30 and sc.slo.tbt_s == 0.05
    _, info = env.reset(seed=1)
    assert info["n_requests"] == 30
    path = Path(__file__).resolve().parents[2] / "configs" / "scenarios" / "small.yaml"
    if path.is_file():  # a YAML path
        env = gym.make("kairos_gym/Kairos-v0", scenario=str(path), workload={"max_requests": 10})
        assert env.unwrapped.scenario.name == "small" and env.reset(seed=0)[1]["n_requests"] == 10


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_make_vec(mode):
    envs = gym.make_vec("kairos_gym/Kairos-v0", num_envs=2, vectorization_mode=mode, scenario=TINY,
                        workload={"num_requests": 25}, max_decisions=20)
    try:
        obs, info = envs.reset(seed=[3, 4])
        assert obs.shape == (2, envs.single_observation_space.shape[0]) and obs.dtype == np.float32
        assert info["action_mask"].shape == (2, envs.single_action_space.n)
        ended = 0
        for _ in range(45):  # crosses the truncation at 20 decisions and the autoreset
            obs, rew, term, trunc, info = envs.step(np.zeros(2, dtype=np.int64))
            assert envs.observation_space.contains(obs) and np.all(np.isfinite(rew))
            ended += int(np.sum(term | trunc))
            if np.any(term | trunc):
                assert "summary" in info
        assert ended >= 2
    finally:
        envs.close()


@pytest.mark.parametrize("vec", ["dummy", "subproc"])
def test_sb3_vec_envs(vec):
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

    def make():  # "module:id" imports kairos_gym.env (registering the ids) in a fresh worker process
        return gym.make("kairos_gym.env:kairos_gym/Kairos-v0", scenario=TINY, workload={"num_requests": 20})

    cls = DummyVecEnv if vec == "dummy" else SubprocVecEnv
    venv = cls([make, make])
    try:
        obs = venv.reset()
        assert obs.shape == (2, venv.observation_space.shape[0])
        masks = np.stack(venv.env_method("action_masks"))
        assert masks.shape == (2, venv.action_space.n) and np.all(masks[:, 0] == 1)
        dones = 0
        for _ in range(30):
            obs, _, done, infos = venv.step(np.zeros(2, dtype=np.int64))
            dones += int(done.sum())
            for d, inf in zip(done, infos, strict=True):
                if d:
                    assert "terminal_observation" in inf and "summary" in inf
        assert dones >= 2
    finally:
        venv.close()


def test_pickle_round_trip_mid_episode():
    env = gym.make("kairos_gym/Kairos-v0", scenario=TINY)
    env.reset(seed=5)
    act = random_actions(0)
    mask = env.unwrapped.action_masks()
    for _ in range(30):
        env.step(act(mask))
        mask = env.unwrapped.action_masks()
    clone = pickle.loads(pickle.dumps(env))
    first = act(mask)
    assert_same(rollout_from(env, first), rollout_from(clone, first))


def rollout_from(env, first_action, steps=40):
    out = []
    a = first_action
    act = random_actions(9)
    for _ in range(steps):
        obs, r, term, trunc, info = env.step(a)
        out.append((obs, r, term, trunc, info))
        if term or trunc:
            break
        a = act(info["action_mask"])
    return out


def test_pickle_fresh_env_then_reset():
    env = KairosEnv(TINY, obs_mode="dict", render_mode="ansi")
    clone = pickle.loads(pickle.dumps(env))
    assert_same(rollout(env, seed=2, max_steps=30)[:3], rollout(clone, seed=2, max_steps=30)[:3])


def test_maskable_ppo_learns_a_little():
    from sb3_contrib import MaskablePPO

    env = gym.make("kairos_gym/Kairos-v0", scenario=TINY, workload={"num_requests": 40})
    model = MaskablePPO("MlpPolicy", env, n_steps=64, batch_size=32, n_epochs=1, seed=0, device="cpu")
    model.set_logger(silent_logger())  # SB3 would make an empty SB3-<date> folder in /tmp
    model.learn(128)
    obs, info = env.reset(seed=0)
    action, _ = model.predict(obs, action_masks=info["action_mask"], deterministic=True)
    assert info["action_mask"][int(action)] == 1
