"""Portable draws from a numpy ``Generator``: the same numbers on every CPU.

numpy's C samplers call libm (exp, log, log1p, expm1, pow), whose glibc variants are chosen by CPU feature, so
``rng.gamma``/``rng.lognormal``/... can differ in the last bits between machines. The functions here take the numpy
``Generator`` (PCG64, what ``np.random.default_rng(seed)`` makes), run numpy's own algorithms in the C++ core
(``src/core/samplers.cpp``: the same ziggurats, rejection loops and order of operations, with the portable
``kairos::pmath`` functions in place of libm) on the generator's PCG64 state, and write the advanced state back:
afterwards the generator is in exactly the state numpy's sampler would have left it, so draws of numpy's portable
methods (``random``, ``integers``, ``spawn``: integer arithmetic and exact scalings only) mix freely with these.

Agreement with numpy on this machine (tests/workload/test_portable_random.py counts it over 10^6 draws per
sampler and the scenario parameters): ``exponential``, ``standard_exponential``, ``gamma``, ``pareto`` and
``poisson`` are bit-identical except where glibc rounds differently from pmath. The normal ziggurat
(``standard_normal``, ``lognormal``) uses a width table computed exactly (tools/ziggurat_tables.py); numpy's table
was computed in double precision and differs by up to 8e-15 relative, so those draws differ from numpy's in the
last bits (relative difference < 1e-13), while the token counts the workload rounds them to agree.

The truncation cdfs' log, pow and erfc are :mod:`kairos_gym.portable_math`'s.

A generator with another bit generator (``PCG64DXSM``, ``MT19937``, ...) is refused with :class:`ConfigError`.
"""

from __future__ import annotations

import functools
import math
from types import ModuleType
from typing import Any

import numpy as np

from kairos_gym.errors import ConfigError

_MASK64 = (1 << 64) - 1
_EXPONENTIAL, _GAMMA, _LOGNORMAL, _PARETO, _NORMAL = 0, 1, 2, 3, 4  # src/bindings/samplers_bindings.cpp
_POISSON_LAM_MAX = 9.223372006484771e18  # numpy's bound: int64 max - 10 sqrt(int64 max)


@functools.cache
def _core() -> ModuleType:
    from kairos_gym.compiled import core

    return core()


def _pcg(rng: Any, where: str) -> tuple[np.random.PCG64, dict[str, Any], tuple[int, int, int, int]]:
    """The PCG64 bit generator of ``rng``, its state dict and (state_hi, state_lo, inc_hi, inc_lo)."""
    bg = getattr(rng, "bit_generator", None)
    if not isinstance(rng, np.random.Generator) or type(bg) is not np.random.PCG64:
        raise ConfigError(where, "rng", rng, "a numpy.random.Generator over PCG64 (np.random.default_rng(seed)); "
                          "portable draws reimplement PCG64 only")
    st = bg.state
    s, inc = st["state"]["state"], st["state"]["inc"]
    return bg, st, (s >> 64, s & _MASK64, inc >> 64, inc & _MASK64)


def _store(bg: np.random.PCG64, st: dict[str, Any], new: tuple[int, int]) -> None:
    """Write the advanced 128-bit state back (increment and the buffered 32-bit half unchanged)."""
    st["state"]["state"] = (new[0] << 64) | new[1]
    bg.state = st


def _params(size: int | tuple[int, ...] | None, *params: Any) -> tuple[tuple[int, ...], list[np.ndarray], bool]:
    """(output shape, each parameter as a 1-d float64 array of length 1 or the output size, scalar result?)."""
    arrs = [np.asarray(p, dtype=np.float64) for p in params]
    bshape = np.broadcast_shapes(*(a.shape for a in arrs))
    shape = bshape if size is None else ((size,) if isinstance(size, (int, np.integer)) else tuple(size))
    if size is not None and np.broadcast_shapes(bshape, shape) != shape:
        raise ValueError(f"parameter shape {bshape} does not broadcast to size {shape}")
    flat = [a.reshape(1) if a.ndim == 0 else np.ascontiguousarray(np.broadcast_to(a, shape)).reshape(-1)
            for a in arrs]
    return shape, flat, size is None and all(a.ndim == 0 for a in arrs)


