"""The Workload value: invariants, immutability, window and summary."""

from __future__ import annotations

import math

import numpy as np
import pytest

from kairos_gym.errors import ConfigError
from kairos_gym.workload import Workload


def _w(t: list[float], p: list[int] | None = None, o: list[int] | None = None) -> Workload:
    n = len(t)
    return Workload(np.array(t, dtype=float), np.array(p or [10] * n), np.array(o or [5] * n), "test")


def test_arrays_are_copied_typed_and_read_only() -> None:
    t = np.array([0.0, 1.0])
    w = Workload(t, [3, 4], np.array([1.0, 2.0]), "x")
    t[0] = 99.0
    assert w.arrival_s[0] == 0.0
    assert w.prompt_tokens.dtype == np.int64 and w.output_tokens.dtype == np.int64
    with pytest.raises(ValueError):
        w.arrival_s[0] = 5.0
    with pytest.raises(AttributeError):
        w.source = "y"  # type: ignore[misc]


@pytest.mark.parametrize(("kwargs", "field"), [
    ({"arrival_s": [1.0, 0.5]}, "arrival_s[1]"),
    ({"arrival_s": [-1.0, 0.5]}, "arrival_s[0]"),
    ({"arrival_s": [0.0, math.nan]}, "arrival_s[1]"),
    ({"prompt_tokens": [1, 0]}, "prompt_tokens[1]"),
    ({"output_tokens": [-2, 1]}, "output_tokens[0]"),
    ({"output_tokens": [1, 1, 1]}, "output_tokens.shape"),
    ({"prompt_tokens": [1.5, 2.0]}, "prompt_tokens.dtype"),
])
def test_invariants_are_enforced(kwargs: dict, field: str) -> None:
    base = {"arrival_s": [0.0, 1.0], "prompt_tokens": [1, 2], "output_tokens": [1, 2], "source": "s"}
    base.update(kwargs)
    with pytest.raises(ConfigError) as exc:
        Workload(**{k: np.asarray(v) if k != "source" else v for k, v in base.items()})
    assert field in str(exc.value)


def test_window_is_half_open_and_shifts_to_window_start() -> None:
    w = _w([0.0, 1.0, 2.0, 2.0, 3.0, 5.0], p=[1, 2, 3, 4, 5, 6])
    sub = w.window(2.0, 5.0)
    assert np.array_equal(sub.arrival_s, [0.0, 0.0, 1.0])
    assert np.array_equal(sub.prompt_tokens, [3, 4, 5])
    assert sub.source == "test window=[2,5)"
    assert len(w.window(1.5, 1.9)) == 0
    assert len(w.window(0.0, math.inf)) == 6
    assert w.window(0.5, 1.5).arrival_s.tolist() == [0.5]  # shifted by start, not by first arrival
    with pytest.raises(ConfigError, match="end_s"):
        w.window(3.0, 3.0)
    with pytest.raises(ConfigError, match="start_s"):
        w.window(-1.0, 3.0)


def test_head_and_len() -> None:
    w = _w([0.0, 1.0, 2.0])
    assert len(w) == 3 and len(w.head(2)) == 2 and len(w.head(10)) == 3


def test_summary_values_on_a_known_workload() -> None:
    s = _w([0.0, 1.0, 3.0], p=[100, 200, 600], o=[1, 2, 3]).summary()
    assert s["n"] == 3 and s["span_s"] == 3.0
    assert s["rate"] == pytest.approx(2 / 3)
    assert s["iat_cv"] == pytest.approx(0.5 / 1.5)
    assert s["prompt_mean"] == 300 and s["prompt_p50"] == 200
    assert s["prompt_p99"] == pytest.approx(200 + 0.98 * 400)
    assert s["output_mean"] == 2 and s["output_p50"] == 2
    assert s["prompt_tokens_per_s"] == pytest.approx(200.0)
    assert all(isinstance(v, (int, float, str)) for v in s.values())


def test_summary_of_empty_and_single_request_is_nan_not_error() -> None:
    empty = _w([]).summary()
    assert empty["n"] == 0 and math.isnan(empty["rate"]) and math.isnan(empty["prompt_mean"])
    one = _w([2.0]).summary()
    assert one["n"] == 1 and one["span_s"] == 0.0 and math.isnan(one["rate"]) and one["prompt_mean"] == 10
