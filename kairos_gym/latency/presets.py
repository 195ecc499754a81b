"""GPU and model presets, loaded from the data files ``kairos_gym/data/{hardware,models}.yaml``.

Units: FLOP/s, bytes/s, bytes, tokens. Presets are plain data; the step-latency model turns them into
per-operator FLOP and byte counts (see :mod:`kairos_gym.latency.model`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from kairos_gym.errors import ConfigError

DATA_DIR = Path(__file__).resolve().parent.parent / "data"


@dataclass(frozen=True)
class GpuSpec:
    """One GPU: peak dense BF16 FLOP/s, HBM bytes/s, memory bytes, NVLink bytes/s per direction."""

    key: str
    name: str
    peak_flops: float
    hbm_bandwidth: float
    memory_bytes: int
    num_sms: int
    nvlink_bandwidth: float
    source: str


@dataclass(frozen=True)
class MoESpec:
    """Mixture-of-experts MLP: routed experts (top-k per token) plus always-on shared experts."""

    routed_experts: int
    experts_per_token: int
    shared_experts: int
    expert_intermediate: int
    first_dense_layers: int


@dataclass(frozen=True)
class MLASpec:
    """DeepSeek multi-head latent attention dimensions (per head unless named rank)."""

    kv_lora_rank: int
    qk_nope_head_dim: int
    qk_rope_head_dim: int
    v_head_dim: int


@dataclass(frozen=True)
class ModelSpec:
    """A decoder-only transformer. ``attention`` is ``mha``, ``gqa`` or ``mla``; ``mlp`` is ``gated`` or ``plain``."""

    key: str
    hf_id: str
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    attention: str
    intermediate: int
    mlp: str
    vocab: int
    max_context: int
    dtype_bytes: int
    moe: MoESpec | None = None
    mla: MLASpec | None = None

    @property
    def head_dim(self) -> int:
        """Per-head dimension of MHA/GQA attention (hidden / heads)."""
        return self.hidden // self.heads

    @property
    def kv_bytes_per_token(self) -> int:
        """KV-cache bytes per token for the whole model (all layers, all TP shards together).

        MHA/GQA: ``2 * layers * kv_heads * head_dim * dtype``; MLA: ``layers * (kv_lora_rank + rope_dim) * dtype``.
        """
        if self.mla is not None:
            return self.layers * (self.mla.kv_lora_rank + self.mla.qk_rope_head_dim) * self.dtype_bytes
        return 2 * self.layers * self.kv_heads * self.head_dim * self.dtype_bytes

    @property
    def mlp_matrices(self) -> int:
        """Number of hidden x intermediate matrices in one MLP (3 for gated SwiGLU, 2 for plain)."""
        return 3 if self.mlp == "gated" else 2

    def parameter_count(self) -> tuple[int, int]:
        """(total, active-per-token) parameters, embeddings and LM head included."""
        attn = self.attention_params_per_layer()
        dense_mlp = self.mlp_matrices * self.hidden * self.intermediate
        emb = 2 * self.vocab * self.hidden
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
        """(in, out) shapes of the attention projection GEMMs of one layer."""
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

    def weight_bytes(self) -> int:
        """Bytes of all weights (total parameters x dtype)."""
        return self.parameter_count()[0] * self.dtype_bytes


def _load_yaml(name: str) -> dict[str, Any]:
    with open(DATA_DIR / name, encoding="utf-8") as f:
        return yaml.safe_load(f)


@cache
def gpu_presets() -> dict[str, GpuSpec]:
    """All GPU presets by key."""
    raw = _load_yaml("hardware.yaml")["gpus"]
    out: dict[str, GpuSpec] = {}
    for k, v in raw.items():
        # PyYAML reads exponents without a sign ("312.0e12") as strings: coerce numbers explicitly.
        out[k] = GpuSpec(
            key=k,
            name=str(v["name"]),
            peak_flops=float(v["peak_flops"]),
            hbm_bandwidth=float(v["hbm_bandwidth"]),
            memory_bytes=int(v["memory_bytes"]),
            num_sms=int(v["num_sms"]),
            nvlink_bandwidth=float(v["nvlink_bandwidth"]),
            source=str(v["source"]),
        )
    return out


@cache
def model_presets() -> dict[str, ModelSpec]:
    """All model presets by key."""
    raw = _load_yaml("models.yaml")["models"]
    out: dict[str, ModelSpec] = {}
    for k, v in raw.items():
        v = dict(v)
        moe = MoESpec(**v.pop("moe")) if "moe" in v else None
        mla = MLASpec(**v.pop("mla")) if "mla" in v else None
        kv_heads = v.pop("kv_heads", v["heads"])
        out[k] = ModelSpec(key=k, kv_heads=kv_heads, moe=moe, mla=mla, **v)
    return out


def get_gpu(key: str) -> GpuSpec:
    """GPU preset by key; :class:`ConfigError` listing the valid keys otherwise."""
    presets = gpu_presets()
    if key not in presets:
        raise ConfigError("latency", "gpu", key, f"one of {sorted(presets)}")
    return presets[key]


def get_model(key: str) -> ModelSpec:
    """Model preset by key; :class:`ConfigError` listing the valid keys otherwise."""
    presets = model_presets()
    if key not in presets:
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
