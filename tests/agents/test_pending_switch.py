"""The ``pending-switch`` policy (agents/baselines.py PendingSwitch): its parameters are checked before any run
(``k`` a whole number of requests from 1 to MAX_PENDING, ``chunk`` as SQ's), it deflects exactly when the decode
nodes' pending admissions sum to at least ``k`` (to the least-loaded node that can take one, at every decision
kind), and on fault-shift it is kairos_gym/benchmark/checks/fault_switch.py's PendingSwitch, request for request."""

from __future__ import annotations

import importlib
from typing import Any

import numpy as np
import pytest
from kairos_gym.agents import POLICIES, PendingSwitch, make_policy, policy_params
from kairos_gym.agents.baselines import MAX_PENDING
from kairos_gym.agents.runner import simulate

from kairos_gym.errors import ConfigError
from kairos_gym.scenario import load_scenario
from kairos_gym.sim.hook import DEFLECT, LARGEST_SAFE, PREFILL, PULL, REENTRY, DecodeNodeView
from tests.agents.ctx_helpers import SCENARIO, decode_view, make_ctx
from tests.fixtures import run_digest


def _node(pending: int, batch: int = 8, can: bool | None = None, in_flight: bool = False) -> DecodeNodeView:
    return decode_view(batch=batch, can=can, in_flight=in_flight)._replace(pending_admissions=pending)


def test_registered_with_k_and_chunk() -> None:
    assert POLICIES["pending-switch"] is PendingSwitch
    assert policy_params("pending-switch") == ["k", "chunk"]
    p = make_policy("pending-switch", SCENARIO, seed=0)
    assert (p.k, p.chunk) == (1, LARGEST_SAFE)
    assert p.describe() == {"policy": "pending-switch", "seed": 0, "k": 1, "chunk": 0}
    q = make_policy("pending-switch", SCENARIO, seed=0, k=np.int64(3), chunk=256)
    assert (q.k, q.chunk) == (3, 256) and type(q.k) is int
    assert make_policy("pending-switch", SCENARIO, k=MAX_PENDING).k == MAX_PENDING


@pytest.mark.parametrize("k", [0, -1, True, False, 1.5, 2.0, "2", None, 10**7, MAX_PENDING + 1])
def test_a_bad_k_is_one_config_error_naming_k(k: Any) -> None:
    with pytest.raises(ConfigError) as e:
        make_policy("pending-switch", SCENARIO, k=k)
    assert e.value.field == "k" and e.value.where == "policy pending-switch" and "1,000,000" in e.value.allowed


@pytest.mark.parametrize("chunk", [-1, True, 300, 1.5, "512"])
def test_a_bad_chunk_is_refused_like_sqs(chunk: Any) -> None:
    with pytest.raises(ConfigError) as e:
        make_policy("pending-switch", SCENARIO, chunk=chunk)
    assert e.value.field == "chunk"
    p = PendingSwitch(chunk=4096)  # no scenario: checked against the context's menu when it deflects
    assert p.decide(make_ctx(decode=(_node(0), _node(0)))).path == PREFILL
    with pytest.raises(ConfigError, match="chunk"):
        p.decide(make_ctx(decode=(_node(1), _node(0))))


@pytest.mark.parametrize("k", [1, 2, 5])
def test_deflects_exactly_when_the_pending_admissions_reach_k(k: int) -> None:
    p = PendingSwitch(SCENARIO, k=k, chunk=512)
    for a in range(k + 2):
        for b in range(3):
            d = p.decide(make_ctx(decode=(_node(a, batch=9), _node(b, batch=4))))
            if a + b >= k:
                assert (d.path, d.decode_node, d.chunk) == (DEFLECT, 1, 512)  # the smaller batch
            else:
                assert d.path == PREFILL and d.prefill_node is None
    # no node can take a deflection: the prefill path, however many admissions are pending
    full = make_ctx(decode=(_node(k, can=False), _node(k, in_flight=True)))
    assert p.decide(full).path == PREFILL


def test_decides_the_same_way_at_pull_and_reentry_decisions() -> None:
    """Like SQ and SL: the rule does not look at the decision kind (at a pull only the freed node can take it)."""
    p = PendingSwitch(SCENARIO, k=2)
    pull = make_ctx(decode=(_node(2, can=False), _node(0, batch=20)))._replace(kind=PULL, pull_node=1)
    d = p.decide(pull)
    assert (d.path, d.decode_node, d.chunk) == (DEFLECT, 1, LARGEST_SAFE)
    assert p.decide(pull._replace(decode=(_node(1, can=False), _node(0, batch=20)))).path == PREFILL
    reentry = make_ctx(decode=(_node(1), _node(1)))._replace(kind=REENTRY, emitted_tokens=40)
    assert p.decide(reentry).path == DEFLECT


@pytest.mark.parametrize("k", [1, 2, 8])
def test_it_is_the_fault_switch_tools_pending_switch_on_fault_shift(k: int) -> None:
    """fault-shift has faults.reentry: prefill, so only arrivals are decided: the registered policy (which decides
    at every kind) and the tool's (arrivals only) make the same decisions, and the runs are byte-identical."""
    tool = importlib.import_module("kairos_gym.benchmark.checks.fault_switch")
    sc = load_scenario("fault-shift").with_overrides({"workload": {"num_requests": 300}})
    for seed in (3, 5):  # seeds whose network outages start early (2.5 s, 6.4 s): several within 300 requests
        ours, sim = simulate("pending-switch", sc, seed, k=k)
        theirs, tsim = simulate(tool.PendingSwitch(k), sc, seed)
        assert run_digest(sim) == run_digest(tsim), (k, seed)
        assert ours["slo_attainment"] == theirs["slo_attainment"]
        assert 0.0 < ours["deflection_rate"] < 1.0  # it switched both ways
