"""Public StepLatencyModel methods refuse bad token counts, batch sizes and fractions with one ConfigError."""

from __future__ import annotations

import math

import numpy as np
import pytest

from kairos_gym.errors import ConfigError
from kairos_gym.latency import StepLatencyModel
from kairos_gym.latency.model import MAX_CANDIDATES, MAX_PAIRS, MAX_SEQS, MAX_TOKENS
from kairos_gym.latency.pricing import ChunkPricer

M = StepLatencyModel.from_preset()
GOOD = (1000.0, 9.0, 8000.0, 512 * (1024 + 256.5), 1536.0)
ARGS = ("n_tokens", "n_seqs", "dec_pairs", "pf_pairs", "kv_read_tokens")
NAN, INF = float("nan"), float("inf")


@pytest.mark.parametrize("i", range(5), ids=ARGS)
@pytest.mark.parametrize("bad", [-1.0, -5, NAN, INF, MAX_PAIRS * 2, "10", None, np.array([1.0, 2.0])])
def test_step_time_fast_refuses_bad_aggregates(i, bad):
    # was: a complex number for negative tokens
    args = list(GOOD)
    args[i] = bad
    with pytest.raises(ConfigError) as e:
        M.step_time_fast(*args)
    assert e.value.field == ARGS[i] and e.value.where == "step_time_fast"


@pytest.mark.parametrize("i,bound", [(0, MAX_TOKENS), (1, MAX_SEQS)], ids=["n_tokens", "n_seqs"])
def test_step_time_fast_bounds(i, bound):
    args = list(GOOD)
    args[i] = float(bound)
    assert math.isfinite(M.step_time_fast(*args))
    args[i] = float(bound + 1)
    with pytest.raises(ConfigError, match=ARGS[i]):
        M.step_time_fast(*args)


def test_step_time_fast_valid_is_a_float():
    t = M.step_time_fast(*GOOD)
    assert isinstance(t, float) and t > 0
    assert M.step_time_fast(*(np.float64(x) for x in GOOD)) == t
    assert M.step_time_fast(1000, 9, 8000, 512 * (1024 + 256.5), 1536) == t


@pytest.mark.parametrize("i", range(5), ids=ARGS)
def test_step_cost_agg_refuses_negative_entries(i):
    args: list = [np.array([10.0, 20.0])] * 5
    args[i] = np.array([10.0, -1.0])
    with pytest.raises(ConfigError, match=ARGS[i]):
        M.step_cost_agg(*args)
    args[i] = np.array([10.0, np.nan])
    with pytest.raises(ConfigError, match=ARGS[i]):
        M.step_cost_agg(*args)


@pytest.mark.parametrize("bad", [-5, -0.01, 1.0, 1.5, NAN, True, "0.1"])
def test_kv_capacity_reserve_fraction(bad):
    # was: kv_capacity_tokens(-5) returned a huge positive capacity
    with pytest.raises(ConfigError) as e:
        M.kv_capacity_tokens(bad)
    assert e.value.field == "activation_reserve_frac" and "[0, 1)" in e.value.allowed


def test_kv_capacity_valid_reserves():
    assert M.kv_capacity_tokens(0) > M.kv_capacity_tokens(0.1) > M.kv_capacity_tokens(0.5) > 0
    with pytest.raises(ConfigError, match="weights fit"):  # a valid fraction that leaves no room: its own error
        M.kv_capacity_tokens(0.99)


@pytest.mark.parametrize(
    "call",
    [lambda: M.lm_head_time(-1.0), lambda: M.lm_head_cost(NAN), lambda: M.lm_head_time(MAX_SEQS + 1),
     lambda: M.prefill_attention_time(100.0, -5.0), lambda: M.prefill_attention_cost(-1.0, 10.0),
     lambda: M.prefill_attention_time(INF, 10.0)],
    ids=["lm_time_neg", "lm_cost_nan", "lm_too_many", "attn_neg_kv", "attn_cost_neg", "attn_inf"],
)
def test_term_methods_refuse_bad_values(call):
    # was: complex numbers (a negative base to the power p)
    with pytest.raises(ConfigError):
        call()


