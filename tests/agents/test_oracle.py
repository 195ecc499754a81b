"""Oracle: lookahead through snapshots of the attached simulator."""

from __future__ import annotations

import pytest
from kairos_gym.agents import Oracle, run_policy

from kairos_gym.sim import Simulator
from kairos_gym.sim.hook import DEFLECT, PREFILL
from tests.agents.ctx_helpers import make_ctx

SC = {"name": "o", "workload": {"arrival": {"kind": "gamma", "rate": 25, "cv": 3}, "num_requests": 80}}


def test_needs_attach():
    o = Oracle(SC)
    with pytest.raises(RuntimeError, match="attach"):
        o.decide(make_ctx())


def test_rejects_a_foreign_context():
    sim = Simulator(SC, seed=0)
    sim.next_decision()
    o = Oracle(SC, horizon_decisions=5)
    o.attach(sim)
    with pytest.raises(RuntimeError, match="pending"):
        o.decide(make_ctx(rid=12345))


def test_decide_leaves_the_simulator_unchanged_and_picks_the_best_score():
    sim = Simulator(SC, seed=0)
    o = Oracle(SC, horizon_decisions=10)
    o.attach(sim)
    ctx = sim.next_decision()
    tried = 0
    for _ in range(40):
        before = (sim.now, sim.wait_area, sim.tbt_violations, sim.n_decisions, ctx.request.rid)
        d = o.decide(ctx)
        assert (sim.now, sim.wait_area, sim.tbt_violations, sim.n_decisions, sim.next_decision().request.rid) == before
        if o.last_scores:
            tried += 1
            scores = [s for _, s in o.last_scores]
            assert o.last_scores[0][0].path == PREFILL
            assert all(opt.path == DEFLECT for opt, _ in o.last_scores[1:])
            assert d == min(o.last_scores, key=lambda x: x[1])[0] or scores.count(min(scores)) > 1
        sim.apply(d)
        ctx = sim.next_decision()
        if ctx is None:
            break
    assert tried > 0 and o.n_rollouts >= 2 * tried


def test_run_to_the_end():
    s = run_policy(Oracle(SC, horizon_decisions=10), SC, seed=1)
    assert s["policy"] == "oracle" and s["n_completed"] + s["n_rejected"] == 80
