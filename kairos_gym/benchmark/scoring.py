"""The leaderboard's statistics (docs/benchmark.md): per-run figures, normalised scores, per-task intervals,
paired comparisons, the Oracle's headroom and the bootstrap aggregates.

Per instance the score is the SLO attainment (:data:`METRIC`). Per task it is normalised, ``(x - no-deflect) /
(Oracle - no-deflect)`` with the two anchors' means over the task's test instances: 0 is no-deflect
(:data:`BASELINE`), 1 is the clairvoyant rollout Oracle (:data:`REFERENCE`, agents/oracle.py: never below any
of its base policies on an instance, so a policy above 1 beat the Oracle's bases and the Oracle itself). A task
where the Oracle beats no-deflect by less than :data:`MIN_HEADROOM` has no room to normalise in: it is reported
raw and left out of the aggregates. Per task the **headroom** is the Oracle minus the best shipped heuristic
(:func:`headroom`), paired on the instances with a 95% Student-t interval. Across the tasks with headroom: IQM,
median, mean and optimality gap of the normalised scores, and the probability of improvement over
:data:`COMPARISON` (paired on the instances), each with a 95% stratified-bootstrap percentile interval
(:mod:`kairos_gym.benchmark.aggregate`); per task, means with 95% Student-t intervals over the instances
(:func:`kairos_gym.evaluation.stats.mean_ci`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from kairos_gym.benchmark.aggregate import (
    BOOTSTRAP_REPS,
    BOOTSTRAP_SEED,
    aggregate_mean,
    aggregate_median,
    iqm,
    optimality_gap,
    probability_of_improvement,
    stratified_bootstrap,
)
from kairos_gym.errors import ConfigError
from kairos_gym.evaluation.stats import mean_ci, nan_to_none

BASELINE = "no-deflect"
"""The 0 of the normalised score."""
REFERENCE = "oracle"
"""The 1 of the normalised score: the clairvoyant rollout Oracle."""
REFERENCE_LABEL = ("the clairvoyant rollout Oracle (agents/oracle.py: it knows the workload's future and rolls every "
                   "action out to the end of the instance under no-deflect, kairos-exact, always-deflect-ls, sq-ls, "
                   "sl-ls and the task's best-static rule; never below any of them on an instance)")
NOT_HEURISTICS = (REFERENCE, "ppo", "distilled-oracle")
"""Built-in entries that are not shipped heuristics (the headroom compares the Oracle with the best of the rest)."""
COMPARISON = "kairos"
"""The policy every other is compared with, paired on the instances (probability of improvement, differences)."""
METRIC = "slo_attainment"
"""The per-instance score (fraction of requests within both SLOs, docs/metrics.md)."""
MIN_HEADROOM = 0.01
"""Least ``reference - no-deflect`` (SLO attainment, means over the test instances) for a task to be normalised."""
BREAKDOWN = ("queue", "execution", "transfer")
KEYS = ("slo_attainment", "ttft_p95", "tbt_violation_rate", "tbt_request_attainment", "deflection_rate", "n_requests",
        *(f"ttft_breakdown_mean.{k}" for k in BREAKDOWN), *(f"ttft_breakdown_p95.{k}" for k in BREAKDOWN))
"""Figures kept per run (``a.b``: key ``b`` of the summary's dict ``a``)."""


def run_scores(runs: Sequence[Mapping[str, Any]], key: str = METRIC) -> list[float]:
    """Figure ``key`` of each run summary (``a.b``: key ``b`` of the summary's dict ``a``); NaN where a summary
    lacks it (e.g. no request completed)."""
    out = []
    for r in runs:
        head, _, sub = key.partition(".")
        v = r.get(head)
        if sub:
            v = v.get(sub) if isinstance(v, Mapping) else None
        out.append(math.nan if v is None else float(v))
    return out


def _ci(values: Sequence[float]) -> dict[str, float | None]:
    m, h = mean_ci(values)
    return {"mean": nan_to_none(m), "ci95": nan_to_none(h), "n": len([v for v in values if not math.isnan(v)])}


def headroom(figures: Mapping[str, Mapping[str, Mapping[str, list[float]]]], task: str,
             heuristics: Sequence[str]) -> dict[str, Any]:
    """The Oracle minus the best shipped heuristic on ``task``: the heuristic with the highest mean SLO attainment
    over the test instances (first in entry order on ties), the per-instance differences' mean with its 95%
    Student-t half-width, wins/ties/losses of the Oracle, and ``where``: "none" when the mean difference is
    below :data:`MIN_HEADROOM` (one SLO-attainment point: a gap that small is no room to schedule better, even
    when its interval lies above 0), else "headroom" when the interval lies above 0, else "unclear"."""
    means = {h: float(np.mean(figures[h][task][METRIC])) for h in heuristics}
    best_h = max(heuristics, key=lambda h: (means[h], -list(heuristics).index(h)))
    x, y = figures[REFERENCE][task][METRIC], figures[best_h][task][METRIC]
    d = [a - b for a, b in zip(x, y, strict=True)]
    c = _ci(d)
    half = c["ci95"] if c["ci95"] is not None else math.inf
    where = ("none" if c["mean"] is not None and c["mean"] < MIN_HEADROOM else
             "headroom" if c["mean"] is not None and c["mean"] - half > 0 else "unclear")
    return {"best": best_h, "best_mean": means[best_h], "oracle_mean": float(np.mean(x)), **c,
            "wins": sum(a > b for a, b in zip(x, y, strict=True)),
            "ties": sum(a == b for a, b in zip(x, y, strict=True)),
            "losses": sum(a < b for a, b in zip(x, y, strict=True)), "where": where}


def score(figures: Mapping[str, Mapping[str, Mapping[str, list[float]]]], tasks: Sequence[str],
          reps: int = BOOTSTRAP_REPS, heuristics: Sequence[str] | None = None) -> dict[str, Any]:
    """Normalised scores, per-task intervals, paired comparisons with :data:`COMPARISON`, the Oracle's headroom
    over the best of ``heuristics`` (None: every label but :data:`NOT_HEURISTICS`) and the bootstrap
    aggregates, from ``figures[label][task][key]`` (one value per test instance, the same instances for every
    label)."""
    labels = list(figures)
    for label in labels:
        for t in tasks:
            if any(math.isnan(v) for v in figures[label][t][METRIC]):
                raise ConfigError("leaderboard", label, t, f"runs that complete requests (a {METRIC} on every "
                                  "instance)")
    anchors = {}
    scored, saturated = [], []
    for t in tasks:
        nd = float(np.mean(figures[BASELINE][t][METRIC]))
        ref = float(np.mean(figures[REFERENCE][t][METRIC]))
        anchors[t] = {"no_deflect": nd, "reference": ref, "headroom": ref - nd}
        (scored if ref - nd >= MIN_HEADROOM else saturated).append(t)
    normalized = {label: {t: [(x - anchors[t]["no_deflect"]) / anchors[t]["headroom"]
                              for x in figures[label][t][METRIC]] for t in scored} for label in labels}
    per_task = {label: {t: {"raw": _ci(figures[label][t][METRIC]),
                            "normalized": _ci(normalized[label][t]) if t in scored else None,
                            **{k: _ci(figures[label][t][k]) for k in KEYS if k != METRIC and k in figures[label][t]}}
                        for t in tasks} for label in labels}
    paired = {}
    for label in labels:
        paired[label] = {}
        for t in tasks:
            x, y = figures[label][t][METRIC], figures[COMPARISON][t][METRIC]
            d = [a - b for a, b in zip(x, y, strict=True)]
            paired[label][t] = {**_ci(d), "wins": sum(a > b for a, b in zip(x, y, strict=True)),
                                "ties": sum(a == b for a, b in zip(x, y, strict=True)),
                                "losses": sum(a < b for a, b in zip(x, y, strict=True))}
    heur = [h for h in (labels if heuristics is None else heuristics) if h not in NOT_HEURISTICS and h in figures]
    head = {t: headroom(figures, t, heur) for t in tasks} if heur and REFERENCE in figures else {}
    aggregates: dict[str, Any] = {}
    if scored:
        for label in labels:
            xs = [np.asarray(normalized[label][t]) for t in scored]
            ys = [np.asarray(figures[COMPARISON][t][METRIC]) for t in scored]
            raw = [np.asarray(figures[label][t][METRIC]) for t in scored]
            agg = {name: list(stratified_bootstrap(f, [xs], reps=reps, rng=BOOTSTRAP_SEED))
                   for name, f in (("iqm", iqm), ("median", aggregate_median), ("mean", aggregate_mean),
                                   ("optimality_gap", optimality_gap))}
            agg["poi_vs_comparison"] = list(stratified_bootstrap(probability_of_improvement, [raw, ys], reps=reps,
                                                                 rng=BOOTSTRAP_SEED))
            aggregates[label] = agg
    return {"metric": METRIC, "baseline": BASELINE, "reference": REFERENCE, "reference_label": REFERENCE_LABEL,
            "comparison": COMPARISON, "min_headroom": MIN_HEADROOM, "anchors": anchors, "scored_tasks": scored,
            "saturated_tasks": saturated, "normalized": normalized, "per_task": per_task, "paired": paired,
            "headroom": head,
            "aggregates": aggregates, "bootstrap": {"reps": reps, "seed": BOOTSTRAP_SEED, "method": "percentile",
                                                    "confidence": 0.95}}


def ranking(res: Mapping[str, Any]) -> list[str]:
    """Labels by IQM of the normalised score (highest first; ties by label), or in entry order without one."""
    labels = [e["label"] for e in res["entries"]]
    agg = res["aggregates"]
    if not agg:
        return labels
    return sorted(labels, key=lambda lb: (-agg[lb]["iqm"][0], lb))


__all__ = ["BASELINE", "COMPARISON", "KEYS", "METRIC", "MIN_HEADROOM", "NOT_HEURISTICS", "REFERENCE", "headroom",
           "ranking", "run_scores", "score"]
