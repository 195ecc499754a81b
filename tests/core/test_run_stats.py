"""The metrics recorder (src/core/run_stats.cpp) against its Python counterparts: RunStats and the percentiles of
kairos_gym/sim/metrics.py, and a Python model of the token-gap accounting (:class:`PyTokens`), on random records;
and the engine's own records and counters against the recorded ones (tests/golden/engine_traces.json)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kairos_gym import compiled
from kairos_gym.sim.metrics import RunStats, sorted_percentile, weighted_percentiles
from tests.core.engine_trace import TRACE_POLICIES, bits, make_sim, same_float
from tests.golden.engine_cases import recorded, run_digests

core = compiled.core()

FLOATS = st.sampled_from([0.0, -0.0, 0.01, 0.03, 0.1, 1e-300, math.inf, -math.inf]) | st.floats(-1.0, 1.0)
STRETCH = st.tuples(st.just("stretch"), FLOATS, FLOATS, st.integers(0, 40), st.integers(0, 600))
GAP = st.tuples(st.just("gap"), FLOATS, st.integers(0, 600))
QS = st.lists(st.floats(0.0, 100.0) | st.sampled_from([0, 1, 50, 95, 99, 100, 33.3, 99.9]), min_size=1, max_size=6)


def same_array(x: np.ndarray, y: np.ndarray) -> bool:
    """Same dtype, shape and bytes."""
    return x.dtype == y.dtype and x.shape == y.shape and x.tobytes() == y.tobytes()


def assert_same_records(py: RunStats, rec) -> None:
    r = rec.records()
    for name, dtype in [("s_t0", np.float64), ("s_dt", np.float64), ("s_n", np.int64), ("s_w", np.int64),
                        ("gap_v", np.float64), ("gap_w", np.int64)]:
        assert same_array(r[name], np.asarray(getattr(py, name), dtype=dtype)), name
    (pv, pw), (nv, nw) = py.gaps(), rec.gaps()
    assert same_array(nv, pv) and same_array(nw, pw)


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")  # numpy on inf * 0
@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(STRETCH, GAP), max_size=60))
def test_records_and_gaps_match_runstats(ops):
    py, rec = RunStats(), core.RunRecorder()
    for op in ops:
        if op[0] == "stretch":
            py.add_stretch(*op[1:])
            rec.add_stretch(*op[1:])
        else:
            py.add_gap(*op[1:])
            rec.add_gap(*op[1:])
    assert_same_records(py, rec)


def test_empty_records_give_empty_typed_arrays():
    v, w = core.RunRecorder().gaps()
    pv, pw = RunStats().gaps()
    assert same_array(v, pv) and same_array(w, pw)


VALUES = st.lists(st.sampled_from([0.0, -0.0, 0.5, 1.0, math.inf, -math.inf, math.nan]) | st.floats(-10.0, 10.0),
                  max_size=80)


@settings(max_examples=400, deadline=None)
@given(VALUES, st.data(), QS)
def test_weighted_percentiles_match_python(values, data, qs):
    w = data.draw(st.lists(st.integers(0, 4) | st.sampled_from([0, 10**6]), min_size=len(values),
                           max_size=len(values)))
    v, wa = np.array(values, dtype=np.float64), np.array(w, dtype=np.int64)
    want = weighted_percentiles(v, wa, tuple(qs))
    got = core.weighted_percentiles(v, wa, qs)
    assert len(got) == len(want) and all(same_float(a, b) for a, b in zip(got, want, strict=True))


def test_weighted_percentiles_keep_the_input_order_of_equal_values():
    # -0.0 and 0.0 are equal to the sort but not to the bits: only a stable sort picks the same one as numpy
    rng = np.random.default_rng(7)
    v = np.where(rng.random(500) < 0.5, -0.0, 0.0)
    v[::7] = 1.0
    w = rng.integers(0, 4, size=500)
    qs = [float(q) for q in np.linspace(0.0, 100.0, 401)]
    want = weighted_percentiles(v, w, tuple(qs))
    got = core.weighted_percentiles(v, w, qs)
    assert [bits(x) for x in got] == [bits(x) for x in want]
    assert len({bits(x) for x in want}) == 3  # both zeros and 1.0 are picked


@settings(max_examples=300, deadline=None)
@given(st.lists(st.floats(allow_nan=False), max_size=60), st.floats(0.0, 100.0) | st.sampled_from([0, 50, 100]))
def test_sorted_percentile_matches_python(x, q):
    s = np.sort(np.array(x, dtype=np.float64))
    assert same_float(core.sorted_percentile(s, q), sorted_percentile(s, q))


class PyTokens:
    """A Python model of the token-gap accounting (``_emit_tokens`` of the simulator at commit 4a150ff, line for
    line, its names kept)."""

    def __init__(self) -> None:
        self.stats = RunStats()
        self.tokens_out = 0
        self.tbt_violations = 0

    def gap(self, g: float, w: int, slo: float) -> None:
        st = self.stats
        st.add_gap(g, w)
        self.tokens_out += w
        if g > slo:
            self.tbt_violations += w

    def stretch(self, t0: float, dt: float, n: int, B: int, slo: float) -> None:
        st = self.stats
        last = t0 + dt * (n - 1)
        if n > 1:
            st.add_stretch(t0 + dt, dt, n - 1, B)
            self.tokens_out += B * (n - 1)
            if last > slo:  # count steps j in 1..n-1 with t0 + j dt > slo
                if dt > 0:
                    jmin = max(1, math.floor((slo - t0) / dt) + 1)
                    while jmin > 1 and t0 + (jmin - 1) * dt > slo:
                        jmin -= 1
                    while t0 + jmin * dt <= slo:
                        jmin += 1
                    self.tbt_violations += B * (n - jmin)
                else:
                    self.tbt_violations += B * (n - 1)


# stretches near the SLO: ties of t0 + j dt with slo, zero and negative dt, tiny dt (large jmin estimates; no
# subnormal dt, for which Python's math.floor of an infinite estimate raises: see the next test)
T0 = st.sampled_from([0.01, 0.02, 0.03, 0.1 + 0.2, 0.3, 0.0]) | st.floats(0.0, 0.2)
DT = st.sampled_from([0.0, -0.001, 1e-300, 0.001, 0.01, 0.1]) | st.floats(-0.01, 0.05, allow_subnormal=False)
SLO = st.sampled_from([0.03, 0.3, 0.1, 0.05]) | st.floats(0.001, 0.5)


@settings(max_examples=500, deadline=None)
@given(st.lists(st.one_of(st.tuples(st.just("gap"), FLOATS, st.integers(1, 600), SLO),
                          st.tuples(st.just("stretch"), T0, DT, st.integers(0, 3000), st.integers(1, 512), SLO)),
                max_size=30))
def test_token_accounting_matches_the_engines(ops):
    py, rec = PyTokens(), core.RunRecorder()
    for op in ops:
        if op[0] == "gap":
            py.gap(*op[1:])
            rec.record_gap(*op[1:])
        else:
            py.stretch(*op[1:])
            rec.record_stretch_steps(*op[1:])
        c = rec.counters()
        assert (c["tokens_out"], c["tbt_violations"]) == (py.tokens_out, py.tbt_violations)
    assert_same_records(py.stats, rec)


def test_an_infinite_jmin_estimate_counts_every_step():
    # (slo - t0) / dt is -inf: Python's math.floor raises OverflowError (the engine never gets there: its dt is
    # a step-time increment); the core starts from j = 1 and counts every step of 1..n-1 above the SLO
    rec = core.RunRecorder()
    rec.record_stretch_steps(0.3, 5e-324, 6, 7, 0.03)
    assert rec.counters()["tbt_violations"] == 7 * 5
    with pytest.raises(OverflowError):
        PyTokens().stretch(0.3, 5e-324, 6, 7, 0.03)


@pytest.mark.parametrize("policy", sorted(TRACE_POLICIES))
def test_the_engines_records_and_counters_are_the_recorded_ones(policy):
    """The engine's token-gap records, counters and TBT percentiles on the trace scenario: the records
    and counters are the recorded ones (tests/golden/engine_traces.json), the summary's TBT
    percentiles are the recorder's percentiles of those records, and the waiting area is the sum of the TTFTs."""
    sim = make_sim()
    summary = sim.run(TRACE_POLICIES[policy]())
    st = sim.stats
    want = recorded(f"trace-scenario/{policy}")
    got = run_digests(sim, TRACE_POLICIES[policy]())  # the run is over: digests of its records and counters
    assert (got["stats"], got["counters"]) == (want["stats"], want["counters"])
    assert sim.tokens_out > 10_000 and len(st.s_t0) > 200 and len(st.gap_v) > 100
    assert sim.tbt_violations > 0 or policy == "nodeflect"
    v, w = st.gaps()
    tbt = core.weighted_percentiles(v, w, [50, 95, 99])
    assert [bits(x) for x in tbt] == [bits(summary[k]) for k in ("tbt_p50", "tbt_p95", "tbt_p99")]
    ttft = np.asarray(sim.first_token) - np.asarray(sim.arrival)
    assert math.isclose(sim.wait_area, float(ttft.sum()), rel_tol=1e-9) and sim.waiting == 0


