"""Model presets declare their architecture; the step-latency model charges only what it has."""

from __future__ import annotations

import copy
import math
from dataclasses import replace

import pytest

from kairos_gym.errors import ConfigError
from kairos_gym.latency import StepLatencyModel, get_gpu, get_model, model_presets
from kairos_gym.latency.presets import DATA_DIR, parse_gpu, parse_model
from kairos_gym.yaml_io import load_yaml_file

A100 = get_gpu("a100-80gb")

# From each model's Hugging Face config.json (and modeling code): attention, position, mlp, activation,
# norm, linear biases, tie_word_embeddings, num_key_value_heads, sliding_window.
REAL = {
    "deepseek-v2-lite": ("mla", "rope", "gated", "silu", "rmsnorm", False, False, 16, None),
    "llama-2-7b": ("mha", "rope", "gated", "silu", "rmsnorm", False, False, 32, None),
    "llama-2-13b": ("mha", "rope", "gated", "silu", "rmsnorm", False, False, 40, None),
    "llama-2-70b": ("gqa", "rope", "gated", "silu", "rmsnorm", False, False, 8, None),
    "llama-3-8b": ("gqa", "rope", "gated", "silu", "rmsnorm", False, False, 8, None),
    "llama-3-70b": ("gqa", "rope", "gated", "silu", "rmsnorm", False, False, 8, None),
    "mistral-7b": ("gqa", "rope", "gated", "silu", "rmsnorm", False, False, 8, 4096),
    "opt-13b": ("mha", "learned", "plain", "relu", "layernorm", True, True, 40, None),
    "opt-66b": ("mha", "learned", "plain", "relu", "layernorm", True, True, 72, None),
}
# Published parameter counts (billions): model cards / papers.
PARAMS_B = {"llama-2-7b": 6.74, "llama-2-13b": 13.02, "llama-2-70b": 68.98, "llama-3-8b": 8.03,
            "llama-3-70b": 70.55, "mistral-7b": 7.24, "opt-13b": 12.85, "opt-66b": 65.7, "deepseek-v2-lite": 15.7}
OPT = ("opt-13b", "opt-66b")
ROPE_MHA_GQA = ("llama-2-7b", "llama-2-13b", "llama-2-70b", "llama-3-8b", "llama-3-70b", "mistral-7b")


def test_every_preset_is_checked_here():
    assert set(model_presets()) == set(REAL) == set(PARAMS_B)


@pytest.mark.parametrize("key", sorted(REAL))
def test_preset_declares_its_real_architecture(key):
    m = get_model(key)
    got = (m.attention, m.position, m.mlp, m.activation, m.norm, m.bias, m.tied_embeddings, m.kv_heads,
           m.sliding_window)
    assert got == REAL[key]


@pytest.mark.parametrize("key", sorted(PARAMS_B))
def test_parameter_count_matches_published(key):
    # OPT ties its LM head to the token embedding and has a learned position table: counted once / counted.
    total, _ = get_model(key).parameter_count()
    assert abs(total / 1e9 - PARAMS_B[key]) <= 0.01 * PARAMS_B[key]


DENSE_STEP = {
    # rotary on q and k, elementwise kernels per layer, activation traffic in units of I, MLP matrices, width of the
    # first MLP GEMM in units of I
    "opt": (False, 4, 2, 2, 1),  # learned positions; two norms, activation, residual add; ReLU reads I, writes I
    "llama": (True, 5, 3, 3, 2),  # RoPE reads + writes q and k; SwiGLU reads gate and up, writes I; gate+up fused
}


@pytest.mark.parametrize(("key", "family"), [(k, "opt") for k in OPT] + [(k, "llama") for k in ROPE_MHA_GQA])
@pytest.mark.parametrize("tp", [1, 8])
def test_dense_step_charges_the_rotary_kernels_and_mlp_matrices_of_its_family(key, family, tp):
    rotary, kernels, activation, matrices, first_width = DENSE_STEP[family]
    m = StepLatencyModel(get_model(key), A100, tp)
    spec, d = m.model, m.model.dtype_bytes
    ew = m.elementwise_terms()
    assert ew.rotary == (2 * (spec.heads + spec.kv_heads) * spec.head_dim * d / tp if rotary else 0.0)
    assert ew.kernels == kernels
    assert ew.activation == activation * spec.intermediate * d / tp
    assert spec.mlp_matrices == matrices
    assert spec.mlp_gemm_shapes(spec.intermediate) == [(spec.hidden, first_width * spec.intermediate),
                                                       (spec.intermediate, spec.hidden)]


