"""Two-phase sampling (kairos_gym/benchmark/two_phase.py): the covariance of the estimate against its formulas, the
single-phase limit, the intervals' coverage by simulation, the cost-optimal allocation and its caps."""

from __future__ import annotations

import math

import numpy as np
import pytest

from kairos_gym.benchmark.two_phase import allocation, moments, ratio_estimate, sum_estimate
from kairos_gym.evaluation.stats import mean_ci, t_quantile_975


def test_moments_match_the_double_sampling_formulas():
    rng = np.random.default_rng(3)
    u = rng.normal(size=(9, 2))
    g = rng.normal(size=4)
    theta, c = moments(u, g)
    assert theta[:2] == pytest.approx(u.mean(axis=0)) and theta[2] == pytest.approx(g.mean())
    for a in range(2):
        for b in range(2):
            want = sum((u[i, a] - u[:, a].mean()) * (u[i, b] - u[:, b].mean()) for i in range(9)) / 8 / 9
            assert c[a, b] == pytest.approx(want)
        # the phase-2 instances are the first 4: Cov(mean_9 u, mean_4 g) = Cov(u, g) / 9, over those 4
        want = sum((u[i, a] - u[:4, a].mean()) * (g[i] - g.mean()) for i in range(4)) / 3 / 9
        assert c[a, 2] == pytest.approx(want) and c[2, a] == pytest.approx(want)
    assert c[2, 2] == pytest.approx(np.var(g, ddof=1) / 4)


def test_one_phase_limit_is_the_t_interval_of_the_sum():
    # n2 = n1: mean(M) + mean(G) = mean(O) and the variance is Var(O) / n: the ordinary t interval of O
    rng = np.random.default_rng(4)
    m = rng.uniform(0.3, 0.9, 12)
    g = rng.uniform(0.0, 0.05, 12)
    e = sum_estimate(m, g)
    mean, half = mean_ci(m + g)
    assert e.value == pytest.approx(mean) and e.half == pytest.approx(half) and e.df == 11


def _coverage(n1: int, n2: int, rho: float, g_sd: float = 0.02, reps: int = 2000) -> tuple[float, float, float]:
    """Coverage of the sum and the ratio intervals, and of a sum interval that leaves the covariance out."""
    rng = np.random.default_rng([7, n1, n2, int(100 * (rho + 1)), int(1000 * g_sd)])
    hit = naive = ratio = 0
    truth_sum, truth_ratio = 0.74, 0.2 / 0.44
    q = t_quantile_975(n2 - 1)
    for _ in range(reps):
        z = rng.standard_normal((n1, 3))
        m = 0.7 + 0.12 * z[:, 0]
        g = (0.04 + g_sd * (rho * z[:, 0] + math.sqrt(1 - rho**2) * z[:, 1]))[:n2]
        e = sum_estimate(m, g)
        hit += abs(e.value - truth_sum) <= e.half
        se = math.sqrt(np.var(m, ddof=1) / n1 + np.var(g, ddof=1) / n2)
        naive += abs(e.value - truth_sum) <= q * se
        p = 0.5 + 0.1 * z[:, 0] + 0.05 * z[:, 2]
        b = np.full(n1, 0.3)
        r = ratio_estimate(p - b, m - b, g)
        ratio += abs(r.value - truth_ratio) <= r.half
    return hit / reps, naive / reps, ratio / reps


@pytest.mark.parametrize("n1,n2,rho", [(200, 20, 0.9), (200, 20, -0.9), (1000, 40, -0.5), (60, 12, 0.0)])
def test_intervals_cover_about_95_percent(n1, n2, rho):
    cov_sum, _, cov_ratio = _coverage(n1, n2, rho)
    # 2,000 replications: a 95% interval's coverage estimate has a standard error of 0.005
    assert 0.935 <= cov_sum <= 0.985
    assert 0.935 <= cov_ratio <= 0.985


