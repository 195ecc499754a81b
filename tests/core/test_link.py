"""The native fair-share link (src/core/link.cpp) against FairShareLink (kairos_gym/latency/transfer.py):
bit-identical remaining bytes, completion times and ids, the same insertion order, versions and errors, on
random operation sequences; and the engine's transfers against the recorded ones."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kairos_gym import compiled
from kairos_gym.latency.transfer import FairShareLink
from tests.core.engine_trace import TRACE_POLICIES, make_sim, run_scenario, same_float, same_tuple
from tests.golden.engine_cases import recorded, run_digests

core = compiled.core()

ADVANCE, ADD, REMOVE, NEXT = 0, 1, 2, 3
BANDWIDTHS = st.sampled_from([1.0, 3.0, 1e9, 17.5e9, 2e9 / 3]) | st.floats(1e-3, 1e12)
# time steps: zero (ties), backwards (advance keeps the later time), forwards
STEPS = st.sampled_from([0.0, -0.25, 1e-9, 0.5]) | st.floats(0.0, 10.0)
NBYTES = st.sampled_from([0, 1, 3, 1e9, 2**53 + 1]) | st.floats(0.0, 1e12) | st.integers(0, 10**12)
OP = st.one_of(
    st.tuples(st.just(ADVANCE), st.just(0), st.just(0.0), STEPS),
    st.tuples(st.just(ADD), st.integers(0, 6), NBYTES, STEPS),  # few ids: re-adds and unknown removals happen
    st.tuples(st.just(REMOVE), st.integers(0, 6), st.just(0.0), STEPS),
    st.tuples(st.just(NEXT), st.just(0), st.just(0.0), st.just(0.0)),
)


def same_state(py: FairShareLink, nat) -> bool:
    last, rem, version = py.state()
    nlast, nrem, nversion = nat.state()
    return (same_float(last, nlast) and version == nversion and list(rem) == list(nrem)  # insertion order
            and all(same_float(rem[k], nrem[k]) for k in rem) and len(nat) == len(py))


def same_completion(x, y) -> bool:
    return (x is None and y is None) or (x is not None and y is not None and same_tuple(tuple(x), tuple(y)))


@settings(max_examples=400, deadline=None)
@given(BANDWIDTHS, st.lists(OP, max_size=120))
def test_random_operations_match_python(bw, ops):
    py, nat = FairShareLink(bw), core.FairShareLink(bw)
    now = 0.0
    for code, tid, nbytes, step in ops:
        now += step
        if code == ADVANCE:
            py.advance(now)
            nat.advance(now)
        elif code == ADD:
            py.add(tid, nbytes, now)
            nat.add(tid, nbytes, now)
        elif code == REMOVE:
            if tid in py.state()[1]:
                py.remove(tid, now)
                nat.remove(tid, now)
            else:  # both advance, then raise KeyError with the version unchanged
                with pytest.raises(KeyError):
                    py.remove(tid, now)
                with pytest.raises(KeyError):
                    nat.remove(tid, now)
        assert same_state(py, nat)
        assert same_completion(py.next_completion(), nat.next_completion())
        assert nat.version == py.version


def replay_python(link: FairShareLink, ops) -> tuple[np.ndarray, np.ndarray]:
    """The Python class run through the same op codes as replay_link."""
    out_t, out_tid = np.full(len(ops), math.nan), np.full(len(ops), -1, np.int64)
    for i, (code, tid, nbytes, now) in enumerate(ops):
        if code == ADVANCE:
            link.advance(now)
        elif code == ADD:
            link.add(tid, nbytes, now)
        elif code == REMOVE:
            link.remove(tid, now)
        else:
            nxt = link.next_completion()
            if nxt is not None:
                out_t[i], out_tid[i] = nxt
    return out_t, out_tid


def as_arrays(ops) -> tuple[np.ndarray, ...]:
    return (np.array([o[0] for o in ops], np.int8), np.array([o[1] for o in ops], np.int64),
            np.array([float(o[2]) for o in ops]), np.array([o[3] for o in ops], np.float64))


@settings(max_examples=200, deadline=None)
@given(BANDWIDTHS, st.lists(OP, max_size=200))
def test_replay_matches_python(bw, raw):
    ops, now, present = [], 0.0, set()
    for code, tid, nbytes, step in raw:  # keep the removals of present ids (an unknown one raises)
        now += step
        if code == REMOVE and tid not in present:
            continue
        if code == ADD:
            present.add(tid)
        elif code == REMOVE:
            present.discard(tid)
        ops.append((code, tid, float(nbytes), now))
    py, nat = FairShareLink(bw), core.FairShareLink(bw)
    want_t, want_tid = replay_python(py, ops)
    got_t, got_tid = core.replay_link(nat, *as_arrays(ops))
    assert got_t.dtype == np.float64 and got_tid.dtype == np.int64
    assert np.array_equal(got_t.view(np.int64), want_t.view(np.int64))  # bit for bit (NaN where no result)
    assert np.array_equal(got_tid, want_tid)
    assert same_state(py, nat)


def test_replay_errors():
    z, zi = np.zeros(1), np.zeros(1, np.int64)
    link = core.FairShareLink(1e9)
    with pytest.raises(KeyError):
        core.replay_link(link, np.array([REMOVE], np.int8), zi, z, z)
    with pytest.raises(ValueError, match="op code"):
        core.replay_link(link, np.array([7], np.int8), zi, z, z)
    with pytest.raises(ValueError, match="length"):
        core.replay_link(link, np.zeros(2, np.int8), zi, z, z)
    with pytest.raises(TypeError):  # no silent dtype conversion
        core.replay_link(link, np.zeros(1, np.int8), z, z, z)


def test_readding_a_present_id_keeps_its_place():
    py, nat = FairShareLink(1e9), core.FairShareLink(1e9)
    for link in (py, nat):
        link.add(5, 1e9, 0.0)
        link.add(2, 2e9, 0.0)
        link.add(5, 3e9, 0.25)
    assert list(nat.state()[1].items()) == list(py.state()[1].items()) == [(5, 3e9), (2, 2e9 - 0.125e9)]
    assert nat.version == py.version == 3


@pytest.mark.parametrize("bw", [0.0, -1.0, math.inf, math.nan])
def test_bandwidth_must_be_finite_and_positive(bw):
    with pytest.raises(ValueError, match="bandwidth"):
        core.FairShareLink(bw)


def test_set_state_restores_python_states():
    py = FairShareLink(2e9)
    py.add(3, 1e9, 0.0)
    py.add(1, 5e8, 0.1)
    nat = core.FairShareLink(2e9)
    nat.set_state(py.state())
    assert same_state(py, nat)
    py.remove(1, 0.4)
    nat.remove(1, 0.4)
    assert same_state(py, nat) and same_completion(py.next_completion(), nat.next_completion())
    with pytest.raises(ValueError):
        nat.set_state((0.0, {}, 0, 1))


@pytest.mark.parametrize("policy", sorted(TRACE_POLICIES))
def test_the_engines_transfers_share_the_link_as_recorded(policy):
    """The engine's transfers on the trace scenario (a slow link): many overlap on a prefill node's link
    (the fair share is exercised), and their times and the event sequence are the recorded ones (the
    per-request columns and trace digests, recorded in tests/golden/engine_traces.json)."""
    sim = run_scenario(policy)
    moved = np.flatnonzero(np.asarray(sim.kv_moved) > 0)
    assert moved.size > 100
    start, end, node = (np.asarray(getattr(sim, k))[moved] for k in ("xfer_start", "xfer_end", "p_node"))
    idx = np.arange(moved.size)
    shared = sum(int(((node == node[i]) & (idx != i) & (start <= start[i]) & (end > start[i])).any())
                 for i in range(moved.size))
    assert shared > 100  # transfers that start while another is in flight on the same link
    assert {e[1] for e in sim.trace} >= {2, 3}  # set-up and transfer completions
    want = recorded(f"trace-scenario/{policy}")
    got = run_digests(make_sim(), TRACE_POLICIES[policy]())
    assert (got["columns"], got["trace"]) == (want["columns"], want["trace"])
