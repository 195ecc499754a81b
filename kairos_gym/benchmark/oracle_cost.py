"""The rollout Oracle's cost on the benchmark suite (``kairos-gym perf-oracle --suite`` and ``--empty``; the
single-instance and growth measurements are kairos_gym/perf/oracle_speed.py): its searches on the suite's
instances, and how often an arrival finds the cluster empty. Measurements for docs/policies.md, not tests."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from kairos_gym.agents.oracle_run import SEARCHES, run_with_cost

SUITE_SEARCHES = ("exhaustive", "bounded")
"""The searches ``perf-oracle --suite`` compares by default (``--search reference,exhaustive,bounded`` adds the
Oracle before its exact constant-factor savings)."""


def measure_suite(instances: int = 1, tasks: Sequence[Any] | None = None,
                  progress: Callable[[str], Any] | None = None,
                  searches: Sequence[str] = SUITE_SEARCHES) -> dict[str, Any]:
    """The searches (one thread; ``searches`` includes exhaustive and bounded, and may add ``reference``, the
    Oracle before its exact constant-factor savings) on the first ``instances`` test instances of each task: per
    task the summed rollout decisions and wall times of each search and their ratios (``cost_ratio``,
    ``wall_ratio``: exhaustive over bounded; ``reference_wall_ratio``: reference over bounded), and the totals.
    RuntimeError if two searches give different results on an instance."""
    from kairos_gym.benchmark.oracle_cache import task_bases
    from kairos_gym.benchmark.suite import SUITE

    searches = tuple(searches)
    if "exhaustive" not in searches or "bounded" not in searches or len(set(searches)) != len(searches) \
            or any(s not in SEARCHES for s in searches):
        raise ValueError(f"measure_suite: searches {searches!r}: distinct names of {SEARCHES}, with exhaustive "
                         "and bounded")
    keys = [f"{s}_{k}" for s in searches for k in ("rollout_decisions", "wall_s")]
    out: list[dict[str, Any]] = []
    for task in (SUITE if tasks is None else tasks):
        base = task.base()
        bases = task_bases(None, task.oracle_bases)
        agg: dict[str, Any] = {"task": task.name, "instances": 0, "requests": 0, "slo_attainment": [],
                               **{k: 0.0 for k in keys}}
        for inst in task.test[:instances]:
            sc = inst.scenario(base)
            res = {}
            for search in searches:
                result, row = run_with_cost(sc, inst.seed, 1, search, bases)
                res[search] = result
                agg[f"{search}_rollout_decisions"] += row["rollout_decisions"]
                agg[f"{search}_wall_s"] += row["wall_s"]
            for search in searches:
                if res[search] != res["bounded"]:
                    raise RuntimeError(f"perf-oracle --suite: the {search} and bounded searches differ on "
                                       f"{task.name}, {inst.label}")
            agg["instances"] += 1
            agg["requests"] += int(res["bounded"]["n_requests"])
            agg["slo_attainment"].append(res["bounded"]["slo_attainment"])
            if progress is not None:
                progress(f"{task.name} {inst.label}: {agg['exhaustive_rollout_decisions']:,.0f} -> "
                         f"{agg['bounded_rollout_decisions']:,.0f} rollout decisions")
        out.append(agg)
    tot = {k: sum(a[k] for a in out) for k in (*keys, "instances", "requests")}
    for a in (*out, tot):
        a["cost_ratio"] = a["exhaustive_rollout_decisions"] / max(a["bounded_rollout_decisions"], 1.0)
        a["wall_ratio"] = a["exhaustive_wall_s"] / max(a["bounded_wall_s"], 1e-9)
        if "reference" in searches:
            a["reference_wall_ratio"] = a["reference_wall_s"] / max(a["bounded_wall_s"], 1e-9)
    return {"tasks": out, "total": tot, "searches": list(searches)}


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


__all__ = ["empty_arrivals", "measure_suite"]
