"""generate(): determinism, statistics of the arrival processes, truncated length sampling."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from kairos_gym.errors import ConfigError
from kairos_gym.workload import (
    MIN_ACCEPTANCE,
    Workload,
    WorkloadConfig,
    generate,
    load_trace,
)
from tests.workload.strategies import arrival_configs, length_configs

CONFIGS = {
    "poisson+lognormal": {"arrival": {"kind": "poisson", "rate": 8.0}, "num_requests": 500},
    "gamma+pareto": {"arrival": {"kind": "gamma", "rate": 5.0, "cv": 3.0},
                     "lengths": {"kind": "pareto"}, "num_requests": 500},
    "mmpp+empirical": {"arrival": {"kind": "mmpp"}, "duration_s": 60.0,
                       "lengths": {"kind": "empirical", "path": "sharegpt8k_lengths_only"}},
    "poisson+fixed": {"arrival": {"kind": "poisson", "rate": 2.0}, "lengths": {"kind": "fixed"},
                      "duration_s": 30},
    "trace+lognormal": {"arrival": {"kind": "trace", "path": "azure2023_conv", "end_s": 120},
                        "lengths": {"kind": "lognormal"}},
}


def _gen(d: dict, seed: int) -> Workload:
    return generate(WorkloadConfig.from_dict(d), np.random.default_rng(seed))


def _assert_same(a: Workload, b: Workload) -> None:
    assert np.array_equal(a.arrival_s, b.arrival_s)
    assert np.array_equal(a.prompt_tokens, b.prompt_tokens)
    assert np.array_equal(a.output_tokens, b.output_tokens)
    assert a.source == b.source


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_same_seed_gives_identical_arrays_regardless_of_global_numpy_state(name: str) -> None:
    d = CONFIGS[name]
    np.random.seed(1)
    a = _gen(d, 123)
    np.random.seed(2)
    np.random.random(1000)
    b = _gen(d, 123)
    _assert_same(a, b)
    assert a.arrival_s.dtype == np.float64 and a.prompt_tokens.dtype == np.int64
    assert a.output_tokens.dtype == np.int64


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_different_seeds_give_different_workloads(name: str) -> None:
    a, b = _gen(CONFIGS[name], 1), _gen(CONFIGS[name], 2)
    differs = [
        a.arrival_s.shape != b.arrival_s.shape or not np.array_equal(a.arrival_s, b.arrival_s),
        not np.array_equal(a.prompt_tokens, b.prompt_tokens),
    ]
    if name == "poisson+fixed":
        assert differs[0]
    elif name.startswith("trace"):
        assert np.array_equal(a.arrival_s, b.arrival_s) and differs[1]  # replayed times, sampled lengths
    else:
        assert all(differs)


def test_trace_with_its_own_lengths_draws_nothing_from_rng() -> None:
    rng = np.random.default_rng(5)
    before = rng.bit_generator.state
    w = generate(WorkloadConfig.from_dict({"arrival": {"kind": "trace", "path": "azure2023_code"}}), rng)
    assert rng.bit_generator.state == before
    full = load_trace("azure2023_code")
    assert np.array_equal(w.arrival_s, full.arrival_s) and np.array_equal(w.output_tokens, full.output_tokens)


def test_poisson_mean_rate_and_cv_on_20k_sample() -> None:
    w = _gen({"arrival": {"kind": "poisson", "rate": 8.0}, "num_requests": 20000}, 7)
    assert len(w) == 20000
    rate = len(w) / w.arrival_s[-1]
    assert rate == pytest.approx(8.0, rel=0.03)
    assert w.summary()["iat_cv"] == pytest.approx(1.0, rel=0.05)


@pytest.mark.parametrize("cv", [0.5, 2.0, 4.0])
def test_gamma_iat_cv_and_rate_match_config(cv: float) -> None:
    w = _gen({"arrival": {"kind": "gamma", "rate": 10.0, "cv": cv}, "num_requests": 50000,
              "lengths": {"kind": "fixed"}}, 11)
    iat = np.diff(np.concatenate(([0.0], w.arrival_s)))
    assert iat.std() / iat.mean() == pytest.approx(cv, rel=0.10)
    assert 1.0 / iat.mean() == pytest.approx(10.0, rel=0.06)


def test_mmpp_long_run_rate_is_time_weighted_mix_of_state_rates() -> None:
    arrival = {"kind": "mmpp", "rate_on": 20.0, "rate_off": 2.0, "mean_on_s": 2.0, "mean_off_s": 8.0}
    cfg = WorkloadConfig.from_dict({"arrival": arrival, "duration_s": 20000.0, "lengths": {"kind": "fixed"}})
    p_on = 2.0 / (2.0 + 8.0)
    expected = 20.0 * p_on + 2.0 * (1 - p_on)
    assert cfg.arrival.mean_rate() == pytest.approx(expected)
    w = generate(cfg, np.random.default_rng(3))
    assert w.arrival_s[-1] < 20000.0
    assert len(w) / 20000.0 == pytest.approx(expected, rel=0.06)
    # bursty: counts per second are over-dispersed compared with Poisson (Fano factor 1)
    counts = np.bincount(w.arrival_s.astype(np.int64), minlength=20000)
    assert counts.var() / counts.mean() > 3.0


def test_mmpp_num_requests_mode_returns_exact_count_and_starts_in_on_state() -> None:
    arrival = {"kind": "mmpp", "rate_on": 50.0, "rate_off": 0.0, "mean_on_s": 1.0, "mean_off_s": 100.0}
    w = _gen({"arrival": arrival, "num_requests": 30}, 0)
    assert len(w) == 30
    assert w.arrival_s[0] < 1.0  # the first on-period begins at t = 0


@pytest.mark.parametrize("kind", ["poisson", "gamma", "mmpp"])
def test_duration_mode_keeps_arrivals_before_duration_and_max_requests_caps(kind: str) -> None:
    w = _gen({"arrival": {"kind": kind}, "duration_s": 50.0}, 4)
    assert len(w) > 0 and w.arrival_s[-1] < 50.0
    capped = _gen({"arrival": {"kind": kind}, "duration_s": 50.0, "max_requests": 7}, 4)
    assert len(capped) == min(7, len(w))
    assert np.array_equal(capped.arrival_s, w.arrival_s[: len(capped)])


def _lognormal_cdf(x: float, median: float, sigma: float) -> float:
    return 0.5 * math.erfc(-(math.log(x) - math.log(median)) / (sigma * math.sqrt(2)))


def _truncated(lengths: dict[str, Any], seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The prompt and output tokens of 20,000 requests of ``lengths``, each side checked to lie in [1, its max]."""
    w = _gen({"arrival": {"kind": "poisson"}, "num_requests": 20000, "lengths": lengths}, seed)
    p, o = w.prompt_tokens, w.output_tokens
    assert p.min() >= 1 and p.max() <= lengths["prompt_max"] and o.min() >= 1 and o.max() <= lengths["output_max"]
    return p, o


