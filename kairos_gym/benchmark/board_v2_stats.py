"""The statistics of a v2 leaderboard run (docs/benchmark.md, "Suite v2: the headline, declared").

**Headline (pre-registered)**: an entry's mean SLO attainment over the **unseen** tasks, in points (x 100), each task
weighted equally (the mean of its per-instance scores). Why: v2 exists to give verdicts that transfer, and on the
unseen families every entry is on equal terms (fixed rules have nothing to tune, best-rule is tuned on seen train
instances only, learnt entries trained on seen families only); raw points, not Oracle-normalised scores, so no
denominator can explode and a policy that harms loses points wherever it harms. Its interval is the stratified
bootstrap (instances resampled within each task, :func:`kairos_gym.benchmark.aggregate.stratified_bootstrap`, 95%
percentile interval). The seen and all-task columns are secondary.

**Versus Kairos**: the paired difference of the headline (same instances), with its paired stratified-bootstrap
interval; P(> kairos): the mean over tasks of the share of instances where the entry scores above Kairos (ties 1/2).

**Robustness**: the entries' order by the unseen tasks' mean, IQM, median (of task means) and P(> kairos), and
whether they agree.

**Separation** per task: the pairs of entries whose paired 95% t-interval of the per-instance difference excludes 0;
a task separates when at least one pair does, and its spread (best entry's mean minus worst's) is reported.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import combinations
from typing import Any

import numpy as np

from kairos_gym.benchmark.aggregate import (
    aggregate_mean,
    aggregate_median,
    iqm,
    probability_of_improvement,
    stratified_bootstrap,
)
from kairos_gym.evaluation.stats import mean_ci

COMPARISON = "kairos"
HEADLINE_SPLIT = "unseen"
REPS = 20_000
"""Bootstrap resamples of the v2 intervals (seeded: they reproduce)."""


def _arrays(res: Mapping[str, Any], label: str, split: str | None) -> list[np.ndarray]:
    return [np.asarray(res["scores"][label][t["task"]], dtype=float) for t in res["tasks"]
            if split is None or t["split"] == split]


def _has(res: Mapping[str, Any], split: str | None) -> bool:
    return any(split is None or t["split"] == split for t in res["tasks"])


def columns(res: Mapping[str, Any], reps: int = REPS) -> list[dict[str, Any]]:
    """Per entry: the seen, unseen and all-task means (points) with bootstrap intervals, the headline's paired
    difference to Kairos and its interval, P(> kairos) on the unseen tasks; sorted by the headline."""
    rows = []
    split = HEADLINE_SPLIT if _has(res, HEADLINE_SPLIT) else None
    for e in res["entries"]:
        lab = e["label"]
        row: dict[str, Any] = {"label": lab, "kind": e["kind"], "trained_on": e.get("trained_on"),
                               "how_trained": e.get("how_trained")}
        for col, sp in (("seen", "seen"), ("unseen", "unseen"), ("all", None)):
            if not _has(res, sp):
                row[col] = None
                continue
            pt, lo, hi = stratified_bootstrap(aggregate_mean, [_arrays(res, lab, sp)], reps=reps)
            row[col] = {"mean": 100 * pt, "low": 100 * lo, "high": 100 * hi}
        if COMPARISON in res["scores"]:
            x, y = _arrays(res, lab, split), _arrays(res, COMPARISON, split)
            pt, lo, hi = stratified_bootstrap(lambda a, b: aggregate_mean(a) - aggregate_mean(b), [x, y], reps=reps)
            row["vs_kairos"] = {"mean": 100 * pt, "low": 100 * lo, "high": 100 * hi}
            row["p_above_kairos"] = float(probability_of_improvement(x, y))
        rows.append(row)
    key = "unseen" if split == HEADLINE_SPLIT else "all"
    return sorted(rows, key=lambda r: -r[key]["mean"])


def robustness(res: Mapping[str, Any]) -> dict[str, Any]:
    """The entries' order on the headline's tasks by mean, IQM, median and P(> kairos); ``agree``: all four equal."""
    split = HEADLINE_SPLIT if _has(res, HEADLINE_SPLIT) else None
    labels = [e["label"] for e in res["entries"]]
    arr = {lab: _arrays(res, lab, split) for lab in labels}
    stats = {"mean": {lab: float(aggregate_mean(a)) for lab, a in arr.items()},
             "iqm": {lab: float(iqm(a)) for lab, a in arr.items()},
             "median": {lab: float(aggregate_median(a)) for lab, a in arr.items()}}
    if COMPARISON in arr:
        stats["p_above_kairos"] = {lab: float(probability_of_improvement(a, arr[COMPARISON]))
                                   for lab, a in arr.items()}
    by_mean = {lab: i for i, lab in enumerate(sorted(labels, key=lambda lab: -stats["mean"][lab]))}
    orders = {k: sorted(labels, key=lambda lab, v=v: (-v[lab], by_mean[lab])) for k, v in stats.items()}  # ties: mean
    ref = orders["mean"]
    return {"split": split or "all", "values": stats, "orders": orders,
            "agree": all(o == ref for k, o in orders.items() if k != "p_above_kairos")
            and (orders.get("p_above_kairos", ref) == ref),
            "differs": [k for k, o in orders.items() if o != ref]}


def separation(res: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Per task: the entries' means with t-intervals, the pairs separated by their paired 95% t-interval, the spread
    (best mean minus worst, points) and whether the task separates."""
    out = []
    labels = [e["label"] for e in res["entries"]]
    for t in res["tasks"]:
        x = {lab: np.asarray(res["scores"][lab][t["task"]], dtype=float) for lab in labels}
        means = {lab: mean_ci(v.tolist()) for lab, v in x.items()}
        pairs = []
        for a, b in combinations(labels, 2):
            m, h = mean_ci((x[a] - x[b]).tolist())
            if h == h and abs(m) > h:  # a finite interval clear of 0
                pairs.append((a, b) if m > 0 else (b, a))
        best = max(labels, key=lambda lab: means[lab][0])
        worst = min(labels, key=lambda lab: means[lab][0])
        out.append({"task": t["task"], "split": t["split"], "means": {k: {"mean": m, "half": h}
                                                                       for k, (m, h) in means.items()},
                    "best": best, "worst": worst, "spread": 100 * (means[best][0] - means[worst][0]),
                    "separated_pairs": pairs, "n_pairs": len(labels) * (len(labels) - 1) // 2,
                    "separates": bool(pairs)})
    return out


