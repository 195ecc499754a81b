"""Fit of the dense-GEMM and elementwise calibration parameters to Vidur's measured A100 data.

Data: ``shared/calibration/vidur_a100/*_mlp.csv`` (copied into ``kairos_gym/data/vidur_a100``), per-layer
median operator times in ms for Llama-2-7B, Llama-3-8B and Llama-2-70B at TP 1/2/4/8. The fit minimises
the mean absolute percentage error over 64..4096 tokens with a seeded random search followed by a
shrinking local search, so ``kairos-gym latency --fit`` prints the same numbers every time.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass, replace
from functools import cache

import numpy as np

from kairos_gym.latency.calibration import Calibration, default_calibration
from kairos_gym.latency.model import StepLatencyModel
from kairos_gym.latency.presets import DATA_DIR, get_gpu, get_model

VIDUR_FILES = {
    "llama-2-7b": "Llama-2-7b-hf_mlp.csv",
    "llama-3-8b": "Meta-Llama-3-8B_mlp.csv",
    "llama-2-70b": "Llama-2-70b-hf_mlp.csv",
}
VIDUR_OPS = (
    "input_layernorm", "attn_pre_proj", "attn_rope", "attn_post_proj", "post_attention_layernorm",
    "mlp_up_proj", "mlp_act", "mlp_down_proj", "add",
)
FIT_PARAMS = (
    "dense_compute_eff", "dense_memory_eff", "dense_overlap_p", "gemm_kernel_s",
    "elementwise_memory_eff", "elementwise_kernel_s",
)
_LO = np.array([0.3, 0.4, 1.0, 0.0, 0.1, 0.0])
_HI = np.array([0.95, 1.0, 8.0, 3e-5, 1.0, 1e-5])


@dataclass(frozen=True)
class VidurPoints:
    """Measured points of one model at one TP: tokens and per-layer linear time (s, median)."""

    model: str
    tp: int
    tokens: np.ndarray
    measured_s: np.ndarray


@cache
def load_vidur() -> tuple[VidurPoints, ...]:
    """All measured points, one entry per (model, tp), rows averaged over duplicate token counts."""
    out = []
    for model, fname in VIDUR_FILES.items():
        by_tp: dict[int, dict[int, list[float]]] = {}
        with open(DATA_DIR / "vidur_a100" / fname, encoding="utf-8") as f:
            for row in csv.DictReader(f):
                tp = int(row["num_tensor_parallel_workers"])
                t = int(row["num_tokens"])
                ms = sum(float(row[f"time_stats.{op}.median"]) for op in VIDUR_OPS)
                by_tp.setdefault(tp, {}).setdefault(t, []).append(ms * 1e-3)
        for tp in sorted(by_tp):
            toks = sorted(by_tp[tp])
            out.append(
                VidurPoints(model, tp, np.array(toks, dtype=float),
                            np.array([float(np.mean(by_tp[tp][t])) for t in toks]))
            )
    return tuple(out)


def predict(points: VidurPoints, cal: Calibration) -> np.ndarray:
    """Predicted per-layer linear time (s) at the measured token counts."""
    m = StepLatencyModel(get_model(points.model), get_gpu("a100-80gb"), points.tp, cal)
    return m.linear_layer_time(points.tokens)


def ape(points: VidurPoints, cal: Calibration, lo: int = 64, hi: int = 4096) -> tuple[np.ndarray, np.ndarray]:
    """(tokens, absolute percentage error) over lo <= tokens <= hi."""
    sel = (points.tokens >= lo) & (points.tokens <= hi)
    pred = predict(points, cal)[sel]
    return points.tokens[sel], np.abs(pred / points.measured_s[sel] - 1.0) * 100.0


def _loss(x: np.ndarray, base: Calibration) -> float:
    cal = replace(base, **dict(zip(FIT_PARAMS, map(float, x), strict=True)))
    return float(np.mean(np.concatenate([ape(p, cal)[1] for p in load_vidur()])))


def fit(seed: int = 0, n_random: int = 400, n_local: int = 1500) -> tuple[Calibration, float]:
    """Fit FIT_PARAMS; returns the calibration with the fitted values and its overall MAPE (%)."""
    base = default_calibration()
    rng = np.random.default_rng(seed)
    x = np.array([getattr(base, k) for k in FIT_PARAMS])
    best = _loss(x, base)
    for _ in range(n_random):
        y = _LO + (_HI - _LO) * rng.random(len(FIT_PARAMS))
        ly = _loss(y, base)
        if ly < best:
            best, x = ly, y
    step = (_HI - _LO) * 0.05
    for i in range(n_local):
        y = np.clip(x + step * rng.normal(size=len(FIT_PARAMS)), _LO, _HI)
        ly = _loss(y, base)
        if ly < best:
            best, x = ly, y
        if i % 300 == 299:
            step *= 0.5
    return replace(base, **dict(zip(FIT_PARAMS, map(float, x), strict=True))), best
