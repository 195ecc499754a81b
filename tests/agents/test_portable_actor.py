"""The portable actor forward pass (src/core/mlp_forward.hpp, agents/checkpoint.py GreedyActor).

- exact: the native logits equal, bit for bit, a pure-Python run of the documented arithmetic (double accumulation,
  bias first then inputs by increasing index, one rounding to float32 per unit; activations in double from the
  portable exp/expm1 and the documented erfc, one rounding) on small random networks of every activation; a
  float32-per-operation run of the same networks does not; units whose terms cancel in one order only pin the
  order (double sums of a few float32 products are mostly exact, so random networks alone barely see it);
- accurate: the logits lie within a propagated float32 rounding bound of a float64 reference, each activation
  within one float32 ulp of mpmath's value (and the correctly rounded float32 nearly always), erfc within 5e-15;
- the greedy action is numpy's argmax of where(mask, logits, -inf): ties to the lowest index, NaN first, all masked 0;
- bad shapes, sizes and activations are one ConfigError; the observation normaliser is the per-element correctly
  rounded formula; sampling never picks a masked action and follows ``Generator.choice``'s procedure; acting needs
  no torch.
"""

from __future__ import annotations

import math
import struct
import subprocess
import sys

import numpy as np
import pytest
from kairos_gym.agents.checkpoint import ACTIVATIONS, GreedyActor, ObsNormalizer

from kairos_gym import portable_math as pm
from kairos_gym.compiled import core
from kairos_gym.errors import ConfigError

mp = pytest.importorskip("mpmath")
mp.mp.prec = 120

_c = core()
TWO_OVER_SQRT_PI = 1.12837916709551257390
ONE_OVER_SQRT_PI = 0.56418958354775628695
SQRT_HALF = 0.70710678118654752440


# ------------------------------------------------------------------------ the documented arithmetic, in Python
def _exp_minus_square(z: float) -> float:
    bits = struct.unpack("<Q", struct.pack("<d", z))[0] & ~0xFFFFFFFF
    t = struct.unpack("<d", struct.pack("<Q", bits))[0]
    return pm.exp(-(t * t)) * pm.exp((t - z) * (t + z))


def py_erfc(z: float) -> float:
    """portable_math.cpp's erfc, operation for operation (Python floats are IEEE doubles)."""
    if math.isnan(z):
        return z
    if abs(z) >= 1.0:
        a = abs(z)
        f = a
        for k in range(300, 0, -1):
            f = a + (0.5 * k) / f
        r = ONE_OVER_SQRT_PI * _exp_minus_square(a) / f
        return r if z > 0 else 2.0 - r
    z2 = z * z
    two_z2 = 2.0 * z2
    term = s = z
    for n in range(1, 40):
        term = term * two_z2 / float(2 * n + 1)
        s = s + term
    return 1.0 - TWO_OVER_SQRT_PI * pm.exp(-z2) * s


def py_activate(name: str, yf: np.float32) -> np.float32:
    y = float(yf)
    if name == "Tanh":
        t = pm.expm1(-2.0 * abs(y))
        return np.float32(math.copysign(-t / (2.0 + t), y))
    if name == "ReLU":
        return yf if y > 0 else np.float32(0.0)
    if name == "ELU":
        return yf if y > 0 else np.float32(pm.expm1(y))
    if name == "LeakyReLU":
        return yf if y > 0 else np.float32(y * 0.01)
    if name == "SiLU":
        return np.float32(y / (1.0 + pm.exp(-y)))
    if name == "GELU":
        return np.float32(y * (0.5 * py_erfc(-(y * SQRT_HALF))))
    assert name == "Sigmoid"
    return np.float32(1.0 / (1.0 + pm.exp(-y)))


def py_linear(w: np.ndarray, b: np.ndarray, x: list[np.float32], single: bool = False) -> list[np.float32]:
    """One layer: double accumulation (the design) or, ``single``, float32 rounding after every product and sum."""
    out = []
    for j in range(w.shape[0]):
        if single:
            acc32 = b[j]
            for i in range(w.shape[1]):
                acc32 = np.float32(acc32 + np.float32(w[j, i] * x[i]))
            out.append(acc32)
        else:
            acc = float(b[j])
            for i in range(w.shape[1]):
                acc = acc + float(w[j, i]) * float(x[i])
            out.append(np.float32(acc))
    return out


