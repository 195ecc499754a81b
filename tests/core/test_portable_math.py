"""The portable exp, log, log1p, expm1, pow and cos (src/core/portable_math.hpp, kairos_gym/portable_math.py).

Accuracy against mpmath (the correctly rounded value, 200-bit arithmetic) on a dense random sample of each
documented range: every result within 1 ulp, and correctly rounded in all but a tiny fraction of cases (the design
misrounds only within ~2^-70 of a halfway point, so a sample of this size should show none). The special cases
follow C99 Annex F, checked against Python's ``math`` where it defines them. Arrays give the scalars' results.
"""

from __future__ import annotations

import math
import random
import struct

import numpy as np
import pytest

from kairos_gym import portable_math as pm

mp = pytest.importorskip("mpmath")
mp.mp.prec = 200

N = 6000  # per range; six functions x a few ranges: ~2 s


def _ordinal(x: float) -> int:
    i = struct.unpack("<q", struct.pack("<d", x))[0]
    return i if i >= 0 else -(i & 0x7FFFFFFFFFFFFFFF)


def ulps(a: float, b: float) -> int:
    """Distance in units in the last place between two finite doubles (0 when equal)."""
    return 0 if a == b else abs(_ordinal(a) - _ordinal(b))


def _check(f, ref, args: list[tuple[float, ...]]) -> tuple[int, int]:
    worst, misrounded = 0, 0
    for a in args:
        want = float(ref(*(mp.mpf(x) for x in a)))
        got = f(*a)
        u = ulps(got, want)
        worst = max(worst, u)
        misrounded += u != 0
    return worst, misrounded


rnd = random.Random(20261203)


def _logu(lo: float, hi: float, n: int = N) -> list[float]:
    """n values log-uniform in [10^lo, 10^hi]."""
    return [10.0 ** rnd.uniform(lo, hi) for _ in range(n)]


def _signed_small(n: int = N) -> list[float]:
    return [rnd.choice((-1.0, 1.0)) * 10.0 ** rnd.uniform(-20, -0.3) for _ in range(n)]


