"""GPU and model presets, loaded from the data files ``kairos_gym/data/{hardware,models}.yaml``.

Units: FLOP/s, bytes/s, bytes, tokens. Presets are plain data; the step-latency model turns them into
per-operator FLOP and byte counts (see :mod:`kairos_gym.latency.model`). Every model preset declares its
architecture (attention kind, position encoding, MLP kind, activation, norm kind, biases, tied embeddings)
and the step-latency model charges only the operators that architecture has. A spec is validated when it
is built, from the data files or by hand: a bad value raises one :class:`ConfigError` naming the preset,
the field, the value and what is allowed.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from functools import cache
from pathlib import Path
from typing import Any

from kairos_gym.errors import ConfigError, check_keys
from kairos_gym.yaml_io import load_yaml_file

DATA_DIR = Path(__file__).resolve().parent.parent / "data"

MAX_TOKENS = 1 << 24
"""Largest token count the latency model accepts anywhere (16,777,216 tokens): a model's ``max_context``, a
context, chunk or prefix length, the tokens of one step. 100x the longest preset context."""

ATTENTION_KINDS = ("mha", "gqa", "mqa", "mla")
"""``mha``: kv_heads == heads; ``gqa``: 1 < kv_heads < heads, dividing heads; ``mqa``: one KV head;
``mla``: DeepSeek multi-head latent attention (an ``mla`` block, a compressed latent KV cache)."""
POSITION_KINDS = ("rope", "learned", "alibi", "none")
"""``rope``: rotary embedding applied to q and k in every layer (an elementwise kernel, charged); ``learned``:
a position table added to the token embedding once per step (its rows are counted as weights, the add is
not charged, like the embedding lookup); ``alibi``: a bias inside the attention kernel (no extra traffic);
``none``: no position encoding."""
MLP_KINDS = ("gated", "plain")
"""``gated``: act(x W_gate) * (x W_up), then W_down: 3 matrices, the activation reads 2I and writes I;
``plain``: act(x W_up), then W_down: 2 matrices, the activation reads I and writes I."""
ACTIVATIONS = ("silu", "gelu", "relu")
"""The MLP activation (SwiGLU = gated silu, GeGLU = gated gelu). Declared; the kinds cost the same bytes."""
NORM_KINDS = ("rmsnorm", "layernorm")
"""The layer norm kind. Declared; both read and write the hidden vector once (same bytes)."""
DTYPE_BYTES = (1, 2, 4)
"""Bytes per weight/activation/KV element (FP8, BF16/FP16, FP32)."""

MODEL_INT_BOUNDS: dict[str, tuple[int, int]] = {
    "layers": (1, 1024),
    "hidden": (1, 1 << 17),
    "heads": (1, 1024),
    "kv_heads": (1, 1024),
    "intermediate": (1, 1 << 20),
    "vocab": (1, 1 << 22),
    "max_context": (1, MAX_TOKENS),
}
"""Inclusive bounds of a model preset's integer fields."""
MOE_INT_BOUNDS: dict[str, tuple[int, int]] = {
    "routed_experts": (1, 4096),
    "experts_per_token": (1, 4096),  # further: <= routed_experts
    "shared_experts": (0, 64),
    "expert_intermediate": (1, 1 << 20),
    "first_dense_layers": (0, 1023),  # further: < layers
}
"""Inclusive bounds of an ``moe`` block's fields."""
MLA_INT_BOUNDS: dict[str, tuple[int, int]] = {
    "kv_lora_rank": (1, 1 << 14),
    "qk_nope_head_dim": (1, 1024),
    "qk_rope_head_dim": (1, 1024),
    "v_head_dim": (1, 1024),
}
"""Inclusive bounds of an ``mla`` block's fields (per head, except the latent rank)."""


