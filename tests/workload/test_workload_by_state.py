"""``lengths: {kind: by_state}``: lengths chosen by the MMPP state at each arrival (docs/workloads.md).

Guards: the MMPP's exposed states leave its arrival times bit-identical; each request takes its lengths from its
state's section; prefix-stability and determinism; every bad section and every stateless arrival kind is refused
with one ConfigError naming the field; the shipped regime-shift scenario and its suite task use it.
"""

from __future__ import annotations

import importlib
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kairos_gym.errors import ConfigError
from kairos_gym.workload import (
    ByStateLengths,
    FixedLengths,
    LognormalLengths,
    MMPPArrival,
    PoissonArrival,
    Workload,
    WorkloadConfig,
    arrival_states,
    generate,
)
from kairos_gym.workload.lengths import SAMPLED_KINDS
from tests.tool_loader import load_tool

MMPP = {"kind": "mmpp", "rate_on": 30.0, "rate_off": 8.0, "mean_on_s": 6.0, "mean_off_s": 12.0}
SPARSE = {"kind": "mmpp", "rate_on": 1.0, "rate_off": 0.5, "mean_on_s": 0.1, "mean_off_s": 1.0}  # several batches
FIXED = {"kind": "by_state", "on": {"kind": "fixed", "prompt_tokens": 5000, "output_tokens": 10},
         "off": {"kind": "fixed", "prompt_tokens": 300, "output_tokens": 200}}
# narrow lognormal/pareto ranges reject about half the draws, so the rejection loop's batches matter
MIXED = {"kind": "by_state",
         "on": {"kind": "lognormal", "prompt_median": 1000, "prompt_sigma": 1.5, "prompt_max": 1200,
                "output_median": 100, "output_sigma": 1.5, "output_max": 90},
         "off": {"kind": "pareto", "prompt_min": 200, "prompt_alpha": 1.2, "prompt_max": 400,
                 "output_min": 20, "output_alpha": 1.2, "output_max": 60}}
EMPIRICAL = {"kind": "by_state", "on": {"kind": "empirical", "path": "azure2023_code"},
             "off": {"kind": "empirical", "path": "azure2023_conv"}}
SEEDS = (0, 14, 15)


def _gen(d: dict[str, Any], seed: int) -> Workload:
    return generate(WorkloadConfig.from_dict(d), np.random.default_rng(seed))


def _assert_prefix(short: Workload, long: Workload) -> None:
    n = len(short)
    assert 0 < n <= len(long)
    assert np.array_equal(short.arrival_s, long.arrival_s[:n])
    assert np.array_equal(short.prompt_tokens, long.prompt_tokens[:n])
    assert np.array_equal(short.output_tokens, long.output_tokens[:n])


# ------------------------------------------------------------------------------------ the MMPP's states
# rates 0 or >= 0.5 req/s: a sub-normal rate would need astronomically many cycles (refused: MAX_MMPP_CYCLES,
# test_a_sampler_built_directly_refuses_a_run_of_too_many_cycles)
_RATE = st.one_of(st.just(0.0), st.floats(0.5, 60.0))


@settings(max_examples=40, deadline=None)
@given(rate_on=_RATE, rate_off=_RATE, mean_on=st.floats(0.01, 20.0),
       mean_off=st.floats(0.01, 20.0), seed=st.integers(0, 2**32 - 1), n=st.integers(1, 700),
       duration=st.floats(0.5, 60.0))
def test_sample_with_states_draws_exactly_the_times_of_sample(rate_on: float, rate_off: float, mean_on: float,
                                                              mean_off: float, seed: int, n: int,
                                                              duration: float) -> None:
    if rate_on == 0 and rate_off == 0:
        rate_on = 1.0
    a = MMPPArrival(rate_on=rate_on, rate_off=rate_off, mean_on_s=mean_on, mean_off_s=mean_off)
    for kw in ({"num_requests": n}, {"duration_s": duration}):
        times = a.sample(np.random.default_rng(seed), **kw)  # type: ignore[arg-type]
        t2, on = a.sample_with_states(np.random.default_rng(seed), **kw)  # type: ignore[arg-type]
        assert np.array_equal(times, t2)  # bit-identical: existing workloads do not change
        assert on.dtype == np.bool_ and on.shape == times.shape