CASES = {
    "exp": (pm.exp, mp.exp, [(x,) for x in [rnd.uniform(-708, 709.7) for _ in range(N)] + _signed_small()]),
    "exp_subnormal": (pm.exp, mp.exp, [(rnd.uniform(-745.1, -708.4),) for _ in range(500)]),
    "log": (pm.log, mp.log, [(x,) for x in _logu(-307, 308) + [1.0 + rnd.uniform(-0.03, 0.03) for _ in range(N)]
                             + [5e-324 * rnd.randint(1, 1 << 40) for _ in range(500)]]),
    "log1p": (pm.log1p, mp.log1p, [(x,) for x in _signed_small() + _logu(-0.3, 300)
                                   + [rnd.uniform(-1.0, -0.9) for _ in range(500)]]),
    "expm1": (pm.expm1, mp.expm1, [(x,) for x in _signed_small() + [rnd.uniform(-40, 709.7) for _ in range(N)]]),
    "pow": (pm.pow, mp.power, [(x, y) for x, y in zip(_logu(-30, 30), [rnd.uniform(-10, 10) for _ in range(N)],
                                                       strict=True)]
            + [(rnd.uniform(0.0, 1e7), rnd.choice((1.7, 1 / 1.7, 2.2, 1 / 2.2, 0.45, 3.1))) for _ in range(N)]
            + [(rnd.uniform(0.1, 1.0), float(rnd.randint(1, 20000))) for _ in range(500)]),
    "cos": (pm.cos, mp.cos, [(x,) for x in [rnd.uniform(-8, 8) for _ in range(N)]
                             + [2.0 * math.pi * rnd.random() for _ in range(N)]
                             + [rnd.uniform(-1.6e6, 1.6e6) for _ in range(500)]]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_within_one_ulp_and_correctly_rounded(name):
    f, ref, args = CASES[name]
    worst, misrounded = _check(f, ref, args)
    assert worst <= 1, f"{name}: {worst} ulp from the correctly rounded value"
    # the design misrounds with probability ~2^-20 per call: allow 1 in 2,000 to keep the test a statement of design
    assert misrounded <= len(args) // 2000, f"{name}: {misrounded} of {len(args)} not correctly rounded"


def test_exactness_where_the_result_is_representable():
    assert pm.pow(2.0, 10.0) == 1024.0
    assert pm.pow(3.0, 4.0) == 81.0
    assert pm.pow(10.0, -2.0) == float(mp.mpf("0.01"))
    assert pm.pow(16.0, 0.5) == 4.0
    assert pm.exp(0.0) == 1.0
    assert pm.log(1.0) == 0.0
    assert pm.log(8.0) == float(mp.log(8))
    assert pm.cos(0.0) == 1.0


SPECIALS = [
    (0.0, 0.0), (-0.0, 0.0), (0.0, -1.0), (-0.0, -1.0), (-0.0, -2.0), (0.0, 3.0), (-0.0, 3.0), (-0.0, 2.5),
    (-2.0, 3.0), (-2.0, 2.0), (-2.0, -3.0), (-8.0, 1.0 / 3.0), (1.0, math.nan), (math.nan, 0.0),
    (-1.0, math.inf), (-1.0, -math.inf), (0.5, math.inf), (2.0, math.inf), (0.5, -math.inf), (2.0, -math.inf),
    (math.inf, 2.0), (math.inf, -2.0), (-math.inf, 3.0), (-math.inf, 2.0), (-math.inf, -3.0), (-math.inf, -2.0),
    (2.0, 1e308), (2.0, -1e308), (0.5, 2000.0), (1e300, 2.0), (-1e300, 3.0), (1.0 + 2**-52, 2.0**60),
    (5e-324, 0.5), (1e-300, -1.5),
]


def _math_pow(x: float, y: float) -> float:
    try:
        return math.pow(x, y)
    except OverflowError:
        return math.copysign(math.inf, x) if y == int(y) and int(y) % 2 == 1 else math.inf
    except ValueError:  # math.pow raises where C99 gives NaN or a pole
        if x == 0.0 and y < 0.0:
            odd = y == int(y) and int(y) % 2 == 1
            return math.copysign(math.inf, x) if odd else math.inf
        return math.nan


@pytest.mark.parametrize(("x", "y"), SPECIALS)
def test_pow_special_cases_follow_c99(x, y):
    got, want = pm.pow(x, y), _math_pow(x, y)
    if math.isnan(want):
        assert math.isnan(got)
    else:
        assert got == want and math.copysign(1.0, got) == math.copysign(1.0, want), (x, y, got, want)


def test_special_values_of_the_unary_functions():
    assert math.isnan(pm.log(-1.0)) and pm.log(0.0) == -math.inf and pm.log(math.inf) == math.inf
    assert pm.exp(-math.inf) == 0.0 and pm.exp(math.inf) == math.inf and pm.exp(710.0) == math.inf
    assert pm.exp(-746.0) == 0.0 and math.isnan(pm.exp(math.nan))
    assert pm.log1p(-1.0) == -math.inf and math.isnan(pm.log1p(-1.5)) and pm.log1p(1e-30) == 1e-30
    assert pm.expm1(-50.0) == -1.0 and pm.expm1(1e-30) == 1e-30 and pm.expm1(710.0) == math.inf
    assert math.isnan(pm.cos(math.inf)) and math.isnan(pm.cos(math.nan))
    assert pm.erfc(math.inf) == 0.0 and pm.erfc(-math.inf) == 2.0 and math.isnan(pm.erfc(math.nan))
    with pytest.raises(ValueError):
        pm.cos(1e7)  # outside the reduced range: refused, never a wrong answer


def test_arrays_give_the_scalars_results_and_keep_their_shape():
    x = np.random.default_rng(3).uniform(0.0, 1e4, size=(7, 11))
    for f in (pm.exp, pm.log, pm.log1p, pm.expm1, pm.cos):
        arg = x / 1e3 if f in (pm.exp, pm.expm1) else x
        got = f(arg)
        assert got.shape == arg.shape
        assert np.array_equal(got.ravel(), np.array([f(float(v)) for v in arg.ravel()]))
    got = pm.pow(x, 1.37)
    assert np.array_equal(got.ravel(), np.array([pm.pow(float(v), 1.37) for v in x.ravel()]))
    y = np.linspace(-2, 2, 11)
    got = pm.pow(x, y)  # broadcast (7, 11) with (11,)
    assert got.shape == (7, 11)
    assert got[3, 4] == pm.pow(float(x[3, 4]), float(y[4]))
    assert pm.pow(0.5, np.arange(3)).tolist() == [1.0, 0.5, 0.25]


def test_results_are_fixed_bit_patterns():
    """A few values pinned by their bits: a port to another CPU or compiler must give exactly these."""
    pinned = {
        "pow(1234.5, 2.7)": (pm.pow(1234.5, 2.7), float(mp.power(mp.mpf(1234.5), mp.mpf(2.7)))),
        "exp(-0.37)": (pm.exp(-0.37), float(mp.exp(mp.mpf(-0.37)))),
        "log1p(4095)": (pm.log1p(4095.0), float(mp.log1p(4095))),
        "cos(2pi 0.3)": (pm.cos(2.0 * math.pi * 0.3), float(mp.cos(mp.mpf(2.0 * math.pi * 0.3)))),
    }
    for name, (got, want) in pinned.items():
        assert got.hex() == want.hex(), name
