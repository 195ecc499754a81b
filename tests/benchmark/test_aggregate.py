"""rliable's aggregate estimators and the stratified bootstrap (kairos_gym.benchmark.aggregate), against values
computed by hand and, when scipy is installed, against scipy.stats."""

from __future__ import annotations

import numpy as np
import pytest

from kairos_gym.benchmark.aggregate import (
    aggregate_mean,
    aggregate_median,
    iqm,
    optimality_gap,
    percentile_interval,
    probability_of_improvement,
    stratified_bootstrap,
)
from kairos_gym.errors import ConfigError


def test_iqm_of_known_arrays():
    # scipy.stats.trim_mean(x, 0.25): drop floor(n/4) from each end of the sorted scores, average the rest
    assert iqm([[1.0, 2.0, 3.0, 100.0]]) == 2.5  # n=4: drop 1 and 100
    assert iqm([np.arange(10.0)]) == 4.5  # n=10: drop 2 each end -> mean(2..7)
    assert iqm([[5.0, 1.0, 3.0]]) == 3.0  # n=3: nothing dropped -> the mean
    assert iqm([[7.0]]) == 7.0
    # scores of all tasks are pooled: [1, 2] and [3..8] -> 1..8, drop 2 each end -> mean(3, 4, 5, 6)
    assert iqm([[2.0, 1.0], [8.0, 3.0, 4.0, 5.0, 6.0, 7.0]]) == 4.5
    # an outlier does not move it (the mean would be 26.5)
    assert iqm([[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 184.0]]) == 4.5


def test_mean_median_and_optimality_gap():
    assert aggregate_mean([[0.0, 1.0], [1.0, 1.0, 1.0]]) == 0.75  # mean of task means (0.5, 1), not of scores
    assert aggregate_median([[0.0], [1.0, 3.0], [5.0]]) == 2.0  # task means 0, 2, 5
    # 1 - mean(min(x, 1)) over all scores: min -> 0.5, 1, 0.9
    assert optimality_gap([[0.5, 1.5], [0.9]]) == pytest.approx(0.2, abs=1e-15)
    assert optimality_gap([[2.0, 3.0]]) == 0.0  # above the reference counts as the reference
    assert optimality_gap([[0.5]], gamma=0.5) == 0.0


def test_probability_of_improvement_ties_count_half():
    x, y = [[1.0, 2.0, 3.0]], [[1.0, 1.0, 4.0]]
    # paired, per instance: tie (1/2), win, loss -> 1.5 / 3
    assert probability_of_improvement(x, y) == 0.5
    # unpaired (rliable): all 9 pairs: x=1 vs (1, 1, 4): 1/2 + 1/2 + 0; x=2: 1 + 1 + 0; x=3: 1 + 1 + 0 -> 5/9
    assert probability_of_improvement(x, y, paired=False) == pytest.approx(5 / 9, abs=1e-15)
    assert probability_of_improvement([[2.0, 2.0]], [[2.0, 2.0]]) == 0.5  # all ties
    # averaged over tasks: task 1 all wins (1), task 2 all losses (0)
    assert probability_of_improvement([[3.0, 3.0], [0.0]], [[1.0, 2.0], [1.0]]) == 0.5
    assert probability_of_improvement(x, y) + probability_of_improvement(y, x) == 1.0


def test_paired_and_unpaired_differ_on_the_same_instances():
    # y is x shifted down a little on every instance: paired, X wins every time; unpaired, the spread between
    # instances hides it
    x = [np.array([1.0, 2.0, 3.0, 4.0])]
    y = [x[0] - 0.1]
    assert probability_of_improvement(x, y) == 1.0
    assert probability_of_improvement(x, y, paired=False) == pytest.approx(10 / 16)
    p_pt, p_lo, p_hi = stratified_bootstrap(probability_of_improvement, [x, y], reps=2000, paired=True)
    assert (p_pt, p_lo, p_hi) == (1.0, 1.0, 1.0)  # every resample keeps the pairs
    _, u_lo, u_hi = stratified_bootstrap(lambda a, b: probability_of_improvement(a, b, paired=False), [x, y],
                                         reps=2000, paired=False)
    assert u_lo < 0.62 < u_hi and u_hi - u_lo > 0.3