def _check_int(where: str, name: str, value: Any, lo: int, hi: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise ConfigError(where, name, value, f"an integer in [{lo}, {hi}]")
    return value


def _check_choice(where: str, name: str, value: Any, options: tuple[str, ...]) -> str:
    if not isinstance(value, str) or value not in options:
        raise ConfigError(where, name, value, f"one of {list(options)}")
    return value


def _check_flag(where: str, name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(where, name, value, "true or false")
    return value


def _check_positive(where: str, name: str, value: Any, hi: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not (0.0 < value <= hi):
        raise ConfigError(where, name, value, f"a finite number in (0, {hi:g}]")
    return value


@dataclass(frozen=True)
class GpuSpec:
    """One GPU: peak dense BF16 FLOP/s, HBM bytes/s, memory bytes, NVLink bytes/s per direction.

    Bounds: FLOP/s in (0, 1e18], bandwidths in (0, 1e15] bytes/s, memory 1 .. 2^44 bytes, 1 .. 100,000 SMs.
    """

    key: str
    name: str
    peak_flops: float
    hbm_bandwidth: float
    memory_bytes: int
    num_sms: int
    nvlink_bandwidth: float
    source: str

    def __post_init__(self) -> None:
        if not isinstance(self.key, str) or not self.key:
            raise ConfigError("GPU preset", "key", self.key, "a non-empty string")
        where = f"GPU preset {self.key}"
        for name in ("name", "source"):
            if not isinstance(getattr(self, name), str):
                raise ConfigError(where, name, getattr(self, name), "a string")
        _check_positive(where, "peak_flops", self.peak_flops, 1e18)
        _check_positive(where, "hbm_bandwidth", self.hbm_bandwidth, 1e15)
        _check_positive(where, "nvlink_bandwidth", self.nvlink_bandwidth, 1e15)
        _check_int(where, "memory_bytes", self.memory_bytes, 1, 1 << 44)
        _check_int(where, "num_sms", self.num_sms, 1, 100_000)


@dataclass(frozen=True)
class MoESpec:
    """Mixture-of-experts MLP: routed experts (top-k per token) plus always-on shared experts. Every expert is
    an MLP of the preset's ``mlp`` kind with ``expert_intermediate`` columns. Validated by :class:`ModelSpec`."""

    routed_experts: int
    experts_per_token: int
    shared_experts: int
    expert_intermediate: int
    first_dense_layers: int


@dataclass(frozen=True)
class MLASpec:
    """DeepSeek multi-head latent attention dimensions (per head unless named rank). The rope dimensions are
    the decoupled rotary part of q and k. Validated by :class:`ModelSpec`."""

    kv_lora_rank: int
    qk_nope_head_dim: int
    qk_rope_head_dim: int
    v_head_dim: int


@dataclass(frozen=True)
class ModelSpec:
    """A decoder-only transformer and its declared architecture.

    ``attention`` in :data:`ATTENTION_KINDS`, ``position`` in :data:`POSITION_KINDS`, ``mlp`` in
    :data:`MLP_KINDS`, ``activation`` in :data:`ACTIVATIONS`, ``norm`` in :data:`NORM_KINDS`; ``bias``: the
    linear layers have biases (declared; a bias add is fused into the GEMM, its vector is not counted);
    ``tied_embeddings``: the LM head reuses the token embedding matrix (counted once in the weights);
    ``sliding_window``: the attention window in tokens, or None (declared, not modelled: attention is charged
    over the whole context). Integer fields are bounded by :data:`MODEL_INT_BOUNDS`, the ``moe`` and ``mla``
    blocks by :data:`MOE_INT_BOUNDS` and :data:`MLA_INT_BOUNDS`.
    """

    key: str
    hf_id: str
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    attention: str
    position: str
    intermediate: int
    mlp: str
    activation: str
    norm: str
    bias: bool
    tied_embeddings: bool
    vocab: int
    max_context: int
    dtype_bytes: int
    moe: MoESpec | None = None
    mla: MLASpec | None = None
    sliding_window: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.key, str) or not self.key:
            raise ConfigError("model preset", "key", self.key, "a non-empty string")
        where = f"model preset {self.key}"
        if not isinstance(self.hf_id, str):
            raise ConfigError(where, "hf_id", self.hf_id, "a string (the Hugging Face model id)")
        for name, (lo, hi) in MODEL_INT_BOUNDS.items():
            _check_int(where, name, getattr(self, name), lo, hi)
        if isinstance(self.dtype_bytes, bool) or not isinstance(self.dtype_bytes, int) or (
                self.dtype_bytes not in DTYPE_BYTES):
            raise ConfigError(where, "dtype_bytes", self.dtype_bytes, f"one of {list(DTYPE_BYTES)}")
        _check_choice(where, "attention", self.attention, ATTENTION_KINDS)
        _check_choice(where, "position", self.position, POSITION_KINDS)
        _check_choice(where, "mlp", self.mlp, MLP_KINDS)
        _check_choice(where, "activation", self.activation, ACTIVATIONS)
        _check_choice(where, "norm", self.norm, NORM_KINDS)
        _check_flag(where, "bias", self.bias)
        _check_flag(where, "tied_embeddings", self.tied_embeddings)
        self._check_attention(where)
        if self.moe is not None:
            if not isinstance(self.moe, MoESpec):
                raise ConfigError(where, "moe", self.moe, "an MoESpec or None")
            for name, (lo, hi) in MOE_INT_BOUNDS.items():
                _check_int(f"{where} moe", name, getattr(self.moe, name), lo, hi)
            if self.moe.experts_per_token > self.moe.routed_experts:
                raise ConfigError(f"{where} moe", "experts_per_token", self.moe.experts_per_token,
                                  f"at most routed_experts ({self.moe.routed_experts})")
            if self.moe.first_dense_layers >= self.layers:
                raise ConfigError(f"{where} moe", "first_dense_layers", self.moe.first_dense_layers,
                                  f"fewer than the {self.layers} layers")
        if self.sliding_window is not None:
            _check_int(where, "sliding_window", self.sliding_window, 1, self.max_context)

    def _check_attention(self, where: str) -> None:
        a, h, kv = self.attention, self.heads, self.kv_heads
        if kv > h:
            raise ConfigError(where, "kv_heads", kv, f"at most heads ({h})")
        if a == "mla":
            if not isinstance(self.mla, MLASpec):
                raise ConfigError(where, "mla", self.mla, "an mla block (kv_lora_rank, qk_nope_head_dim, "
                                  "qk_rope_head_dim, v_head_dim) for attention: mla")
            for name, (lo, hi) in MLA_INT_BOUNDS.items():
                _check_int(f"{where} mla", name, getattr(self.mla, name), lo, hi)
            if self.position != "rope":
                raise ConfigError(where, "position", self.position, "rope for attention: mla (decoupled RoPE)")
            return
        if self.mla is not None:
            raise ConfigError(where, "mla", self.mla, f"no mla block for attention: {a}")
        if self.hidden % h:
            raise ConfigError(where, "heads", h, f"a divisor of hidden ({self.hidden}) for attention: {a}")
        if a == "mha" and kv != h:
            raise ConfigError(where, "kv_heads", kv, f"equal to heads ({h}) for attention: mha")
        if a == "mqa" and kv != 1:
            raise ConfigError(where, "kv_heads", kv, "1 for attention: mqa")
        if a == "gqa" and not (1 < kv < h and h % kv == 0):
            raise ConfigError(where, "kv_heads", kv, f"a divisor of heads ({h}) in (1, {h}) for attention: gqa")

    @property
    def head_dim(self) -> int:
        """Per-head dimension of MHA/GQA/MQA attention (hidden / heads)."""
        return self.hidden // self.heads

    @property
    def kv_bytes_per_token(self) -> int:
        """KV-cache bytes per token for the whole model (all layers, all TP shards together).

        MHA/GQA/MQA: ``2 * layers * kv_heads * head_dim * dtype``; MLA: ``layers * (kv_lora_rank + rope_dim) * dtype``.
        """
        if self.mla is not None:
            return self.layers * (self.mla.kv_lora_rank + self.mla.qk_rope_head_dim) * self.dtype_bytes
        return 2 * self.layers * self.kv_heads * self.head_dim * self.dtype_bytes

    @property
    def mlp_matrices(self) -> int:
        """Number of hidden x intermediate matrices in one MLP (3 for gated, 2 for plain)."""
        return 3 if self.mlp == "gated" else 2

    def embedding_params(self) -> int:
        """Parameters of the token embedding and LM head (one matrix when tied) plus a learned position table
        (``max_context`` rows) when ``position`` is ``learned``."""
        emb = (1 if self.tied_embeddings else 2) * self.vocab * self.hidden
        if self.position == "learned":
            emb += self.max_context * self.hidden
        return emb

    def parameter_count(self) -> tuple[int, int]:
        """(total, active-per-token) parameters of the weight matrices: attention projections, MLPs (or
        experts and router), embeddings (:meth:`embedding_params`). Norm and bias vectors (< 0.1%) are not
        counted."""
        attn = self.attention_params_per_layer()
        dense_mlp = self.mlp_matrices * self.hidden * self.intermediate
        emb = self.embedding_params()
        if self.moe is None:
            per_layer = attn + dense_mlp
            total = self.layers * per_layer + emb
            return total, total
        m = self.moe
        expert = self.mlp_matrices * self.hidden * m.expert_intermediate
        router = self.hidden * m.routed_experts
        n_moe = self.layers - m.first_dense_layers
        base = self.layers * attn + m.first_dense_layers * dense_mlp + n_moe * router + emb
        total = base + n_moe * (m.routed_experts + m.shared_experts) * expert
        active = base + n_moe * (m.experts_per_token + m.shared_experts) * expert
        return total, active

    def attention_params_per_layer(self) -> int:
        """Weights of the attention projections of one layer (parameters)."""
        return sum(k * n for k, n in self.attention_projection_shapes())

    def attention_projection_shapes(self) -> list[tuple[int, int]]:
        """(in, out) shapes of the attention projection GEMMs of one layer: MHA/GQA/MQA a fused QKV and the
        output projection; MLA q, the latent down-projection (+ decoupled rope key), its up-projection, o."""
        h = self.hidden
        if self.mla is not None:
            a = self.mla
            q = (h, self.heads * (a.qk_nope_head_dim + a.qk_rope_head_dim))
            kv_a = (h, a.kv_lora_rank + a.qk_rope_head_dim)
            kv_b = (a.kv_lora_rank, self.heads * (a.qk_nope_head_dim + a.v_head_dim))
            o = (self.heads * a.v_head_dim, h)
            return [q, kv_a, kv_b, o]
        qkv = (h, (self.heads + 2 * self.kv_heads) * self.head_dim)
        return [qkv, (self.heads * self.head_dim, h)]

    def mlp_gemm_shapes(self, intermediate: int) -> list[tuple[int, int]]:
        """(in, out) shapes of one MLP's GEMMs with ``intermediate`` columns: gated up+gate fused
        (hidden x 2I) then down (I x hidden); plain up (hidden x I) then down (I x hidden)."""
        up_n = 2 * intermediate if self.mlp == "gated" else intermediate
        return [(self.hidden, up_n), (intermediate, self.hidden)]

    def weight_bytes(self) -> int:
        """Bytes of all weights (total parameters x dtype)."""
        return self.parameter_count()[0] * self.dtype_bytes


_MODEL_KEYS = {f.name for f in fields(ModelSpec)} - {"key"}
_MODEL_OPTIONAL = {"kv_heads", "moe", "mla", "sliding_window"}
_GPU_KEYS = {f.name for f in fields(GpuSpec)} - {"key"}


def _mapping(where: str, name: str, value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ConfigError(where, name, value, "a mapping")
    return value


def _block(where: str, name: str, raw: Any, cls: type) -> Any:
    """An ``moe``/``mla`` sub-mapping with exactly the fields of ``cls``."""
    raw = _mapping(where, name, raw)
    names = [f.name for f in fields(cls)]
    check_keys(f"{where} {name}", raw, names)
    for n in names:
        if n not in raw:
            raise ConfigError(f"{where} {name}", n, "(missing)", "a value (every field is required)")
    return cls(**raw)


def _data_file(name: str, section: str) -> dict[str, Any]:
    where = f"kairos_gym/data/{name}"
    raw = _mapping(where, "(document)", load_yaml_file(DATA_DIR / name, where))
    check_keys(where, raw, ["version", section])
    return _mapping(where, section, raw.get(section))


def parse_model(key: str, raw: Any, where: str) -> ModelSpec:
    """One model preset from its data mapping; ConfigError naming ``where``, the field and the value.

    ``kv_heads`` defaults to ``heads``, ``moe``/``mla``/``sliding_window`` are optional; every other field of
    :class:`ModelSpec` is required (the architecture is declared, never assumed).
    """
    raw = dict(_mapping(where, key, raw))
    check_keys(where, raw, sorted(_MODEL_KEYS))
    for name in sorted(_MODEL_KEYS - _MODEL_OPTIONAL):
        if name not in raw:
            raise ConfigError(where, name, "(missing)", "a value (every model preset declares it)")
    if "moe" in raw:
        raw["moe"] = _block(where, "moe", raw["moe"], MoESpec)
    if "mla" in raw:
        raw["mla"] = _block(where, "mla", raw["mla"], MLASpec)
    raw.setdefault("kv_heads", raw["heads"])
    try:
        return ModelSpec(key=key, **raw)
    except ConfigError as e:  # name the data file as well as the preset
        raise ConfigError(f"{where} ({e.where})", e.field, e.value, e.allowed) from None


def parse_gpu(key: str, raw: Any, where: str) -> GpuSpec:
    """One GPU preset from its data mapping; every field of :class:`GpuSpec` is required."""
    raw = _mapping(where, key, raw)
    check_keys(where, raw, sorted(_GPU_KEYS))
    for name in sorted(_GPU_KEYS):
        if name not in raw:
            raise ConfigError(where, name, "(missing)", "a value (every GPU preset declares it)")
    try:
        return GpuSpec(key=key, **raw)
    except ConfigError as e:
        raise ConfigError(f"{where} ({e.where})", e.field, e.value, e.allowed) from None


@cache
def gpu_presets() -> dict[str, GpuSpec]:
    """All GPU presets by key (``kairos_gym/data/hardware.yaml``)."""
    raw = _data_file("hardware.yaml", "gpus")
    return {str(k): parse_gpu(str(k), v, f"kairos_gym/data/hardware.yaml gpus.{k}") for k, v in raw.items()}


@cache
def model_presets() -> dict[str, ModelSpec]:
    """All model presets by key (``kairos_gym/data/models.yaml``)."""
    raw = _data_file("models.yaml", "models")
    return {str(k): parse_model(str(k), v, f"kairos_gym/data/models.yaml models.{k}") for k, v in raw.items()}


def get_gpu(key: str) -> GpuSpec:
    """GPU preset by key; :class:`ConfigError` listing the valid keys otherwise."""
    presets = gpu_presets()
    if not isinstance(key, str) or key not in presets:
        raise ConfigError("latency", "gpu", key, f"one of {sorted(presets)}")
    return presets[key]


def get_model(key: str) -> ModelSpec:
    """Model preset by key; :class:`ConfigError` listing the valid keys otherwise."""
    presets = model_presets()
    if not isinstance(key, str) or key not in presets:
        raise ConfigError("latency", "model", key, f"one of {sorted(presets)}")
    return presets[key]


def check_tp(model: ModelSpec, tp: int) -> None:
    """Validate a tensor-parallel degree: 1, 2, 4 or 8, dividing the attention heads and KV heads
    (or a multiple of the KV heads, which are then replicated)."""
    if not isinstance(tp, int) or isinstance(tp, bool) or tp not in (1, 2, 4, 8):
        raise ConfigError("latency", "tp", tp, "one of [1, 2, 4, 8]")
    if model.heads % tp:
        raise ConfigError(
            "latency", "tp", tp, f"a divisor of {model.key}'s {model.heads} attention heads among [1, 2, 4, 8]"
        )
    if model.mla is None and model.kv_heads % tp and tp % model.kv_heads:
        raise ConfigError(
            "latency", "tp", tp, f"a divisor or multiple of {model.key}'s {model.kv_heads} KV heads"
        )
