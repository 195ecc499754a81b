"""The event heap (src/core/event_queue.hpp) against a heapq of (t, seq, kind, a, b) tuples (:class:`PyQueue`):
the same pops, the same heap layout, on random sequences; and the engine's own sequence of events against the
recorded one (tests/golden/engine_traces.json)."""

from __future__ import annotations

import heapq
import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kairos_gym import compiled
from tests.core.engine_trace import TRACE_POLICIES, run_scenario, same_tuple
from tests.golden.engine_cases import digest, recorded

core = compiled.core()

# few distinct times, so ties (-0.0 against 0.0 too) are common; then any non-NaN time
TIMES = st.one_of(st.sampled_from([0.0, -0.0, 0.5, 1.0, 1.0 + 2.0**-52, 3.25, 1e-300, math.inf]),
                  st.floats(allow_nan=False))
PUSH = st.tuples(st.just("push"), TIMES, st.integers(-128, 127), st.integers(-2**31, 2**31 - 1),
                 st.integers(-2**63, 2**63 - 1))
OPS = st.lists(st.one_of(PUSH, st.just(("pop",))), max_size=300)


class PyQueue:
    """The model of the queue: ``heapq`` pushes of (t, seq, kind, a, b) and pops in (time, sequence) order."""

    def __init__(self) -> None:
        self.seq = 0
        self.events: list[tuple[float, int, int, int, int]] = []

    def push(self, t: float, kind: int, a: int, b: int) -> None:
        self.seq += 1
        heapq.heappush(self.events, (t, self.seq, kind, a, b))

    def pop(self) -> tuple[float, int, int, int, int]:
        return heapq.heappop(self.events)


def assert_same_queue(py: PyQueue, nat) -> None:
    assert len(nat) == len(py.events) and nat.seq == py.seq
    items = nat.items()
    assert all(same_tuple(x, y) for x, y in zip(items, py.events, strict=True)), "heap layout differs from heapq's"


@settings(max_examples=300, deadline=None)
@given(OPS)
def test_random_pushes_and_pops_match_heapq(ops):
    py, nat = PyQueue(), core.EventQueue()
    for op in ops:
        if op[0] == "push":
            py.push(*op[1:])
            nat.push(*op[1:])
        elif py.events:
            assert same_tuple(nat.pop(), py.pop())
        else:
            with pytest.raises(IndexError):
                nat.pop()
        assert_same_queue(py, nat)
        if py.events:
            assert same_tuple(nat.top(), py.events[0])
    while py.events:  # drain: the full pop order
        assert same_tuple(nat.pop(), py.pop())
    assert len(nat) == 0


def replay_arrays(ops: list[tuple]) -> tuple[np.ndarray, ...]:
    """ops as the arrays of replay_event_queue (a pop only where the queue is not empty)."""
    n = len(ops)
    code = np.zeros(n, np.int8)
    t, kind = np.zeros(n), np.zeros(n, np.int8)
    a, b = np.zeros(n, np.int32), np.zeros(n, np.int64)
    for i, op in enumerate(ops):
        if op[0] == "push":
            t[i], kind[i], a[i], b[i] = op[1:]
        else:
            code[i] = 1
    return code, t, kind, a, b


@settings(max_examples=200, deadline=None)
@given(OPS)
def test_replay_pops_match_heapq(ops):
    py, kept, size = PyQueue(), [], 0
    popped = []
    for op in ops:  # keep the pops of a non-empty queue only
        if op[0] == "push":
            size += 1
        elif size == 0:
            continue
        else:
            size -= 1
        kept.append(op)
    for op in kept:
        if op[0] == "push":
            py.push(*op[1:])
        else:
            popped.append(py.pop())
    q = core.EventQueue()
    pt, ps, pk, pa, pb = core.replay_event_queue(q, *replay_arrays(kept))
    assert pt.dtype == np.float64 and ps.dtype == np.int64 and pk.dtype == np.int8
    assert pa.dtype == np.int32 and pb.dtype == np.int64
    got = [(float(pt[i]), int(ps[i]), int(pk[i]), int(pa[i]), int(pb[i])) for i in range(pt.size)]
    assert len(got) == len(popped) and all(same_tuple(x, y) for x, y in zip(got, popped, strict=True))
    assert_same_queue(py, q)


def test_ties_go_by_push_order_and_negative_zero_ties_with_zero():
    q = core.EventQueue()
    for t, a in [(1.0, 0), (0.0, 1), (-0.0, 2), (1.0, 3), (0.0, 4)]:
        q.push(t, 0, a, 0)
    assert [q.pop()[3] for _ in range(5)] == [1, 2, 4, 0, 3]


def test_nan_time_is_refused_and_leaves_the_queue_unchanged():
    q = core.EventQueue()
    q.push(1.0, 1, 2, 3)
    with pytest.raises(ValueError, match="NaN"):
        q.push(math.nan, 0, 0, 0)
    assert len(q) == 1 and q.seq == 1 and q.items() == [(1.0, 1, 1, 2, 3)]


def test_replay_refuses_an_unknown_op_and_a_pop_of_an_empty_queue():
    z = np.zeros(1)
    zi8, zi32, zi64 = np.zeros(1, np.int8), np.zeros(1, np.int32), np.zeros(1, np.int64)
    with pytest.raises(ValueError, match="op code"):
        core.replay_event_queue(core.EventQueue(), np.array([2], np.int8), z, zi8, zi32, zi64)
    with pytest.raises(IndexError, match="empty"):
        core.replay_event_queue(core.EventQueue(), np.array([1], np.int8), z, zi8, zi32, zi64)
    with pytest.raises(ValueError, match="length"):
        core.replay_event_queue(core.EventQueue(), zi8, np.zeros(2), zi8, zi32, zi64)
    with pytest.raises(TypeError):  # no silent dtype conversion
        core.replay_event_queue(core.EventQueue(), zi8, z, zi8, zi64, zi64)


@pytest.mark.parametrize("policy", sorted(TRACE_POLICIES))
def test_the_engines_event_sequence_is_the_recorded_one(policy):
    """The engine's own events on the trace scenario pop once each, in time order, and are the recorded sequence
    (its trace digest in tests/golden/engine_traces.json)."""
    sim = run_scenario(policy)
    tr = sim.trace
    assert len(tr) == sim._seq > 1000 and not sim._events  # every pushed event popped once
    assert all(a[0] <= b[0] for a, b in itertools.pairwise(tr))
    want = recorded(f"trace-scenario/{policy}")
    assert len(tr) == want["events"] and digest(repr(tr)) == want["trace"]