def test_batched_evaluation_matches_one_by_one():
    rng = np.random.default_rng(3)
    tasks = [rng.normal(size=(6, 5)), rng.normal(size=(6, 4))]
    for f in (iqm, aggregate_mean, aggregate_median, optimality_gap):
        batched = f(tasks)
        assert batched.shape == (6,)
        for b in range(6):
            assert batched[b] == pytest.approx(f([t[b] for t in tasks]), abs=1e-12), f.__name__


def test_bootstrap_is_deterministic_with_a_seed():
    rng = np.random.default_rng(2)
    tasks = [rng.normal(size=15), rng.normal(size=12)]
    a = stratified_bootstrap(iqm, [tasks], reps=5000, rng=7)
    assert a == stratified_bootstrap(iqm, [tasks], reps=5000, rng=7)
    assert a == stratified_bootstrap(iqm, [tasks], reps=5000, rng=np.random.default_rng(7))
    b = stratified_bootstrap(iqm, [tasks], reps=5000, rng=8)
    assert a[0] == b[0] == iqm(tasks) and a[1:] != b[1:]  # another seed: other resamples


def test_interval_contains_the_point_estimate():
    rng = np.random.default_rng(11)
    tasks = [rng.lognormal(size=5), rng.lognormal(size=5), rng.lognormal(size=7)]
    for f in (iqm, aggregate_mean, aggregate_median, optimality_gap):
        point, lo, hi = stratified_bootstrap(f, [tasks], reps=4000)
        assert lo <= point <= hi and lo < hi, f.__name__
    point, lo, hi = stratified_bootstrap(probability_of_improvement, [tasks, [t * 0.9 for t in tasks]], reps=4000)
    assert point == lo == hi == 1.0


def test_bootstrap_is_stratified_within_tasks():
    # task 1 is always 0, task 2 always 1: resampling within tasks never mixes them, so the mean of task means
    # is 0.5 in every resample (a bootstrap pooling instances across tasks would vary)
    tasks = [np.zeros(3), np.ones(5)]
    assert stratified_bootstrap(aggregate_mean, [tasks], reps=3000) == (0.5, 0.5, 0.5)


def test_percentile_interval_and_bad_input():
    assert percentile_interval(np.arange(101.0)) == pytest.approx((2.5, 97.5), abs=1e-12)
    with pytest.raises(ConfigError, match="reps"):
        stratified_bootstrap(iqm, [[np.ones(3)]], reps=0)
    with pytest.raises(ConfigError, match="reps"):
        stratified_bootstrap(iqm, [[np.ones(3)]], reps=10**9)  # bounded before allocation
    with pytest.raises(ConfigError, match="finite"):
        iqm([[1.0, float("nan")]])
    with pytest.raises(ConfigError, match="at least one task"):
        iqm([])
    with pytest.raises(ConfigError, match="same instances"):
        probability_of_improvement([[1.0, 2.0]], [[1.0]])
    with pytest.raises(ConfigError, match="same tasks"):
        stratified_bootstrap(probability_of_improvement, [[np.ones(2)], [np.ones(3)]], reps=10)


def test_against_scipy():
    st = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(5)
    for n in (1, 3, 4, 7, 10, 13):
        x, y = rng.normal(size=n), rng.normal(size=n + 2)
        y[:2] = x[:2]  # some ties
        assert iqm([x]) == pytest.approx(st.trim_mean(x, 0.25), abs=1e-12)
        u = st.mannwhitneyu(x, y, alternative="greater").statistic / (n * (n + 2))
        assert probability_of_improvement([x], [y], paired=False) == pytest.approx(u, abs=1e-12)
    # one task: the stratified bootstrap is the ordinary bootstrap; the percentile intervals agree within the
    # resampling noise of 50,000 resamples
    x = rng.lognormal(size=12)
    for ours, theirs in ((aggregate_mean, np.mean), (iqm, lambda a, axis=-1: st.trim_mean(a, 0.25, axis=axis))):
        _, lo, hi = stratified_bootstrap(ours, [[x]], reps=50_000)
        ref = st.bootstrap((x,), theirs, n_resamples=50_000, method="percentile", rng=np.random.default_rng(1),
                           vectorized=True).confidence_interval
        assert lo == pytest.approx(ref.low, rel=0.02) and hi == pytest.approx(ref.high, rel=0.02)
