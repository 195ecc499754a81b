"""Issue 11 steps 4-5 on the native engine: the lazy DecisionContext over the core's menu buffers, the C++ run
loop, and the native env step (observation, mask and reward terms written by one native call)."""

from __future__ import annotations

import copy
import pickle

import numpy as np
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


def test_lazy_context_of_an_abandoned_branch_is_stale_after_restore():
    """Snapshot at decision k, run to k+3 (context B), restore, take another branch to k+3 (context C): B must not
    read C's buffers (same decision count, other state); the snapshot's own context stays readable."""
    nat = NativeSimulator("small", seed=2)
    first = nat.next_decision()
    snap = nat.snapshot()
    for _ in range(3):
        nat.apply(Decision.prefill_path())
        b = nat.next_decision()
    nat.restore(snap)
    assert nat.next_decision().prefill == first.prefill  # the restored decision, readable
    for _ in range(3):
        ctx = nat.next_decision()
        nat.apply(Decision.deflect(0, 0) if ctx.decode[0].can_deflect else Decision.prefill_path())
        nat.next_decision()
    with pytest.raises(StaleContextError):
        _ = b.decode


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


# ---------------------------------------------------------------------------------------------- the native env step
def _envs(monkeypatch: pytest.MonkeyPatch, **kwargs):
    from kairos_gym.env.core import KairosEnv

    monkeypatch.setenv("KAIROS_ENGINE", "python")
    py = KairosEnv(**kwargs)
    monkeypatch.setenv("KAIROS_ENGINE", "native")
    nat = KairosEnv(**kwargs)
    assert py._native is None and nat._native is not None  # the native env step is what runs
    return py, nat


def _same(x, y) -> bool:
    """Equal bit for bit: arrays by dtype and bytes, floats by repr, dicts and tuples element-wise."""
    if isinstance(x, np.ndarray):
        return isinstance(y, np.ndarray) and x.dtype == y.dtype and x.shape == y.shape and x.tobytes() == y.tobytes()
    if isinstance(x, dict):
        return isinstance(y, dict) and x.keys() == y.keys() and all(_same(x[k], y[k]) for k in x)
    if isinstance(x, (tuple, list)):
        return type(x) is type(y) and len(x) == len(y) and all(_same(u, v) for u, v in zip(x, y, strict=True))
    if isinstance(x, float):
        return type(y) is float and repr(x) == repr(y)
    return type(x) is type(y) and x == y


@pytest.mark.parametrize("kwargs", [
    {"scenario": "small"},
    {"scenario": "bursty", "workload": {"max_requests": 300}},
    {"scenario": "small", "oracle": True, "obs_mode": "dict", "reward": "slo"},
    {"scenario": "small", "reward": "goodput", "max_decisions": 40, "deflection": {"largest_safe_action": True}},
    {"scenario": "kv-pressure", "workload": {"max_requests": 200}, "tbt_penalty": 0.3,
     "cluster": {"swap_order": "lifo"}},  # lifo: the Python engine's order (fifo is native-only, issue 14)
])
def test_native_env_step_is_the_python_env_step_bit_for_bit(monkeypatch, kwargs):
    """Observations (float32 bytes), masks, rewards, flags and infos of whole episodes with random actions
    (masked and unmasked: refused deflections included) equal the Python env's on the Python engine."""
    py, nat = _envs(monkeypatch, **kwargs)
    rng = np.random.default_rng(7)
    for ep in range(2):
        a, b = py.reset(seed=ep), nat.reset(seed=ep)
        assert _same(a, b)
        done = False
        n = 0
        while not done:
            mask = a[-1]["action_mask"]
            act = int(rng.integers(py.action_space.n)) if n % 3 == 0 else int(rng.choice(np.flatnonzero(mask)))
            a, b = py.step(act), nat.step(act)
            assert all(_same(x, y) for x, y in zip(a, b, strict=True)), (ep, n)
            assert _same(py.action_masks(), nat.action_masks())
            done = a[2] or a[3]
            n += 1
        assert n > 10


def test_native_env_decision_context_and_returned_arrays_are_current(monkeypatch):
    """decision_context after native steps is the pending decision's (never an earlier lazy context the core
    has moved past), and returned observations/masks are copies (a later step does not change them)."""
    py, nat = _envs(monkeypatch, scenario="small")
    py.reset(seed=1)
    nat.reset(seed=1)
    kept = []
    for i in range(25):
        act = 1 if i % 4 == 0 else 0
        kept.append((py.step(act), nat.step(act)))
        assert nat.decision_context == py.decision_context
        assert isinstance(nat.decision_context, LazyDecisionContext)
    for a, b in kept:
        assert _same(a[0], b[0]) and _same(a[4]["action_mask"], b[4]["action_mask"])


def test_native_env_step_refuses_what_the_python_env_refuses(monkeypatch):
    """A bad action raises the same ConfigError before anything moves; a step after the end raises."""
    from kairos_gym.errors import ConfigError

    py, nat = _envs(monkeypatch, scenario="small", workload={"max_requests": 5})
    for env in (py, nat):
        env.reset(seed=0)
        t = env.sim.now
        for bad in (-1, env.action_space.n, 1.5, "0"):
            with pytest.raises(ConfigError) as e:
                env.step(bad)
            assert "KairosEnv.step" in str(e.value)
        assert env.sim.now == t
        while not env.step(0)[2]:
            pass
        with pytest.raises(RuntimeError, match="no pending decision"):
            env.step(0)
        assert env.decision_context is None