def test_the_covariance_term_matters_when_the_gap_moves_with_the_bases():
    # leaving Cov(M, G) / n1 out undercovers when the Oracle's gain grows with its bases' score
    cov_sum, naive, _ = _coverage(200, 40, 0.95, g_sd=0.05)
    assert naive < 0.93 and cov_sum >= 0.935


def _cost(n1: int, n2: int, r: float) -> float:
    return n1 + r * n2


@pytest.mark.parametrize("a,s,r", [(0.0125, 0.00053, 40.0), (0.04, 0.0001, 10.0), (0.001, 0.0009, 100.0)])
def test_allocation_meets_the_budget_at_least_cost(a, s, r):
    d, q = 0.01, t_quantile_975(9)
    v = (d / q) ** 2
    n1, n2, capped = allocation(a, s, d, q, r, 11, 10**6, 10**5)
    assert not capped and n1 >= n2 >= 11
    assert a / n1 + s / n2 <= v * (1 + 1e-9)
    # no feasible (n1, n2) near the optimum is cheaper by more than the rounding of the two sizes
    best = min(_cost(math.ceil(a / (v - s / k)), k, r) for k in range(11, 20 * n2) if v - s / k > 0)
    assert _cost(n1, n2, r) <= best + 1 + r


def test_allocation_without_phase_one_gain_runs_one_list():
    # Var(O) <= Var(G): the bases say nothing about the Oracle, phase 1 adds nothing, n1 = n2 = Var(O)'s need
    n1, n2, capped = allocation(-0.001, 0.0004, 0.01, 2.0, 40.0, 11, 5000, 200)
    assert n1 == n2 == math.ceil(0.0004 / (0.01 / 2.0) ** 2) and not capped


def test_allocation_caps():
    d, q = 0.01, 2.262
    v = (d / q) ** 2
    # n1 capped: n2 takes the rest of the variance budget
    assert allocation(0.03, 0.0001, d, q, 100.0, 11, 10**6, 2000)[0] > 1800
    n1, n2, capped = allocation(0.03, 0.0001, d, q, 100.0, 11, 1800, 1000)
    assert capped and n1 == 1800 and n2 == math.ceil(0.0001 / (v - 0.03 / 1800))
    # no budget left at the cap: n2 at its cap too
    n1, n2, capped = allocation(0.5, 0.0001, d, q, 1.0, 11, 1000, 300)
    assert capped and (n1, n2) == (1000, 300)
    # n2 capped
    n1, n2, capped = allocation(0.0001, 0.01, d, q, 40.0, 11, 5000, 50)
    assert capped and n2 == 50 and n1 >= 50
    # saturated: nothing varies, the minimum
    assert allocation(0.0, 0.0, d, q, 40.0, 11, 5000, 200) == (11, 11, False)


@pytest.mark.parametrize("kw", [{"half_width": 0.0}, {"s": -1.0}, {"a": math.nan}, {"cost_ratio": 0.0},
                                {"n_min": 1}, {"cap2": 5}, {"cap1": 100, "cap2": 200}])
def test_allocation_refuses_bad_arguments(kw):
    args = {"a": 0.01, "s": 0.001, "half_width": 0.01, "q": 2.0, "cost_ratio": 40.0, "n_min": 11, "cap1": 5000,
            "cap2": 200, **kw}
    with pytest.raises(ValueError):
        allocation(**args)


@pytest.mark.parametrize("u,g", [(np.zeros((3, 1)), np.zeros(4)), (np.zeros((3, 1)), np.zeros(1)),
                                 (np.zeros((3, 1)), np.array([0.0, math.nan])), (np.zeros((2, 2, 2)), np.zeros(2))])
def test_moments_refuse_bad_shapes_and_values(u, g):
    with pytest.raises(ValueError):
        moments(u, g)


def test_ratio_needs_a_positive_denominator():
    with pytest.raises(ValueError, match="denominator"):
        ratio_estimate([0.1, 0.2, 0.3], [0.0, 0.0, 0.0], [0.0, 0.0])
