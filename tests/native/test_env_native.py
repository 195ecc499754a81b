"""Issue 11 steps 4-5 on the native engine: the lazy DecisionContext over the core's menu buffers, the C++ run
loop, and the native env step (observation, mask and reward terms written by one native call)."""

from __future__ import annotations

import copy
import pickle

import pytest

from kairos_gym.sim import Decision
from kairos_gym.sim.engine import Simulator as PySimulator
from kairos_gym.sim.hook import DecisionContext, LazyDecisionContext, StaleContextError
from kairos_gym.sim.native_engine import NativeSimulator


def _policy(i: int, ctx: DecisionContext) -> Decision:
    """A fixed mix of prefill paths and deflections (some refused), driven only by the step number."""
    k = i % 5
    if k < 2:
        return Decision.prefill_path(None if k == 0 else i % 2)
    return Decision.deflect(i % 2, ctx.chunk_menu[i % len(ctx.chunk_menu)] if k < 4 else 0)


def test_lazy_context_equals_the_python_engines_context_field_by_field():
    """Every field of the native lazy context equals (==, and the same types) the Python engine's eager one."""
    py, nat = PySimulator("small", seed=3), NativeSimulator("small", seed=3)
    for i in range(150):
        a, b = py.next_decision(), nat.next_decision()
        if a is None:
            assert b is None
            break
        assert isinstance(b, LazyDecisionContext) and isinstance(b, DecisionContext)
        for f in DecisionContext._fields:
            x, y = getattr(a, f), getattr(b, f)
            assert x == y and type(x) is type(y), f
        d = _policy(i, a)
        assert py.apply(d) == nat.apply(d)


def test_lazy_context_is_tuple_like_and_materializes():
    """Same length, indexing, iteration, equality, hash, _asdict/_replace, pickling and copying as the NamedTuple."""
    py, nat = PySimulator("small", seed=1), NativeSimulator("small", seed=1)
    a, b = py.next_decision(), nat.next_decision()
    assert len(b) == len(a) == 14 and b._fields == a._fields
    assert b[0] == a[0] and b[-1] == a[-1] and b[2:5] == a[2:5] and list(b) == list(a)
    assert b == a and a == b and hash(b) == hash(a) and repr(b) == repr(a)
    assert b._asdict() == a._asdict() and b._replace(beta=2.0) == a._replace(beta=2.0)
    m = b.materialize()
    assert type(m) is DecisionContext and m == a
    for c in (pickle.loads(pickle.dumps(b)), copy.copy(b), copy.deepcopy(b)):
        assert type(c) is DecisionContext and c == a
    with pytest.raises(AttributeError):
        b.now_s = 1.0  # type: ignore[misc]


def test_lazy_context_readable_after_apply_and_stale_after_the_next_decision():
    """apply() leaves the buffers alone (a field read after it is this decision's); after the next decision a
    field already read keeps its value, one read for the first time raises StaleContextError."""
    py, nat = PySimulator("small", seed=2), NativeSimulator("small", seed=2)
    a, b = py.next_decision(), nat.next_decision()
    dec_a = a.decode
    assert b.decode == dec_a  # read (and cached) before apply
    py.apply(Decision.prefill_path())
    nat.apply(Decision.prefill_path())
    assert b.step_s == a.step_s  # first read after apply, before the next decision: still this decision's
    py.next_decision()
    nat.next_decision()
    assert b.decode == dec_a and b.step_s == a.step_s  # cached: safe for good
    with pytest.raises(StaleContextError, match="ttft_prefill_s"):
        _ = b.ttft_prefill_s
    with pytest.raises(StaleContextError):
        b.materialize()


def test_lazy_context_of_an_earlier_episode_is_stale_after_reset():
    nat = NativeSimulator("small", seed=2)
    b = nat.next_decision()
    nat.reset(2)
    assert nat.next_decision() is not None
    with pytest.raises(StaleContextError):
        _ = b.prefill


def test_run_asks_the_policy_once_per_decision_and_matches_the_python_engine():
    """run(policy) (the native run loop) gives the Python engine's summary and calls decide once per decision,
    also when a decision was already pending (next_decision() called before run)."""

    class Mixed:
        def __init__(self) -> None:
            self.calls = 0

        def decide(self, ctx: DecisionContext) -> Decision:
            d = _policy(self.calls, ctx)
            self.calls += 1
            return d

    out = []
    for sim in (PySimulator("small", seed=4), NativeSimulator("small", seed=4)):
        sim.next_decision()
        pol = Mixed()
        s = sim.run(pol)
        s.pop("wall_time_s")
        out.append((s, pol.calls, sim.n_decisions))
    assert out[0] == out[1] and out[0][1] == out[0][2] > 0
