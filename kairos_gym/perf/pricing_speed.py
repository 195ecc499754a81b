"""Micro-benchmark: the cost of pricing one routing decision's candidates (``kairos-gym latency --bench``)."""

from __future__ import annotations

import time

import numpy as np

from kairos_gym.latency.model import StepLatencyModel

MENU = np.array([128, 256, 512, 1024, 2048], dtype=float)


def bench_pricing(m: StepLatencyModel, n_decode_nodes: int = 2, repeats: int = 20000) -> dict[str, float]:
    """Median and P99 wall time (us) to price ``n_decode_nodes x 5`` candidate steps (vectorised call
    per node, decode batch given as aggregates, as the simulator does). Also the scalar path."""
    rng = np.random.default_rng(0)
    batches = [(float(b), float(b * 2048 + b)) for b in rng.integers(1, 64, size=n_decode_nodes)]
    times = np.empty(repeats)
    for i in range(repeats):
        t0 = time.perf_counter()
        for n_dec, pairs in batches:
            m.price_chunks_agg(n_dec, pairs, MENU, 0.0)
        times[i] = time.perf_counter() - t0
    scalar = np.empty(repeats // 4)
    for i in range(len(scalar)):
        t0 = time.perf_counter()
        for n_dec, pairs in batches:
            for c in (128.0, 256.0, 512.0, 1024.0, 2048.0):
                m.step_time_fast(n_dec + c, n_dec + 1.0, pairs, c * (c + 1) / 2.0, c)
        scalar[i] = time.perf_counter() - t0
    return {
        "candidates": float(n_decode_nodes * len(MENU)),
        "vectorised_us_p50": round(float(np.median(times)) * 1e6, 2),
        "vectorised_us_p99": round(float(np.percentile(times, 99)) * 1e6, 2),
        "scalar_us_p50": round(float(np.median(scalar)) * 1e6, 2),
        "scalar_us_p99": round(float(np.percentile(scalar, 99)) * 1e6, 2),
    }
