"""An action the mask forbids is still taken (the request goes down the prefill path, the step counts in
``n_invalid_actions``), and the env warns once (MaskedActionWarning) so an unmasked client (plain PPO, CleanRL's
ppo.py) learns why; a masked client never sees the warning, also where the realistic track refuses a deflection its
stale mask offered."""

from __future__ import annotations

import warnings

import gymnasium as gym
import numpy as np
import pytest

from kairos_gym.env import KairosEnv, MaskedActionWarning
from kairos_gym.env.vector import KairosVectorEnv
from kairos_gym.scenario import load_scenario

from .common import TINY, random_actions

ID = "kairos_gym/KairosSmall-v0"


def take_a_masked_action(env) -> None:
    """Deflect (the last offered action) until the mask forbids an action (a node busy), then take that action."""
    for _ in range(500):
        mask = env.action_masks()
        forbidden = np.flatnonzero(mask == 0)
        if forbidden.size:
            env.step(int(forbidden[0]))
            return
        env.step(int(np.flatnonzero(mask)[-1]))
    raise AssertionError("no decision with a masked-out action")


def test_an_unmasked_client_is_warned_once_and_its_actions_still_count():
    env = gym.make(ID)
    _, info = env.reset(seed=0)
    with pytest.warns(MaskedActionWarning, match=r"action \d+ \(deflect d\d .*\) is masked out") as record:
        rng = np.random.default_rng(0)
        n_masked = 0
        for _ in range(150):
            a = int(rng.integers(env.action_space.n))
            n_masked += int(info["action_mask"][a] == 0)
            _, _, term, trunc, info = env.step(a)
            if term or trunc:
                break
    assert len([w for w in record if w.category is MaskedActionWarning]) == 1  # once per env
    assert record[0].filename == __file__  # attributed to the client's step call, not a wrapper
    assert n_masked > 1 and info["n_invalid_actions"] == n_masked  # every one taken and counted, as before
    env.reset(seed=1)  # once per env, not per episode
    with warnings.catch_warnings():
        warnings.simplefilter("error", MaskedActionWarning)
        take_a_masked_action(env)


def test_a_masked_client_is_never_warned():
    env = KairosEnv(TINY)
    act = random_actions(0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", MaskedActionWarning)
        _, info = env.reset(seed=0)
        while True:
            _, _, term, trunc, info = env.step(act(info["action_mask"]))
            if term or trunc:
                break
    assert info["n_invalid_actions"] == 0


def test_a_stale_refusal_on_the_realistic_track_is_not_a_masked_action():
    """The served mask offered the deflection and the node refused it at apply time: invalid, counted, no warning."""
    sc = load_scenario("kv-pressure").with_overrides({
        "cluster": {"kv_reserve_frac": 0.6, "memory_policy": "reserve"}, "workload": {"num_requests": 300},
        "information": {"track": "realistic", "staleness_s": 0.5, "model_error": 0.0}})
    env = KairosEnv(sc)
    with warnings.catch_warnings():
        warnings.simplefilter("error", MaskedActionWarning)
        _, info = env.reset(seed=0)
        while True:  # always the last offered deflection (LargestSafe-like greed): refusals follow
            _, _, term, trunc, info = env.step(int(np.flatnonzero(info["action_mask"])[-1]))
            if term or trunc:
                break
    s = info["summary"]
    assert s["n_stale_refusals"] > 0 and info["n_invalid_actions"] == s["n_stale_refusals"]
    env.reset(seed=0)
    with pytest.warns(MaskedActionWarning):  # a truly masked action on that track still warns
        take_a_masked_action(env)


@pytest.mark.parametrize("mode", ["next_step", "same_step"])
def test_the_vector_env_warns_once_for_all_its_envs(mode):
    vec = KairosVectorEnv(3, autoreset_mode=mode, scenario=TINY, max_decisions=5)
    assert not any(e.warn_masked for e in vec.envs)
    _, info = vec.reset(seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", MaskedActionWarning)
        for _ in range(12):  # masked actions only, through autoresets
            _, _, _, _, info = vec.step(np.array([random_actions(i)(m) for i, m in enumerate(info["action_mask"])]))
    rng = np.random.default_rng(1)
    with pytest.warns(MaskedActionWarning, match="KairosVectorEnv env") as record:
        for _ in range(30):
            vec.step(rng.integers(vec.single_action_space.n, size=3))
    assert len([w for w in record if w.category is MaskedActionWarning]) == 1


def test_action_of_inverts_the_table_and_refuses_what_no_action_takes() -> None:
    from kairos_gym.env.actions import ActionLayout
    from kairos_gym.errors import ConfigError
    from kairos_gym.sim import Simulator
    from kairos_gym.sim.hook import LARGEST_SAFE, Decision

    sim = Simulator(TINY, seed=0)
    ctx = sim.next_decision()
    lay = ActionLayout(sim.scenario)
    for a, d in enumerate(lay.decisions):
        assert lay.action_of(d, ctx) == a
    shortest = min((p.queued_tokens, i) for i, p in enumerate(ctx.prefill) if p.up)[1]
    assert lay.action_of(Decision.prefill_path(shortest), ctx) == 0  # the simulator's own shortest queue
    other = 1 - shortest
    for bad in (Decision.prefill_path(other), Decision.deflect(0, 12345), Decision.deflect(0, LARGEST_SAFE)):
        if bad.path == "prefill" or not lay.largest_safe or bad.chunk != LARGEST_SAFE:
            with pytest.raises(ConfigError, match="decision"):
                lay.action_of(bad, ctx)
