"""``slo.burn_in_requests`` (a warm start): the first requests are simulated exactly as without it and left out of the
score (``slo_attainment``, ``goodput_rps``, the ``misses`` reward, the Oracle's objective); bad values are refused
before any work."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from kairos_gym.agents import run_policy
from kairos_gym.agents.oracle import DEFAULT_BASES, Oracle

from kairos_gym.env.core import KairosEnv
from kairos_gym.errors import ConfigError
from kairos_gym.scenario import ScenarioConfig, load_scenario
from kairos_gym.sim import Simulator
from kairos_gym.sim.metrics import requests_table
from tests.fixtures import LENGTHS, tiny_scenario

BURN = 80
BASE = tiny_scenario(240, name="warm", rate=24, lengths=LENGTHS)


def _sc(burn: int, **over: Any) -> ScenarioConfig:
    d = {**BASE, "slo": {"burn_in_requests": burn, **over.pop("slo", {})}, **over}
    return ScenarioConfig.from_dict(d)


def _ok(table: dict[str, np.ndarray], sc: ScenarioConfig) -> np.ndarray:
    return (table["ttft_s"] <= sc.slo.ttft_s) & (table["max_tbt_s"] <= sc.slo.tbt_s) & ~np.isnan(table["finish_s"])


@pytest.mark.parametrize("policy", ["no-deflect", "kairos", "always-deflect-ls"])
def test_the_run_is_the_same_and_the_score_skips_the_burn_in(policy: str) -> None:
    cold, warm = _sc(0), _sc(BURN)
    s0, sim0 = _simulate(policy, cold, 3)
    s1, sim1 = _simulate(policy, warm, 3)
    t0, t1 = requests_table(sim0), requests_table(sim1)
    for k in ("arrival_s", "first_token_s", "finish_s", "max_tbt_s", "path"):
        np.testing.assert_array_equal(t0[k], t1[k])  # simulated alike: only the scoring differs
    ok = _ok(t1, warm)
    assert s1["slo_attainment"] == ok[BURN:].sum() / (240 - BURN)
    assert s0["slo_attainment"] == ok.sum() / 240
    assert (s1["burn_in_requests"], s1["n_scored"]) == (BURN, 240 - BURN)
    assert "burn_in_requests" not in s0 and "n_scored" not in s0
    assert s1["goodput_rps"] == pytest.approx(ok[BURN:].sum() / s1["sim_time_s"], rel=1e-15)
    for k in ("n_completed", "n_rejected", "ttft_p95", "sim_time_s"):  # the rest is the whole run's
        assert s1[k] == s0[k]


def _simulate(policy: str, sc: ScenarioConfig, seed: int) -> tuple[dict[str, Any], Simulator]:
    from kairos_gym.agents.runner import simulate
    return simulate(policy, sc, seed)


def test_the_misses_reward_counts_only_scored_requests() -> None:
    sc = _sc(BURN)
    env = KairosEnv(sc, reward="misses")
    env.reset(seed=5)
    total, done = 0.0, False
    while not done:
        _, r, term, trunc, _ = env.step(0)
        total += r
        done = term or trunc
    summary = env.unwrapped.sim.summary()
    assert -total == round((1 - summary["slo_attainment"]) * summary["n_scored"])


@pytest.mark.parametrize("seed", [0, 1])
def test_the_oracle_still_beats_every_base_on_the_scored_requests(seed: int) -> None:
    sc = ScenarioConfig.from_dict({**tiny_scenario(90, name="ow", rate=28, lengths=LENGTHS),
                                   "slo": {"burn_in_requests": 30}})
    got = run_policy(Oracle(sc), sc, seed)
    n_ok = round(got["slo_attainment"] * got["n_scored"])
    for name in DEFAULT_BASES:
        base = run_policy(name, sc, seed)
        assert n_ok >= round(base["slo_attainment"] * base["n_scored"]), name


def test_to_dict_omits_a_zero_burn_in_and_round_trips_another() -> None:
    assert "burn_in_requests" not in _sc(0).slo.to_dict()
    sc = _sc(BURN)
    assert sc.slo.to_dict()["burn_in_requests"] == BURN
    assert ScenarioConfig.from_dict(sc.to_dict()) == sc


@pytest.mark.parametrize(("value", "allowed"), [(-1, ">= 0"), (1.5, "whole"), ("10", ""), (240, "fewer than"),
                                                (10**9, "")])
def test_bad_burn_ins_are_refused_naming_the_field(value: Any, allowed: str) -> None:
    with pytest.raises(ConfigError, match="burn_in_requests") as e:
        _sc(value)
    assert allowed in str(e.value)


def test_a_burn_in_needs_exact_metrics() -> None:
    with pytest.raises(ConfigError, match=r"burn_in_requests.*streaming"):
        _sc(10, metrics={"mode": "streaming"})


def test_a_trace_window_smaller_than_the_burn_in_is_refused_at_reset() -> None:
    """A trace's window (here its first 3 s) is known only when generated: Simulator.reset refuses it then."""
    d = load_scenario("azure-code").to_dict()
    d["workload"]["duration_s"] = 3.0
    n = Simulator(ScenarioConfig.from_dict(d), seed=0).n
    d["slo"]["burn_in_requests"] = n - 1
    Simulator(ScenarioConfig.from_dict(d), seed=0)  # one request scored: fine
    d["slo"]["burn_in_requests"] = n
    with pytest.raises(ConfigError, match=f"burn_in_requests.*fewer than the workload's {n} requests"):
        Simulator(ScenarioConfig.from_dict(d), seed=0)