def test_deepseek_mla_moe_step_charges_decoupled_rope_and_gated_experts():
    m = StepLatencyModel.from_preset("deepseek-v2-lite")
    spec, a, e = m.model, m.model.mla, m.model.moe
    ew = m.elementwise_terms()
    assert ew.rotary == 2 * (spec.heads * (a.qk_nope_head_dim + a.qk_rope_head_dim) + a.qk_rope_head_dim) * 2
    assert ew.kernels == 5
    assert ew.activation == 3 * (e.experts_per_token + e.shared_experts) * e.expert_intermediate * 2
    # experts are gated MLPs: a plain-MLP variant has 2/3 of the expert FLOPs per token
    plain = StepLatencyModel(replace(spec, mlp="plain", activation="relu"), A100)
    f_gated = m.step_cost((), [(1024, 0)]).flops - m.step_cost((), [(1, 0)]).flops
    f_plain = plain.step_cost((), [(1024, 0)]).flops - plain.step_cost((), [(1, 0)]).flops
    expert_f = 2.0 * (e.experts_per_token + e.shared_experts) * spec.hidden * e.expert_intermediate * 1023
    dense_f = 2.0 * spec.hidden * spec.intermediate * 1023 * e.first_dense_layers
    assert math.isclose(f_gated - f_plain, (spec.layers - e.first_dense_layers) * expert_f + dense_f, rel_tol=1e-12)


@pytest.mark.parametrize("key,tokens", [("opt-13b", 2048), ("opt-66b", 512), ("llama-2-7b", 2048)])
def test_rotary_traffic_follows_the_declared_position(key, tokens):
    # The same model with and without RoPE differs by exactly the rotary kernel: its bytes and its launch.
    spec = get_model(key)
    rope = replace(spec, position="rope")
    learned = replace(spec, position="learned")
    t_rope = StepLatencyModel(rope, A100).prefill_time(tokens)
    t_learned = StepLatencyModel(learned, A100).prefill_time(tokens)
    cal = StepLatencyModel(spec, A100).cal
    rot_bytes = 2 * (spec.heads + spec.kv_heads) * spec.head_dim * spec.dtype_bytes
    want = (tokens * rot_bytes * spec.layers / (A100.hbm_bandwidth * cal.elementwise_memory_eff)
            + spec.layers * cal.elementwise_kernel_s)
    assert math.isclose(t_rope - t_learned, want, rel_tol=1e-9)
    alibi = StepLatencyModel(replace(spec, position="alibi"), A100).prefill_time(tokens)
    assert alibi == t_learned  # ALiBi is a bias inside the attention kernel: no extra traffic


def test_activation_traffic_follows_the_mlp_kind():
    # plain vs gated at the same width: the activation reads I instead of 2I
    spec = get_model("opt-13b")
    plain = StepLatencyModel(spec, A100).elementwise_terms()
    gated = StepLatencyModel(replace(spec, mlp="gated"), A100).elementwise_terms()
    assert gated.activation - plain.activation == spec.intermediate * spec.dtype_bytes
    assert (gated.norms, gated.residual, gated.rotary) == (plain.norms, plain.residual, plain.rotary)


def test_opt_2048_prefill_is_cheaper_than_with_rope_and_swiglu_traffic():
    # The figure: charging rotary and a gated activation to OPT cost ~2% of a 2,048-token prefill.
    spec = get_model("opt-13b")
    own = StepLatencyModel(spec, A100).prefill_time(2048)
    old_ew = StepLatencyModel(replace(spec, position="rope"), A100)
    extra_act = 2048 * spec.intermediate * spec.dtype_bytes * spec.layers / (
        A100.hbm_bandwidth * old_ew.cal.elementwise_memory_eff)
    old = old_ew.prefill_time(2048) + extra_act
    assert 0.015 < old / own - 1 < 0.03


def test_tied_embeddings_and_learned_positions_in_weights():
    spec = get_model("opt-13b")
    untied = replace(spec, tied_embeddings=False)
    assert untied.parameter_count()[0] - spec.parameter_count()[0] == spec.vocab * spec.hidden
    rope = replace(spec, position="rope")
    assert spec.parameter_count()[0] - rope.parameter_count()[0] == spec.max_context * spec.hidden
    # weights that take less memory leave room for more KV cache
    assert StepLatencyModel(spec, A100).kv_capacity_tokens() > StepLatencyModel(untied, A100).kv_capacity_tokens()


# ---------------------------------------------------------------------- validation of the presets
def _raw(key: str) -> dict:
    return copy.deepcopy(load_yaml_file(DATA_DIR / "models.yaml")["models"][key])


