"""The step-latency model: how long one forward step of a batch takes on one GPU node.

A step holds decode tokens (one per decoding request, each attending over its KV cache) and prefill
chunks (``chunk_tokens`` new tokens attending over ``prefix_tokens`` already cached plus themselves).
Its time is a per-operator roofline, summed over operator classes:

* dense GEMMs (attention projections, dense MLPs, router, LM head):
  ``t = (t_c^p + t_m^p)^(1/p) + t_kernel`` with ``t_c = FLOPs / (peak * e_c)`` and
  ``t_m = bytes / (bandwidth * e_m)`` (weights + activations);
* MoE experts: the same form with MoE efficiencies; the weight bytes grow with the expected number of
  distinct experts a batch of T tokens touches, ``E * (1 - (1 - k/E)^T)`` plus the shared experts;
* prefill attention over token pairs ``c * (prefix + (c+1)/2)`` and decode attention over the cached
  contexts (FLOPs and KV bytes), each with its own efficiency;
* elementwise kernels, memory-bound: two norms, the MLP activation (gated: reads 2I, writes I; plain: reads
  I, writes I), a residual add, and the rotary embedding of q and k only when the preset's ``position`` is
  ``rope`` (see :class:`ElementwiseTerms`);
* tensor parallelism: FLOPs and weight bytes sharded by ``tp`` plus two ring all-reduces per layer;
* a fixed per-step CPU overhead and a per-layer kernel-launch overhead.

Every quantity is in seconds, tokens, FLOPs and bytes. The same formulas serve every preset, and each
architecture-dependent term follows the preset's declared architecture (:class:`~kairos_gym.latency.presets.ModelSpec`):
MLP matrices (3 gated, 2 plain), activation traffic, rotary traffic (RoPE only), attention shapes (MHA/GQA/MQA
or MLA), embedding weights (tied or not, learned position table). Only the efficiencies of operator classes
are calibrated (``kairos_gym/data/calibration.yaml``).

Arithmetic: every power goes through :func:`kairos_gym.portable_math.pow` (``pw``), never Python's ``**`` or
numpy's, so the step times and the tables compiled from them are the same double on every CPU.

Input bounds: the public methods refuse, with one :class:`ConfigError`, negative, non-finite or non-integer
token counts and values above :data:`MAX_TOKENS` (a length or the tokens of a step), :data:`MAX_SEQS`
(sequences in a step), :data:`MAX_CANDIDATES` (chunks priced at once) or :data:`MAX_PAIRS` (an aggregate).
The simulator's hot path (:class:`~kairos_gym.latency.pricing.ChunkPricer`) calls the unchecked kernels
(``_cost_agg``, ``_lm_head_cost``, ``_pf_attention_time``/``_cost``) with values it built itself.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from kairos_gym.errors import ConfigError
from kairos_gym.latency.calibration import Calibration, default_calibration
from kairos_gym.latency.presets import MAX_TOKENS, GpuSpec, ModelSpec, check_tp, get_gpu, get_model
from kairos_gym.portable_math import pow as pw

__all__ = ["MAX_CANDIDATES", "MAX_PAIRS", "MAX_SEQS", "MAX_TOKENS", "ElementwiseTerms", "StepCost",
           "StepLatencyModel"]

MAX_SEQS = 1 << 16
"""Most sequences in one step (decode requests + prefill chunks): 65,536."""
MAX_CANDIDATES = 1 << 16
"""Most candidate chunks (or token counts) priced in one vectorised call: 65,536."""
MAX_PAIRS = float(1 << 50)
"""Largest aggregate accepted (decode pairs, prefill pairs, KV read tokens): 2^50, above what MAX_SEQS
sequences of MAX_TOKENS tokens can add up to."""


def p_norm(a: Any, b: Any, p: float, inv_p: float) -> Any:
    """The roofline's smooth maximum ``(a^p + b^p)^(1/p)`` of a compute time and a memory time (seconds; floats or
    arrays), ``inv_p`` = 1/p as the caller computed it, with the portable ``pow``."""
    return pw(pw(a, p) + pw(b, p), inv_p)


@dataclass(frozen=True)
class StepCost:
    """Cost of one step: wall time (s), useful FLOPs (per GPU), and the time its compute occupies at the
    kernels' achievable efficiency (s). ``compute_s / time_s`` is the step's SM-utilization proxy."""

    time_s: float
    flops: float
    compute_s: float


@dataclass(frozen=True)
class _Gemm:
    count: int  # kernels of this shape per step (e.g. one per layer)
    flops_per_token: float  # per GPU
    weight_bytes: float  # per GPU
    act_bytes_per_token: float  # per GPU


@dataclass(frozen=True)
class ElementwiseTerms:
    """Memory-bound elementwise traffic of one layer, bytes per token on each GPU, and its kernel count.

    ``norms``: two norms, each reading and writing the hidden vector (RMSNorm and LayerNorm alike);
    ``activation``: the MLP activation (gated: reads gate and up, 2I, writes I; plain: reads I, writes I; I
    is the MoE experts' total width per token on MoE presets); ``residual``: one residual add (reads 2h, writes
    h); ``rotary``: RoPE on q and k (reads and writes both), 0 unless ``position`` is ``rope``. Biases are
    fused into the GEMMs, learned or ALiBi positions add no per-layer kernel.
    """

    norms: float
    activation: float
    residual: float
    rotary: float
    kernels: int

    @property
    def total(self) -> float:
        """Bytes per token per layer of all elementwise kernels."""
        return self.norms + self.activation + self.residual + self.rotary


def _int_in(where: str, field: str, value: Any, hi: int | float, what: str = "tokens") -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or not 0 <= value <= hi:
        raise ConfigError(where, field, value, f"an integer in [0, {hi:,}] ({what})")
    return int(value)


def _real_in(where: str, field: str, value: Any, hi: float) -> None:
    """A scalar or array of finite reals in [0, hi] (NaN, inf, negatives, booleans, text refused)."""
    if isinstance(value, (float, int)) and not isinstance(value, bool):  # the common scalar case, fast
        if 0.0 <= value <= hi:
            return
        raise ConfigError(where, field, value, f"a finite number in [0, {hi:g}]")
    try:
        a = np.asarray(value)
    except Exception:
        raise ConfigError(where, field, value, f"a finite number in [0, {hi:g}] or an array of them") from None
    if a.dtype.kind not in "iuf":
        raise ConfigError(where, field, value, f"a finite number in [0, {hi:g}] or an array of them")
    if a.size > MAX_CANDIDATES:
        raise ConfigError(where, f"{field} (size)", a.size, f"at most {MAX_CANDIDATES:,} values")
    ok = (a >= 0) & (a <= hi)
    if not ok.all():
        raise ConfigError(where, field, a[~ok].flat[0], f"finite numbers in [0, {hi:g}]")


def _int_array(where: str, field: str, value: Any, hi: int) -> np.ndarray:
    """An integer-valued scalar or 1-D array (ints, or floats with integral values) in [0, hi], as float."""
    try:
        a = np.asarray(value)
    except Exception:
        raise ConfigError(where, field, value, f"integers in [0, {hi:,}] (tokens)") from None
    if a.dtype.kind not in "iuf" or a.ndim > 1:
        raise ConfigError(where, field, value, f"an integer or a 1-D array of integers in [0, {hi:,}] (tokens)")
    if a.size > MAX_CANDIDATES:
        raise ConfigError(where, f"{field} (size)", a.size, f"at most {MAX_CANDIDATES:,} values")
    f = a.astype(float)
    ok = (f >= 0) & (f <= hi) & (f == np.floor(f))
    if not ok.all():
        raise ConfigError(where, field, a[~ok].flat[0], f"integers in [0, {hi:,}] (tokens)")
    return f


def _decode_lens(where: str, value: Any) -> np.ndarray:
    """Decode context lengths: a 1-D sequence of integers in [0, MAX_TOKENS], at most MAX_SEQS of them."""
    try:
        ctx = np.asarray(value)
    except Exception:
        raise ConfigError(where, "decode_context_lens", value, "a sequence of integers >= 0 (tokens)") from None
    if ctx.ndim != 1 and ctx.size:
        raise ConfigError(where, "decode_context_lens", value, "a flat (1-D) sequence of integers (tokens)")
    if ctx.size > MAX_SEQS:
        raise ConfigError(where, "decode_context_lens (length)", ctx.size, f"at most {MAX_SEQS:,} requests")
    if ctx.size and (ctx.dtype.kind not in "iu" or int(ctx.min()) < 0 or int(ctx.max()) > MAX_TOKENS):
        bad = ctx.flat[0]
        if ctx.dtype.kind in "iuf":
            out = (ctx < 0) | (ctx > MAX_TOKENS)
            if out.any():
                bad = ctx[out].flat[0]
        raise ConfigError(where, "decode_context_lens", bad, f"integers in [0, {MAX_TOKENS:,}] (tokens)")
    return ctx.astype(np.int64, copy=False) if ctx.size else np.zeros(0, dtype=np.int64)


class StepLatencyModel:
    """Step latency of one node (a GPU, or ``tp`` GPUs in tensor parallel) for a model preset.

    Build with :meth:`from_preset`. The hot-path entry point :meth:`step_time_fast` works on batch
    aggregates (Python floats); :meth:`step_cost_agg` accepts floats or numpy arrays (vectorised pricing of
    many candidate steps). Every public method checks its inputs (see the module doc for the bounds).
    """

    def __init__(self, model: ModelSpec, gpu: GpuSpec, tp: int = 1, calibration: Calibration | None = None):
        if not isinstance(model, ModelSpec):
            raise ConfigError("latency", "model", model, "a ModelSpec (see get_model)")
        if not isinstance(gpu, GpuSpec):
            raise ConfigError("latency", "gpu", gpu, "a GpuSpec (see get_gpu)")
        if calibration is not None and not isinstance(calibration, Calibration):
            raise ConfigError("latency", "calibration", calibration, "a Calibration or None (the shipped one)")
        check_tp(model, tp)
        self.model = model
        self.gpu = gpu
        self.tp = tp
        self.cal = calibration or default_calibration()
        self._build()

    @classmethod
    def from_preset(
        cls,
        model: str = "deepseek-v2-lite",
        gpu: str = "a100-80gb",
        tp: int = 1,
        calibration: Mapping[str, float] | None = None,
    ) -> StepLatencyModel:
        """Model for a named model and GPU preset at tensor-parallel degree ``tp``.

        ``calibration`` optionally overrides calibration parameters by name (checked, see
        :mod:`kairos_gym.latency.calibration`).
        """
        return cls(get_model(model), get_gpu(gpu), tp, default_calibration().with_overrides(calibration))

    # ------------------------------------------------------------------ construction
    def elementwise_terms(self) -> ElementwiseTerms:
        """The elementwise traffic of one layer on each GPU (bytes per token) for this preset's architecture."""
        m, tp = self.model, self.tp
        d = m.dtype_bytes
        h = m.hidden
        if m.moe is not None:
            e = m.moe
            act_inter = (e.experts_per_token + e.shared_experts) * e.expert_intermediate
        else:
            act_inter = m.intermediate
        # the activation reads its input (2I gated: gate and up; I plain) and writes I
        act_rw = 3 if m.mlp == "gated" else 2
        rotary = 0.0
        if m.position == "rope":
            if m.mla is not None:
                a = m.mla
                qk_width = m.heads * (a.qk_nope_head_dim + a.qk_rope_head_dim) + a.qk_rope_head_dim
            else:
                qk_width = (m.heads + m.kv_heads) * m.head_dim
            rotary = float(d * (2 * qk_width / tp))  # read and write q and k
        return ElementwiseTerms(
            norms=float(d * (2 * 2 * h)),
            activation=float(d * (act_rw * act_inter / tp)),
            residual=float(d * (3 * h)),
            rotary=rotary,
            kernels=5 if m.position == "rope" else 4,
        )

    def _build(self) -> None:
        m, g, tp, c = self.model, self.gpu, self.tp, self.cal
        d = m.dtype_bytes
        L = m.layers
        h = m.hidden
        n_dense_mlp = L if m.moe is None else m.moe.first_dense_layers
        gemms: list[_Gemm] = []
        # Attention projections: column-parallel in, row-parallel out: each GPU holds 1/tp of every matrix.
        for k_in, n_out in m.attention_projection_shapes():
            gemms.append(_Gemm(L, 2.0 * k_in * n_out / tp, k_in * n_out * d / tp, (k_in + n_out) * d / tp))
        if n_dense_mlp:
            # gated: up+gate fused (h x 2I) and down (I x h); plain: up (h x I) and down (I x h)
            for k_in, n_out in m.mlp_gemm_shapes(m.intermediate):
                gemms.append(
                    _Gemm(n_dense_mlp, 2.0 * k_in * n_out / tp, k_in * n_out * d / tp, (k_in + n_out) * d / tp)
                )
        self._gemms = tuple(gemms)
        self._n_gemm_kernels = sum(x.count for x in gemms)
        # Aggregate dense GEMM coefficients per distinct shape for the fast path.
        self._g_count = np.array([x.count for x in gemms], dtype=float)
        self._g_f = np.array([x.flops_per_token for x in gemms])
        self._g_w = np.array([x.weight_bytes for x in gemms])
        self._g_a = np.array([x.act_bytes_per_token for x in gemms])
        # Plain Python floats for the scalar hot path (numpy scalars are ~10x slower per operation).
        self._g_tuples = tuple(
            (float(x.count), float(x.flops_per_token), float(x.weight_bytes), float(x.act_bytes_per_token))
            for x in gemms
        )
        # LM head: one row per sequence that samples (decode requests and prefill chunks).
        self._lm_f = 2.0 * h * m.vocab / tp
        self._lm_w = h * m.vocab * d / tp
        self._peak_c_dense = g.peak_flops * c.dense_compute_eff
        self._peak_m_dense = g.hbm_bandwidth * c.dense_memory_eff
        self._p = c.dense_overlap_p
        # MoE
        if m.moe is not None:
            e = m.moe
            n_moe = L - e.first_dense_layers
            expert_params = m.mlp_matrices * h * e.expert_intermediate
            self._moe_layers = n_moe
            self._moe_E = float(e.routed_experts)
            self._moe_miss = 1.0 - e.experts_per_token / e.routed_experts
            self._moe_shared = float(e.shared_experts)
            self._moe_f_tok = 2.0 * (e.experts_per_token + e.shared_experts) * expert_params / tp * n_moe
            self._moe_w_expert = expert_params * d / tp * n_moe
            # router GEMM (h x E), replicated
            self._router_f = 2.0 * h * e.routed_experts * n_moe
            self._moe_act_tok = (e.experts_per_token + e.shared_experts) * 4 * h * d / tp * n_moe
        else:
            self._moe_layers = 0
        self._peak_c_moe = g.peak_flops * c.moe_compute_eff
        self._peak_m_moe = g.hbm_bandwidth * c.moe_memory_eff
        self._p_moe = c.moe_overlap_p
        # Attention
        if m.mla is not None:
            a = m.mla
            # prefill (decompressed MLA): QK over nope+rope dims, PV over v dims, per head
            self._attn_pf_pair = 2.0 * m.heads * (a.qk_nope_head_dim + a.qk_rope_head_dim + a.v_head_dim) * L / tp
            # decode (absorbed MLA): scores over latent+rope, output over latent, per head
            self._attn_dec_pair = 2.0 * m.heads * (2 * a.kv_lora_rank + a.qk_rope_head_dim) * L / tp
            self._kv_gpu = float(m.kv_bytes_per_token)  # the latent cache is replicated on every TP rank
            e_pf = c.attention_prefill_eff_mla
        else:
            hd = m.head_dim
            self._attn_pf_pair = 4.0 * m.heads * hd * L / tp
            self._attn_dec_pair = 4.0 * m.heads * hd * L / tp
            kv_per_gpu = max(1, m.kv_heads // tp)
            self._kv_gpu = float(2 * L * kv_per_gpu * hd * d)
            e_pf = c.attention_prefill_eff_mha
        self._peak_c_attn_pf = g.peak_flops * e_pf
        self._peak_c_attn_dec = g.peak_flops * c.attention_decode_compute_eff
        self._peak_m_attn = g.hbm_bandwidth * c.attention_decode_memory_eff
        # Elementwise: norms, activation, residual add, and rotary only for RoPE presets (ElementwiseTerms).
        ew = self.elementwise_terms()
        self._ew_kernels = ew.kernels
        self._ew_tok = ew.total * L / (g.hbm_bandwidth * c.elementwise_memory_eff)
        self._ew_fixed = ew.kernels * L * c.elementwise_kernel_s
        # Tensor-parallel all-reduce: 2 per layer of T x h activations, ring algorithm over NVLink.
        if tp > 1:
            self._ar_fixed = 2 * L * c.allreduce_latency_s
            self._ar_tok = 2 * L * (2.0 * (tp - 1) / tp) * h * d / (g.nvlink_bandwidth * c.allreduce_bus_eff)
        else:
            self._ar_fixed = 0.0
            self._ar_tok = 0.0
        self._fixed = (
            c.step_cpu_overhead_s
            + L * c.layer_launch_overhead_s
            + self._n_gemm_kernels * c.gemm_kernel_s
            + self._ew_fixed
            + self._ar_fixed
            + (self._moe_layers * 3 * c.gemm_kernel_s)
        )

        # Fast-path constants: FLOPs or bytes already divided by the achievable rate (s per unit).
        pc, pmd = self._peak_c_dense, self._peak_m_dense
        self._inv_p = 1.0 / self._p
        self._fast_gemms = tuple((cnt, f / pc, w / pmd, a / pmd) for cnt, f, w, a in self._g_tuples)
        self._lm_fc = self._lm_f / pc
        self._lm_wm = self._lm_w / pmd
        self._inv_p_moe = 1.0 / self._p_moe
        if self._moe_layers:
            self._moe_fc = (self._moe_f_tok + self._router_f) / self._peak_c_moe
            self._moe_wm = self._moe_w_expert / self._peak_m_moe
            self._moe_am = self._moe_act_tok / self._peak_m_moe
        self._apf_c = self._attn_pf_pair / self._peak_c_attn_pf
        self._adec_c = self._attn_dec_pair / self._peak_c_attn_dec
        self._kv_m = self._kv_gpu / self._peak_m_attn
        self._ew_ar_tok = self._ew_tok + self._ar_tok

    # ------------------------------------------------------------------ properties
    @property
    def kv_bytes_per_token(self) -> int:
        """KV-cache bytes per token of the whole model (what a P->D transfer moves per token)."""
        return self.model.kv_bytes_per_token

    @property
    def kv_bytes_per_token_per_gpu(self) -> float:
        """KV-cache bytes per token held on each GPU of the node (MLA latents are replicated under TP)."""
        return self._kv_gpu

    def kv_capacity_tokens(self, activation_reserve_frac: float = 0.1) -> int:
        """Tokens of KV cache that fit on each GPU: memory - weights/tp - reserve, the reserve being a fraction
        of memory in [0, 1) kept for activations (ConfigError otherwise, or when the weights do not fit)."""
        f = activation_reserve_frac
        if isinstance(f, bool) or not isinstance(f, (int, float)) or not 0.0 <= f < 1.0:
            raise ConfigError("latency", "activation_reserve_frac", f, "a fraction of GPU memory in [0, 1)")
        free = self.gpu.memory_bytes * (1.0 - activation_reserve_frac) - self.model.weight_bytes() / self.tp
        if free <= 0:
            raise ConfigError(
                "latency", "model/gpu/tp", f"{self.model.key}/{self.gpu.key}/tp{self.tp}",
                "a combination whose weights fit in GPU memory (raise tp or pick a larger GPU)",
            )
        return int(free // self._kv_gpu)

    # ------------------------------------------------------------------ core (aggregates)
    def step_cost_agg(self, n_tokens, n_seqs, dec_pairs, pf_pairs, kv_read_tokens):
        """Cost of a step from batch aggregates; floats or broadcastable numpy arrays.

        n_tokens: tokens processed (decode requests + prefill chunk tokens), at most MAX_TOKENS; n_seqs:
        sequences that sample a token (decode requests + prefill chunks), at most MAX_SEQS; dec_pairs: sum
        over decode requests of (context + 1); pf_pairs: sum over chunks of c * (prefix + (c + 1) / 2);
        kv_read_tokens: KV tokens read by prefill attention (sum of prefix + chunk); these three at most
        MAX_PAIRS. All finite and >= 0 (ConfigError otherwise). Returns ``(time_s, flops, compute_s)``.
        """
        where = "step_cost_agg"
        _real_in(where, "n_tokens", n_tokens, MAX_TOKENS)
        _real_in(where, "n_seqs", n_seqs, MAX_SEQS)
        _real_in(where, "dec_pairs", dec_pairs, MAX_PAIRS)
        _real_in(where, "pf_pairs", pf_pairs, MAX_PAIRS)
        _real_in(where, "kv_read_tokens", kv_read_tokens, MAX_PAIRS)
        return self._cost_agg(n_tokens, n_seqs, dec_pairs, pf_pairs, kv_read_tokens)

    def _cost_agg(self, n_tokens, n_seqs, dec_pairs, pf_pairs, kv_read_tokens):
        """:meth:`step_cost_agg` without the input checks (the pricer's tables, the checked public methods)."""
        T = n_tokens
        p = self._p
        # the roofline terms, summed in this order: (kernels, FLOPs, achievable FLOP/s, memory time s, p-norm p)
        terms = [(cnt, T * f, self._peak_c_dense, (w + T * a) / self._peak_m_dense, p)
                 for cnt, f, w, a in self._g_tuples]
        # LM head over the sampling sequences
        terms.append((1, n_seqs * self._lm_f, self._peak_c_dense, self._lm_w / self._peak_m_dense, p))
        if self._moe_layers:
            experts = self._moe_E * (1.0 - pw(self._moe_miss, T)) + self._moe_shared
            terms.append((1, T * self._moe_f_tok + T * self._router_f, self._peak_c_moe,
                          (experts * self._moe_w_expert + T * self._moe_act_tok) / self._peak_m_moe, self._p_moe))
        # prefill attention, then decode attention
        terms.append((1, pf_pairs * self._attn_pf_pair, self._peak_c_attn_pf,
                      kv_read_tokens * self._kv_gpu / self._peak_m_attn, p))
        terms.append((1, dec_pairs * self._attn_dec_pair, self._peak_c_attn_dec,
                      dec_pairs * self._kv_gpu / self._peak_m_attn, p))
        t = self._fixed
        flops = 0.0
        comp = 0.0
        for cnt, fl, peak_c, tm, q in terms:
            tc = fl / peak_c
            t = t + cnt * p_norm(tc, tm, q, 1.0 / q)
            flops = flops + cnt * fl
            comp = comp + cnt * tc
        t = t + T * (self._ew_tok + self._ar_tok)
        return t, flops, comp

    def step_time_fast(self, n_tokens: float, n_seqs: float, dec_pairs: float, pf_pairs: float,
                       kv_read_tokens: float) -> float:
        """Scalar-only, time-only twin of :meth:`step_cost_agg` for the decision hot path (seconds).

        Same formula and bounds, Python floats only (no numpy), reciprocals precomputed; one chained
        comparison checks the inputs (ConfigError for a negative, NaN, infinite or too large value, text or an
        array; to stay cheap it takes Python's ``True``/``False`` as the integers 1/0). Tested equal to
        :meth:`step_cost_agg`.
        """
        try:
            ok = (0.0 <= n_tokens <= MAX_TOKENS and 0.0 <= n_seqs <= MAX_SEQS and 0.0 <= dec_pairs <= MAX_PAIRS
                  and 0.0 <= pf_pairs <= MAX_PAIRS and 0.0 <= kv_read_tokens <= MAX_PAIRS)
        except (TypeError, ValueError):  # text, None, arrays: not scalars
            ok = False
        if not ok:
            self._refuse_fast(n_tokens, n_seqs, dec_pairs, pf_pairs, kv_read_tokens)
        T = n_tokens
        p = self._p
        ip = self._inv_p
        t = self._fixed + T * self._ew_ar_tok
        for cnt, fc, w, am in self._fast_gemms:
            t += cnt * p_norm(T * fc, w + T * am, p, ip)
        t += p_norm(n_seqs * self._lm_fc, self._lm_wm, p, ip)
        if self._moe_layers:
            pm = self._p_moe
            tc = T * self._moe_fc
            tm = (self._moe_E * (1.0 - pw(self._moe_miss, T)) + self._moe_shared) * self._moe_wm + T * self._moe_am
            t += p_norm(tc, tm, pm, self._inv_p_moe)
        if pf_pairs > 0.0:
            t += p_norm(pf_pairs * self._apf_c, kv_read_tokens * self._kv_m, p, ip)
        if dec_pairs > 0.0:
            t += p_norm(dec_pairs * self._adec_c, dec_pairs * self._kv_m, p, ip)
        return t

    @staticmethod
    def _refuse_fast(n_tokens: Any, n_seqs: Any, dec_pairs: Any, pf_pairs: Any, kv_read_tokens: Any) -> None:
        """Raise the ConfigError naming the first bad argument of :meth:`step_time_fast`."""
        where = "step_time_fast"
        for name, v, hi in (("n_tokens", n_tokens, MAX_TOKENS), ("n_seqs", n_seqs, MAX_SEQS),
                            ("dec_pairs", dec_pairs, MAX_PAIRS), ("pf_pairs", pf_pairs, MAX_PAIRS),
                            ("kv_read_tokens", kv_read_tokens, MAX_PAIRS)):
            if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)) or not 0.0 <= v <= hi:
                raise ConfigError(where, name, v, f"a finite number in [0, {hi:g}]")
        raise AssertionError("unreachable: step_time_fast refused valid inputs")

    def lm_head_time(self, n_seqs: float) -> float:
        """The LM-head GEMM term of :meth:`step_time_fast` alone (seconds) for ``n_seqs`` sampling sequences
        (finite, in [0, MAX_SEQS])."""
        _real_in("lm_head_time", "n_seqs", n_seqs, MAX_SEQS)
        return self._lm_head_time(n_seqs)

    def _lm_head_time(self, n_seqs: float) -> float:
        p = self._p
        return p_norm(n_seqs * self._lm_fc, self._lm_wm, p, self._inv_p)

    def lm_head_cost(self, n_seqs: float) -> tuple[float, float, float]:
        """The LM-head GEMM as (seconds, FLOPs, compute seconds) for ``n_seqs`` sampling sequences (finite, in
        [0, MAX_SEQS])."""
        _real_in("lm_head_cost", "n_seqs", n_seqs, MAX_SEQS)
        return self._lm_head_cost(n_seqs)

    def _lm_head_cost(self, n_seqs: float) -> tuple[float, float, float]:
        fl = n_seqs * self._lm_f
        return self._lm_head_time(n_seqs), fl, fl / self._peak_c_dense

    def prefill_attention_cost(self, pf_pairs: float, kv_read_tokens: float) -> tuple[float, float, float]:
        """The prefill-attention term as (seconds, FLOPs, compute seconds); inputs finite, in [0, MAX_PAIRS]."""
        _real_in("prefill_attention_cost", "pf_pairs", pf_pairs, MAX_PAIRS)
        _real_in("prefill_attention_cost", "kv_read_tokens", kv_read_tokens, MAX_PAIRS)
        return self._pf_attention_cost(pf_pairs, kv_read_tokens)

    def _pf_attention_cost(self, pf_pairs: float, kv_read_tokens: float) -> tuple[float, float, float]:
        fl = pf_pairs * self._attn_pf_pair
        return self._pf_attention_time(pf_pairs, kv_read_tokens), fl, fl / self._peak_c_attn_pf

    def prefill_attention_time(self, pf_pairs: float, kv_read_tokens: float) -> float:
        """The prefill-attention term of :meth:`step_time_fast` alone (seconds; 0 for no pairs); inputs
        finite, in [0, MAX_PAIRS]."""
        _real_in("prefill_attention_time", "pf_pairs", pf_pairs, MAX_PAIRS)
        _real_in("prefill_attention_time", "kv_read_tokens", kv_read_tokens, MAX_PAIRS)
        return self._pf_attention_time(pf_pairs, kv_read_tokens)

    def _pf_attention_time(self, pf_pairs: float, kv_read_tokens: float) -> float:
        if pf_pairs <= 0.0:
            return 0.0
        p = self._p
        return p_norm(pf_pairs * self._apf_c, kv_read_tokens * self._kv_m, p, self._inv_p)

    # ------------------------------------------------------------------ public API
    def step_cost(
        self,
        decode_context_lens: Sequence[int] | np.ndarray = (),
        prefill_chunks: Iterable[tuple[int, int]] = (),
    ) -> StepCost:
        """Cost of one step with one decode token per entry of ``decode_context_lens`` (tokens already in
        that request's KV cache) and each ``(chunk_tokens, prefix_tokens)`` prefill chunk. Lengths are
        integers in [0, MAX_TOKENS], at most MAX_SEQS requests plus chunks, at most MAX_TOKENS tokens in the
        step (ConfigError otherwise)."""
        where = "step_time"
        ctx = _decode_lens(where, decode_context_lens)
        n_dec = int(ctx.size)
        dec_pairs = float(ctx.sum()) + n_dec if n_dec else 0.0
        n_tok = float(n_dec)
        n_seqs = float(n_dec)
        pf_pairs = 0.0
        kv_read = 0.0
        n_entries = n_dec
        for chunk in prefill_chunks:
            n_entries += 1
            if n_entries > MAX_SEQS:
                raise ConfigError(where, "prefill_chunks (length)", f"more than {MAX_SEQS - n_dec:,} chunks",
                                  f"at most {MAX_SEQS:,} decode requests and chunks in one step")
            try:
                c_raw, k_raw = chunk
            except (TypeError, ValueError):
                raise ConfigError(
                    where, "prefill_chunks", chunk, "(chunk_tokens, prefix_tokens) pairs"
                ) from None
            c = _int_in(where, "chunk_tokens", c_raw, MAX_TOKENS)
            k = _int_in(where, "prefix_tokens", k_raw, MAX_TOKENS)
            if c == 0:
                continue
            n_tok += c
            if n_tok > MAX_TOKENS:
                raise ConfigError(where, "tokens in the step", int(n_tok), f"at most {MAX_TOKENS:,} tokens")
            n_seqs += 1
            pf_pairs += c * (k + (c + 1) / 2.0)
            kv_read += k + c
        if n_tok == 0:
            return StepCost(0.0, 0.0, 0.0)
        t, f, comp = self._cost_agg(n_tok, n_seqs, dec_pairs, pf_pairs, kv_read)
        return StepCost(float(t), float(f), float(comp))

    def step_time(
        self,
        decode_context_lens: Sequence[int] | np.ndarray = (),
        prefill_chunks: Iterable[tuple[int, int]] = (),
    ) -> float:
        """Seconds for one forward step (see :meth:`step_cost`). An empty step takes 0 s."""
        return self.step_cost(decode_context_lens, prefill_chunks).time_s

    def price_chunks(
        self,
        decode_context_lens: Sequence[int] | np.ndarray,
        chunk_tokens: Sequence[int] | np.ndarray,
        prefix_tokens: Sequence[int] | np.ndarray | int = 0,
    ) -> np.ndarray:
        """Vectorised: step time (s) of the same decode batch plus each candidate chunk
        ``(chunk_tokens[i], prefix_tokens[i])``. A chunk of 0 tokens prices the decode-only step. Lengths are
        integers in [0, MAX_TOKENS], at most MAX_SEQS decode requests and MAX_CANDIDATES candidates."""
        ctx = _decode_lens("price_chunks", decode_context_lens)
        n_dec = float(ctx.size)
        return self.price_chunks_agg(n_dec, float(ctx.sum()) + n_dec, chunk_tokens, prefix_tokens)

    def price_chunks_agg(self, n_decode: float, dec_pairs: float, chunk_tokens, prefix_tokens=0) -> np.ndarray:
        """As :meth:`price_chunks` from decode aggregates: ``n_decode`` requests (an integer in [0, MAX_SEQS])
        whose contexts + 1 sum to ``dec_pairs`` (in [n_decode, MAX_PAIRS]). Used by schedulers that keep
        running aggregates per node."""
        where = "price_chunks"
        if isinstance(n_decode, bool) or not isinstance(n_decode, (int, float, np.integer, np.floating)) or not (
                0 <= n_decode <= MAX_SEQS and float(n_decode).is_integer()):
            raise ConfigError(where, "n_decode", n_decode, f"an integer in [0, {MAX_SEQS:,}] (decode requests)")
        if isinstance(dec_pairs, bool) or not isinstance(dec_pairs, (int, float, np.integer, np.floating)) or not (
                n_decode <= dec_pairs <= MAX_PAIRS):
            raise ConfigError(where, "dec_pairs", dec_pairs,
                              f"a number in [n_decode, {MAX_PAIRS:g}] (the sum of context + 1 over the requests)")
        c = _int_array(where, "chunk_tokens", chunk_tokens, MAX_TOKENS)
        k = _int_array(where, "prefix_tokens", prefix_tokens, MAX_TOKENS)
        try:
            np.broadcast_shapes(c.shape, k.shape)
        except ValueError:
            raise ConfigError(where, "prefix_tokens", prefix_tokens,
                              f"a scalar or an array of chunk_tokens' length {c.size}") from None
        if n_decode + (float(c.max()) if c.size else 0.0) > MAX_TOKENS:
            raise ConfigError(where, "tokens in the step", n_decode + float(c.max()), f"at most {MAX_TOKENS:,}")
        n_decode = float(n_decode)
        dec_pairs = float(dec_pairs)
        has = (c > 0).astype(float)
        n_tok = n_decode + c
        t, _, _ = self._cost_agg(n_tok, n_decode + has, dec_pairs, c * (k + (c + 1) / 2.0), (k + c) * has)
        t = np.asarray(t, dtype=float) * (n_tok > 0)
        return t

    def linear_layer_time(self, n_tokens):
        """Seconds of one transformer layer's non-attention operators (projection GEMMs, dense MLP, and the
        elementwise kernels of :meth:`elementwise_terms`) for ``n_tokens`` tokens (an integer or an array of
        integers in [0, MAX_TOKENS]): the quantity Vidur's ``mlp.csv`` measures. Dense (non-MoE) layers only."""
        c = self.cal
        T = _int_array("linear_layer_time", "n_tokens", n_tokens, MAX_TOKENS)
        p = self._p
        per_layer = self._g_count == self.model.layers
        t = np.zeros_like(T)
        for f, w, a in zip(self._g_f[per_layer], self._g_w[per_layer], self._g_a[per_layer], strict=True):
            tc = T * f / self._peak_c_dense
            tm = (w + T * a) / self._peak_m_dense
            t = t + p_norm(tc, tm, p, 1.0 / p) + c.gemm_kernel_s
        ew = T * self._ew_tok / self.model.layers + self._ew_kernels * c.elementwise_kernel_s
        return t + ew

    def prefill_time(self, prompt_tokens: int, prefix_tokens: int = 0) -> float:
        """Seconds to prefill one prompt alone in one step (no decode batch); integers in [0, MAX_TOKENS]."""
        return self.step_time((), [(prompt_tokens, prefix_tokens)])

    def describe(self) -> dict[str, Any]:
        """Key facts of this model instance (for tables and docs)."""
        total, active = self.model.parameter_count()
        return {
            "model": self.model.key,
            "gpu": self.gpu.key,
            "tp": self.tp,
            "params_total": total,
            "params_active": active,
            "kv_bytes_per_token": self.kv_bytes_per_token,
            "kv_capacity_tokens_per_gpu": self.kv_capacity_tokens(),
        }
