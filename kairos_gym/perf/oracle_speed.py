"""The rollout Oracle's cost on one instance, for each number of rollout threads (a measurement for
docs/performance.md, not a test).

Runs the Oracle (agents/oracle.py, its default bases) on ``--requests`` requests of ``--scenario`` at ``--seed``
once per thread count, in this process, and reports per count the wall time (s), the rollouts, the searched
decisions and the ratio of wall times against the first count, after checking that every count gave the same
run bit for bit (the summary's figures). Usage: ``kairos-gym perf-oracle [--scenario bursty] [--requests 500]
[--threads 1,2]``.
"""

from __future__ import annotations

import time
from typing import Any

MAX_REQUESTS = 100_000
"""Largest instance of the measurement (requests): the Oracle's cost grows with the square of the requests."""
TIMING_KEYS = ("wall_time_s", "decision_us_p50", "decision_us_p99", "decision_cpu_us_p50", "decision_cpu_us_p99")
"""Summary figures that are machine timings, not results."""


def measure(scenario: str, requests: int, seed: int, threads: list[int]) -> list[dict[str, Any]]:
    """One Oracle run per entry of ``threads``; raises RuntimeError if two thread counts give different results."""
    from kairos_gym.agents.oracle import Oracle
    from kairos_gym.agents.runner import simulate
    from kairos_gym.scenario import load_scenario

    sc = load_scenario(scenario).with_overrides({"workload": {"max_requests": requests}})
    rows: list[dict[str, Any]] = []
    first: dict[str, Any] | None = None
    for t in threads:
        oracle = Oracle(sc, seed=seed, threads=t)
        t0 = time.perf_counter()
        summary = simulate(oracle, sc, seed)[0]
        wall = time.perf_counter() - t0
        result = {k: v for k, v in summary.items() if k not in TIMING_KEYS}
        if first is None:
            first = result
        elif result != first:
            raise RuntimeError(f"perf-oracle: {t} threads gave another result than {threads[0]}")
        stats = oracle.stats
        rows.append({"threads": t, "wall_s": wall, "rollouts": stats["n_rollouts"],
                     "searched": stats["n_searched"], "decisions": stats["n_decisions"],
                     "slo_attainment": summary["slo_attainment"]})
    for r in rows:
        r["speedup"] = rows[0]["wall_s"] / r["wall_s"]
    return rows


__all__ = ["MAX_REQUESTS", "measure"]
