"""One rollout Oracle run and what it cost (the Oracle's cost measurements: ``kairos-gym perf-oracle``,
kairos_gym/perf/oracle_speed.py and kairos_gym/benchmark/oracle_cost.py)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from kairos_gym.agents.oracle import DEFAULT_BASES, Oracle

SEARCHES = ("reference", "exhaustive", "bounded")
"""The Oracle's searches (agents/oracle.py): ``reference`` (the Oracle before its exact constant-factor savings, a
cost baseline), ``exhaustive`` (every rollout to the end) and ``bounded`` (the default); all give the same run."""
TIMING_KEYS = ("wall_time_s", "decision_us_p50", "decision_us_p99", "decision_cpu_us_p50", "decision_cpu_us_p99")
"""Summary figures that are machine timings, not results."""


def run_with_cost(sc: Any, seed: int, threads: int, search: str, bases: Sequence[Any] | None = None
         ) -> tuple[dict[str, Any], dict[str, Any]]:
    """One Oracle run of ``sc`` at workload seed ``seed`` with ``search`` (one of :data:`SEARCHES`; ``bases``:
    None for the default ones): its summary without the machine timings, and a row of its cost (``wall_s`` in
    seconds; ``rollout_decisions``: decisions simulated inside rollouts, a count that does not depend on the
    machine)."""
    from kairos_gym.agents.runner import simulate

    if search not in SEARCHES:
        raise ValueError(f"run_with_cost: search {search!r} is not one of {SEARCHES}")
    oracle = Oracle(sc, seed=seed, threads=threads, exhaustive=search != "bounded", reference=search == "reference",
                    bases=list(bases) if bases is not None else DEFAULT_BASES)
    t0 = time.perf_counter()
    summary = simulate(oracle, sc, seed)[0]
    wall = time.perf_counter() - t0
    st = oracle.stats
    row = {"search": search, "threads": threads, "wall_s": wall,
           "rollouts": st["n_rollouts"], "pruned": st["n_pruned"], "reused": st["n_reused"],
           "rollout_decisions": st["n_rollout_decisions"], "searched": st["n_searched"],
           # how far a stopped rollout ran, as a share of what was left of the instance when it started
           "stopped_share": st["n_stopped_decisions"] / max(st["n_stopped_remaining"], 1),
           "decisions": st["n_decisions"], "slo_attainment": summary["slo_attainment"]}
    return {k: v for k, v in summary.items() if k not in TIMING_KEYS}, row


__all__ = ["SEARCHES", "TIMING_KEYS", "run_with_cost"]
