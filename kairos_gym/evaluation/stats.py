"""Intervals across seeds: the mean and the half-width of a two-sided 95% Student-t interval.

Every ``±`` the command line prints (``evaluate``, ``demo``, ``sweep``, ``results``, ``compare``) is this
half-width: ``t_{0.975, n-1} * s / sqrt(n)`` over the ``n`` seeds (``s`` the sample standard deviation,
``ddof=1``). With one seed there is no interval: the half-width is NaN and prints as ``n/a``.

The t quantile is computed exactly for whole degrees of freedom (no scipy needed): the Student-t CDF has a
closed form for integer ``df`` (Abramowitz & Stegun 26.7.3 and 26.7.4), inverted by bisection. It uses only
IEEE-754 basic operations and square roots (``sin`` and ``cos`` of ``atan(u)`` are ``u / sqrt(1 + u^2)`` and
``1 / sqrt(1 + u^2)``; :func:`atan` is the project's own), so every interval printed is the same on every CPU.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

CONFIDENCE = 0.95
"""Coverage of every interval printed (two-sided)."""

INTERVAL_LABEL = "mean ± 95% t-interval over n seeds (half-width)"
"""How tables name the ``±`` figure."""


def atan(u: float) -> float:
    """arctan(u) for u >= 0 from basic operations and square roots only (portable to the bit): ``pi/2 -
    atan(1/u)`` above 1, the half-angle identity ``atan(u) = 2 atan(u / (1 + sqrt(1 + u^2)))`` until ``u < 2^-8``,
    then the series ``u - u^3/3 + u^5/5 - ...``; within 8 ulp of the exact value
    (tests/evaluation/test_stats_portable.py)."""
    if not u >= 0.0:
        raise ValueError(f"atan: u = {u!r}; allowed: a number >= 0")
    if u > 1.0:  # atan(u) = pi/2 - atan(1/u): keeps u * u below overflow
        return 0.5 * math.pi - atan(1.0 / u)
    doublings = 0
    while u >= 0.00390625:
        u = u / (1.0 + math.sqrt(1.0 + u * u))
        doublings += 1
    u2 = u * u
    total = 0.0
    for k in range(9, -1, -1):  # u^2 < 2^-16: ten terms reach 2^-160
        total = (1.0 if k % 2 == 0 else -1.0) / (2 * k + 1) + u2 * total
    return u * total * float(1 << doublings)


def _t_abs_cdf(t: float, df: int) -> float:
    """P(|T| <= t) for Student's t with ``df`` (whole number >= 1) degrees of freedom, t >= 0."""
    u = t / math.sqrt(df)
    r = math.sqrt(1.0 + u * u)
    s, c = u / r, 1.0 / r  # sin and cos of theta = atan(u)
    c2 = c * c
    if df % 2 == 1:  # A&S 26.7.3
        total = 0.0
        if df > 1:
            term = c
            total = term
            for k in range(3, df - 1, 2):  # term_k = term_{k-2} * (k-1)/k * cos^2
                term *= (k - 1) / k * c2
                total += term
        return 2.0 / math.pi * (atan(u) + s * total)
    term = 1.0  # A&S 26.7.4
    total = 1.0
    for k in range(2, df - 1, 2):  # term_k = term_{k-2} * (k-1)/k * cos^2
        term *= (k - 1) / k * c2
        total += term
    return s * total


@lru_cache(maxsize=1024)
def t_quantile_975(df: int) -> float:
    """The 0.975 quantile of Student's t with ``df`` degrees of freedom (1.96 in the normal limit).

    Exact to ~1e-12 for whole ``df`` from 1 to 100,000 (bisection on the closed-form CDF); above that the
    normal quantile 1.959964 (the difference is below 1e-5).
    """
    if isinstance(df, bool) or not isinstance(df, int) or df < 1:
        raise ValueError(f"t_quantile_975: df = {df!r}; allowed: a whole number >= 1")
    if df > 100_000:
        return 1.959963984540054
    lo, hi = 1.959, 13.0  # the quantile decreases with df from 12.706 (df 1) towards 1.95996
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        if _t_abs_cdf(mid, df) < CONFIDENCE:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-13:
            break
    return 0.5 * (lo + hi)


def finite_values(values: Iterable[Any]) -> list[float]:
    """The values that are numbers and not NaN (a run without a figure, e.g. no completed request, has None)."""
    return [float(x) for x in values if x is not None and not math.isnan(x)]


def mean_ci(values: Iterable[Any]) -> tuple[float, float]:
    """``(mean, half-width)`` of the 95% Student-t interval over ``values`` (one per seed).

    None and NaN entries are left out; no value: ``(nan, nan)``; one value: ``(value, nan)`` (no interval).
    """
    v = finite_values(values)
    n = len(v)
    if n == 0:
        return math.nan, math.nan
    m = math.fsum(v) / n
    if n == 1:
        return m, math.nan
    sd = math.sqrt(math.fsum((x - m) * (x - m) for x in v) / (n - 1))
    return m, t_quantile_975(n - 1) * sd / math.sqrt(n)


def format_ci(mean: float, half: float, mean_spec: str = ".3g", half_spec: str = ".2g", sep: str = " ± ") -> str:
    """``"3.15 ± 0.78"``; ``"3.15 ± n/a"`` without an interval (one seed); ``"n/a"`` without a mean."""
    if math.isnan(mean):
        return "n/a"
    return f"{mean:{mean_spec}}{sep}{'n/a' if math.isnan(half) else format(half, half_spec)}"


def nan_to_none(x: float) -> float | None:
    """For JSON: NaN (no interval) becomes null."""
    return None if isinstance(x, float) and math.isnan(x) else x