@pytest.mark.parametrize("seed", SEEDS)
def test_a_state_with_rate_zero_never_receives_an_arrival(seed: int) -> None:
    only_on = MMPPArrival(rate_on=20.0, rate_off=0.0, mean_on_s=1.0, mean_off_s=3.0)
    only_off = MMPPArrival(rate_on=0.0, rate_off=20.0, mean_on_s=1.0, mean_off_s=3.0)
    assert only_on.sample_with_states(np.random.default_rng(seed), num_requests=2000)[1].all()
    assert not only_off.sample_with_states(np.random.default_rng(seed), num_requests=2000)[1].any()


@pytest.mark.parametrize("seed", SEEDS)
def test_states_come_in_runs_whose_share_of_arrivals_matches_the_rates(seed: int) -> None:
    a = MMPPArrival(**{k: v for k, v in MMPP.items() if k != "kind"})
    _, on = a.sample_with_states(np.random.default_rng(seed), num_requests=200_000)
    expected = a.rate_on * a.mean_on_s / (a.rate_on * a.mean_on_s + a.rate_off * a.mean_off_s)  # 180/276
    assert on.mean() == pytest.approx(expected, abs=0.02)
    switches = int(np.count_nonzero(np.diff(on.astype(np.int8))))
    cycles = 200_000 / (a.rate_on * a.mean_on_s + a.rate_off * a.mean_off_s)  # ~725 on/off cycles
    assert 1.5 * cycles < switches < 2.1 * cycles  # runs of one state, not a per-request coin


# ------------------------------------------------------------------------------------ lengths by state
@pytest.mark.parametrize("seed", SEEDS)
def test_each_request_takes_the_lengths_of_the_state_it_arrived_in(seed: int) -> None:
    d = {"arrival": MMPP, "lengths": FIXED, "num_requests": 3000}
    wl = _gen(d, seed)
    on = arrival_states(WorkloadConfig.from_dict(d), np.random.default_rng(seed))
    assert on.shape == (3000,) and 0 < on.sum() < 3000
    assert np.array_equal(wl.prompt_tokens, np.where(on, 5000, 300))
    assert np.array_equal(wl.output_tokens, np.where(on, 10, 200))
    plain = _gen({**d, "lengths": FIXED["on"]}, seed)
    assert np.array_equal(wl.arrival_s, plain.arrival_s)  # the arrival stream is the same as without by_state


def test_the_state_selects_the_distribution_on_a_long_draw() -> None:
    d = {"arrival": MMPP, "num_requests": 50_000, "lengths": {
        "kind": "by_state",
        "on": {"kind": "lognormal", "prompt_median": 4000, "prompt_sigma": 0.5, "prompt_max": 32768,
               "output_median": 20, "output_sigma": 0.5, "output_max": 4096},
        "off": {"kind": "lognormal", "prompt_median": 500, "prompt_sigma": 0.5, "prompt_max": 32768,
                "output_median": 300, "output_sigma": 0.5, "output_max": 4096}}}
    wl = _gen(d, 3)
    on = arrival_states(WorkloadConfig.from_dict(d), np.random.default_rng(3))
    m = np.exp(0.5**2 / 2)  # lognormal mean / median
    assert wl.prompt_tokens[on].mean() == pytest.approx(4000 * m, rel=0.03)
    assert wl.prompt_tokens[~on].mean() == pytest.approx(500 * m, rel=0.03)
    assert wl.output_tokens[on].mean() == pytest.approx(20 * m, rel=0.03)
    assert wl.output_tokens[~on].mean() == pytest.approx(300 * m, rel=0.03)