@pytest.mark.parametrize(
    "dec,chunks,field",
    [([MAX_TOKENS + 1], [], "decode_context_lens"), ([[1, 2], [3, 4]], [], "decode_context_lens"),
     (5, [], "decode_context_lens"), (["10"], [], "decode_context_lens"), ([10], [(MAX_TOKENS + 1, 0)], "chunk_tokens"),
     ([10], [(128, MAX_TOKENS + 1)], "prefix_tokens"), ([10], [(True, 0)], "chunk_tokens"),
     ([], [(MAX_TOKENS, 0), (1, 0)], "tokens in the step"), ([10], [(128,)], "prefill_chunks")],
)
def test_step_cost_bounds(dec, chunks, field):
    with pytest.raises(ConfigError) as e:
        M.step_cost(dec, chunks)
    assert e.value.field == field


def test_step_cost_counts_bounded():
    with pytest.raises(ConfigError, match="decode_context_lens"):
        M.step_cost(np.zeros(MAX_SEQS + 1, dtype=np.int64))
    with pytest.raises(ConfigError, match="prefill_chunks"):
        M.step_cost(np.zeros(MAX_SEQS, dtype=np.int64), [(1, 0)])
    # zero-token chunks count as entries too: an endless stream of them is refused, not looped over forever
    import itertools

    with pytest.raises(ConfigError, match="prefill_chunks"):
        M.step_cost((), itertools.repeat((0, 0)))


@pytest.mark.parametrize(
    "dec,chunks,prefix,field",
    [([-5], [128], 0, "decode_context_lens"), ([1.5], [128], 0, "decode_context_lens"),
     ([10], [128.5], 0, "chunk_tokens"), ([10], [-128], 0, "chunk_tokens"), ([10], [128], -1, "prefix_tokens"),
     ([10], [128, 256], [0, 0, 0], "prefix_tokens"), ([10], [[128]], 0, "chunk_tokens"),
     ([10], [True], 0, "chunk_tokens"), ([10], np.zeros(MAX_CANDIDATES + 1), 0, "chunk_tokens (size)")],
)
def test_price_chunks_bounds(dec, chunks, prefix, field):
    # was: [-5] and [1.5] contexts silently accepted (1.5 truncated to 1), fractional chunks priced
    with pytest.raises(ConfigError) as e:
        M.price_chunks(dec, chunks, prefix)
    assert e.value.field == field


@pytest.mark.parametrize("n_dec,pairs,field", [(-1.0, 10.0, "n_decode"), (2.5, 10.0, "n_decode"),
                                                (4.0, 3.0, "dec_pairs"), (4.0, NAN, "dec_pairs"),
                                                (float(MAX_SEQS + 1), 1e9, "n_decode")])
def test_price_chunks_agg_bounds(n_dec, pairs, field):
    with pytest.raises(ConfigError) as e:
        M.price_chunks_agg(n_dec, pairs, [128.0, 256.0])
    assert e.value.field == field


def test_price_chunks_valid_unchanged():
    ctx = [700, 1500]
    vec = M.price_chunks(ctx, np.array([0.0, 128.0, 512.0]), 0.0)
    assert vec[0] == M.step_time(ctx)
    assert vec[2] == M.step_time(ctx, [(512, 0)])


@pytest.mark.parametrize("bad", [-1, 1.5, np.array([64.0, -2.0]), MAX_TOKENS + 1])
def test_linear_layer_time_bounds(bad):
    llama = StepLatencyModel.from_preset("llama-2-7b")
    with pytest.raises(ConfigError, match="n_tokens"):
        llama.linear_layer_time(bad)


def test_constructor_argument_types():
    spec, gpu = M.model, M.gpu
    with pytest.raises(ConfigError, match="model"):
        StepLatencyModel("deepseek-v2-lite", gpu)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="gpu"):
        StepLatencyModel(spec, "a100-80gb")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="calibration"):
        StepLatencyModel(spec, gpu, 1, {"dense_compute_eff": 0.5})  # type: ignore[arg-type]


def test_pricer_hot_path_matches_checked_public_methods():
    # The pricer calls the unchecked kernels; they must give exactly the public (checked) numbers.
    p = ChunkPricer(M)
    assert p.attn_time(1000.0, 600.0) == M.prefill_attention_time(1000.0, 600.0)
    assert p.attn_cost(1000.0, 600.0) == M.prefill_attention_cost(1000.0, 600.0)
    assert p.base_cost(300, 4)[0] == pytest.approx(
        M.step_cost_agg(300.0, 4.0, 0.0, 0.0, 0.0)[0], rel=1e-12)
