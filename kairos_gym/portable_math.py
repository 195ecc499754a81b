"""Portable exp, log, log1p, expm1, pow, cos and erfc: the same double on every CPU.

Python's ``math`` and numpy's ufuncs call code chosen by CPU feature (glibc's FMA/AVX2 variants of ``exp``/
``log``/``pow``, numpy's AVX-512 loops), so ``x ** p`` can round differently on two machines. Every result path
of the project (the latency model and the pricer tables it compiles, the observation features, the realistic
track's noise, the workload samplers) uses these functions instead: they are the C++ core's
(``src/core/portable_math.hpp``), built from IEEE-754 basic operations only, correctly rounded except within
~2^-70 of a halfway case and always within 1 ulp of the correctly rounded value (tests/core/
test_portable_math.py checks both against mpmath on a dense sample).

Each function takes a Python float (or int) and returns a float, or takes numpy arrays (any shape; ``pow``
broadcasts its two arguments) and returns a new float64 array of the broadcast shape. Ranges: see the C++ header
(``cos`` refuses |x| > 2^20 pi/2).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from kairos_gym.compiled import core

_SCALARS = (float, int, np.floating, np.integer)


def _lib() -> Any:
    """The native core (loaded on first use, so importing the physics does not need the compiled core yet)."""
    return core()


def _array(x: Any) -> np.ndarray:
    return np.ascontiguousarray(x, dtype=np.float64)


def _unary(name: str, x: Any) -> Any:
    c = _lib()
    if isinstance(x, _SCALARS):
        return getattr(c, name)(float(x))
    a = _array(x)
    return getattr(c, name + "_array")(a.ravel()).reshape(a.shape)


def exp(x: Any) -> Any:
    """e^x."""
    return _unary("pm_exp", x)


def log(x: Any) -> Any:
    """Natural logarithm (x > 0; log 0 = -inf)."""
    return _unary("pm_log", x)


def log1p(x: Any) -> Any:
    """log(1 + x), accurate for small x."""
    return _unary("pm_log1p", x)


def expm1(x: Any) -> Any:
    """e^x - 1, accurate for small x."""
    return _unary("pm_expm1", x)


def cos(x: Any) -> Any:
    """Cosine (radians, |x| <= 2^20 pi/2)."""
    return _unary("pm_cos", x)


def erfc(x: Any) -> Any:
    """Complementary error function (within 8 ulp for normal results; see the C++ header)."""
    return _unary("pm_erfc", x)


def pow(x: Any, y: Any) -> Any:
    """x ** y (C99 rules for the special cases: pow(x, 0) = 1, pow(1, y) = 1, a negative x needs a whole y)."""
    c = _lib()
    if isinstance(x, _SCALARS) and isinstance(y, _SCALARS):
        return c.pm_pow(float(x), float(y))
    if isinstance(y, _SCALARS):
        a = _array(x)
        return c.pm_pow_array(a.ravel(), float(y)).reshape(a.shape)
    a, b = np.broadcast_arrays(_array(x), _array(y))
    return c.pm_pow_arrays(np.ascontiguousarray(a).ravel(), np.ascontiguousarray(b).ravel()).reshape(a.shape)
