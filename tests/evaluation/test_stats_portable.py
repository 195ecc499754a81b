"""The interval statistics use basic operations and square roots only: their own atan, no libm."""

from __future__ import annotations

import ast
import math
import random
from pathlib import Path

import pytest

from kairos_gym.evaluation import stats

mp = pytest.importorskip("mpmath")


def test_atan_is_within_8_ulp_of_the_exact_value():
    mp.mp.prec = 120
    rnd = random.Random(7)
    for u in [10.0 ** rnd.uniform(-12, 12) for _ in range(5000)] + [0.0, 1.0, 0.00390625, 1e300]:
        exact = float(mp.atan(u))
        assert abs(stats.atan(u) - exact) <= 8 * math.ulp(exact), u
    assert stats.atan(math.inf) == 0.5 * math.pi
    with pytest.raises(ValueError):
        stats.atan(-1.0)


def test_t_quantiles_match_the_tables():
    # the 0.975 quantiles of Student's t (printed tables, 3 decimals)
    for df, q in {1: 12.706, 2: 4.303, 3: 3.182, 9: 2.262, 29: 2.045, 99: 1.984}.items():
        assert round(stats.t_quantile_975(df), 3) == q


def test_no_transcendental_from_math_in_the_statistics():
    """A call of math.exp/log/pow/atan/sin/cos (or ``**``) in stats.py or two_phase.py would bring back libm."""
    banned = {"exp", "log", "log1p", "expm1", "pow", "atan", "atan2", "sin", "cos", "tan", "erf", "erfc", "lgamma"}
    from kairos_gym.benchmark import two_phase

    for path in (Path(stats.__file__), Path(two_phase.__file__)):
        name = path.name
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in ("math", "np"):
                assert node.attr not in banned, f"{name}:{node.lineno}: {node.value.id}.{node.attr}"
            assert not (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow)), f"{name}:{node.lineno}: **"
