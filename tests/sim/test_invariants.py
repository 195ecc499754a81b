"""Invariant catalogue of the simulator, one test per invariant (named after it)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from kairos_gym.scenario import ScenarioConfig
from kairos_gym.sim import Simulator
from tests.sim.conftest import SMALL, DeflectAll, NoDeflect

POLICIES = [NoDeflect(), DeflectAll(512), DeflectAll(0), DeflectAll(2048)]
IDS = ["no-deflect", "deflect-512", "deflect-largest-safe", "deflect-2048"]


def _run(policy, scenario=SMALL, seed=0, **kw):
    sim = Simulator(scenario, seed=seed, **kw)
    summary = sim.run(policy)
    return sim, summary


@pytest.mark.parametrize("policy", POLICIES, ids=IDS)
def test_request_conservation(policy):
    sim, s = _run(policy)
    assert s["n_completed"] + s["n_rejected"] == sim.n
    fin = np.asarray(sim.finish)
    assert np.isfinite(fin).sum() == s["n_completed"]
    assert sim.n_finished == s["n_completed"]  # each finished exactly once


@pytest.mark.parametrize("policy", POLICIES, ids=IDS)
def test_causality_arrival_first_token_finish(policy):
    sim, _ = _run(policy)
    arr, first, fin = (np.asarray(x) for x in (sim.arrival, sim.first_token, sim.finish))
    assert (arr <= first + 1e-12).all() and (first <= fin + 1e-12).all()


@pytest.mark.parametrize("policy", POLICIES, ids=IDS)
def test_kv_memory_conservation(policy):
    sim = Simulator(SMALL, seed=1)
    ctx = sim.next_decision()
    peak = 0
    while ctx is not None:
        sim.apply(policy.decide(ctx))
        for d in sim.dnodes:
            assert 0 <= d.kv_reserved <= d.kv_capacity
            peak = max(peak, d.kv_reserved)
        ctx = sim.next_decision()
    assert peak > 0
    assert all(d.kv_reserved == 0 for d in sim.dnodes)
    assert all(len(d.batch) == 0 and not d.pending and d.defl is None for d in sim.dnodes)


def test_kv_memory_never_above_capacity_when_tight():
    # a decode node that holds only a few requests: admission waits for memory, never overflows
    sc = ScenarioConfig.from_dict({**SMALL, "cluster": {"kv_reserve_frac": 0.0, "overlong": "reject"}})
    sim = Simulator(sc, seed=0, kv_capacity=6_000)
    assert all(d.kv_capacity == 6_000 for d in sim.dnodes)
    ctx = sim.next_decision()
    while ctx is not None:
        sim.apply(NoDeflect().decide(ctx))
        assert all(d.kv_reserved <= d.kv_capacity for d in sim.dnodes)
        ctx = sim.next_decision()
    s = sim.summary()
    assert s["n_completed"] + s["n_rejected"] == sim.n
    assert s["n_rejected"] > 0  # prompts + outputs above 6k tokens are rejected by the explicit rule


def test_monotone_clock():
    sim = Simulator(SMALL, seed=2)
    last = -1.0
    ctx = sim.next_decision()
    policy = DeflectAll(256)
    while ctx is not None:
        assert ctx.now_s >= last
        last = ctx.now_s
        sim.apply(policy.decide(ctx))
        ctx = sim.next_decision()
    assert sim.now >= last


def test_clock_guard_raises():
    sim = Simulator(SMALL, seed=0)
    for _ in range(5):
        sim.apply(NoDeflect().decide(sim.next_decision()))
    assert sim.now > 0
    sim.debug_push_event(sim.now / 2, 1, 0, 0)  # an event in the past (any kind: the guard runs before dispatch)
    with pytest.raises(RuntimeError, match="backwards"):
        sim.next_decision()


@pytest.mark.parametrize("policy", POLICIES[1:], ids=IDS[1:])
def test_deflected_requests_never_transfer_kv(policy):
    sim, _ = _run(policy)
    t = sim.requests_table()
    defl = t["path"] == "deflect"
    assert defl.sum() > 0
    assert (t["kv_bytes_transferred"][defl] == 0).all()
    assert np.isnan(np.asarray(sim.xfer_start)[defl]).all()
    assert (t["kv_bytes_transferred"][t["path"] == "prefill"] > 0).any()


def test_largest_safe_keeps_steps_within_budget():
    sim, _ = _run(DeflectAll(0))
    t = sim.requests_table()
    # every deflected chunk was the largest menu size that fit, so chunk sizes are from the menu or a remainder
    for cs, p in zip(t["chunks"][t["path"] == "deflect"], t["prompt_tokens"][t["path"] == "deflect"], strict=True):
        sizes = [int(x) for x in cs.split()]
        assert sum(sizes) == p
        assert all(x in sim.menu for x in sizes[:-1])


def test_tokens_conservation():
    sim, s = _run(NoDeflect())
    out = np.asarray(sim.output)
    # every output token after the first is one token gap
    assert s["tbt_gaps"] == int((out - 1).sum())


@pytest.mark.parametrize("policy", POLICIES, ids=IDS)
def test_determinism_byte_identical(policy):
    a = _run(policy, seed=3)[1]
    b = _run(policy, seed=3)[1]
    a.pop("wall_time_s")
    b.pop("wall_time_s")
    assert json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)
    c = _run(policy, seed=4)[1]
    c.pop("wall_time_s")
    assert json.dumps(a, sort_keys=True) != json.dumps(c, sort_keys=True)


def test_snapshot_restore_reproduces():
    sim = Simulator(SMALL, seed=5)
    pol = DeflectAll(512)
    for _ in range(50):
        sim.apply(pol.decide(sim.next_decision()))
    snap = sim.snapshot()
    s1 = sim.run(pol)
    sim.restore(snap)
    s2 = sim.run(pol)
    for s in (s1, s2):
        s.pop("wall_time_s")
    assert s1 == s2


def test_refused_deflection_falls_back_and_counts():
    """A well-formed deflection the node refuses now (one in flight) takes the prefill path, counted."""
    sim = Simulator(SMALL, seed=0)
    from kairos_gym.sim import Decision

    sim.next_decision()
    assert sim.apply(Decision.deflect(0, 128)) is True and sim.n_invalid == 0
    ctx = sim.next_decision()
    assert sim.apply(Decision.deflect(0, 512)) is False  # node 0 has a deflection in flight
    assert sim.n_invalid == 1 and sim.path[ctx.request.rid] == 0  # PATH_PREFILL


def test_one_deflection_in_flight_per_node():
    sim = Simulator(SMALL, seed=0)
    from kairos_gym.sim import Decision

    ctx = sim.next_decision()
    assert sim.apply(Decision.deflect(0, 128))
    ctx = sim.next_decision()
    assert not ctx.decode[0].can_deflect and ctx.decode[0].deflection_in_flight
    assert sim.apply(Decision.deflect(0, 128)) is False


def test_apply_without_pending_decision_raises():
    sim = Simulator(SMALL, seed=0)
    from kairos_gym.sim import Decision

    with pytest.raises(RuntimeError, match="no pending decision"):
        sim.apply(Decision.prefill_path())


@pytest.mark.parametrize(("t0", "dt"), [(0.02, 0.0003), (0.02, 0.0), (0.013, 1e-7), (0.1 + 0.2, 0.01)])
def test_steps_within_matches_sum(t0, dt):
    """The decode stretch's closed form (src/core/simulator.cpp ``steps_within``): the largest j with S(j) <= x."""
    from kairos_gym import compiled

    steps_within = compiled.core().steps_within
    s = lambda n: n * t0 + dt * n * (n - 1) / 2  # noqa: E731
    for x in (0.0, 0.01, 0.02, 0.0403, 1.0, 3.7, s(7), s(40), s(123)):
        j = steps_within(t0, dt, x)
        assert j >= 0 and s(j) <= x < s(j + 1)
    assert steps_within(t0, dt, -1.0) == 0


