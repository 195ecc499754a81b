"""gym.make's KairosWrapper (action_masks, summary on a TimeLimit truncation) and the partial-run summary."""

from __future__ import annotations

import math
import pickle

import gymnasium as gym
import numpy as np
import pytest

from kairos_gym.env import KairosEnv, KairosWrapper
from kairos_gym.sim import Simulator

from .common import TINY, assert_same, random_actions, rollout

ID = "kairos_gym/Kairos-v0"


def _settled_attainment(env) -> tuple[int, int, int, float]:
    """(not arrived, in flight, settled, SLO attainment over settled) from the per-request table."""
    sim = env.unwrapped.sim
    t = sim.requests_table()
    done = ~np.isnan(t["finish_s"])
    rejected = t["path"] == "rejected"
    not_arrived = int((t["arrival_s"] > sim.now).sum())  # continuous arrivals: no ties with the clock
    in_flight = int(((t["arrival_s"] <= sim.now) & ~done & ~rejected).sum())
    ok = (t["ttft_s"] <= sim.scenario.slo.ttft_s) & (t["max_tbt_s"] <= sim.scenario.slo.tbt_s) & done
    settled = int(done.sum() + rejected.sum())
    return not_arrived, in_flight, settled, float(ok.sum() / settled)


def test_action_masks_work_on_what_gym_make_returns():
    for env in (gym.make(ID, scenario=TINY), gym.make(ID, scenario=TINY, max_episode_steps=9)):
        assert isinstance(env, KairosWrapper)
        _, info = env.reset(seed=2)
        act = random_actions(0)
        for _ in range(8):
            assert_same(env.action_masks(), info["action_mask"])
            assert_same(env.get_wrapper_attr("action_masks")(), info["action_mask"])
            assert_same(env.unwrapped.action_masks(), info["action_mask"])
            *_, info = env.step(act(info["action_mask"]))
        assert env.action_masks().dtype == np.int8


def test_sb3_contrib_finds_the_masks_through_monitor_and_a_vec_env():
    pytest.importorskip("sb3_contrib")
    from sb3_contrib.common.maskable.utils import get_action_masks
    from stable_baselines3.common.monitor import Monitor
    from stable_baselines3.common.vec_env import DummyVecEnv

    venv = DummyVecEnv([lambda: Monitor(gym.make(ID, scenario=TINY, max_episode_steps=5))])
    venv.reset()
    masks = get_action_masks(venv)
    assert masks.shape == (1, venv.action_space.n) and bool(masks[0, 0])


def test_time_limit_truncation_step_has_the_partial_summary():
    env = gym.make(ID, scenario=TINY, max_episode_steps=40)
    _, rewards, infos, _ = rollout(env, seed=3, policy_seed=1)
    last = infos[-1]
    assert len(rewards) == 40 and last["decisions"] == 40
    assert "summary" in last and all("summary" not in i for i in infos[:-1])
    s = last["summary"]
    assert_same(s, env.unwrapped.summary())
    not_arrived, in_flight, settled, attainment = _settled_attainment(env)
    assert s["n_pending"] == not_arrived > 0 and s["n_in_flight"] == in_flight > 0
    assert s["n_pending"] + s["n_in_flight"] + s["n_completed"] + s["n_rejected"] == s["n_requests"] == 120
    assert settled == s["n_completed"] + s["n_rejected"] > 0
    assert s["slo_attainment"] == attainment  # over settled requests, not over all 120


def test_max_decisions_truncation_reports_the_same_partial_counts():
    env = KairosEnv(TINY, max_decisions=40)
    _, _, infos, actions = rollout(env, seed=3, policy_seed=1)
    wrapped = gym.make(ID, scenario=TINY, max_episode_steps=40)
    _, _, winfos, _ = rollout(wrapped, seed=3, actions=actions)
    assert_same(infos[-1]["summary"], winfos[-1]["summary"])
    assert infos[-1]["summary"]["n_pending"] > 0


def test_partial_summary_without_any_completion_has_no_attainment():
    sim = Simulator(TINY, seed=0)
    assert sim.next_decision() is not None
    s = sim.summary()
    assert s["n_completed"] == 0 and s["slo_attainment"] is None
    assert s["n_in_flight"] == 1 and s["n_pending"] == 119  # the first request waits for its decision


def test_finished_episode_summary_has_no_partial_keys_and_counts_all_requests():
    env = gym.make(ID, scenario=TINY)
    _, _, infos, actions = rollout(env, seed=5, policy_seed=2)
    s = infos[-1]["summary"]
    assert "n_pending" not in s and "n_in_flight" not in s
    t = env.unwrapped.sim.requests_table()
    ok = (t["ttft_s"] <= s["slo_ttft_s"]) & (t["max_tbt_s"] <= s["slo_tbt_s"]) & ~np.isnan(t["finish_s"])
    assert s["slo_attainment"] == float(ok.sum() / 120)
    # the wrapper adds nothing to a terminated episode: same infos as the bare env
    _, _, bare, _ = rollout(KairosEnv(TINY), seed=5, actions=actions)
    assert_same(infos[1:], bare[1:])


def test_wrapper_survives_spec_recreation_and_pickling():
    env = gym.make(ID, scenario=TINY, max_episode_steps=6)
    again = gym.make(env.spec)
    assert type(again) is KairosWrapper and type(again.env) is gym.wrappers.TimeLimit
    assert not isinstance(again.env.env, KairosWrapper)  # not applied twice
    clone = pickle.loads(pickle.dumps(env))
    a, b = rollout(env, seed=1), rollout(clone, seed=1)
    assert_same(a, b)
    assert "summary" in a[2][-1] and not math.isnan(a[2][-1]["summary"]["sim_time_s"])
