"""The clairvoyant rollout Oracle (agents/oracle.py, src/core/rollout.cpp): never worse than any of its base
policies on any instance (the rollout improvement property), exact rollouts, deduplicated candidates, inputs."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from kairos_gym.agents import run_policy
from kairos_gym.agents.oracle import DEFAULT_BASES, Oracle
from kairos_gym.agents.registry import make_policy, policy_params

from kairos_gym.compiled import core
from kairos_gym.errors import ConfigError
from kairos_gym.scenario import load_scenario
from kairos_gym.sim import Simulator
from kairos_gym.sim.hook import DEFLECT, LARGEST_SAFE, Decision
from tests.agents.ctx_helpers import make_ctx
from tests.fixtures import tiny_scenario

SMALL = tiny_scenario(60, name="o", rate=25)
INSTANCES: list[tuple[Any, dict[str, Any]]] = [
    (SMALL, {}),
    ("bursty", {"workload": {"num_requests": 70}}),
    ("kv-pressure", {"workload": {"num_requests": 60}}),
    ("regime-shift", {"workload": {"num_requests": 60}}),
    ("decode-bound", {"workload": {"num_requests": 50}}),  # everyone at 1.0: all ties
    ("bursty", {"workload": {"num_requests": 60}, "slo": {"tbt_s": 0.05, "ttft_s": 0.5}}),
]


def _sc(base: Any, over: dict[str, Any]) -> Any:
    sc = load_scenario(base)
    return sc.with_overrides(over) if over else sc


def _n_ok(summary: dict[str, Any]) -> int:
    return round(summary["slo_attainment"] * summary["n_requests"])


@pytest.mark.parametrize(("base", "over"), INSTANCES)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_oracle_is_never_worse_than_any_base_policy(base: Any, over: dict[str, Any], seed: int) -> None:
    sc = _sc(base, over)
    o = Oracle(sc)
    got = run_policy(o, sc, seed)
    assert got["n_completed"] + got["n_rejected"] == got["n_requests"]
    for name in DEFAULT_BASES:
        assert _n_ok(got) >= _n_ok(run_policy(name, sc, seed)), name
    # every (candidate, base) slot is rolled out (perhaps stopped by the bound) or reused from the last decision
    assert o.stats["n_rollouts"] + o.stats["n_reused"] == o.stats["n_candidates"] * len(DEFAULT_BASES)


def test_the_best_rollout_value_never_decreases_and_is_the_final_result() -> None:
    """Exact rollouts: after taking the best action, the best rollout from the next decision is at least as good
    (the base that achieved it is among the continuations), and the last one is the run's own result."""
    sc = _sc("bursty", {"workload": {"num_requests": 80}})
    o = Oracle(sc)
    sim = Simulator(sc, seed=4)
    o.attach(sim)
    best: list[tuple[int, int]] = []
    ctx = sim.next_decision()
    while ctx is not None:
        d = o.decide(ctx)
        if o.stats["n_searched"] > len(best):
            scores = o.last_scores()
            best.append(max(max(s) for _, s in scores))
            assert d == next(c for c, s in scores if max(s) == best[-1])  # the first candidate with the best
        sim.apply(d)
        ctx = sim.next_decision()
    final = core().objective(sim._core, sc.slo.ttft_s, sc.slo.tbt_s)
    assert len(best) > 10
    assert all(a <= b for a, b in itertools.pairwise(best))
    assert best[-1] <= final and final[0] == _n_ok(sim.summary())


def test_decide_leaves_the_simulator_unchanged() -> None:
    sc = _sc(SMALL, {})
    sim = Simulator(sc, seed=0)
    o = Oracle(sc)
    o.attach(sim)
    ctx = sim.next_decision()
    for _ in range(20):
        before = (sim.now, sim.wait_area, sim.tbt_violations, sim.n_decisions, sim._core.events_pushed)
        d = o.decide(ctx)
        assert (sim.now, sim.wait_area, sim.tbt_violations, sim.n_decisions, sim._core.events_pushed) == before
        assert o.decide(ctx) == d  # deterministic
        sim.apply(d)
        ctx = sim.next_decision()


