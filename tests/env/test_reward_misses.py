"""The default ``misses`` reward (kairos_gym/env/reward.py): -1 per request at the step it is known to miss the
score; a whole episode returns n_ok - n, so on one workload the returns order policies exactly as SLO attainment
does; the native vector env's batched path gives the single env's rewards."""

from __future__ import annotations

import numpy as np
import pytest

from kairos_gym.env.core import KairosEnv
from kairos_gym.env.reward import DEFAULT_REWARD, REWARD_KINDS
from kairos_gym.evaluation.reward_order import discordant_pairs, episode, reward_order
from tests.fixtures import TINY

SCENARIOS = [
    ("bursty", {"workload": {"max_requests": 150}}),
    ("bursty", {"workload": {"max_requests": 120}, "overload": {"timeout_s": 1.5}}),  # time-outs
    ("overload-10x", {"workload": {"max_requests": 150}}),  # rejections
    ("bursty", {"workload": {"max_requests": 120}, "slo": {"tbt_s": 0.04, "ttft_s": 0.5}}),  # TBT misses
]


def test_misses_is_the_default_and_the_old_rewards_keep_their_names() -> None:
    assert DEFAULT_REWARD == "misses" and REWARD_KINDS == ("misses", "ttft", "slo", "goodput")
    assert KairosEnv(TINY).reward_kind == "misses"


@pytest.mark.parametrize(("scenario", "over"), SCENARIOS)
@pytest.mark.parametrize("policy", ["no-deflect", "always-deflect-ls", "kairos"])
def test_an_episode_returns_n_ok_minus_n(scenario, over, policy) -> None:
    from kairos_gym.scenario import load_scenario

    sc = load_scenario(scenario).with_overrides(over)
    env = KairosEnv(sc, deflection={"largest_safe_action": True})
    from kairos_gym.agents.registry import make_policy

    pol = make_policy(policy, env.scenario, 3)
    env.reset(seed=3)
    total, rewards = 0.0, []
    while True:
        ctx = env.decision_context
        _, r, term, trunc, info = env.step(env.action_layout.action_of(pol.decide(ctx), ctx))
        rewards.append(r)
        total += r
        if term or trunc:
            break
    s = info["summary"]
    assert all(r <= 0 and r == int(r) for r in rewards)
    assert total == round(s["slo_attainment"] * s["n_requests"]) - s["n_requests"]
    assert sum(r < 0 for r in rewards) > 0


def test_discordant_pairs_counts_within_a_seed() -> None:
    rows = [("a", 0, -5.0, 0.9), ("b", 0, -3.0, 0.8), ("c", 0, -3.0, 0.8), ("a", 1, -1.0, 0.5), ("b", 1, -2.0, 0.5)]
    bad, n, which = discordant_pairs(rows)
    # seed 0: (a,b) returns say b > a, SLO says a > b: discordant; (a,c) same; (b,c) tie on both: concordant;
    # seed 1: returns a > b, SLO tie: discordant
    assert (bad, n) == (3, 4) and {w[:3] for w in which} == {(0, "a", "b"), (0, "a", "c"), (1, "a", "b")}


def test_misses_orders_the_policies_exactly_where_ttft_may_not() -> None:
    from kairos_gym.scenario import load_scenario

    sc = load_scenario("bursty").with_overrides({"workload": {"max_requests": 200}})
    res = reward_order(["no-deflect", "always-deflect-ls", "sl-ls", "kairos"], sc, [0, 1], ["misses", "slo"])
    assert res["rewards"]["misses"]["discordant"] == 0 and res["rewards"]["misses"]["pairs"] == 12
    assert res["rewards"]["slo"]["discordant"] == 0
    assert episode("no-deflect", sc, 0, "misses")[1] == episode("no-deflect", sc, 0, "ttft")[1]


def test_the_vector_env_gives_the_single_envs_misses_rewards() -> None:
    import gymnasium as gym

    import kairos_gym  # noqa: F401

    n = 3
    vec = gym.make_vec("kairos_gym/Kairos-v0", num_envs=n, vectorization_mode="vector_entry_point",
                       workload={"max_requests": 80}, slo={"ttft_s": 0.2, "tbt_s": 0.05})
    assert vec.unwrapped._vs is not None  # the batched path (VecStepper)
    singles = [KairosEnv("bursty", workload={"max_requests": 80}, slo={"ttft_s": 0.2, "tbt_s": 0.05})
               for _ in range(n)]
    _, info = vec.reset(seed=[5, 6, 7])
    for i, e in enumerate(singles):
        e.reset(seed=5 + i)
    rng = np.random.default_rng(0)
    got = []
    for _ in range(60):
        masks = info["action_mask"] if "action_mask" in info else np.stack([e.action_masks() for e in singles])
        acts = np.array([rng.choice(np.flatnonzero(m)) for m in masks])
        _, r, _, _, info = vec.step(acts)
        want = []
        for i, e in enumerate(singles):
            _, ri, ti, tr, _ = e.step(int(acts[i]))
            want.append(ri)
            if ti or tr:
                e.reset()
        got.append((list(r), want))
    for a, b in got:  # bit for bit: +0.0 where nothing was missed, on both paths
        assert np.array(a, dtype=np.float64).tobytes() == np.array(b, dtype=np.float64).tobytes()
    assert any(x < 0 for a, _ in got for x in a)


def test_the_reward_order_command(capsys) -> None:
    from kairos_gym.cli.main import main

    assert main(["reward-order", "--policies", "no-deflect,kairos", "--requests", "60", "--seeds", "0",
                 "--rewards", "misses,ttft"]) == 0
    out = capsys.readouterr().out
    assert "misses      0 of 1 pairs discordant" in out and "ttft" in out
    for flags in (["--policies", "no-deflect,nope"], ["--policies", "kairos"], ["--rewards", "latency"],
                  ["--requests", "0"], ["--seeds", "x"]):
        assert main(["reward-order", "--requests", "30", *flags]) == 2, flags
        assert "reward-order" in capsys.readouterr().err