def py_logits(actor: GreedyActor, x: np.ndarray, single: bool = False) -> np.ndarray:
    h = [np.float32(v) for v in x]
    for w, b in actor.hidden:
        h = [py_activate(actor.activation, v) for v in py_linear(w, b, h, single)]
    return np.array(py_linear(*actor.head, h, single), dtype=np.float32)


def random_actor(rng: np.random.Generator, activation: str, n_in: int | None = None) -> GreedyActor:
    n_in = n_in or int(rng.integers(1, 24))
    widths = [int(rng.integers(1, 24)) for _ in range(int(rng.integers(0, 4)))]
    layers, fan_in = [], n_in
    for n_out in [*widths, int(rng.integers(1, 8))]:
        scale = float(rng.choice([0.05, 0.5, 2.0])) / math.sqrt(fan_in)
        layers.append((rng.normal(0, scale, (n_out, fan_in)).astype(np.float32),
                       rng.normal(0, 0.3, n_out).astype(np.float32)))
        fan_in = n_out
    return GreedyActor(layers[:-1], layers[-1], activation)


def bits(a: np.ndarray) -> np.ndarray:
    return np.asarray(a, dtype=np.float32).view(np.uint32)


# ------------------------------------------------------------------------ exact order
@pytest.mark.parametrize("activation", ACTIVATIONS)
def test_native_logits_are_the_documented_arithmetic_bit_for_bit(activation: str) -> None:
    rng = np.random.default_rng(list(ACTIVATIONS).index(activation))
    differs_single = 0
    for _ in range(25):
        actor = random_actor(rng, activation)
        for x in rng.normal(0, 2.0, (4, actor.observation_size)).astype(np.float32):
            got = actor.logits(x)
            assert got.dtype == np.float32 and got.shape == (actor.action_count,)
            assert np.array_equal(bits(got), bits(py_logits(actor, x))), (activation, x)
            differs_single += not np.array_equal(bits(got), bits(py_logits(actor, x, single=True)))
    assert differs_single > 0  # float32-per-operation arithmetic is another result: the test sees the difference


ORDER_CASES = [
    # (weights of one unit, inputs, bias, the documented result): terms that cancel only in one order
    ([2.0**30, -(2.0**30)], [2.0**30, 2.0**30], 1.0, 0.0),  # bias first: 1 + 2^60 loses the 1 (bias last: 1)
    ([1.0, 2.0**30, -(2.0**30)], [1.0, 2.0**30, 2.0**30], 0.0, 0.0),  # inputs by increasing index (reversed: 1)
]


@pytest.mark.parametrize(("w", "x", "b", "want"), ORDER_CASES)
def test_accumulation_order_bias_first_then_increasing_index(w: list[float], x: list[float], b: float,
                                                             want: float) -> None:
    actor = GreedyActor([], (np.array([w], dtype=np.float32), np.array([b], dtype=np.float32)))
    got = actor.logits(np.array(x, dtype=np.float32))
    assert got[0] == want and py_logits(actor, np.array(x, dtype=np.float32))[0] == want


def test_accumulation_is_double_not_float32() -> None:
    # 2^40 + 1 - 2^40: exact in double (1), lost in float32 (0)
    actor = GreedyActor([], (np.array([[2.0**20, 1.0, -(2.0**20)]], dtype=np.float32), np.zeros(1, np.float32)))
    x = np.array([2.0**20, 1.0, 2.0**20], dtype=np.float32)
    assert actor.logits(x)[0] == 1.0 and py_logits(actor, x, single=True)[0] == 0.0


def test_logits_rows_and_act_are_logits() -> None:
    rng = np.random.default_rng(7)
    actor = random_actor(rng, "Tanh", n_in=12)
    x = rng.normal(0, 1, (50, 12)).astype(np.float32)
    rows = np.asarray(actor._net.logits_rows(x))
    assert np.array_equal(bits(rows), bits(np.array([actor.logits(r) for r in x])))
    mask = rng.random((50, actor.action_count)) < 0.6
    for r, m in zip(x, mask, strict=True):
        assert actor.act(r, m) == int(np.argmax(np.where(m, actor.logits(r), -np.inf)))


