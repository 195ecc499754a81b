"""Snapshot/restore and pickling of the simulator: a restored or unpickled simulator goes on bit for bit as the
original would, and snapshots of another kind or scenario are refused."""

from __future__ import annotations

import copy
import dataclasses
import pickle

import numpy as np
import pytest
from kairos_gym.agents.baselines import Random

from kairos_gym.errors import ConfigError
from kairos_gym.sim.hook import PREFILL, Decision
from kairos_gym.sim.simulator import Simulator, request_columns
from tests.fixtures import tiny_scenario

SC = tiny_scenario(150, name="snap", rate=25)
SWAP = {**SC, "name": "snap-swap", "cluster": {"memory_policy": "swap", "kv_block_tokens": 16,
                                                       "overlong": "reject"}}
CASES = [(SC, None), (SWAP, 6000)]
"""(scenario, kv_capacity): deflections and prefill routing; then tight swap memory (preemption, swap-in)."""


def _result(sim) -> tuple:
    """Everything a run gives, as bytes and reprs (bit for bit)."""
    s = dict(sim.summary())
    s.pop("wall_time_s")
    cols = tuple(np.asarray(getattr(sim, k)).tobytes() for k in request_columns())
    return cols, repr(sorted(s.items())), repr(sim.chunks), sim.n_preemptions, sim.swap_bytes


def _advance(sim, policy, k: int) -> None:
    for _ in range(k):
        ctx = sim.next_decision()
        if ctx is None:
            return
        sim.apply(policy.decide(ctx))


@pytest.mark.parametrize(("sc", "kv"), CASES)
def test_restore_then_run_is_bit_identical_to_a_straight_run(sc, kv):
    straight = Simulator(sc, seed=2, kv_capacity=kv)
    straight.run(Random(sc, seed=7))
    assert (straight.n_preemptions > 0) == (kv is not None)
    sim = Simulator(sc, seed=2, kv_capacity=kv)
    pol = Random(sc, seed=7)
    _advance(sim, pol, 60)
    snap = sim.snapshot()
    rng_state = pol.rng.bit_generator.state
    sim.run(Random(sc, seed=99))  # another future: the restore must undo all of it
    assert _result(sim) != _result(straight)
    for _ in range(2):  # the snapshot stays reusable
        sim.restore(snap)
        pol.rng.bit_generator.state = rng_state
        sim.run(pol)
        assert _result(sim) == _result(straight)


def test_restore_keeps_earlier_column_views_and_the_pending_context():
    sim = Simulator(SC, seed=0)
    _advance(sim, Random(SC, seed=1), 30)
    ctx = sim.next_decision()
    finish_then = sim.finish.copy()
    snap = sim.snapshot()
    view = sim.finish
    sim.run(Random(SC, seed=1))
    after = view.copy()
    sim.restore(snap)
    assert sim.next_decision() == ctx and sim.n_decisions == 30
    assert np.array_equal(sim.finish, finish_then, equal_nan=True)
    assert np.array_equal(view, after, equal_nan=True)  # a view read before the restore keeps its run's values


def test_snapshots_of_another_kind_or_scenario_are_refused():
    nat = Simulator(SC, seed=0)
    nat.next_decision()
    for bad in ({"snapshot_of": (nat.scenario, False)}, {**nat.snapshot(), "core": None}):  # not a native snapshot
        with pytest.raises(ConfigError, match=r"a dict from Simulator\.snapshot\(\)"):
            nat.restore(bad)
    other = Simulator({**SC, "slo": {"tbt_s": 0.05}}, seed=0)
    with pytest.raises(ConfigError, match="other settings differ"):
        other.restore(nat.snapshot())
    with pytest.raises(ConfigError, match="oracle True"):
        Simulator(SC, seed=0, oracle=True).restore(nat.snapshot())
    tight = Simulator(SC, seed=0, kv_capacity=50_000)
    before = tight._events
    with pytest.raises(ConfigError, match=r"KV capacity \d+ tokens.*allowed: .*KV capacity 50000"):
        tight.restore(nat.snapshot())
    assert tight._events == before and tight.n_decisions == 0  # refused before anything changed


