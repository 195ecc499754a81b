"""The rollout Oracle's threads: the k x b rollouts of a decision run on 1, 2 or 4 threads and the Oracle takes
the same decisions and ends with the same run, bit for bit; exhaustive, it also scores every rollout the same (the
bounded search's stopped rollouts depend on the order the threads reach them in, its decisions do not)."""

from __future__ import annotations

import pytest
from kairos_gym.agents.oracle import Oracle
from kairos_gym.agents.runner import simulate

from kairos_gym.errors import ConfigError
from kairos_gym.scenario import load_scenario
from kairos_gym.sim.simulator import request_columns
from tests.fixtures import run_digest

TIMING = ("wall_time_s", "decision_us_p50", "decision_us_p99", "decision_cpu_us_p50", "decision_cpu_us_p99")


def _run(sc, seed: int, threads: int, exhaustive: bool):
    oracle = Oracle(sc, seed=seed, threads=threads, exhaustive=exhaustive)
    summary, sim = simulate(oracle, sc, seed)
    stats = oracle.stats if exhaustive else {k: oracle.stats[k] for k in ("n_decisions", "n_searched", "n_candidates")}
    return {k: v for k, v in summary.items() if k not in TIMING}, run_digest(sim), stats


@pytest.mark.parametrize("exhaustive", [False, True])
@pytest.mark.parametrize("scenario, n, seed", [("bursty", 120, 0), ("bursty", 120, 3), ("decode-heavy", 100, 1),
                                              ("bursty-prefill-failure", 120, 0)])
def test_one_two_and_four_threads_give_the_same_run_bit_for_bit(scenario, n, seed, exhaustive):
    sc = load_scenario(scenario).with_overrides({"workload": {"max_requests": n}})
    one = _run(sc, seed, 1, exhaustive)
    assert one[2]["n_searched"] > 0 and one[2]["n_candidates"] > one[2]["n_searched"]  # there was a search
    for t in (2, 4):
        assert _run(sc, seed, t, exhaustive) == one, t


def test_the_scores_of_every_rollout_are_the_same_on_any_number_of_threads():
    from kairos_gym.sim import Simulator

    sc = load_scenario("bursty").with_overrides({"workload": {"max_requests": 80}})
    seen = {}
    for t in (1, 3):
        sim = Simulator(sc, seed=2)
        oracle = Oracle(sc, seed=2, threads=t, exhaustive=True)
        oracle.attach(sim)
        oracle.reset()
        scores = []
        while (ctx := sim.next_decision()) is not None:
            sim.apply(oracle.decide(ctx))
            scores.append(oracle.last_scores())
        seen[t] = (scores, [getattr(sim, k).tobytes() for k in request_columns()])
    assert seen[1] == seen[3]


@pytest.mark.parametrize("threads", [0, 65, 1.5, True, "2"])
def test_a_thread_count_outside_its_range_is_refused(threads):
    with pytest.raises(ConfigError, match="threads"):
        Oracle("small", threads=threads)