@pytest.mark.parametrize(("prompt", "want"), [(100, "small"), (700, "mid"), (None, "mid")])
def test_candidates_are_deduplicated_by_construction(prompt: int | None, want: str) -> None:
    lengths = {} if prompt is None else {"lengths": {"kind": "fixed", "prompt_tokens": prompt, "output_tokens": 40}}
    sc = _sc("bursty", {"workload": {"num_requests": 200, **lengths}})
    sim = Simulator(sc, seed=0)
    menu = sorted(sc.deflection.chunk_menu)
    seen = {"small": False, "mid": False}
    ctx = sim.next_decision()
    while ctx is not None:
        cands = core().candidate_actions(sim._core, True)
        n_prompt = ctx.request.prompt_tokens
        assert cands[0] == (0, -1, 0) and len(set(cands)) == len(cands)
        for d, v in enumerate(ctx.decode):
            mine = [c for k, n, c in cands if k == 1 and n == d]
            if not v.can_deflect:
                assert mine == []
            elif n_prompt <= menu[0]:
                assert mine == [0]  # LargestSafe runs the prompt as one chunk like every fixed size
                seen["small"] = True
            else:
                fixed = [c for c in menu if c < n_prompt] + [c for c in menu if c >= n_prompt][:1]
                assert mine == [0, *fixed]
                seen["mid"] = seen["mid"] or any(c >= n_prompt for c in fixed)
        assert [a for a in core().candidate_actions(sim._core, False) if a[0] == 1] == \
            [(1, d, 0) for d, v in enumerate(ctx.decode) if v.can_deflect]
        sim.apply(make_policy("kairos-exact", sc, 0).decide(ctx))
        ctx = sim.next_decision()
    assert seen[want]


def test_fewer_bases_and_no_fixed_chunks_still_bound_those_bases() -> None:
    sc = _sc("bursty", {"workload": {"num_requests": 80}})
    o = Oracle(sc, bases=["no-deflect", ("sq-ls", {"queue_threshold": 2048})], fixed_chunks=False)
    got = run_policy(o, sc, 5)
    assert _n_ok(got) >= _n_ok(run_policy("sq-ls", sc, 5, queue_threshold=2048))
    assert _n_ok(got) >= _n_ok(run_policy("no-deflect", sc, 5))
    assert got["policy_params"]["bases"] == ["no-deflect", ["sq-ls", {"queue_threshold": 2048}]]
    same = Oracle(sc, bases=["sl-ls", ("sl-ls", {"length_threshold": 2048})])  # one rule, two spellings
    assert len(same.specs) == 1 and run_policy(same, sc, 5)["slo_attainment"] == run_policy(
        Oracle(sc, bases=["sl-ls"]), sc, 5)["slo_attainment"]


FAULT_SHIFT = [(n, seed) for n in (150, 200, 250) for seed in (3, 5, 8, 9)]
"""Instances with network outages early on (first outage at 2.5, 6.4, 16.5, 5.1 s; 150 requests take ~15 s)."""


@pytest.mark.parametrize(("n", "seed"), FAULT_SHIFT)
def test_an_oracle_with_pending_switch_among_its_bases_bounds_it_on_fault_shift(n: int, seed: int) -> None:
    """pending-switch's native twin (BASE_PENDING_SWITCH) as a base: the Oracle is never below the switching rule
    (fault-shift's network outages make it deflect while transfers stall)."""
    sc = _sc("fault-shift", {"workload": {"num_requests": n}})
    o = Oracle(sc, bases=["no-deflect", "pending-switch"])
    got = run_policy(o, sc, seed)
    assert _n_ok(got) >= _n_ok(run_policy("pending-switch", sc, seed))
    assert _n_ok(got) >= _n_ok(run_policy("no-deflect", sc, seed))
    assert o.stats["n_rollouts"] + o.stats["n_reused"] == o.stats["n_candidates"] * 2


