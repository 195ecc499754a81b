"""The rollout Oracle's cost (a measurement for docs/performance.md and docs/policies.md, not a test).

Three measurements, each in one process, each checking that what it compares gives the same run:

- :func:`measure`: one instance, every (search, threads) pair: the exhaustive search (every rollout to the end:
  the Oracle before the bounded search) and the bounded one (src/core/rollout.cpp), on each thread count;
- :func:`measure_suite`: the benchmark suite's instances (``kairos_gym.benchmark.suite.SUITE``, the first
  ``instances`` test instances of each task, the task's Oracle bases without the tuned best-static rule), both
  searches on one thread: the cost ratio per task and over the suite;
- :func:`measure_growth`: the bounded search on the first ``n`` requests of one scenario for each ``n``, and the
  exponent of the cost's growth (least-squares slope of log cost on log n).

The cost is counted two ways: ``rollout_decisions`` (decisions simulated inside rollouts: about the simulated
requests, a count that does not depend on the machine) and wall time (seconds, this machine, noisy).
Usage: ``kairos-gym perf-oracle [--scenario bursty] [--requests 500] [--threads 1,2]``, ``--suite``,
``--growth 250,500,1000`` or ``--empty`` (:func:`empty_arrivals`: how often an arrival finds the cluster empty).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from typing import Any

MAX_REQUESTS = 100_000
"""Largest instance of the measurement (requests): the Oracle's cost grows about with the square of the requests."""
TIMING_KEYS = ("wall_time_s", "decision_us_p50", "decision_us_p99", "decision_cpu_us_p50", "decision_cpu_us_p99")
"""Summary figures that are machine timings, not results."""
SEARCHES = ("exhaustive", "bounded")
"""The Oracle's searches (agents/oracle.py ``exhaustive``)."""


def _run(sc: Any, seed: int, threads: int, exhaustive: bool, bases: Sequence[Any] | None = None
         ) -> tuple[dict[str, Any], dict[str, Any]]:
    """One Oracle run: (its summary without timings, a row of its cost)."""
    from kairos_gym.agents.oracle import DEFAULT_BASES, Oracle
    from kairos_gym.agents.runner import simulate

    oracle = Oracle(sc, seed=seed, threads=threads, exhaustive=exhaustive,
                    bases=list(bases) if bases is not None else DEFAULT_BASES)
    t0 = time.perf_counter()
    summary = simulate(oracle, sc, seed)[0]
    wall = time.perf_counter() - t0
    st = oracle.stats
    row = {"search": "exhaustive" if exhaustive else "bounded", "threads": threads, "wall_s": wall,
           "rollouts": st["n_rollouts"], "pruned": st["n_pruned"], "reused": st["n_reused"],
           "rollout_decisions": st["n_rollout_decisions"], "searched": st["n_searched"],
           "decisions": st["n_decisions"], "slo_attainment": summary["slo_attainment"]}
    return {k: v for k, v in summary.items() if k not in TIMING_KEYS}, row


def measure(scenario: str, requests: int, seed: int, threads: Sequence[int],
            searches: Sequence[str] = SEARCHES) -> list[dict[str, Any]]:
    """One Oracle run per (search, thread count), the first as the reference of the ratios (``speedup``: wall
    time; ``cost_ratio``: rollout decisions). RuntimeError if two runs give different results."""
    from kairos_gym.scenario import load_scenario

    sc = load_scenario(scenario).with_overrides({"workload": {"max_requests": requests}})
    rows: list[dict[str, Any]] = []
    first: dict[str, Any] | None = None
    for search in searches:
        for t in threads:
            result, row = _run(sc, seed, t, search == "exhaustive")
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


