"""Observations stay finite and inside the Box over long random rollouts, on every id and over configs."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kairos_gym.env as kenv
from kairos_gym.env import KairosEnv
from kairos_gym.perf.env_throughput import bench_env

from .common import make_or_skip, random_actions


def check_rollout(env, seed: int, policy_seed: int, max_steps: int) -> int:
    space = env.observation_space
    obs, info = env.reset(seed=seed)
    act = random_actions(policy_seed)
    steps = 0
    while True:
        flat = np.concatenate([v.ravel() for v in obs.values()]) if isinstance(obs, dict) else obs
        assert np.all(np.isfinite(flat)), (steps, flat)
        assert space.contains(obs), (steps, flat[(flat < -1) | (flat > 1)])
        obs, r, term, trunc, info = env.step(act(info["action_mask"]))
        assert math.isfinite(r)
        steps += 1
        if term or trunc or steps >= max_steps:
            return steps


@pytest.mark.parametrize("env_id", kenv.env_ids())
def test_long_random_rollout_every_id(env_id):
    env = make_or_skip(env_id, workload={"max_requests": 400}, deflection={"largest_safe_action": True})
    assert check_rollout(env, seed=1, policy_seed=1, max_steps=400) > 0


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rate=st.floats(4.0, 60.0),
    cv=st.floats(0.5, 6.0),
    menu=st.lists(st.sampled_from([16, 64, 128, 256, 512, 1024, 2048, 4096]), min_size=1, max_size=5, unique=True),
    reward=st.sampled_from(["ttft", "slo", "goodput"]),
    tbt_s=st.floats(0.02, 0.5),
    largest_safe=st.booleans(),
    obs_mode=st.sampled_from(["flat", "dict"]),
    oracle=st.booleans(),
    seed=st.integers(0, 2**31 - 1),
)
def test_bounds_over_configs(rate, cv, menu, reward, tbt_s, largest_safe, obs_mode, oracle, seed):
    scenario = {
        "name": "prop",
        "slo": {"tbt_s": tbt_s},
        "deflection": {"chunk_menu": menu, "largest_safe_action": largest_safe},
        "workload": {"arrival": {"kind": "gamma", "rate": rate, "cv": cv}, "num_requests": 300,
                     "lengths": {"kind": "lognormal", "prompt_median": 1500, "prompt_sigma": 1.2,
                                 "prompt_max": 32000, "output_median": 150, "output_sigma": 1.0,
                                 "output_max": 2000}},
    }
    env = KairosEnv(scenario, reward=reward, obs_mode=obs_mode, oracle=oracle)
    check_rollout(env, seed=seed, policy_seed=seed % 1000, max_steps=300)


def test_bench_env_reports_rate():
    res = bench_env("kairos_gym/Kairos-v0", seconds=0.3, scenario={"name": "b", "workload": {"num_requests": 50}})
    assert res["decisions"] > 0 and res["decisions_per_s"] > 0
    # the env step runs the simulator inside one C++ call: no share to report
    assert res["engine"] == "Simulator" and res["sim_share"] is None
    assert res["episodes"] >= 1


def test_bench_env_times_the_domain_env_with_its_resets():
    """kairos_train/KairosGeneral-v0 builds a simulator per episode: timed whole (its resets inside the figure)."""
    res = bench_env("kairos_train/KairosGeneral-v0", seconds=0.5, families=["bursty"], tiers=["default"])
    assert res["engine"] == "DomainEnv" and res["sim_share"] is None and res["decisions"] > 0
    assert res["episodes"] >= 1


def test_bench_env_repeats_and_fixed_work():
    from kairos_gym.errors import ConfigError
    from kairos_gym.perf.env_throughput import run_decisions

    res = bench_env("kairos_gym/KairosSmall-v0", seconds=0.1, repeats=3)
    assert len(res["decisions_per_s_runs"]) == 3
    runs = res["decisions_per_s_runs"]  # rounded rates; the median is one of them (3 runs)
    assert any(abs(res["decisions_per_s"] - r) <= 0.5 for r in runs) and min(runs) - 0.5 <= res["decisions_per_s"]
    fixed = run_decisions("kairos_gym/KairosSmall-v0", decisions=450)
    assert fixed["decisions"] == 450 and fixed["episodes"] >= 2  # 200-request episodes: resets happened
    for bad in ({"repeats": 0}, {"repeats": 1.5}, {"seconds": 0}):
        with pytest.raises(ConfigError):
            bench_env("kairos_gym/KairosSmall-v0", **bad)
    with pytest.raises(ConfigError):
        run_decisions("kairos_gym/KairosSmall-v0", decisions=-1)
