"""Two-phase (double) sampling: the mean of an expensive quantity from a cheap one measured on many instances and
the expensive difference measured on a prefix of them (Cochran, *Sampling Techniques*, 3rd ed., 1977, ch. 12).

The use here (kairos_gym/benchmark/oracle_precision.py): the Oracle's SLO attainment ``O`` on an instance costs 2-60 s,
its base
policies' best ``M`` (the per-instance maximum of their SLO attainments) tens of ms, and ``O >= M`` on every
instance (the rollout improvement property). So ``E[O] = E[M] + E[G]`` with ``G = O - M`` is estimated by the mean
of ``M`` over ``n1`` instances plus the mean of ``G`` over the first ``n2 <= n1`` of them. ``G`` varies much less
than ``O`` (the Oracle moves with the workload as its bases do), so ``n2`` can be far below what ``O`` alone
would need.

**Estimator and its covariance** (:func:`moments`). Phase-1 variables ``u`` (``k`` columns) are observed on
instances ``0 .. n1-1``, the phase-2 variable ``g`` on instances ``0 .. n2-1``, the instances i.i.d. The
estimate is ``theta = (mean of each u column over n1, mean of g over n2)``; its covariance matrix has
``Cov(u_a, u_b) / n1`` for two phase-1 means, ``Var(g) / n2`` for the phase-2 mean and ``Cov(u_a, g) / n1``
between them (the phase-2 instances are a prefix of the phase-1 ones: ``Cov(mean_n1 u, mean_n2 g) = n2 Cov(u,
g) / (n1 n2)``). The phase-1 (co)variances are the sample ones over the ``n1`` rows, the others over the
``n2`` rows (``ddof = 1``). So ``Var(mean_n1 M + mean_n2 G) = (Var(O) - Var(G)) / n1 + Var(G) / n2``, the
textbook double-sampling variance.

**Interval** (:func:`interval`): a smooth function ``f(theta)`` (a sum, a difference, a ratio) gets the delta
method's standard error ``sqrt(grad' C grad)`` and the Student-t quantile at ``n2 - 1`` degrees of freedom
(the smaller phase's: conservative when the phase-1 term dominates). This interval is approximate (normal
theory and the delta method); unlike Stein's two-stage interval it carries no exact coverage guarantee. The
coverage is checked by simulation in tests/benchmark/test_two_phase.py.

**Allocation** (:func:`allocation`): the sizes ``n1 >= n2`` that minimise ``n1 + r n2`` (``r``: the cost of a
phase-2 instance in phase-1 instances) subject to ``A / n1 + S / n2 <= v``, with ``A = Var(O) - Var(G)``, ``S =
Var(G)`` (from a pilot) and ``v = (d / q)^2`` for a target half-width ``d`` and quantile ``q``: ``n1 = sqrt(A)
(sqrt(A) + sqrt(r S)) / v``, ``n2 = sqrt(S / r) (sqrt(A) + sqrt(r S)) / v`` (Lagrange), rounded up, then capped.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from kairos_gym.evaluation.stats import t_quantile_975


def moments(u: Sequence[Sequence[float]] | np.ndarray,
            g: Sequence[float] | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(theta, C)``: the estimate (``k`` phase-1 means, then the phase-2 mean) and its ``(k+1) x (k+1)``
    covariance matrix (module docstring). ``u``: ``n1`` rows of ``k`` phase-1 values; ``g``: the phase-2 values
    of the first ``n2`` rows, ``2 <= n2 <= n1``. ValueError for other shapes or non-finite values."""
    ua = np.asarray(u, dtype=float)
    ga = np.asarray(g, dtype=float)
    if ua.ndim == 1:
        ua = ua[:, None]
    if ua.ndim != 2 or ga.ndim != 1 or ua.shape[1] < 1:
        raise ValueError(f"two_phase.moments: u of shape {ua.shape}, g of shape {ga.shape}; allowed: u (n1, k), "
                         "g (n2,)")
    n1, k = ua.shape
    n2 = ga.shape[0]
    if not 2 <= n2 <= n1:
        raise ValueError(f"two_phase.moments: n1 = {n1}, n2 = {n2}; allowed: 2 <= n2 <= n1")
    if not (np.isfinite(ua).all() and np.isfinite(ga).all()):
        raise ValueError("two_phase.moments: a value is NaN or infinite; allowed: finite numbers")
    theta = np.append(ua.mean(axis=0), ga.mean())
    c = np.empty((k + 1, k + 1))
    c[:k, :k] = np.atleast_2d(np.cov(ua, rowvar=False, ddof=1)) / n1
    c[k, k] = float(np.var(ga, ddof=1)) / n2
    head = ua[:n2] - ua[:n2].mean(axis=0)
    cross = (head * (ga - ga.mean())[:, None]).sum(axis=0) / (n2 - 1) / n1
    c[:k, k] = cross
    c[k, :k] = cross
    return theta, c