def test_lognormal_truncation_is_rejection_not_clipping() -> None:
    p, o = _truncated({"kind": "lognormal", "prompt_median": 1000, "prompt_sigma": 2.0, "prompt_max": 2000,
                       "output_median": 2, "output_sigma": 2.0, "output_max": 100}, 21)
    # clipping would put ~36% of prompts at the cap and ~36% of outputs at 1
    assert np.mean(p == 2000) < 0.01
    cdf = _lognormal_cdf
    kept_p = cdf(2000.5, 1000, 2) - cdf(0.5, 1000, 2)
    assert np.mean(p < 1000) == pytest.approx((0.5 - cdf(0.5, 1000, 2)) / kept_p, abs=0.015)
    kept_o = cdf(100.5, 2, 2) - cdf(0.5, 2, 2)
    assert np.mean(o == 1) == pytest.approx((cdf(1.5, 2, 2) - cdf(0.5, 2, 2)) / kept_o, abs=0.015)


def test_pareto_truncation_respects_max_and_follows_conditional_law() -> None:
    p, o = _truncated({"kind": "pareto", "prompt_min": 10, "prompt_alpha": 0.8, "prompt_max": 500,
                       "output_min": 0.2, "output_alpha": 1.2, "output_max": 50}, 8)
    assert p.min() >= 10

    def cdf(x: float, m: float, a: float) -> float:
        return 0.0 if x < m else 1 - (m / x) ** a

    assert np.mean(p <= 20) == pytest.approx(cdf(20.5, 10, 0.8) / cdf(500.5, 10, 0.8), abs=0.015)
    assert np.mean(p == 500) < 0.01
    kept_o = cdf(50.5, 0.2, 1.2) - cdf(0.5, 0.2, 1.2)
    assert np.mean(o == 1) == pytest.approx((cdf(1.5, 0.2, 1.2) - cdf(0.5, 0.2, 1.2)) / kept_o, abs=0.015)