def test_no_nan_in_summary_of_full_run():
    _, s = _run(DeflectAll(512))
    for k in ("ttft_p95", "tbt_p99", "slo_attainment", "prefill_utilization", "decode_utilization"):
        assert s[k] is not None and math.isfinite(s[k])


def test_simulator_module_has_no_gymnasium_import():
    import inspect

    import kairos_gym.sim.decision_check as check
    import kairos_gym.sim.hook as hook
    import kairos_gym.sim.metrics as met
    import kairos_gym.sim.run_workload as run_workload
    import kairos_gym.sim.simulator as eng

    for mod in (eng, hook, met, check, run_workload):
        src = inspect.getsource(mod)
        assert "import gymnasium" not in src and "from gymnasium" not in src
    assert eng.Simulator is Simulator


@pytest.mark.parametrize("includes", [True, False])
def test_wait_area_equals_total_ttft(includes):
    sc = ScenarioConfig.from_dict({**SMALL, "cluster": {"ttft_includes_transfer": includes}})
    sim, _ = _run(DeflectAll(512), scenario=sc, seed=3)
    ttft = np.nansum(sim.requests_table()["ttft_s"])
    assert math.isclose(sim.wait_area, ttft, rel_tol=1e-9)


def test_decode_batch_never_exceeds_cap():
    sc = ScenarioConfig.from_dict({**SMALL, "cluster": {"decode_max_batch": 4},
                                   "workload": {**SMALL["workload"], "arrival": {"kind": "poisson", "rate": 30}}})
    sim = Simulator(sc, seed=0)
    pol = DeflectAll(512)
    biggest = 0
    ctx = sim.next_decision()
    while ctx is not None:
        sim.apply(pol.decide(ctx))
        biggest = max(biggest, *(len(d.batch) for d in sim.dnodes))
        ctx = sim.next_decision()
    while sim._events:  # drain, checking at every event
        sim.next_decision()
        biggest = max(biggest, *(len(d.batch) for d in sim.dnodes))
    assert 0 < biggest <= 4


def test_prefill_wait_counts_running_step_once():
    sc = {"name": "w", "cluster": {"prefill_nodes": 1},
          "workload": {"arrival": {"kind": "poisson", "rate": 1.0}, "num_requests": 3,
                       "lengths": {"kind": "fixed", "prompt_tokens": 2048, "output_tokens": 4}}}
    sim = Simulator(sc, seed=0)
    from kairos_gym.workload import Workload

    wl = Workload(np.array([0.0, 0.001, 0.002]), np.array([2048, 2048, 2048]), np.array([4, 4, 4]), "hand")
    sim.reset(0, workload=wl)
    for _ in range(2):
        sim.next_decision()
        sim.apply(NoDeflect().decide(None))
    ctx = sim.next_decision()
    step = sim.model.prefill_time(2048)  # each 2048-token prompt is one full step
    want = (step - (ctx.now_s - 0.0)) + step  # rest of the first step, then the whole second
    assert math.isclose(ctx.prefill[0].predicted_wait_s, want, rel_tol=1e-9)