def _check(name: str, a: np.ndarray, low: float, strict: bool = False) -> None:
    """numpy's parameter checks: finite-or-inf numbers >= low (> low when strict), no NaN."""
    bad = np.isnan(a) | ((a <= low) if strict else (a < low))
    if bad.any():
        raise ValueError(f"{name} {'<=' if strict else '<'} {low:g} or NaN")


def _fill(rng: Any, where: str, kind: int, size: Any, a: Any, b: Any = 0.0) -> Any:
    bg, st, (sh, sl, ih, il) = _pcg(rng, where)
    shape, (pa, pb), scalar = _params(size, a, b)
    n = math.prod(shape)
    out = np.empty(n, dtype=np.float64)
    _store(bg, st, _core().pcg_fill(kind, sh, sl, ih, il, pa, pb, out))
    return float(out[0]) if scalar else out.reshape(shape)


def exponential(rng: np.random.Generator, scale: Any = 1.0, size: Any = None) -> Any:
    """``rng.exponential(scale, size)``, portable (scale >= 0; array scales broadcast like numpy's)."""
    _check("scale", np.asarray(scale, dtype=np.float64), 0.0)
    return _fill(rng, "portable_random.exponential", _EXPONENTIAL, size, scale)


def standard_exponential(rng: np.random.Generator) -> float:
    """``float(rng.standard_exponential())``, portable (numpy's default ziggurat method)."""
    return float(_fill(rng, "portable_random.standard_exponential", _EXPONENTIAL, None, 1.0))


def standard_normal(rng: np.random.Generator, size: Any = None) -> Any:
    """``rng.standard_normal(size)``, portable (see the module docstring for the agreement with numpy)."""
    return _fill(rng, "portable_random.standard_normal", _NORMAL, size, 0.0)


def gamma(rng: np.random.Generator, shape: Any, scale: Any = 1.0, size: Any = None) -> Any:
    """``rng.gamma(shape, scale, size)``, portable (shape >= 0, scale >= 0)."""
    _check("shape", np.asarray(shape, dtype=np.float64), 0.0)
    _check("scale", np.asarray(scale, dtype=np.float64), 0.0)
    return _fill(rng, "portable_random.gamma", _GAMMA, size, shape, scale)


def lognormal(rng: np.random.Generator, mean: Any = 0.0, sigma: Any = 1.0, size: Any = None) -> Any:
    """``rng.lognormal(mean, sigma, size)``, portable (sigma >= 0)."""
    _check("sigma", np.asarray(sigma, dtype=np.float64), 0.0)
    return _fill(rng, "portable_random.lognormal", _LOGNORMAL, size, mean, sigma)


def pareto(rng: np.random.Generator, a: Any, size: Any = None) -> Any:
    """``rng.pareto(a, size)`` (Lomax: ``expm1(E / a)``), portable (a > 0)."""
    _check("a", np.asarray(a, dtype=np.float64), 0.0, strict=True)
    return _fill(rng, "portable_random.pareto", _PARETO, size, a)


def poisson(rng: np.random.Generator, lam: Any = 1.0, size: Any = None) -> Any:
    """``rng.poisson(lam, size)`` (int64), portable (0 <= lam <= about 9.2e18)."""
    bg, st, (sh, sl, ih, il) = _pcg(rng, "portable_random.poisson")
    shape, (pl,), scalar = _params(size, lam)
    if np.isnan(pl).any() or (pl < 0).any() or (pl > _POISSON_LAM_MAX).any():
        raise ValueError(f"lam < 0, lam > {_POISSON_LAM_MAX:g} or lam is NaN")
    out = np.empty(math.prod(shape), dtype=np.int64)
    _store(bg, st, _core().pcg_poisson(sh, sl, ih, il, pl, out))
    return int(out[0]) if scalar else out.reshape(shape)
