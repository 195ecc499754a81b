"""The rollout Oracle's cost (a measurement for docs/performance.md and docs/policies.md, not a test).

Three measurements, each in one process, each checking that what it compares gives the same run:

- :func:`measure`: one instance, every (search, threads) pair: the exhaustive search (every rollout to the end:
  the Oracle before the bounded search) and the bounded one (src/core/rollout.cpp), on each thread count;
- :func:`kairos_gym.benchmark.oracle_cost.measure_suite` (``--suite``): the benchmark suite's instances, both
  searches on one thread: the cost ratio per task and over the suite;
- :func:`measure_growth`: the bounded search on the first ``n`` requests of one scenario for each ``n``, and the
  exponent of the cost's growth (least-squares slope of log cost on log n).

The cost is counted two ways: ``rollout_decisions`` (decisions simulated inside rollouts: about the simulated
requests, a count that does not depend on the machine) and wall time (seconds, this machine, noisy).
Usage: ``kairos-gym perf-oracle [--scenario bursty] [--requests 500] [--threads 1,2]``, ``--suite``,
``--growth 250,500,1000`` or ``--empty`` (:func:`kairos_gym.benchmark.oracle_cost.empty_arrivals`: how often an
arrival finds the cluster empty).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from kairos_gym.agents.oracle_run import SEARCHES, run_with_cost

MAX_REQUESTS = 100_000
"""Largest instance of the measurement (requests): the Oracle's cost grows about with the square of the requests."""


def measure(scenario: str, requests: int, seed: int, threads: Sequence[int],
            searches: Sequence[str] = ("exhaustive", "bounded")) -> list[dict[str, Any]]:
    """One Oracle run per (search, thread count), the first as the reference of the ratios (``speedup``: wall
    time; ``cost_ratio``: rollout decisions). RuntimeError if two runs give different results."""
    from kairos_gym.scenario import load_scenario

    sc = load_scenario(scenario).with_overrides({"workload": {"max_requests": requests}})
    rows: list[dict[str, Any]] = []
    first: dict[str, Any] | None = None
    for search in searches:
        for t in threads:
            result, row = run_with_cost(sc, seed, t, search)
            if first is None:
                first = result
            elif result != first:
                raise RuntimeError(f"perf-oracle: the {search} search on {t} threads gave another result than "
                                   f"the {rows[0]['search']} search on {rows[0]['threads']}")
            rows.append(row)
    for r in rows:
        r["speedup"] = rows[0]["wall_s"] / r["wall_s"]
        r["cost_ratio"] = rows[0]["rollout_decisions"] / max(r["rollout_decisions"], 1)
    return rows


def growth_exponent(ns: Sequence[float], costs: Sequence[float]) -> float:
    """Least-squares slope of log(cost) on log(n): the exponent p of cost ~ n^p (at least two sizes)."""
    if len(ns) < 2 or len(ns) != len(costs) or min(ns) <= 0 or min(costs) <= 0:
        raise ValueError("growth_exponent: at least two sizes, positive sizes and costs")
    x = [math.log(v) for v in ns]
    y = [math.log(v) for v in costs]
    mx, my = sum(x) / len(x), sum(y) / len(y)
    sxx = sum((a - mx) ** 2 for a in x)
    if sxx == 0.0:
        raise ValueError("growth_exponent: the sizes must differ")
    return sum((a - mx) * (b - my) for a, b in zip(x, y, strict=True)) / sxx


def measure_growth(scenario: str, sizes: Sequence[int], seed: int, threads: int = 1,
                   progress: Callable[[str], Any] | None = None) -> dict[str, Any]:
    """The bounded search on the first ``n`` requests of ``scenario`` for each ``n`` of ``sizes``: rows of
    (requests, wall_s, rollout_decisions, slo_attainment) and the growth exponents of both costs."""
    from kairos_gym.errors import ConfigError
    from kairos_gym.scenario import load_scenario
    from kairos_gym.sim import Simulator

    scs = []
    for n in sizes:  # every size checked before any run: the first n requests must exist
        sc = load_scenario(scenario).with_overrides({"workload": {"max_requests": int(n)}})
        have = Simulator(sc, seed=seed).n
        if have != n:
            raise ConfigError("perf-oracle", "--growth", n, f"at most the workload's {have} requests ({scenario}, "
                              f"seed {seed}; a larger instance: a scenario file with a larger workload.num_requests)")
        scs.append(sc)
    rows = []
    for n, sc in zip(sizes, scs, strict=True):
        _, row = run_with_cost(sc, seed, threads, "bounded")
        row["requests"] = int(n)
        rows.append(row)
        if progress is not None:
            progress(f"{n} requests: {row['wall_s']:.2f} s, {row['rollout_decisions']:,} rollout decisions")
    out: dict[str, Any] = {"scenario": scenario, "seed": seed, "threads": threads, "rows": rows}
    if len(rows) >= 2:
        ns = [r["requests"] for r in rows]
        out["exponent_wall"] = growth_exponent(ns, [max(r["wall_s"], 1e-9) for r in rows])
        out["exponent_rollout_decisions"] = growth_exponent(ns, [max(r["rollout_decisions"], 1) for r in rows])
    return out


def plot_growth(res: dict[str, Any], path: str) -> None:  # matplotlib: the [plots] extra
    """A log-log plot of :func:`measure_growth`'s wall time and rollout decisions against the requests."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from kairos_gym.output_file import save_figure

    ns = [r["requests"] for r in res["rows"]]
    fig, ax = plt.subplots(1, 2, figsize=(9, 3.6))
    ax[0].loglog(ns, [r["wall_s"] for r in res["rows"]], "o-")
    ax[0].set_xlabel("requests")
    ax[0].set_ylabel("wall time (s, one run)")
    ax[0].set_title(f"slope {res.get('exponent_wall', float('nan')):.2f}")
    ax[1].loglog(ns, [r["rollout_decisions"] for r in res["rows"]], "o-")
    ax[1].set_xlabel("requests")
    ax[1].set_ylabel("decisions simulated in rollouts")
    ax[1].set_title(f"slope {res.get('exponent_rollout_decisions', float('nan')):.2f}")
    fig.suptitle(f"bounded rollout Oracle, {res['scenario']} seed {res['seed']}, {res['threads']} thread(s)")
    fig.tight_layout()
    save_figure(fig, path, where="perf-oracle", flag="--plot")
    plt.close(fig)


__all__ = ["MAX_REQUESTS", "SEARCHES", "growth_exponent", "measure", "measure_growth", "plot_growth"]