@pytest.mark.parametrize("lengths", [FIXED, MIXED, EMPIRICAL], ids=["fixed", "lognormal+pareto", "empirical"])
@pytest.mark.parametrize("arrival", [MMPP, SPARSE], ids=["mmpp", "mmpp-sparse"])
def test_by_state_lengths_are_prefix_stable(arrival: dict[str, Any], lengths: dict[str, Any]) -> None:
    base = {"arrival": arrival, "lengths": lengths}
    for seed in SEEDS:
        short = _gen({**base, "num_requests": 30}, seed)
        assert len(short) == 30
        _assert_prefix(short, _gen({**base, "num_requests": 1500}, seed))
        _assert_prefix(short, _gen({**base, "max_requests": 30}, seed))  # the first 30 of the default 2000
        _assert_prefix(_gen({**base, "num_requests": 1500, "max_requests": 30}, seed), short)
        timed = _gen({**base, "duration_s": 20.0}, seed)
        long = _gen({**base, "duration_s": 200.0}, seed)
        assert len(timed) == int(np.searchsorted(long.arrival_s, 20.0))
        _assert_prefix(timed, long)


def test_by_state_workloads_are_deterministic_and_depend_on_the_seed() -> None:
    d = {"arrival": MMPP, "lengths": MIXED, "num_requests": 800}
    a, b, c = _gen(d, 5), _gen(d, 5), _gen(d, 6)
    for name in ("arrival_s", "prompt_tokens", "output_tokens"):
        assert np.array_equal(getattr(a, name), getattr(b, name))
        assert not np.array_equal(getattr(a, name), getattr(c, name))
    assert a.source == b.source and "by_state(on=lognormal(" in a.source and ",off=pareto(" in a.source


def test_each_state_draws_from_its_own_stream() -> None:
    """Changing the off state's section leaves every on-state request's lengths as they were."""
    d = {"arrival": MMPP, "lengths": MIXED, "num_requests": 1000}
    other = {**MIXED, "off": {"kind": "fixed", "prompt_tokens": 7, "output_tokens": 7}}
    a, b = _gen(d, 2), _gen({**d, "lengths": other}, 2)
    on = arrival_states(WorkloadConfig.from_dict(d), np.random.default_rng(2))
    assert np.array_equal(a.prompt_tokens[on], b.prompt_tokens[on])
    assert np.array_equal(a.output_tokens[on], b.output_tokens[on])
    assert (b.prompt_tokens[~on] == 7).all() and not (a.prompt_tokens[~on] == 7).all()


def test_round_trip_and_python_construction() -> None:
    d = {"arrival": MMPP, "lengths": MIXED, "num_requests": 10}
    cfg = WorkloadConfig.from_dict(d)
    assert isinstance(cfg.lengths, ByStateLengths)
    assert WorkloadConfig.from_dict(cfg.to_dict()) == cfg
    assert cfg.to_dict()["lengths"]["on"]["kind"] == "lognormal"
    direct = WorkloadConfig(arrival=MMPPArrival(), lengths=ByStateLengths(on=FixedLengths(10, 1),
                                                                          off=LognormalLengths()))
    assert len(generate(direct, np.random.default_rng(0))) == 2000
    with pytest.raises(ConfigError, match=r"workload\.lengths: on = .*allowed: a lengths config of kind"):
        ByStateLengths(on=PoissonArrival(), off=LognormalLengths())  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=r"lengths: kind = 'by_state' is not valid.*arrival\.kind: mmpp"):
        WorkloadConfig(arrival=PoissonArrival(), lengths=ByStateLengths(on=FixedLengths(), off=FixedLengths()))


