"""The simulator (kairos_gym.sim.simulator) beyond the golden datasets: trace diffing, resets, read-only
columns, apply's return value, refusals and introspection, each also checked against the recorded golden data
(tests/golden/engine_traces.json). The whole-run cases (random scenarios, contexts, traces) are
tests/golden/test_engine_traces.py."""

from __future__ import annotations

import numpy as np
import pytest

from kairos_gym.errors import ConfigError
from kairos_gym.scenario import ScenarioConfig
from kairos_gym.sim import Decision
from kairos_gym.sim.simulator import Simulator, first_divergence
from tests.golden.engine_cases import BAD_DECISIONS, RUNNERS, RandomDecisions, recorded, run_digests
from tests.sim.conftest import NoDeflect


def _make(scenario, **kw):
    return Simulator(scenario, **kw)


def test_first_divergence_of_two_traces():
    a_sim = Simulator("small", seed=2, trace=True)
    b_sim = Simulator("small", seed=2, trace=True)
    a_sim.run(RandomDecisions(2))
    b_sim.run(RandomDecisions(2))
    a, b = a_sim.trace, b_sim.trace
    assert len(a) > 1000 and first_divergence(a, b) is None
    c = list(b)
    t, kind, x, y, w = c[500]
    c[500] = (t, kind, x, y, float(np.nextafter(w, np.inf)))  # one ulp of the wait area
    assert first_divergence(a, c) == 500
    assert first_divergence(a, b[:-3]) == len(b) - 3
    z = list(a)
    z[0] = (-0.0, *z[0][1:]) if z[0][0] == 0.0 else (0.0, *z[0][1:])
    assert first_divergence(a, z) == 0


def test_reset_replays_and_keeps_old_views():
    nat = Simulator("small", seed=0)
    nat.run(NoDeflect())
    first = nat.first_token
    kept = first.copy()
    nat.reset(1)
    assert first.tobytes() == kept.tobytes()  # the view of the first run outlives the reset
    assert nat.first_token is not first and np.isnan(nat.first_token).all()
    assert run_digests(nat, NoDeflect()) == recorded("small/seed1/nodeflect")  # as a fresh seed-1 run


def test_columns_are_read_only():
    nat = Simulator("small", seed=0)
    nat.run(NoDeflect())
    with pytest.raises(ValueError, match="read-only"):
        nat.finish[0] = 0.0


def test_apply_returns_whether_the_deflection_was_accepted():
    """True for a prefill decision or an accepted deflection, False for a refused one (which falls back); the
    same returns, refusals and chunks as recorded."""
    sim = Simulator("small", seed=0)
    out = []
    ctx = sim.next_decision()
    for _ in range(60):
        out.append((sim.apply(Decision.deflect(0, 256)), ctx.decode[0].can_deflect))
        ctx = sim.next_decision()
    assert {a for a, _ in out} == {True, False} and all(a == b for a, b in out)
    assert RUNNERS["small/apply-returns"](None, _make, None) == recorded("small/apply-returns")


def test_swap_overlong_error_counts_whole_blocks():
    """overlong: error rounds up to whole blocks under swap, with the recorded message."""
    wl = {"arrival": {"kind": "poisson", "rate": 5}, "num_requests": 4,
          "lengths": {"kind": "fixed", "prompt_tokens": 100, "output_tokens": 10}}  # 110 tokens: 2 blocks of 64
    sc = ScenarioConfig.from_dict({"name": "t", "workload": wl,
                                   "cluster": {"memory_policy": "reserve", "kv_block_tokens": 64}})
    Simulator(sc, seed=0, kv_capacity=120)  # fits without block rounding
    sc = ScenarioConfig.from_dict({"name": "t", "workload": wl,
                                   "cluster": {"memory_policy": "swap", "kv_block_tokens": 64}})
    with pytest.raises(ConfigError, match="prompt_tokens \\+ output_tokens = 128") as e:
        Simulator(sc, seed=0, kv_capacity=120)
    assert str(e.value) == recorded("swap/overlong-error")["message"]


def test_restore_of_something_not_a_native_snapshot_is_a_config_error():
    nat = Simulator("small", seed=0)
    for bad in ({}, {"snapshot_of": (nat.scenario, False)}, None):
        with pytest.raises(ConfigError, match=r"a dict from Simulator\.snapshot\(\)"):
            nat.restore(bad)


def test_timeline_node_states_and_pending_events_are_the_recorded_ones():
    """The introspection the env's renderer and the invariant tests read (the timeline, copies of every node's
    state, the pending events in heapq's layout) at every 7th decision of a run with deflections: the Python
    engine's (recorded)."""
    got = RUNNERS["small/introspection"](None, lambda sc, **kw: Simulator(sc, **kw), None)
    assert got == recorded("small/introspection")
    nat = Simulator("small", seed=3, record_timeline=True)
    nat.run(RandomDecisions(3))
    assert len(nat.timeline) == got["timeline_len"] > 100
    assert {x[4][:5] for x in nat.timeline} == {"prefi", "decod", "chunk"}
    assert Simulator("small", seed=3).timeline == []


@pytest.mark.parametrize("i", range(len(BAD_DECISIONS)))
def test_bad_decisions_raise_the_recorded_errors(i):
    sim = Simulator("small", seed=0)
    sim.next_decision()
    with pytest.raises(ConfigError) as e:
        sim.apply(BAD_DECISIONS[i]())
    assert str(e.value) == recorded("small/bad-decisions")["messages"][i]
    assert sim._pending_rid == 0 and sim.n_decisions == 0  # the decision stays pending


def test_apply_without_a_pending_decision():
    nat = Simulator("small", seed=0)
    nat.run(NoDeflect())
    with pytest.raises(RuntimeError, match="no pending decision"):
        nat.apply(Decision.prefill_path())
