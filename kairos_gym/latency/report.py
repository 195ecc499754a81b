"""Latency tables and the calibration report (``kairos-gym latency``)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import numpy as np

from kairos_gym.latency.calibration import calibration_data, param_allowed
from kairos_gym.latency.fit import FIT_PARAMS, ape, load_vidur, predict
from kairos_gym.latency.model import MAX_CANDIDATES, MAX_PAIRS, MAX_SEQS, MAX_TOKENS, StepLatencyModel
from kairos_gym.latency.presets import get_gpu, model_presets

DEFAULT_BATCHES = (1, 8, 16, 32, 64)
DEFAULT_CONTEXTS = (512, 1024, 2048, 4096)
DEFAULT_CHUNKS = (128, 256, 512, 1024, 2048)
DEFAULT_PREFIXES = (0,)
DEFAULT_KV_RESERVES = (0.1,)
SEED_BATCHES = (1, 2, 4, 8, 16, 32, 64)


def latency_table(
    m: StepLatencyModel,
    batches: tuple[int, ...] = DEFAULT_BATCHES,
    contexts: tuple[int, ...] = DEFAULT_CONTEXTS,
    chunks: tuple[int, ...] = DEFAULT_CHUNKS,
    n_chunk_index: int = 5,
    prefixes: tuple[int, ...] = DEFAULT_PREFIXES,
    kv_reserves: tuple[float, ...] = DEFAULT_KV_RESERVES,
) -> dict[str, Any]:
    """Decode-only step time and the added latency of chunk index 1..n (prefix = (i-1) x chunk); and a prefill
    step alone of each chunk size after each prefix.

    Times in milliseconds; a compute share is the step's compute time at the kernels' achievable efficiency over
    its time (the SM-utilization proxy of one step, docs/metrics.md). Returns ``{"preset": ..., "rows":
    [{"batch", "context", "decode_ms", "decode_compute_share", "added_ms": {chunk: [idx1, ..., idxn]}}],
    "prefill": [{"tokens", "prefix", "ms", "compute_share", "tokens_per_s"}], "kv_capacity": [{"kv_reserve_frac",
    "tokens_per_gpu"}]}`` (the KV tokens each GPU holds with that fraction of its memory kept for activations: a
    decode node's ``cluster.kv_reserve_frac``).
    """
    rows = []
    for b in batches:
        for ctx in contexts:
            cost = m.step_cost([ctx] * b)
            base = cost.time_s
            added = {}
            for c in chunks:
                added[str(c)] = [
                    round((m.step_time([ctx] * b, [(c, (i - 1) * c)]) - base) * 1e3, 3)
                    for i in range(1, n_chunk_index + 1)
                ]
            rows.append({"batch": b, "context": ctx, "decode_ms": round(base * 1e3, 3),
                         "decode_compute_share": round(cost.compute_s / base, 4), "added_ms": added})
    prefill = []
    for c in chunks:
        for k in prefixes:
            cost = m.step_cost((), [(c, k)])
            prefill.append({"tokens": c, "prefix": k, "ms": round(cost.time_s * 1e3, 3),
                            "compute_share": round(cost.compute_s / cost.time_s, 4),
                            "tokens_per_s": round(c / cost.time_s, 1)})
    kv = [{"kv_reserve_frac": f, "tokens_per_gpu": m.kv_capacity_tokens(f)} for f in kv_reserves]
    return {"preset": m.describe(), "rows": rows, "prefill": prefill, "kv_capacity": kv}


def format_latency_table(table: dict[str, Any]) -> str:
    """Plain-text rendering of :func:`latency_table` (through the CLI's one table renderer)."""
    from kairos_gym.table import render_table

    p = table["preset"]
    chunks = list(table["rows"][0]["added_ms"]) if table["rows"] else []
    headers = ["batch", "context\n(tokens)", "decode\n(ms)", *(f"chunk {c}: added\n(ms, index 1-5)" for c in chunks)]
    rows = [[str(r["batch"]), str(r["context"]), f"{r['decode_ms']:.1f}",
             *("/".join(f"{x:.0f}" for x in r["added_ms"][c]) for c in chunks)] for r in table["rows"]]
    decode = render_table(
        headers, rows, keep=3, align=["right"] * len(headers),
        title=f"Step latency: {p['model']} on {p['gpu']} x TP{p['tp']} (KV {p['kv_bytes_per_token']} B/token, "
              f"{p['kv_capacity_tokens_per_gpu']:,} KV tokens/GPU)",
        notes=["decode: decode-only step; chunk c: latency a c-token chunk adds to the step at chunk index 1..5 "
               "(prefix = (i-1) x c); the decode steps' compute shares are in the JSON"])
    prefill = render_table(
        ["prompt\n(tokens)", "prefix\n(tokens)", "step\n(ms)", "throughput\n(tokens/s)", "compute\nshare"],
        [[f"{r['tokens']:,}", f"{r['prefix']:,}", f"{r['ms']:.1f}", f"{r['tokens_per_s']:,.0f}",
          f"{r['compute_share']:.3f}"] for r in table.get("prefill", [])],
        align=["right"] * 5, title="A prefill step alone (no decode batch) of each chunk size after each prefix",
        notes=["compute share: the step's compute time at the kernels' achievable efficiency over its time (the "
               "SM-utilization proxy, docs/metrics.md)"])
    kv = [f"  {r['kv_reserve_frac']:g} kept for activations (cluster.kv_reserve_frac): {r['tokens_per_gpu']:,}"
          for r in table.get("kv_capacity", [])]
    return decode + "\n\n" + prefill + ("\n\nKV tokens per GPU:\n" + "\n".join(kv) if kv else "")


def seed_target_checks(m: StepLatencyModel) -> list[dict[str, Any]]:
    """The acceptance targets of docs/DOMAIN.md section 3 over decode batches 1..64 and contexts 512..4096."""
    worst_small = 0.0
    lo1024, hi1024, lo2048, hi2048 = np.inf, 0.0, np.inf, 0.0
    dec_lo, dec_hi = np.inf, 0.0
    for b in SEED_BATCHES:
        for ctx in DEFAULT_CONTEXTS:
            base = m.step_time([ctx] * b)
            dec_lo, dec_hi = min(dec_lo, base), max(dec_hi, base)
            for c in (128, 256, 512):
                for i in range(1, 6):
                    worst_small = max(worst_small, m.step_time([ctx] * b, [(c, (i - 1) * c)]) - base)
            a1024 = m.step_time([ctx] * b, [(1024, 4 * 1024)]) - base
            a2048 = m.step_time([ctx] * b, [(2048, 4 * 2048)]) - base
            lo1024, hi1024 = min(lo1024, a1024), max(hi1024, a1024)
            lo2048, hi2048 = min(lo2048, a2048), max(hi2048, a2048)
    ms = 1e3
    return [
        {"target": "added by a 128/256/512 chunk, index 1-5 (max)", "value_ms": f"{worst_small * ms:.1f}",
         "bound_ms": "<= 30", "ok": worst_small * ms <= 30},
        {"target": "added by a 1024-token 5th chunk (range)", "value_ms": f"{lo1024 * ms:.1f}-{hi1024 * ms:.1f}",
         "bound_ms": "50-130", "ok": 50 <= lo1024 * ms and hi1024 * ms <= 130},
        {"target": "added by a 2048-token 5th chunk (range)", "value_ms": f"{lo2048 * ms:.1f}-{hi2048 * ms:.1f}",
         "bound_ms": "150-300", "ok": 150 <= lo2048 * ms and hi2048 * ms <= 300},
        {"target": "decode-only step, batch 1-64 (range)", "value_ms": f"{dec_lo * ms:.1f}-{dec_hi * ms:.1f}",
         "bound_ms": "8-30", "ok": 8 <= dec_lo * ms and dec_hi * ms <= 30},
    ]


def vidur_mape() -> list[dict[str, Any]]:
    """MAPE (%) of the linear-layer prediction per (model, TP) over 64..4096 tokens."""
    from kairos_gym.latency.calibration import default_calibration

    cal = default_calibration()
    out = []
    for pts in load_vidur():
        toks, err = ape(pts, cal)
        out.append({"model": pts.model, "tp": pts.tp, "points": len(toks),
                    "mape_pct": round(float(err.mean()), 2), "max_ape_pct": round(float(err.max()), 2)})
    return out


def architecture_rows() -> list[dict[str, Any]]:
    """Per model preset: its declared architecture and the terms the step model charges for it (A100, TP1
    per-layer figures; the 2,048-token prefill at the smallest TP whose weights fit)."""
    a100 = get_gpu("a100-80gb")
    rows = []
    for key, spec in model_presets().items():
        m1 = StepLatencyModel(spec, a100, 1)
        ew = m1.elementwise_terms()
        fit = None
        for tp in (1, 2, 4, 8):
            if spec.heads % tp:
                continue
            m = StepLatencyModel(spec, a100, tp)
            if spec.weight_bytes() / tp < a100.memory_bytes * 0.9:
                fit = m
                break
        total, active = spec.parameter_count()
        rows.append({
            "model": key, "attention": spec.attention, "position": spec.position, "mlp": spec.mlp,
            "activation": spec.activation, "norm": spec.norm, "tied": spec.tied_embeddings,
            "mlp_matrices": spec.mlp_matrices, "rotary_bytes": ew.rotary, "activation_bytes": ew.activation,
            "ew_kernels": ew.kernels, "params_b": total / 1e9, "active_b": active / 1e9,
            "prefill_tp": fit.tp if fit else None, "prefill_ms": fit.prefill_time(2048) * 1e3 if fit else None,
        })
    return rows


def architecture_table_md() -> list[str]:
    """The architecture section of the calibration report (markdown lines)."""
    lines = [
        "## Architectures: what each preset is charged",
        "",
        "Every model preset declares its architecture (`kairos_gym/data/models.yaml`, checked on load); the "
        "step model charges only what it has: rotary traffic only for `position: rope`, three MLP matrices and "
        "a `3I` activation only for `mlp: gated` (two and `2I` for plain), MLA shapes for `attention: mla`, the "
        "token embedding once when tied plus a learned position table. Per layer and token on one A100 (TP1); "
        "the prefill of one 2,048-token prompt at the smallest TP whose weights fit in 90% of memory.",
        "",
        "| model | attention | position | MLP | norm | tied | MLP matrices | rotary B | activation B | "
        "elementwise kernels | params (B) | active (B) | 2048-token prefill |",
        "|---|---|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in architecture_rows():
        pf = f"{r['prefill_ms']:.1f} ms (TP{r['prefill_tp']})" if r["prefill_ms"] is not None else "-"
        lines.append(
            f"| {r['model']} | {r['attention']} | {r['position']} | {r['mlp']} ({r['activation']}) | {r['norm']} | "
            f"{'yes' if r['tied'] else 'no'} | {r['mlp_matrices']} | {r['rotary_bytes']:,.0f} | "
            f"{r['activation_bytes']:,.0f} | {r['ew_kernels']} | {r['params_b']:.2f} | {r['active_b']:.2f} | {pf} |"
        )
    return lines


def calibration_report_md() -> str:
    """The whole docs/calibration.md text."""
    from kairos_gym.latency.calibration import default_calibration

    cal = default_calibration()
    data = calibration_data()
    m = StepLatencyModel.from_preset()
    lines = [
        "# Calibration of the step-latency model",
        "",
        "Generated by `kairos-gym latency --calibration-report` (do not edit by hand). "
        f"Calibration file version {data['version']} (`kairos_gym/data/calibration.yaml`).",
        "",
        "## Equations",
        "",
        "A step holds decode tokens (one per decoding request with context `ctx`) and prefill chunks "
        "(`c` new tokens over `k` cached). With `T` tokens in the step, on each GPU of a TP group:",
        "",
        "- every GEMM `g` (attention projections, dense MLP, LM head over the sampling sequences): "
        "`t_g = (t_c^p + t_m^p)^(1/p) + t_kernel`, `t_c = FLOPs_g / (peak * e_c)`, "
        "`t_m = (weights_g + T * activations_g) / (HBM * e_m)`; FLOPs and weights divided by TP;",
        "- MoE experts: same form with MoE efficiencies; expert weight bytes read = "
        "`(E * (1 - (1 - k/E)^T) + shared) * expert_bytes` (distinct experts touched by T tokens);",
        "- prefill attention: token pairs `c * (k + (c+1)/2)` x FLOPs per pair "
        "(MHA/GQA `4 * heads * head_dim`; MLA `2 * heads * (d_nope + d_rope + d_v)`), KV read `(k + c) * kv_bytes`;",
        "- decode attention: pairs `sum(ctx + 1)`, FLOPs per pair (MLA absorbed: `2 * heads * (2 * r_kv + d_rope)`), "
        "KV bytes `sum(ctx + 1) * kv_bytes`;",
        "- elementwise, per layer: `T * bytes_per_token / (HBM * e_ew) + kernels * t_ew`, bytes per token "
        "`2 * 2h` (two norms, RMSNorm or LayerNorm) + activation (gated MLP `3I`: reads gate and up, writes I; "
        "plain `2I`) + `3h` (residual add) + rotary `2 * qk_width` (RoPE presets only; `(heads + kv_heads) * "
        "head_dim`, MLA `heads * (d_nope + d_rope) + d_rope`), all times dtype bytes, I and qk_width divided by "
        "TP; kernels: 5 with RoPE, 4 without (see the architecture table below);",
        "- TP > 1: 2 ring all-reduces per layer, `t_ar + 2 (tp-1)/tp * T * hidden * 2 B / (NVLink * e_bus)`;",
        "- fixed: `step_cpu_overhead + layers * layer_launch_overhead`.",
        "",
        "The SM-utilization proxy of a step is the sum of its `t_c` terms over its wall time "
        "(compute-bound prefill ~1, memory-bound decode small).",
        "",
        "## Parameters",
        "",
        "Every value is range-checked wherever it is set (this file, a scenario's `cluster.calibration`, "
        "`StepLatencyModel.from_preset(calibration=...)`, a `Calibration` built by hand): one `ConfigError` "
        "names the parameter, the value and the range.",
        "",
        "| parameter | value | allowed | source |",
        "|---|---:|---|---|",
    ]
    for k, v in asdict(cal).items():
        lines.append(f"| `{k}` | {v:.6g} | {param_allowed(k)} | {data['params'][k]['source']} |")
    lines += ["", *architecture_table_md()]
    lines += [
        "",
        f"Fitted by `kairos-gym latency --fit`: {', '.join(f'`{p}`' for p in FIT_PARAMS)}.",
        "",
        "## Linear layers against measured A100 data (Vidur profiles)",
        "",
        "Per-layer time of QKV/O projections, MLP, norms, activation, residual and rotary, predicted vs "
        "the sum of Vidur's measured medians (`kairos_gym/data/vidur_a100`, MIT, microsoft/vidur 7d47513). "
        "MAPE over every measured token count in 64..4096.",
        "",
        "| model | TP | points | MAPE % | max APE % |",
        "|---|---:|---:|---:|---:|",
    ]
    for r in vidur_mape():
        lines.append(f"| {r['model']} | {r['tp']} | {r['points']} | {r['mape_pct']:.2f} | {r['max_ape_pct']:.2f} |")
    lines += ["", "### Per point (powers of two)", "",
              "| model | TP | tokens | measured ms | predicted ms | error % |", "|---|---:|---:|---:|---:|---:|"]
    for pts in load_vidur():
        pred = predict(pts, cal)
        for t, meas, pr in zip(pts.tokens, pts.measured_s, pred, strict=True):
            if int(t) & (int(t) - 1) == 0:
                lines.append(f"| {pts.model} | {pts.tp} | {int(t)} | {meas * 1e3:.4f} | {pr * 1e3:.4f} | "
                             f"{(pr / meas - 1) * 100:+.1f} |")
    lines += ["", "## Seed targets (DOMAIN.md section 3), deepseek-v2-lite / a100-80gb / TP1", "",
              "Decode batches 1-64, contexts 512-4096; chunk index i has prefix (i-1) x chunk.", "",
              "| target | model | bound | ok |", "|---|---:|---:|---|"]
    for r in seed_target_checks(m):
        lines.append(f"| {r['target']} | {r['value_ms']} ms | {r['bound_ms']} ms | {'yes' if r['ok'] else 'NO'} |")
    pf = m.prefill_time(2048)
    lines += [
        "",
        f"Prefill throughput of one A100 (one 2048-token prompt per step): {2048 / pf:,.0f} tokens/s "
        f"({pf * 1e3:.1f} ms per step; DOMAIN.md: roughly 25k tokens/s).",
        "",
        "## Known limits",
        "",
        "- Attention, MoE and overhead efficiencies are calibrated to the seed targets, not to measured "
        "DeepSeek-V2-Lite kernels (no such public profile was available); dense GEMMs are fitted to measurements.",
        "- H100/H200 presets reuse the A100 efficiency fractions (an assumption, not a measurement).",
        "- Chunk sizes off the 64/128 tile grid are not penalised: keep action menus on powers of two.",
        "- Mistral-7B's 4,096-token sliding window is declared but not modelled: attention is charged over the "
        "whole context (an overestimate for contexts above 4,096 tokens).",
        "- DeepSeek-V2-Lite: the rotary kernel is charged for all of q (nope + rope dims), and the dense first "
        "layer's activation for the MoE layers' width (8 x 1408 instead of 10944); its extra latent norm is "
        "not charged. Kept as calibrated: the seed targets above were met with these terms.",
        "- The embedding lookup (and a learned position add) is not charged; norm and bias vectors are not "
        "counted in the weights (< 0.1%).",
        "",
        "## Input bounds",
        "",
        f"The public `StepLatencyModel` methods refuse with one `ConfigError`: a context, chunk or prefix length "
        f"or a step's tokens that is not an integer in [0, {MAX_TOKENS:,}]; more than {MAX_SEQS:,} sequences in a "
        f"step or {MAX_CANDIDATES:,} candidates in one call; an aggregate (pairs, KV reads) that is negative, "
        f"not finite or above {MAX_PAIRS:.4g}; a KV reserve fraction outside [0, 1). The simulator's "
        "`ChunkPricer` calls the unchecked kernels with the values it builds itself.",
        "",
    ]
    return "\n".join(lines)