# ------------------------------------------------------------------------------------ errors
BAD = [
    ({"kind": "by_state"}, r"workload\.lengths: on = '<missing>' is not valid; allowed: a lengths section"),
    ({"kind": "by_state", "on": FIXED["on"]}, r"workload\.lengths: off = '<missing>'"),
    ({"kind": "by_state", "on": None, "off": {}}, r"workload\.lengths: on = None is not valid"),
    ({"kind": "by_state", "on": 3, "off": {}}, r"workload\.lengths: on = 3 is not valid; allowed: a mapping"),
    ({"kind": "by_state", "on": {}, "off": {}, "high": {}}, r"workload\.lengths: high = "),
    ({"kind": "by_state", "on": {"kind": "trace"}, "off": {}},
     r"workload\.lengths\.on: kind = 'trace' is not valid; allowed: one of lognormal, pareto, empirical, fixed"),
    ({"kind": "by_state", "on": {}, "off": FIXED}, r"workload\.lengths\.off: kind = 'by_state' is not valid"),
    ({"kind": "by_state", "on": {"kind": "fixed", "prompt_tokens": 0}, "off": {}},
     r"workload\.lengths\.on: prompt_tokens = 0 is not valid"),
    ({"kind": "by_state", "on": {}, "off": {"kind": "lognormal", "output_max": 2**25}},
     r"workload\.lengths\.off: output_max = 33554432 is not valid; allowed: a whole number of tokens from 1 to "
     r"16,777,216 \(MAX_REQUEST_TOKENS\)"),
    ({"kind": "by_state", "on": {}, "off": {"kind": "lognormal", "prompt_median": 1e6, "prompt_max": 10}},
     r"workload\.lengths\.off: prompt_max = 10 is not valid; allowed: a value for which the range"),
    ({"kind": "by_state", "on": {"kind": "empirical", "path": "no_such_trace"}, "off": {}},
     r"workload\.lengths\.on: path = 'no_such_trace'"),
]


@pytest.mark.parametrize(("lengths", "message"), BAD)
def test_bad_by_state_sections_are_refused_naming_the_field(lengths: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        WorkloadConfig.from_dict({"arrival": MMPP, "lengths": lengths})


@pytest.mark.parametrize("arrival", [{"kind": "poisson"}, {"kind": "gamma"},
                                     {"kind": "trace", "path": "azure2023_code"}], ids=["poisson", "gamma", "trace"])
def test_by_state_needs_an_arrival_process_with_a_state(arrival: dict[str, Any]) -> None:
    kind = arrival["kind"]
    with pytest.raises(ConfigError, match=rf"workload\.lengths: kind = 'by_state' is not valid; allowed: one of "
                       rf"lognormal, pareto, empirical, fixed when arrival\.kind is '{kind}' \(lengths kind "
                       r"'by_state' needs an arrival process with a state: arrival\.kind: mmpp\)"):
        WorkloadConfig.from_dict({"arrival": arrival, "lengths": FIXED})
    with pytest.raises(ConfigError, match=r"arrival_states: arrival\.kind = "):
        arrival_states(WorkloadConfig.from_dict({"arrival": arrival}), np.random.default_rng(0))


def test_the_kinds_a_state_may_hold() -> None:
    assert set(SAMPLED_KINDS) == {"lognormal", "pareto", "empirical", "fixed"}


# ------------------------------------------------------------------------------------ the shipped task
def test_the_regime_shift_scenario_and_its_suite_tasks_use_by_state_lengths() -> None:
    from kairos_gym.benchmark.suite import SUITE
    from kairos_gym.scenario import load_scenario

    sc = load_scenario("regime-shift")
    lengths = sc.workload.lengths
    assert isinstance(sc.workload.arrival, MMPPArrival) and isinstance(lengths, ByStateLengths)
    # fitted by tools/fit_lengths.py: the high-load state like Azure code, the low-load state like Azure conv
    assert (lengths.on.prompt_median, lengths.on.output_median) == (1469, 13)
    assert (lengths.off.prompt_median, lengths.off.output_median) == (1020, 129)
    tasks = [t for t in SUITE if t.family == "regime-shift"]
    assert [t.tier for t in tasks] == ["strict", "default", "relaxed"]
    for task in tasks:
        base = task.base()
        assert base.workload.lengths == lengths and base.workload.effective_num_requests == 500
        wl = generate(base.workload, np.random.default_rng(0))
        on = arrival_states(base.workload, np.random.default_rng(0))
        assert 0 < on.sum() < len(wl)
        assert np.median(wl.output_tokens[on]) < 30 < 80 < np.median(wl.output_tokens[~on])


def _tool(name: str) -> Any:
    return load_tool(name)


def test_fit_lengths_recovers_a_lognormal_and_grounds_the_regime_shift_states() -> None:
    fit = _tool("fit_lengths")
    x = np.floor(np.random.default_rng(0).lognormal(np.log(800.0), 0.9, 200_000) + 0.5).astype(np.int64)
    got = fit.fit_side(np.maximum(x, 1))
    assert got["median"] == pytest.approx(800, rel=0.01) and got["sigma"] == pytest.approx(0.9, abs=0.01)
    from kairos_gym.scenario import load_scenario

    lengths = load_scenario("regime-shift").workload.lengths
    assert isinstance(lengths, ByStateLengths)
    # the YAML's sections are exactly what the tool prints for the two traces (the grounding the comment cites)
    assert fit.fit_trace("azure2023_code")[1] == lengths.on
    assert fit.fit_trace("azure2023_conv")[1] == lengths.off


def test_the_states_line_up_with_the_simulators_requests() -> None:
    """kairos_gym/benchmark/checks/regime_shift.py splits a run by arrival_states: they must be the states of the
    simulator's own
    requests (checked through fixed lengths per state), and its per-state figures recombine to the run's."""
    from kairos_gym.scenario import ScenarioConfig, load_scenario
    from kairos_gym.sim import Simulator

    check = importlib.import_module("kairos_gym.benchmark.checks.regime_shift")
    d = load_scenario("regime-shift").to_dict()
    d["workload"].update(num_requests=120, lengths=FIXED)
    d["workload"]["arrival"].update(mean_on_s=1.0, mean_off_s=2.0)
    sc = ScenarioConfig.from_dict(d)
    on = arrival_states(sc.workload, np.random.default_rng(4))
    assert 0 < on.sum() < 120
    assert np.array_equal(np.asarray(Simulator(sc, seed=4).workload.prompt_tokens), np.where(on, 5000, 300))
    overall, on_share, off_share = check.per_state(sc, "no-deflect", 4, {})
    n_on = int(on.sum())
    assert overall == pytest.approx((on_share * n_on + off_share * (120 - n_on)) / 120, abs=1e-12)


@pytest.mark.parametrize("kw", [{"num_requests": 10}, {"duration_s": 1e9}])
def test_a_sampler_built_directly_refuses_a_run_of_too_many_cycles(kw: dict[str, float]) -> None:
    # the slowest rate allowed with short sojourns (or sojourns far shorter than the run) needs more on/off cycles
    # than MAX_MMPP_CYCLES: the sampler refuses it before looping, also when built directly
    a = MMPPArrival(rate_on=1e-6, rate_off=0.0, mean_on_s=0.5, mean_off_s=0.5) if "num_requests" in kw else \
        MMPPArrival(rate_on=5.0, rate_off=0.0, mean_on_s=1e-3, mean_off_s=1e-3)
    with pytest.raises(ConfigError, match="on/off cycles"):
        a.sample(np.random.default_rng(0), **kw)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="on/off cycles"):
        a.sample_with_states(np.random.default_rng(0), **kw)  # type: ignore[arg-type]