@pytest.mark.parametrize(
    "key,edit,field,allowed",
    [
        ("opt-13b", {"position": "rotary"}, "position", "['rope', 'learned', 'alibi', 'none']"),
        ("opt-13b", {"mlp": "swiglu"}, "mlp", "['gated', 'plain']"),
        ("opt-13b", {"attention": "sparse"}, "attention", "'mqa'"),
        ("opt-13b", {"activation": "tanh"}, "activation", "'relu'"),
        ("opt-13b", {"norm": "batchnorm"}, "norm", "'layernorm'"),
        ("opt-13b", {"tied_embeddings": "yes"}, "tied_embeddings", "true or false"),
        ("opt-13b", {"bias": 1}, "bias", "true or false"),
        ("opt-13b", {"kv_heads": 8}, "kv_heads", "equal to heads"),
        ("llama-3-8b", {"kv_heads": 3}, "kv_heads", "a divisor of heads"),
        ("llama-3-8b", {"attention": "mqa"}, "kv_heads", "1 for attention: mqa"),
        ("llama-3-8b", {"kv_heads": 64}, "kv_heads", "at most heads"),
        ("llama-3-8b", {"attention": "mla"}, "mla", "an mla block"),
        ("deepseek-v2-lite", {"attention": "mha"}, "mla", "no mla block"),
        ("deepseek-v2-lite", {"position": "learned"}, "position", "decoupled RoPE"),
        ("llama-3-8b", {"layers": 0}, "layers", "[1, 1024]"),
        ("llama-3-8b", {"layers": True}, "layers", "an integer"),
        ("llama-3-8b", {"hidden": 4097}, "heads", "a divisor of hidden"),
        ("llama-3-8b", {"max_context": 1 << 25}, "max_context", "16777216"),
        ("llama-3-8b", {"dtype_bytes": 2.0}, "dtype_bytes", "[1, 2, 4]"),
        ("llama-3-8b", {"dtype_bytes": 3}, "dtype_bytes", "[1, 2, 4]"),
        ("mistral-7b", {"sliding_window": 0}, "sliding_window", "[1, 32768]"),
        ("llama-3-8b", {"rotary_dim": 64}, "rotary_dim", "one of the keys"),
    ],
)
def test_bad_model_preset_field(key, edit, field, allowed):
    raw = _raw(key)
    raw.update(edit)
    with pytest.raises(ConfigError) as e:
        parse_model(key, raw, f"models.yaml models.{key}")
    assert e.value.field == field
    assert allowed in e.value.allowed
    assert key in e.value.where


@pytest.mark.parametrize("missing", ["position", "mlp", "attention", "activation", "norm", "bias", "tied_embeddings"])
def test_architecture_must_be_declared(missing):
    raw = _raw("llama-2-7b")
    del raw[missing]
    with pytest.raises(ConfigError, match=missing) as e:
        parse_model("llama-2-7b", raw, "models.yaml models.llama-2-7b")
    assert e.value.value == "(missing)"


@pytest.mark.parametrize(
    "edit,field",
    [({"experts_per_token": 65}, "experts_per_token"), ({"first_dense_layers": 27}, "first_dense_layers"),
     ({"shared_experts": -1}, "shared_experts"), ({"gate": 1}, "gate")],
)
def test_bad_moe_block(edit, field):
    raw = _raw("deepseek-v2-lite")
    raw["moe"].update(edit)
    with pytest.raises(ConfigError) as e:
        parse_model("deepseek-v2-lite", raw, "models.yaml models.deepseek-v2-lite")
    assert e.value.field == field and "moe" in e.value.where


def test_hand_built_spec_is_checked_too():
    with pytest.raises(ConfigError, match="position"):
        replace(get_model("opt-13b"), position="RoPE")


@pytest.mark.parametrize(
    "edit,field",
    [({"peak_flops": 0}, "peak_flops"), ({"hbm_bandwidth": float("nan")}, "hbm_bandwidth"),
     ({"nvlink_bandwidth": float("inf")}, "nvlink_bandwidth"), ({"memory_bytes": -1}, "memory_bytes"),
     ({"num_sms": 1.5}, "num_sms"), ({"peak_flops": "312e12"}, "peak_flops"), ({"tflops": 1}, "tflops")],
)
def test_bad_gpu_preset_field(edit, field):
    raw = copy.deepcopy(load_yaml_file(DATA_DIR / "hardware.yaml")["gpus"]["a100-80gb"])
    raw.update(edit)
    with pytest.raises(ConfigError) as e:
        parse_gpu("a100-80gb", raw, "hardware.yaml gpus.a100-80gb")
    assert e.value.field == field and "a100-80gb" in e.value.where