@pytest.mark.parametrize("call", [
    lambda r: r.add_stretch(0.0, 0.0, -1, 1), lambda r: r.add_stretch(0.0, 0.0, 1, -1),
    lambda r: r.add_gap(0.0, -1), lambda r: r.add_stretch(0.0, 0.0, 2**31 + 1, 1),
])
def test_records_refuse_negative_counts_and_too_many_gaps(call):
    rec = core.RunRecorder()
    with pytest.raises(ValueError):
        call(rec)
    assert rec.gaps()[0].size == 0


def test_records_accept_up_to_the_bound_without_expanding():
    rec = core.RunRecorder()
    rec.add_stretch(0.0, 0.0, 2**31 - 1, 1)
    rec.add_gap(1.0, 1)
    with pytest.raises(ValueError, match="MAX_GAP_VALUES"):
        rec.add_gap(1.0, 1)


@pytest.mark.parametrize("args", [
    (np.ones(2), np.ones(3, np.int64), [50]),  # lengths differ
    (np.ones(2), np.array([1, -1]), [50]),  # a negative weight
    (np.ones(2), np.array([2**52, 2**52]), [50]),  # total weight 2^53
    (np.ones(2), np.ones(2, np.int64), [101]), (np.ones(2), np.ones(2, np.int64), [math.nan]),
    (np.ones(2), np.ones(2, np.int64), [-1e-9]),
])
def test_weighted_percentiles_refuse_bad_input(args):
    with pytest.raises(ValueError):
        core.weighted_percentiles(*args)


def test_percentiles_refuse_other_dtypes_and_bad_q():
    with pytest.raises(TypeError):  # float weights are not silently cast
        core.weighted_percentiles(np.ones(2), np.ones(2), [50])
    with pytest.raises(TypeError):
        core.sorted_percentile(np.ones(2, np.float32), 50)
    with pytest.raises(ValueError):
        core.sorted_percentile(np.ones(2), 100.5)
    assert math.isnan(core.sorted_percentile(np.zeros(0), 50))