def test_a_sub_normal_rate_is_refused_where_the_section_is_built() -> None:
    with pytest.raises(ConfigError, match="0 or a rate from 1e-06"):
        MMPPArrival(rate_on=1e-300, rate_off=0.0, mean_on_s=1.0, mean_off_s=1.0)


def test_state_only_keeps_one_state_and_refuses_what_has_none() -> None:
    from kairos_gym.workload import state_only

    cfg = WorkloadConfig.from_dict({"arrival": MMPP, "lengths": {"kind": "by_state", "on": {"kind": "fixed",
                                    "prompt_tokens": 900, "output_tokens": 10}, "off": {"kind": "fixed",
                                    "prompt_tokens": 50, "output_tokens": 400}}, "num_requests": 70})
    on, off = state_only(cfg, "on"), state_only(cfg, "off")
    assert (on.arrival.kind, on.arrival.rate, on.lengths.prompt_tokens, on.num_requests) == ("poisson", 30.0, 900, 70)
    assert (off.arrival.rate, off.lengths.output_tokens) == (8.0, 400)
    with pytest.raises(ConfigError, match="on or off"):
        state_only(cfg, "high")
    with pytest.raises(ConfigError, match="'by_state'"):
        state_only(WorkloadConfig.from_dict({"arrival": MMPP}), "on")
    with pytest.raises(ConfigError, match="'mmpp'"):
        state_only(WorkloadConfig.from_dict({"arrival": {"kind": "poisson", "rate": 3.0}}), "on")