def measure_suite(instances: int = 1, tasks: Sequence[Any] | None = None,
                  progress: Callable[[str], Any] | None = None) -> dict[str, Any]:
    """Both searches (one thread) on the first ``instances`` test instances of each task: per task the summed
    rollout decisions and wall times of each search and their ratios, and the totals. RuntimeError if the two
    searches give different results on an instance."""
    from kairos_gym.benchmark.oracle_cache import task_bases
    from kairos_gym.benchmark.suite import SUITE

    out: list[dict[str, Any]] = []
    for task in (SUITE if tasks is None else tasks):
        base = task.base()
        bases = task_bases(None, task.oracle_bases)
        agg = {"task": task.name, "instances": 0, "requests": 0, "slo_attainment": [],
               **{f"{s}_{k}": 0.0 for s in SEARCHES for k in ("rollout_decisions", "wall_s")}}
        for inst in task.test[:instances]:
            sc = inst.scenario(base)
            res = {}
            for search in SEARCHES:
                result, row = _run(sc, inst.seed, 1, search == "exhaustive", bases)
                res[search] = result
                agg[f"{search}_rollout_decisions"] += row["rollout_decisions"]
                agg[f"{search}_wall_s"] += row["wall_s"]
            if res["exhaustive"] != res["bounded"]:
                raise RuntimeError(f"perf-oracle --suite: the two searches differ on {task.name}, {inst.label}")
            agg["instances"] += 1
            agg["requests"] += int(res["bounded"]["n_requests"])
            agg["slo_attainment"].append(res["bounded"]["slo_attainment"])
            if progress is not None:
                progress(f"{task.name} {inst.label}: {agg['exhaustive_rollout_decisions']:,.0f} -> "
                         f"{agg['bounded_rollout_decisions']:,.0f} rollout decisions")
        out.append(agg)
    for a in out:
        a["cost_ratio"] = a["exhaustive_rollout_decisions"] / max(a["bounded_rollout_decisions"], 1.0)
        a["wall_ratio"] = a["exhaustive_wall_s"] / max(a["bounded_wall_s"], 1e-9)
    tot = {k: sum(a[k] for a in out) for k in ("exhaustive_rollout_decisions", "bounded_rollout_decisions",
                                               "exhaustive_wall_s", "bounded_wall_s", "instances", "requests")}
    tot["cost_ratio"] = tot["exhaustive_rollout_decisions"] / max(tot["bounded_rollout_decisions"], 1.0)
    tot["wall_ratio"] = tot["exhaustive_wall_s"] / max(tot["bounded_wall_s"], 1e-9)
    return {"tasks": out, "total": tot}


def empty_arrivals(policy: str = "kairos-exact", instances: int = 1, tasks: Sequence[Any] | None = None
                   ) -> list[dict[str, Any]]:
    """Per task of the suite, the share of arrivals that find the cluster empty (every earlier request finished,
    rejected or timed out before the arrival: no request in flight) under ``policy`` on the first ``instances``
    test instances, and the mean busy period (arrivals from one empty arrival to the next). A rollout could stop
    where its state equals another's (the same future), and an empty cluster is the state most likely to repeat;
    these figures say how often one occurs."""
    import numpy as np

    from kairos_gym.agents.runner import simulate
    from kairos_gym.benchmark.suite import SUITE

    out = []
    for task in (SUITE if tasks is None else tasks):
        base = task.base()
        n_arr = n_empty = 0
        for inst in task.test[:instances]:
            _, sim = simulate(policy, inst.scenario(base), inst.seed)
            t = sim.requests_table()
            arr = np.asarray(t["arrival_s"], dtype=np.float64)
            fin = np.asarray(t["finish_s"], dtype=np.float64)
            end = np.where(np.isnan(fin), arr, fin)  # a rejected or timed-out request: gone at its arrival
            done_by = np.maximum.accumulate(end)  # when the requests up to i are all gone
            empty = np.ones(len(arr), dtype=bool)
            empty[1:] = done_by[:-1] < arr[1:]
            n_arr += len(arr)
            n_empty += int(empty.sum())
        out.append({"task": task.name, "arrivals": n_arr, "empty": n_empty, "share": n_empty / max(n_arr, 1),
                    "busy_period": n_arr / max(n_empty, 1)})
    return out


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
    from kairos_gym.scenario import load_scenario

    rows = []
    for n in sizes:
        sc = load_scenario(scenario).with_overrides({"workload": {"max_requests": int(n)}})
        _, row = _run(sc, seed, threads, False)
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


__all__ = ["MAX_REQUESTS", "SEARCHES", "empty_arrivals", "growth_exponent", "measure", "measure_growth",
           "measure_suite", "plot_growth"]