@pytest.mark.parametrize(("sc", "kv"), CASES)
@pytest.mark.parametrize("how", ["pickle", "deepcopy", "copy"])
def test_pickled_or_copied_mid_run_goes_on_bit_identically(sc, kv, how):
    sim = Simulator(sc, seed=4, kv_capacity=kv, trace=True)
    pol = Random(sc, seed=3)
    _advance(sim, pol, 40)
    sim.next_decision()  # pending decision at the copy
    clone = {"pickle": lambda s: pickle.loads(pickle.dumps(s)), "deepcopy": copy.deepcopy,
             "copy": copy.copy}[how](sim)
    assert isinstance(clone, Simulator) and clone is not sim
    assert clone.trace == sim.trace and clone.next_decision() == sim.next_decision()
    assert clone.rng.bit_generator.state == sim.rng.bit_generator.state
    state = pol.rng.bit_generator.state
    sim.run(pol)
    pol.rng.bit_generator.state = state
    clone.run(pol)
    assert _result(clone) == _result(sim) and clone.trace == sim.trace


def test_pickle_without_a_pending_decision_and_of_a_fresh_simulator():
    sim = Simulator(SC, seed=4)
    fresh = pickle.loads(pickle.dumps(sim))
    assert fresh.n_decisions == 0 and fresh.next_decision() == sim.next_decision()
    sim.apply(Random(SC, seed=0).decide(sim.next_decision()))  # applied, next_decision not called yet
    clone = pickle.loads(pickle.dumps(sim))
    assert clone._events == sim._events and clone.now == sim.now and clone.n_decisions == 1


def test_unpickling_a_state_that_does_not_replay_is_an_error():
    sim = Simulator(SC, seed=4)
    _advance(sim, Random(SC, seed=0), 5)
    func, (state,) = sim.__reduce_ex__(4)
    bad = dict(state, log=state["log"][::-1].copy())  # the decisions out of order
    with pytest.raises(RuntimeError, match="replay diverged"):
        func(bad)
    with pytest.raises(ConfigError, match="unpickle"):
        func({"version": 0})


def test_pickle_after_a_restore_replays_the_restored_branch():
    """The decision log is part of the snapshot: a simulator pickled after a restore replays the branch it
    was restored to, not the decisions made after the snapshot."""
    sim = Simulator(SC, seed=6)
    _advance(sim, Random(SC, seed=1), 20)
    snap = sim.snapshot()
    _advance(sim, Random(SC, seed=2), 30)
    sim.restore(snap)
    assert len(sim.decision_log()) == 20
    clone = pickle.loads(pickle.dumps(sim))
    assert clone.n_decisions == 20 and clone._events == sim._events
    sim.run(Random(SC, seed=3))
    clone.run(Random(SC, seed=3))
    assert _result(clone) == _result(sim)


@pytest.mark.parametrize("field, value", [
    ("seed", 12345), ("noise_seed", 7), ("stream_loaded", 3), ("faults", [(1.0, "prefill_down", 0, 5.0)]),
])
def test_a_snapshot_changed_after_it_was_taken_is_refused(field, value):
    sim = Simulator(SC, seed=0)
    sim.next_decision()
    snap = sim.snapshot()
    with pytest.raises(ConfigError, match="changed after it was taken"):
        sim.restore({**snap, field: value})
    sim.restore(snap)  # the snapshot as taken still restores


def test_a_snapshot_with_a_changed_workload_or_generator_is_refused():
    sim = Simulator(SC, seed=0)
    sim.next_decision()
    snap = sim.snapshot()
    wl = snap["workload"]
    other = dataclasses.replace(wl, arrival_s=wl.arrival_s * 1.5)
    with pytest.raises(ConfigError, match="changed after it was taken"):
        sim.restore({**snap, "workload": other})
    rng = np.random.default_rng(99)
    with pytest.raises(ConfigError, match="changed after it was taken"):
        sim.restore({**snap, "rng": rng})
    later = Simulator(SC, seed=0)
    for _ in range(5):
        later.next_decision()
        later.apply(Decision(PREFILL))
    later.next_decision()
    with pytest.raises(ConfigError, match="changed after it was taken"):  # another moment's core copy
        sim.restore({**snap, "core": later.snapshot()["core"]})