def test_pending_switch_with_the_default_bases_and_its_parameters() -> None:
    sc = _sc("fault-shift", {"workload": {"num_requests": 200}})
    o = Oracle(sc, bases=[*DEFAULT_BASES, ["pending-switch", {"k": 2}]])
    assert o.specs[-1] == {"kind": core().BASE_PENDING_SWITCH, "chunk": 0, "min_pending": 2}
    got = run_policy(o, sc, 3)
    assert got["policy_params"]["bases"][-1] == ["pending-switch", {"k": 2}]
    for name, params in [*((b, {}) for b in DEFAULT_BASES), ("pending-switch", {"k": 2})]:
        assert _n_ok(got) >= _n_ok(run_policy(name, sc, 3, **params)), name
    same = Oracle(sc, bases=["pending-switch", ("pending-switch", {"k": 1, "chunk": 0})])  # one rule, two spellings
    assert len(same.specs) == 1
    with pytest.raises(ConfigError) as e:
        Oracle(sc, bases=[("pending-switch", {"k": 0})])
    assert e.value.field == "k"


def test_each_base_policy_action_is_a_candidate_whatever_the_options() -> None:
    """With fixed_chunks false a fixed-chunk base's own deflection (512 tokens) is still tried: the improvement
    property needs every base's action among the candidates."""
    sc = _sc("bursty", {"workload": {"num_requests": 80}})
    o = Oracle(sc, bases=["always-deflect"], fixed_chunks=False)
    sim = Simulator(sc, seed=2)
    o.attach(sim)
    base = make_policy("always-deflect", sc, 0)
    seen = 0
    ctx = sim.next_decision()
    while ctx is not None:
        d = o.decide(ctx)
        own = base.decide(ctx)
        if own.path == DEFLECT:  # a node can take a deflection: this decision was searched
            cands = [c for c, _ in o.last_scores()]
            if ctx.request.prompt_tokens > 512:
                assert own in cands and Decision.deflect(own.decode_node, LARGEST_SAFE) in cands
                seen += 1
        sim.apply(d)
        ctx = sim.next_decision()
    assert seen > 5
    for seed in (0, 1, 2):
        got = run_policy(Oracle(sc, bases=["always-deflect"], fixed_chunks=False), sc, seed)
        assert _n_ok(got) >= _n_ok(run_policy("always-deflect", sc, seed))


def test_needs_attach_and_its_own_pending_decision() -> None:
    o = Oracle(SMALL)
    with pytest.raises(RuntimeError, match="attach"):
        o.decide(make_ctx())
    sim = Simulator(SMALL, seed=0)
    sim.next_decision()
    o.attach(sim)
    with pytest.raises(RuntimeError, match="pending"):
        o.decide(make_ctx(rid=12345))


def test_a_non_simulator_another_scenario_and_unsupported_scenarios_are_refused() -> None:
    o = Oracle(SMALL)
    with pytest.raises(ConfigError, match="rolls out inside its core"):
        o.attach(object())
    with pytest.raises(ConfigError, match="scenario"):
        o.attach(Simulator("small", seed=0))
    sc = load_scenario(SMALL)
    for over, field in (({"information": {"track": "realistic"}}, "information.track"),
                        ({"deflection": {"decision_points": "arrival+pull"}}, "deflection.decision_points"),
                        ({"metrics": {"mode": "streaming"}}, "metrics.mode")):
        with pytest.raises(ConfigError) as e:
            Oracle(sc.with_overrides(over))
        assert e.value.field == field


@pytest.mark.parametrize("bases", [[], "no-deflect", ["kairos"], ["ppo"], ["no-deflect", "no-deflect"],
                                   [("sq-ls", 3)], [["sq-ls", {"bogus": 1}]]])
def test_bad_bases_are_refused(bases: Any) -> None:
    with pytest.raises(ConfigError, match=r"bases|bogus|staleness"):
        Oracle(SMALL, bases=bases)
    with pytest.raises(ConfigError, match="fixed_chunks"):
        Oracle(SMALL, fixed_chunks=1)


def test_registered_with_its_parameters() -> None:
    assert policy_params("oracle") == ["bases", "fixed_chunks", "threads", "exhaustive", "reference"]
    o = make_policy("oracle", "small", 0)
    assert isinstance(o, Oracle) and o.describe()["bases"] == list(DEFAULT_BASES)
    s = run_policy("oracle", SMALL, 1)
    assert s["policy"] == "oracle" and s["n_completed"] + s["n_rejected"] == 60
