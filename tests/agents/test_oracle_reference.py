"""The rollout Oracle's exact constant-factor savings (src/core/rollout.hpp ``reference``, docs/policies.md
"oracle"): the pricer's value memos, the scratch simulators' rollout mode, the in-place restore and the versioned
incumbent change no value. The reference search (the Oracle without them) and the exhaustive search give the same
value for every candidate under every base at every decision, and the bounded search the same run, on instances
with deflections, timeouts, rejections, faults and re-entries."""

from __future__ import annotations

from typing import Any

import pytest
from kairos_gym.agents.oracle import Oracle
from kairos_gym.agents.oracle_run import SEARCHES, run_with_cost
from kairos_gym.agents.runner import simulate

from kairos_gym.errors import ConfigError
from kairos_gym.scenario import load_scenario
from kairos_gym.sim import Simulator
from tests.fixtures import run_digest

INSTANCES: list[tuple[str, dict[str, Any]]] = [
    ("bursty", {"workload": {"num_requests": 80}}),
    ("kv-pressure", {"workload": {"num_requests": 60}, "slo": {"tbt_s": 0.05}}),
    ("bursty", {"overload": {"timeout_s": 1.5}, "workload": {"num_requests": 80}}),
    ("overload-10x", {"workload": {"num_requests": 100}}),
    ("bursty-prefill-failure", {"workload": {"max_requests": 80}}),
    ("fault-shift", {"workload": {"num_requests": 80}}),
]


@pytest.mark.parametrize(("base", "over"), INSTANCES)
def test_every_value_of_the_reference_search_is_the_exhaustive_one(base: str, over: dict[str, Any]) -> None:
    sc = load_scenario(base).with_overrides(over)
    sim = Simulator(sc, seed=1)
    ref, ex = Oracle(sc, exhaustive=True, reference=True), Oracle(sc, exhaustive=True)
    ref.attach(sim)
    ex.attach(sim)
    assert ref._oracle.reference and not ex._oracle.reference
    searched = 0
    while (ctx := sim.next_decision()) is not None:
        before = ex.stats["n_searched"]
        d = ex.decide(ctx)
        assert ref.decide(ctx) == d
        if ex.stats["n_searched"] > before:
            searched += 1
            assert ref.last_scores() == ex.last_scores()
        sim.apply(d)
    assert searched > 10
    assert ref.stats == ex.stats


@pytest.mark.parametrize(("base", "over"), INSTANCES[:2])
def test_the_three_searches_give_one_run(base: str, over: dict[str, Any]) -> None:
    sc = load_scenario(base).with_overrides(over)
    runs = {s: run_with_cost(sc, 2, 1, s) for s in SEARCHES}
    assert runs["reference"][0] == runs["exhaustive"][0] == runs["bounded"][0]
    assert runs["reference"][1]["rollout_decisions"] == runs["exhaustive"][1]["rollout_decisions"]
    assert runs["bounded"][1]["rollout_decisions"] <= runs["exhaustive"][1]["rollout_decisions"]
    digests = set()
    for s in SEARCHES:
        o = Oracle(sc, exhaustive=s != "bounded", reference=s == "reference")
        digests.add(run_digest(simulate(o, sc, 2)[1]))
    assert len(digests) == 1


def test_reference_needs_the_exhaustive_search_and_a_bool() -> None:
    with pytest.raises(ConfigError, match="reference"):
        Oracle("bursty", reference=True)
    with pytest.raises(ConfigError, match="reference"):
        Oracle("bursty", exhaustive=True, reference=1)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="search"):
        run_with_cost(load_scenario("bursty").with_overrides({"workload": {"num_requests": 10}}), 0, 1, "fast")