# ------------------------------------------------------------------------ accuracy
def _reference(actor: GreedyActor, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """float64 logits (mpmath activations) and a bound on a float32 implementation's error: each unit rounded to
    float32 (relative 2^-24) after an accumulation good to n 2^-52, each activation rounded once (2^-24, on a
    double within 1e-14), errors carried through |W| and the activation's slope (at most 1.13, GELU's)."""
    u = 2.0**-24
    h, err = x.astype(np.float64), np.zeros(x.size)
    layers = [*actor.hidden, actor.head]
    for k, (w, b) in enumerate(layers):
        wd, bd = w.astype(np.float64), b.astype(np.float64)
        z = wd @ h + bd
        mag = np.abs(wd) @ np.abs(h) + np.abs(bd)
        err = np.abs(wd) @ err + u * np.abs(z) + (w.shape[1] + 1) * 2.0**-52 * mag + 1e-38
        if k == len(layers) - 1:
            return z, err
        h = np.array([_mp_activation(actor.activation, float(v)) for v in z])
        err = 1.13 * err + u * np.abs(h) + 1e-14 * np.abs(h) + 1e-38
    raise AssertionError("unreachable")


@pytest.mark.parametrize("activation", ACTIVATIONS)
def test_native_logits_within_float32_rounding_of_float64(activation: str) -> None:
    rng = np.random.default_rng(100 + list(ACTIVATIONS).index(activation))
    for _ in range(20):
        actor = random_actor(rng, activation)
        for x in rng.normal(0, 2.0, (3, actor.observation_size)).astype(np.float32):
            ref, bound = _reference(actor, x)
            got = actor.logits(x).astype(np.float64)
            assert (np.abs(got - ref) <= bound).all(), (activation, got - ref, bound)


def _activation_inputs() -> np.ndarray:
    rng = np.random.default_rng(3)
    special = [0.0, -0.0, 1e-30, -1e-30, 1e-7, -1e-7, 0.5, -0.5, 1.0, -1.0, 2.0, -2.0, 8.0, -8.0, 9.0, -9.0, 15.0,
               -15.0, 20.0, -20.0, 40.0, -40.0, 88.0, -88.0, 104.0, -104.0, 1e4, -1e4, 3e38, -3e38]
    return np.concatenate([special, rng.normal(0, 3, 3000), rng.uniform(-12, 12, 3000)]).astype(np.float32)


def _mp_activation(name: str, y: float) -> float:
    v = mp.mpf(y)
    return float({"Tanh": lambda: mp.tanh(v), "ReLU": lambda: max(v, 0), "ELU": lambda: v if v > 0 else mp.expm1(v),
                  "LeakyReLU": lambda: v if v > 0 else v * mp.mpf(0.01), "SiLU": lambda: v / (1 + mp.exp(-v)),
                  "GELU": lambda: v * mp.erfc(-v / mp.sqrt(2)) / 2, "Sigmoid": lambda: 1 / (1 + mp.exp(-v))}[name]())


@pytest.mark.parametrize("activation", ACTIVATIONS)
def test_each_activation_is_the_float32_nearest_to_the_true_value(activation: str) -> None:
    y = _activation_inputs()
    got = np.asarray(_c.mlp_activate(activation, y))
    assert got.dtype == np.float32 and got.shape == y.shape
    want = np.array([_mp_activation(activation, float(v)) for v in y])
    with np.errstate(over="ignore"):
        nearest = want.astype(np.float32)
    ulp_off = np.abs(bits(got).astype(np.int64) - bits(nearest).astype(np.int64))
    same_sign = np.signbit(got) == np.signbit(nearest)
    assert ((ulp_off <= 1) & same_sign | (got == nearest)).all(), activation  # +0 / -0 compare equal
    assert (got == nearest).mean() > 0.999, activation
    # and exactly the documented formula, value by value
    assert np.array_equal(bits(got), bits(np.array([py_activate(activation, v) for v in y], dtype=np.float32)))
    assert np.isnan(np.asarray(_c.mlp_activate(activation, np.array([np.nan], dtype=np.float32)))).all()


def test_erfc_against_mpmath() -> None:
    zs = np.concatenate([np.linspace(-6, 26.5, 6001), [0.0, 1.0, -1.0, 1 - 2**-52, -(1 - 2**-52)]])
    worst = max(abs(_c.pm_erfc(float(z)) - float(mp.erfc(z))) / float(mp.erfc(z)) for z in zs)
    assert worst < 5e-15
    assert _c.pm_erfc(40.0) == 0.0 and _c.pm_erfc(-40.0) == 2.0 and math.isnan(_c.pm_erfc(math.nan))
    assert all(_c.pm_erfc(float(z)) == py_erfc(float(z)) for z in zs[::50])


# ------------------------------------------------------------------------ the greedy action
ARGMAX_CASES = [
    ([1.0, 3.0, 3.0, 2.0], None),
    ([1.0, 3.0, 3.0, 2.0], [True, False, True, True]),
    ([5.0, 5.0, 5.0], [False, True, True]),
    ([1.0, 2.0], [False, False]),
    ([-np.inf, -np.inf, 0.0], [True, True, False]),
    ([0.0, np.nan, 7.0, np.nan], None),
    ([0.0, np.nan, 7.0], [True, False, True]),
    ([-0.0, 0.0], None),
    ([0.0, -0.0], None),
    ([np.inf, np.inf], [False, True]),
]


@pytest.mark.parametrize(("values", "mask"), ARGMAX_CASES)
def test_masked_argmax_is_numpys(values: list[float], mask: list[bool] | None) -> None:
    v = np.array(values, dtype=np.float32)
    m = None if mask is None else np.array(mask, dtype=bool)
    want = int(np.argmax(v if m is None else np.where(m, v, np.float32(-np.inf))))
    assert _c.mlp_masked_argmax(v, m) == want


def test_masked_argmax_random_ties() -> None:
    rng = np.random.default_rng(11)
    for _ in range(500):
        v = rng.integers(-2, 3, 9).astype(np.float32)
        m = rng.random(9) < 0.7
        assert _c.mlp_masked_argmax(v, m) == int(np.argmax(np.where(m, v, -np.inf)))


def test_tied_logits_act_lowest_unmasked_index() -> None:
    w = np.ones((5, 3), dtype=np.float32)  # every action the same logit
    actor = GreedyActor([], (w, np.zeros(5, dtype=np.float32)), "Tanh")
    x = np.array([0.25, -1.0, 3.0], dtype=np.float32)
    assert actor.act(x) == 0
    assert actor.act(x, np.array([False, False, True, True, False])) == 2
    assert actor.act(x, np.zeros(5, dtype=bool)) == 0
    assert GreedyActor([], (w, np.zeros(5, dtype=np.float32)), maskable=False).act(x, np.eye(5, dtype=bool)[3]) == 0


# ------------------------------------------------------------------------ refusals
def _layer(o: int, i: int) -> tuple[np.ndarray, np.ndarray]:
    return np.zeros((o, i), dtype=np.float32), np.zeros(o, dtype=np.float32)


@pytest.mark.parametrize(("hidden", "head", "field"), [
    ([_layer(4, 3)], _layer(2, 5), "head weight"),
    ([_layer(4, 3), _layer(4, 3)], _layer(2, 4), "hidden[1] weight"),
    ([(np.zeros((4, 3), np.float32), np.zeros(3, np.float32))], _layer(2, 4), "hidden[0] bias"),
    ([], (np.zeros(6, np.float32), np.zeros(6, np.float32)), "head weight"),
    ([], (np.zeros((2, 3, 1), np.float32), np.zeros(2, np.float32)), "head weight"),
    ([], (np.zeros((0, 3), np.float32), np.zeros(0, np.float32)), "head weight"),
    ([_layer(4, 0)], _layer(2, 4), "hidden[0] weight"),
    ([], (np.zeros((2, 3), np.float32), np.zeros((2, 1), np.float32)), "head bias"),
])
def test_bad_shapes_are_one_config_error(hidden, head, field) -> None:
    with pytest.raises(ConfigError) as e:
        GreedyActor(hidden, head, "Tanh")
    assert e.value.where == "GreedyActor" and e.value.field == field


def test_bad_inputs_masks_and_activations_are_one_config_error() -> None:
    actor = GreedyActor([_layer(4, 3)], _layer(2, 4), "ReLU")
    with pytest.raises(ConfigError, match="3 features"):
        actor.logits(np.zeros(4, dtype=np.float32))
    with pytest.raises(ConfigError, match="3 features"):
        actor.act(np.zeros(2, dtype=np.float32))
    with pytest.raises(ConfigError, match="one per action"):
        actor.act(np.zeros(3, dtype=np.float32), np.ones(3, dtype=bool))
    with pytest.raises(ConfigError, match="activation"):
        GreedyActor([_layer(4, 3)], _layer(2, 4), "Softplus")
    assert actor.act(np.zeros((1, 3), dtype=np.float64)) == 0  # any shape of the right size, any real dtype


def test_the_core_refuses_bad_arrays_itself() -> None:
    w, b = _layer(2, 3)
    with pytest.raises(TypeError):  # no silent cast from float64
        _c.MlpActor([w.astype(np.float64)], [b], "Tanh")
    with pytest.raises(ValueError, match="bias"):
        _c.MlpActor([w], [np.zeros(3, np.float32)], "Tanh")
    with pytest.raises(ValueError, match="activation"):
        _c.MlpActor([w], [b], "tanh")
    net = _c.MlpActor([w], [b], "Tanh")
    with pytest.raises(ValueError, match="input"):
        net.logits(np.zeros(4, np.float32))
    with pytest.raises(ValueError, match="mask"):
        net.act(np.zeros(3, np.float32), np.ones(5, dtype=bool))


# ------------------------------------------------------------------------ normaliser, sampling, no torch
def test_obs_normalizer_is_the_per_element_correctly_rounded_formula() -> None:
    rng = np.random.default_rng(5)
    n = 257
    norm = ObsNormalizer(rng.normal(0, 10, n), rng.exponential(3, n) * (rng.random(n) < 0.9), 1e-8, 10.0)
    for obs in [rng.normal(0, 20, n).astype(np.float32), rng.uniform(-1e6, 1e6, n).astype(np.float32)]:
        got = norm(obs)
        want = np.array([min(max((float(o) - m) / math.sqrt(v + norm.epsilon), -10.0), 10.0)
                         for o, m, v in zip(obs, norm.mean, norm.var, strict=True)]).astype(np.float32)
        assert got.dtype == np.float32 and np.array_equal(bits(got), bits(want))


def test_sample_respects_the_mask_and_is_choices_procedure() -> None:
    rng = np.random.default_rng(9)
    actor = random_actor(rng, "Tanh", n_in=6)
    while actor.action_count < 3:
        actor = random_actor(rng, "Tanh", n_in=6)
    x = rng.normal(0, 1, 6).astype(np.float32)
    mask = np.ones(actor.action_count, dtype=bool)
    mask[1] = False
    draws = [actor.sample(x, mask, np.random.default_rng(s)) for s in range(300)]
    assert 1 not in draws and len(set(draws)) >= 2
    lg = np.where(mask, actor.logits(x), -np.inf).astype(np.float64)
    w = np.array([pm.exp(v - lg.max()) for v in lg])
    cdf = np.cumsum(w) / np.cumsum(w)[-1]
    assert draws == [int(np.searchsorted(cdf, np.random.default_rng(s).random(), side="right")) for s in range(300)]


def test_acting_needs_no_torch() -> None:
    code = ("import sys, numpy as np\n"
            "from kairos_gym.agents.registry import make_policy\n"
            "from kairos_gym.agents.runner import run_policy\n"
            "sc = {'name': 'bursty'}\n"
            "from kairos_gym.scenario import load_scenario\n"
            "sc = load_scenario('bursty').with_overrides({'workload': {'max_requests': 30}})\n"
            "out = run_policy(make_policy('ppo', sc, 0), sc, 0)\n"
            "assert out['n_completed'] == 30, out\n"
            "print('torch' in sys.modules)\n")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "False"
