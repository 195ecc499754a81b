"""The rollout Oracle's bounded search (src/core/rollout.cpp): it takes the exhaustive search's decisions on every
instance, its exact values are the exhaustive ones, a stopped rollout could not have been chosen, and the run
counters' score and bound (RunCounters score_*, rollout.hpp score_so_far / score_bound) are what the per-request
records say."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from kairos_gym.agents.oracle import Oracle
from kairos_gym.agents.runner import simulate

from kairos_gym.compiled import core
from kairos_gym.scenario import load_scenario
from kairos_gym.sim import Simulator
from tests.fixtures import run_digest, tiny_scenario

TIMEOUTS = {"overload": {"timeout_s": 1.5}, "workload": {"num_requests": 90}}
"""bursty with 1.5 s timeouts: requests time out in the bursts (n_timed_out > 0)."""
INSTANCES: list[tuple[Any, dict[str, Any]]] = [
    (tiny_scenario(60, name="b", rate=25), {}),
    ("bursty", {"workload": {"num_requests": 90}}),
    ("kv-pressure", {"workload": {"num_requests": 70}}),
    ("decode-bound", {"workload": {"num_requests": 60}}),  # every rollout at 1.0: the ties are stopped
    ("regime-shift", {"workload": {"num_requests": 70}}),
    ("bursty", {"workload": {"num_requests": 70}, "slo": {"tbt_s": 0.05, "ttft_s": 0.5}}),
    ("bursty", TIMEOUTS),
    ("overload-10x", {"workload": {"num_requests": 120}}),  # admission rejections
    ("bursty-prefill-failure", {"workload": {"max_requests": 90}}),  # a failure and re-entry decisions
    ("fault-shift", {"workload": {"num_requests": 90}}),
]


def _sc(base: Any, over: dict[str, Any]) -> Any:
    sc = load_scenario(base)
    return sc.with_overrides(over) if over else sc


@pytest.mark.parametrize(("base", "over"), INSTANCES)
@pytest.mark.parametrize("seed", [0, 3])
def test_the_bounded_search_takes_the_exhaustive_decisions(base: Any, over: dict[str, Any], seed: int) -> None:
    sc = _sc(base, over)
    runs = {}
    for exhaustive in (True, False):
        o = Oracle(sc, exhaustive=exhaustive)
        summary, sim = simulate(o, sc, seed)
        runs[exhaustive] = (summary["slo_attainment"], run_digest(sim), o.stats)
    assert runs[False][:2] == runs[True][:2]
    ex, bd = runs[True][2], runs[False][2]
    assert ex["n_pruned"] == ex["n_reused"] == 0 and ex["n_rollouts"] == ex["n_candidates"] * 5
    assert bd["n_rollouts"] + bd["n_reused"] == bd["n_candidates"] * 5
    assert bd["n_rollout_decisions"] <= ex["n_rollout_decisions"]


def test_the_bounded_values_are_exact_and_a_stopped_rollout_could_not_be_chosen() -> None:
    """Two Oracles on one simulator, at every decision: the bounded one's known values are the exhaustive one's,
    and each stopped slot is worse than the chosen value or equal to it and later in the tie-break order."""
    sc = _sc("bursty", {"workload": {"num_requests": 90}})
    sim = Simulator(sc, seed=2)  # seed 1 stops nothing: its misses are found after the last arrival (no check)
    ex, bd = Oracle(sc, exhaustive=True), Oracle(sc)
    ex.attach(sim)
    bd.attach(sim)
    stopped = 0
    while (ctx := sim.next_decision()) is not None:
        searched = ex.stats["n_searched"]
        d = ex.decide(ctx)
        assert bd.decide(ctx) == d
        if ex.stats["n_searched"] > searched:
            full = [v for _, per in ex.last_scores() for v in per]
            part = [v for _, per in bd.last_scores() for v in per]
            best = max(full)
            first_best = full.index(best)
            for k, (f, p) in enumerate(zip(full, part, strict=True)):
                if p == (-1, -1):
                    stopped += 1
                    assert f < best or (f == best and k > first_best)
                else:
                    assert p == f
        sim.apply(d)
    assert stopped > 20


def test_a_deviating_behaviour_is_detected_and_the_values_are_not_reused() -> None:
    """A caller that applies its own actions (the distillation's DAgger rounds do): every decision of the bounded
    Oracle is still the exhaustive one's, on the states the deviations lead to."""
    sc = _sc("bursty", {"workload": {"num_requests": 90}})
    sim = Simulator(sc, seed=2)
    ex, bd = Oracle(sc, exhaustive=True), Oracle(sc)
    ex.attach(sim)
    bd.attach(sim)
    from kairos_gym.agents.registry import make_policy

    other = make_policy("always-deflect-ls", sc, 0)
    i = deviated = 0
    while (ctx := sim.next_decision()) is not None:
        d = bd.decide(ctx)
        assert d == ex.decide(ctx)
        mine = other.decide(ctx) if i % 3 == 0 else d
        deviated += mine != d
        sim.apply(mine)
        i += 1
    assert deviated > 5


@pytest.mark.parametrize(("base", "over"), INSTANCES)
def test_the_run_counters_score_is_the_records_score_and_the_bound_only_falls(base: Any, over: dict[str, Any]
                                                                            ) -> None:
    sc = _sc(base, over)
    c = core()
    sim = Simulator(sc, seed=1)
    pol = __import__("kairos_gym.agents.registry", fromlist=["make_policy"]).make_policy("kairos-exact", sc, 0)
    bounds = [c.score_bound(sim._core)]
    while (ctx := sim.next_decision()) is not None:
        assert c.score_so_far(sim._core) == c.objective(sim._core, sc.slo.ttft_s, sc.slo.tbt_s)
        bounds.append(c.score_bound(sim._core))
        sim.apply(pol.decide(ctx))
    final = c.objective(sim._core, sc.slo.ttft_s, sc.slo.tbt_s)
    assert c.score_so_far(sim._core) == final == c.score_bound(sim._core)
    assert all(a[0] >= b[0] and a[1] >= b[1] for a, b in itertools.pairwise(bounds))  # never increases
    assert all(b >= final for b in bounds)  # lexicographically (and component-wise) above the final score


def test_timeouts_and_rejections_are_in_the_bound() -> None:
    for base, over, key in (("bursty", TIMEOUTS, "n_timed_out"), ("overload-10x", {"workload": {"num_requests": 120}},
                                                                  "n_rejected")):
        summary = simulate("no-deflect", _sc(base, over), 1)[0]
        assert summary[key] > 0, key  # the instances above exercise the bound's "never finish" term


def test_an_oracle_whose_slos_are_not_the_simulators_is_refused() -> None:
    sc = _sc("bursty", {"workload": {"num_requests": 20}})
    sim = Simulator(sc, seed=0)
    o = Oracle(sc)
    with pytest.raises(ValueError, match="SLOs"):
        core().RolloutOracle(sim._core, o.specs, sc.slo.ttft_s * 2, sc.slo.tbt_s, True)
