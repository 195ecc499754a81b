"""Step-latency model: API, acceptance targets, monotonicity, errors."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kairos_gym.errors import ConfigError
from kairos_gym.latency import StepLatencyModel, model_presets
from kairos_gym.latency.report import seed_target_checks, vidur_mape

M = StepLatencyModel.from_preset(model="deepseek-v2-lite", gpu="a100-80gb", tp=1)


def test_default_preset_facts():
    total, _active = M.model.parameter_count()
    assert abs(total / 1e9 - 15.7) < 0.1  # DeepSeek-V2-Lite: 15.7B parameters
    assert M.kv_bytes_per_token == 27 * 576 * 2  # MLA latent cache
    assert M.kv_capacity_tokens() > 100_000


@pytest.mark.parametrize(
    "model,expected",
    [("llama-3-8b", 128 * 1024), ("mistral-7b", 128 * 1024), ("llama-2-7b", 512 * 1024),
     ("llama-2-70b", 320 * 1024)],
)
def test_kv_bytes_gqa_aware(model, expected):
    assert StepLatencyModel.from_preset(model=model).kv_bytes_per_token == expected


@pytest.mark.parametrize("check", seed_target_checks(M), ids=lambda c: c["target"])
def test_seed_targets(check):
    assert check["ok"], check


def test_chunk_bounds_explicit():
    for b in (1, 8, 64):
        for ctx in (512, 4096):
            base = M.step_time([ctx] * b)
            assert 0.008 <= base <= 0.030
            for c in (128, 256, 512):
                for i in range(1, 6):
                    assert M.step_time([ctx] * b, [(c, (i - 1) * c)]) - base <= 0.030
            assert 0.050 <= M.step_time([ctx] * b, [(1024, 4096)]) - base <= 0.130
            assert 0.150 <= M.step_time([ctx] * b, [(2048, 8192)]) - base <= 0.300


@pytest.mark.parametrize("row", vidur_mape(), ids=lambda r: f"{r['model']}-tp{r['tp']}")
def test_vidur_linear_mape(row):
    assert row["mape_pct"] <= 15.0, row


def test_all_presets_and_tps_build():
    for key, spec in model_presets().items():
        for tp in (1, 2, 4, 8):
            if spec.heads % tp:
                continue
            m = StepLatencyModel.from_preset(model=key, tp=tp)
            t = m.step_time([1000] * 8, [(512, 0)])
            assert 0 < t < 5.0


def test_tp_speeds_up_large_prefill():
    t1 = StepLatencyModel.from_preset(model="llama-2-70b", tp=2).prefill_time(4096)
    t8 = StepLatencyModel.from_preset(model="llama-2-70b", tp=8).prefill_time(4096)
    assert t8 < t1 / 2


def test_vectorised_matches_scalar():
    ctx = [700, 1500, 3000]
    chunks = np.array([0, 128, 256, 512, 1024, 2048])
    prefix = np.array([0, 0, 256, 1024, 0, 4096])
    vec = M.price_chunks(ctx, chunks, prefix)
    for c, k, v in zip(chunks, prefix, vec, strict=True):
        s = M.step_time(ctx, [(int(c), int(k))] if c else [])
        assert math.isclose(v, s, rel_tol=1e-12)
        if c:
            fast = M.step_time_fast(3 + c, 4, sum(ctx) + 3, c * (k + (c + 1) / 2), k + c)
            assert math.isclose(fast, s, rel_tol=1e-12)


def test_empty_step_is_free_and_flops_positive():
    assert M.step_time() == 0.0
    cost = M.step_cost([100], [(256, 0)])
    assert cost.flops > 0 and 0 < cost.compute_s < cost.time_s


def test_prefill_more_compute_bound_than_decode():
    pf = M.step_cost((), [(2048, 0)])
    dec = M.step_cost([2048] * 32)
    assert pf.compute_s / pf.time_s > 0.7
    assert dec.compute_s / dec.time_s < 0.3


ints = st.integers(min_value=0, max_value=8192)


@settings(max_examples=200, deadline=None)
@given(b=st.integers(0, 64), ctx=ints, c=st.integers(0, 4096), k=ints,
       which=st.sampled_from(["b", "ctx", "c", "k"]), delta=st.integers(1, 512))
def test_step_time_positive_finite_monotone(b, ctx, c, k, which, delta):
    def t(b, ctx, c, k):
        return M.step_time([ctx] * b, [(c, k)] if c else [])

    base = t(b, ctx, c, k)
    assert math.isfinite(base) and base >= 0
    if b or c:
        assert base > 0
    bumped = {"b": (b + 1, ctx, c, k), "ctx": (b, ctx + delta, c, k), "c": (b, ctx, c + delta, k),
              "k": (b, ctx, c, k + delta)}[which]
    assert t(*bumped) >= base - 1e-15


@pytest.mark.parametrize(
    "kwargs,field",
    [({"model": "gpt-5"}, "model"), ({"gpu": "tpu"}, "gpu"), ({"tp": 3}, "tp"),
     ({"model": "opt-66b", "tp": 16}, "tp")],
)
def test_bad_preset_errors(kwargs, field):
    with pytest.raises(ValueError) as e:
        StepLatencyModel.from_preset(**kwargs)
    assert field in str(e.value) and "allowed" in str(e.value)


def test_tp_must_divide_heads():
    # 40 heads: tp=8 divides (5 per GPU); deepseek has 16 heads: all of 1,2,4,8 divide.
    with pytest.raises(ConfigError, match="tp"):
        StepLatencyModel.from_preset(model="llama-2-13b", tp=3)


@pytest.mark.parametrize("bad", [([-1], []), ([10], [(-5, 0)]), ([10], [(128, -1)]), ([10], [(1.5, 0)])])
def test_negative_lengths_rejected(bad):
    with pytest.raises(ValueError) as e:
        M.step_time(*bad)
    assert "allowed" in str(e.value)


def test_calibration_override_validated():
    with pytest.raises(ConfigError, match="nonsense"):
        StepLatencyModel.from_preset(calibration={"nonsense": 1.0})
    slow = StepLatencyModel.from_preset(calibration={"step_cpu_overhead_s": 0.01})
    assert slow.step_time([100]) > M.step_time([100])
