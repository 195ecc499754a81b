"""The lazy DecisionContext over the core's menu buffers, the C++ run loop, and the env step (observation, mask
and reward terms written by one C++ call), against the recorded golden data (tests/golden/engine_traces.json)."""

from __future__ import annotations

import copy
import pickle

import pytest

from kairos_gym.sim import Decision
from kairos_gym.sim.hook import DecisionContext, LazyDecisionContext, StaleContextError
from kairos_gym.sim.simulator import Simulator
from tests.golden.engine_cases import ENV_KWARGS, RUNNERS, context_asdict, context_repr, digest, recorded


def _make(scenario, **kw):
    return Simulator(scenario, **kw)


def _policy(i: int, ctx: DecisionContext) -> Decision:
    """A fixed mix of prefill paths and deflections (some refused), driven only by the step number."""
    k = i % 5
    if k < 2:
        return Decision.prefill_path(None if k == 0 else i % 2)
    return Decision.deflect(i % 2, ctx.chunk_menu[i % len(ctx.chunk_menu)] if k < 4 else 0)


def test_lazy_context_fields_are_the_recorded_ones():
    """Every field of the lazy context (read field by field: repr and type) and apply's returns over 150
    decisions equal the recorded eager context's; each context is a LazyDecisionContext."""
    assert RUNNERS["small/context-fields"](None, _make, None) == recorded("small/context-fields")
    nat = Simulator("small", seed=3)
    for i in range(150):
        b = nat.next_decision()
        if b is None:
            break
        assert isinstance(b, LazyDecisionContext) and isinstance(b, DecisionContext)
        nat.apply(_policy(i, b))


def test_lazy_context_is_tuple_like_and_materializes():
    """Same length, indexing, iteration, equality, hash, _asdict/_replace, pickling and copying as the NamedTuple
    (a materialized twin's: the same decision of a second simulator); its repr is the recorded one."""
    nat = Simulator("small", seed=1)
    b = nat.next_decision()
    a = Simulator("small", seed=1).next_decision().materialize()
    assert type(a) is DecisionContext
    assert len(b) == len(a) == 17 and b._fields == a._fields
    assert b[0] == a[0] and b[-1] == a[-1] and b[2:5] == a[2:5] and list(b) == list(a)
    assert b == a and a == b and hash(b) == hash(a) and repr(b) == repr(a)
    assert b._asdict() == a._asdict() and b._replace(beta=2.0) == a._replace(beta=2.0)
    want = recorded("small/context-fields")
    assert (digest(context_repr(b)), digest(repr(context_asdict(b)))) == (want["first_small_seed1"],
                                                                           want["first_small_seed1_asdict"])
    m = b.materialize()
    assert type(m) is DecisionContext and m == a
    for c in (pickle.loads(pickle.dumps(b)), copy.copy(b), copy.deepcopy(b)):
        assert type(c) is DecisionContext and c == a
    with pytest.raises(AttributeError):
        b.now_s = 1.0  # type: ignore[misc]


def test_lazy_context_readable_after_apply_and_stale_after_the_next_decision():
    """apply() leaves the buffers alone (a field read after it is this decision's); after the next decision a
    field already read keeps its value, one read for the first time raises StaleContextError. (The reference
    values: the same decision of a second simulator, materialized.)"""
    nat = Simulator("small", seed=2)
    a = Simulator("small", seed=2).next_decision().materialize()
    b = nat.next_decision()
    dec_a = a.decode
    assert b.decode == dec_a  # read (and cached) before apply
    nat.apply(Decision.prefill_path())
    assert b.step_s == a.step_s  # first read after apply, before the next decision: still this decision's
    nat.next_decision()
    assert b.decode == dec_a and b.step_s == a.step_s  # cached: safe for good
    with pytest.raises(StaleContextError, match="ttft_prefill_s"):
        _ = b.ttft_prefill_s
    with pytest.raises(StaleContextError):
        b.materialize()


def test_lazy_context_of_an_earlier_episode_is_stale_after_reset():
    nat = Simulator("small", seed=2)
    b = nat.next_decision()
    nat.reset(2)
    assert nat.next_decision() is not None
    with pytest.raises(StaleContextError):
        _ = b.prefill


def test_lazy_context_of_an_abandoned_branch_is_stale_after_restore():
    """Snapshot at decision k, run to k+3 (context B), restore, take another branch to k+3 (context C): B must not
    read C's buffers (same decision count, other state); the snapshot's own context stays readable."""
    nat = Simulator("small", seed=2)
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


def test_run_asks_the_policy_once_per_decision_and_matches_the_recorded_summary():
    """run(policy) (the C++ run loop) gives the recorded summary and calls decide once per
    decision, also when a decision was already pending (next_decision() called before run)."""
    got = RUNNERS["small/run-mixed"](None, _make, None)
    assert got == recorded("small/run-mixed") and got["calls"] == got["n_decisions"] > 0


# ---------------------------------------------------------------------------------------------- the native env step
def _env(**kwargs):
    from kairos_gym.env.core import KairosEnv

    env = KairosEnv(**kwargs)
    assert env._native is not None  # the native env step is what runs
    return env


@pytest.mark.parametrize("i", range(len(ENV_KWARGS)))
def test_native_env_step_is_the_python_env_step_bit_for_bit(i):
    """Observations (float32 bytes), masks, rewards, flags and infos of whole episodes with random actions
    (masked and unmasked: refused deflections included) equal the recorded ones:
    set-ups ENV_KWARGS of tests/golden/engine_cases.py."""
    got = RUNNERS[f"env/episodes/{i}"]({"kwargs": i}, _make, _env)
    assert got == recorded(f"env/episodes/{i}") and min(got["steps"]) > 10


def test_native_env_decision_context_and_returned_arrays_are_current():
    """decision_context after native steps is the pending decision's (never an earlier lazy context the core
    has moved past: the Python env's, recorded), and returned observations/masks are copies (a later step does
    not change them: their digest, taken after the last step, is the Python env's)."""
    assert RUNNERS["env/contexts"](None, _make, _env) == recorded("env/contexts")
    env = _env(scenario="small")
    env.reset(seed=1)
    for i in range(5):
        env.step(1 if i % 4 == 0 else 0)
        assert isinstance(env.decision_context, LazyDecisionContext)


def test_native_env_step_refuses_bad_actions():
    """A bad action raises the Python env's ConfigError (recorded) before anything moves; a step after the end
    raises."""
    from kairos_gym.errors import ConfigError

    assert RUNNERS["env/refusals"](None, _make, _env) == recorded("env/refusals")
    env = _env(scenario="small", workload={"max_requests": 5})
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