def test_truncation_that_keeps_almost_nothing_is_a_config_error() -> None:
    with pytest.raises(ConfigError) as exc:
        WorkloadConfig.from_dict({"lengths": {"kind": "lognormal", "prompt_median": 1e6, "prompt_max": 1000}})
    assert "prompt_max" in str(exc.value) and "1000" in str(exc.value)
    assert MIN_ACCEPTANCE > 0


@pytest.mark.parametrize(("median", "cap", "expected"), [
    (1.49, 1, 1), (0.5, 5, 1), (2.5, 3, 3), (7.0, 7, 7), (1.5, 1, None), (0.49, 5, None), (3.5, 3, None),
])
def test_degenerate_lognormal_rounds_half_up_and_agrees_with_the_acceptance_check(
    median: float, cap: int, expected: int | None
) -> None:
    lengths = {"kind": "lognormal", "prompt_median": median, "prompt_sigma": 0, "prompt_max": cap}
    if expected is None:  # the single value rounds outside [1, cap]: refused, never an endless loop
        with pytest.raises(ConfigError, match="prompt_"):
            WorkloadConfig.from_dict({"lengths": lengths})
        return
    w = _gen({"lengths": lengths, "num_requests": 50}, 0)
    assert np.all(w.prompt_tokens == expected)


def test_empirical_lengths_are_rows_of_the_pool() -> None:
    pool = load_trace("arxiv_summarization_lengths_only")
    w = _gen({"arrival": {"kind": "poisson"}, "num_requests": 2000,
              "lengths": {"kind": "empirical", "path": "arxiv_summarization_lengths_only.csv"}}, 2)
    pairs = set(zip(pool.prompt_tokens.tolist(), pool.output_tokens.tolist(), strict=True))
    drawn = list(zip(w.prompt_tokens.tolist(), w.output_tokens.tolist(), strict=True))
    assert all(pair in pairs for pair in drawn)
    assert len(set(drawn)) > 1500  # with replacement from 28k rows: mostly distinct
    assert "empirical" in w.source and "arxiv_summarization_lengths_only" in w.source


def test_source_names_the_processes() -> None:
    w = _gen({"arrival": {"kind": "gamma", "rate": 8, "cv": 4}, "num_requests": 10}, 0)
    assert w.source.startswith("gamma(rate=8,cv=4)+lognormal(")
    assert "num_requests=10" in w.source


def test_generate_rejects_legacy_random_state() -> None:
    with pytest.raises(ConfigError, match="rng"):
        generate(WorkloadConfig(), np.random.RandomState(0))  # type: ignore[arg-type]


_ARRIVALS = arrival_configs()
_LENGTHS = length_configs()
_SIZE = st.one_of(
    st.builds(lambda n: {"num_requests": n}, st.integers(1, 300)),
    st.builds(lambda d, m: {"duration_s": d, "max_requests": m}, st.floats(0.5, 30), st.integers(1, 400)),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(arrival=_ARRIVALS, lengths=_LENGTHS, size=_SIZE, seed=st.integers(0, 2**32 - 1))
@example(arrival={"kind": "poisson", "rate": 1.0}, size={"num_requests": 5}, seed=0,
         lengths={"kind": "lognormal", "prompt_median": 1.5, "prompt_sigma": 0.0, "prompt_max": 1,
                  "output_median": 1.0, "output_sigma": 0.0, "output_max": 1})
def test_property_random_valid_configs_give_valid_reproducible_workloads(
    arrival: dict, lengths: dict, size: dict, seed: int
) -> None:
    try:
        cfg = WorkloadConfig.from_dict({"arrival": arrival, "lengths": lengths, **size})
    except ConfigError as exc:  # only a too-narrow truncation range may be refused
        assert "keeps at least" in str(exc)
        assume(False)
        return
    assert WorkloadConfig.from_dict(cfg.to_dict()) == cfg
    w = generate(cfg, np.random.default_rng(seed))
    t = w.arrival_s
    assert t.dtype == np.float64 and np.all(np.isfinite(t)) and np.all(np.diff(t) >= 0)
    assert t.size == 0 or t[0] >= 0
    if "num_requests" in size:
        assert len(w) == size["num_requests"]
    else:
        assert len(w) <= size["max_requests"] and (t.size == 0 or t[-1] < size["duration_s"])
    assert np.all(w.prompt_tokens >= 1) and np.all(w.output_tokens >= 1)
    if lengths["kind"] != "fixed":
        assert np.all(w.prompt_tokens <= lengths["prompt_max"])
        assert np.all(w.output_tokens <= lengths["output_max"])
    _assert_same(w, generate(cfg, np.random.default_rng(seed)))