@dataclass(frozen=True)
class Estimate:
    """A two-phase estimate: ``value``, its standard error, the t quantile's degrees of freedom and the
    half-width of the 95% interval (``t_{0.975, df} * se``)."""

    value: float
    se: float
    df: int
    half: float


def interval(value: float, grad: Sequence[float], cov: np.ndarray, n2: int) -> Estimate:
    """The delta-method interval of ``value = f(theta)`` with gradient ``grad`` at ``theta`` and covariance
    ``cov`` (:func:`moments`), t quantile at ``n2 - 1`` degrees of freedom."""
    g = np.asarray(grad, dtype=float)
    var = float(g @ cov @ g)
    se = math.sqrt(max(var, 0.0))  # a sum of squares up to rounding: a tiny negative is zero
    df = int(n2) - 1
    return Estimate(float(value), se, df, t_quantile_975(df) * se)


def sum_estimate(u: Sequence[float], g: Sequence[float]) -> Estimate:
    """``E[u + g]`` from ``u`` on ``n1`` instances and ``g`` on the first ``n2`` (the Oracle's mean: ``u = M``;
    the headroom over a policy ``P``: ``u = M - P``)."""
    theta, c = moments(np.asarray(u, dtype=float)[:, None], g)
    return interval(float(theta[0] + theta[1]), (1.0, 1.0), c, len(g))


def ratio_estimate(num: Sequence[float], den: Sequence[float], g: Sequence[float]) -> Estimate:
    """``E[num] / (E[den] + E[g])`` (a normalised score: ``num = P - B``, ``den = M - B``, ``g = O - M`` for a
    policy ``P``, the 0-anchor ``B`` and the Oracle ``O``); the denominator must be > 0 (ValueError)."""
    theta, c = moments(np.column_stack([np.asarray(num, dtype=float), np.asarray(den, dtype=float)]), g)
    a, b, h = (float(x) for x in theta)
    d = b + h
    if not d > 0:
        raise ValueError(f"two_phase.ratio_estimate: denominator estimate {d!r}; allowed: > 0")
    return interval(a / d, (1.0 / d, -a / (d * d), -a / (d * d)), c, len(g))


MIN_PHASE2 = 2
"""Smallest phase-2 size (a variance needs two values)."""


def allocation(a: float, s: float, half_width: float, q: float, cost_ratio: float, n_min: int,
               cap1: int, cap2: int) -> tuple[int, int, bool]:
    """``(n1, n2, capped)``: the cost-optimal sizes (module docstring) for ``A = a`` (clamped at 0: phase 1 then
    adds nothing and ``n1 = n2``), ``S = s``, target half-width ``half_width`` with quantile ``q``, each at least
    ``n_min`` (and ``n1 >= n2``), ``n1 <= cap1``, ``n2 <= cap2``. When ``n1`` is capped, ``n2`` is recomputed for
    the remaining variance budget; ``capped`` says a cap was hit and the target may be missed."""
    if not (half_width > 0 and q > 0 and cost_ratio > 0 and math.isfinite(a) and math.isfinite(s) and s >= 0):
        raise ValueError(f"two_phase.allocation: a={a!r}, s={s!r}, half_width={half_width!r}, q={q!r}, "
                         f"cost_ratio={cost_ratio!r}; allowed: finite, s >= 0, the rest > 0")
    if not MIN_PHASE2 <= n_min <= cap2 <= cap1:
        raise ValueError(f"two_phase.allocation: n_min={n_min}, cap2={cap2}, cap1={cap1}; allowed: "
                         f"{MIN_PHASE2} <= n_min <= cap2 <= cap1")
    a = max(a, 0.0)
    v = (half_width / q) * (half_width / q)
    k = (math.sqrt(a) + math.sqrt(cost_ratio * s)) / v
    eps = 1e-9  # a quotient that is a whole number up to rounding is not pushed one up
    n1 = max(n_min, math.ceil(math.sqrt(a) * k - eps))
    n2 = max(n_min, math.ceil(math.sqrt(s / cost_ratio) * k - eps))
    capped = False
    if n1 > cap1:
        n1, capped = cap1, True
        room = v - a / n1
        n2 = cap2 if room <= 0 else max(n_min, math.ceil(s / room - eps))
    if n2 > cap2:
        n2, capped = cap2, True
    n1 = max(n1, n2)
    return n1, n2, capped


__all__ = ["MIN_PHASE2", "Estimate", "allocation", "interval", "moments", "ratio_estimate", "sum_estimate"]