def learnt(res: Mapping[str, Any]) -> list[str]:
    """The learnt entries of a run (a shipped agent with a card, or a submitted checkpoint), in entry order."""
    return [e["label"] for e in res["entries"] if e.get("trained_on") or e.get("kind") == "checkpoint"]


def learnt_pairs(res: Mapping[str, Any], reps: int = REPS) -> list[dict[str, Any]]:
    """Every pair of learnt entries (a fine-tune against its student, two training seeds...): the paired difference
    ``a - b`` of the unseen and the seen means (points), with paired stratified-bootstrap intervals."""
    out = []
    for a, b in combinations(learnt(res), 2):
        row: dict[str, Any] = {"a": a, "b": b}
        for split in ("unseen", "seen"):
            if not _has(res, split):
                row[split] = None
                continue
            pt, lo, hi = stratified_bootstrap(lambda x, y: aggregate_mean(x) - aggregate_mean(y),
                                              [_arrays(res, a, split), _arrays(res, b, split)], reps=reps)
            row[split] = {"mean": 100 * pt, "low": 100 * lo, "high": 100 * hi}
        out.append(row)
    return out


def all_stats(res: Mapping[str, Any], reps: int = REPS) -> dict[str, Any]:
    """:func:`columns`, :func:`robustness`, :func:`separation` and :func:`learnt_pairs` of one run."""
    return {"columns": columns(res, reps), "robustness": robustness(res), "separation": separation(res),
            "learnt_pairs": learnt_pairs(res, reps)}


def check_scores(res: Mapping[str, Any]) -> None:
    """Every entry has a finite score on every test instance of every task (a v2 run is complete)."""
    for e in res["entries"]:
        for t in res["tasks"]:
            v = res["scores"][e["label"]][t["task"]]
            if len(v) != t["n_test"] or not all(np.isfinite(v)):
                raise ValueError(f"v2 scores of {e['label']} on {t['task']}: {len(v)} of {t['n_test']} finite")


__all__: Sequence[str] = ("COMPARISON", "HEADLINE_SPLIT", "all_stats", "check_scores", "columns", "learnt",
                          "learnt_pairs", "robustness", "separation")
