"""The instance-length convergence study (``kairos-gym convergence``; docs/benchmark.md, "How long an instance").

How many scored requests, after how long a warm start, does an instance need before the policies' scores and their
order stop moving? For each synthetic family of the v1 suite (:data:`FAMILIES`, at its default SLO tier) and each
pair (burn-in ``B``, scored length ``L``), every policy of :data:`POLICIES` runs on ``seeds`` workloads of ``B + L``
requests with ``slo.burn_in_requests = B`` (:func:`instance_scenario`). Per family and pair the study reports

- each policy's mean SLO attainment over the seeds with its 95% t-interval (over the seeds);
- **Kendall's tau-b** between the policies' order by mean at that pair and at the reference pair (the longest
  ``L`` at the largest ``B``): 1 is the same order, ties counted as ties (:func:`kendall_tau_b`);
- the largest distance of a policy's mean from its reference mean (``max_shift``, SLO points).

An instance is long enough where tau-b reaches 1 (or the disagreeing pairs are within each other's intervals)
and the shift is inside the interval. The seeds (:data:`SEED_BASE` onwards) are neither test (0-9), train
(1000-1001) nor training (>= 10,000) seeds of the suite. The trace families are left out: their instances are trace
windows, whose length is the window's, not a request count.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from kairos_gym.errors import ConfigError
from kairos_gym.evaluation.backends import Backend
from kairos_gym.evaluation.backends.runs import RunSpec, run_task
from kairos_gym.evaluation.stats import mean_ci
from kairos_gym.scenario import ScenarioConfig

POLICIES = ("no-deflect", "always-deflect-ls", "sq-ls", "sl-ls", "kairos")
"""The policies whose scores and order the study follows (the shipped rules and Kairos, default parameters)."""
SEED_BASE = 2000
"""The study's workload seeds are SEED_BASE, SEED_BASE + 1, ... (outside the suite's test, train and training
seeds)."""
MAX_SEEDS = 100
MAX_SCORED = 100_000
"""Largest scored length ``L`` (requests) the command takes."""
MAX_BURN_IN = 100_000


def _default_tasks() -> dict[str, Any]:
    """The v1 suite's synthetic tasks at their default SLO tier, by family."""
    from kairos_gym.benchmark.suite import SUITE

    return {t.family: t for t in SUITE if t.tier == "default" and not t.windows}


def families() -> tuple[str, ...]:
    """The synthetic families of the v1 suite (kairos_gym.benchmark.suite.FAMILIES without trace windows)."""
    return tuple(_default_tasks())


def instance_scenario(family: str, burn_in: int, scored: int) -> ScenarioConfig:
    """The family's v1 task scenario (its overrides, default SLO tier) with ``burn_in + scored`` requests of which
    the first ``burn_in`` are not scored."""
    task = _default_tasks().get(family)
    if task is None:
        raise ConfigError("convergence", "--families", family, "one of " + ", ".join(families()))
    return task.base().with_overrides({"workload": {"num_requests": burn_in + scored},
                                       "slo": {"burn_in_requests": burn_in}})


def kendall_tau_b(x: Sequence[float], y: Sequence[float]) -> float:
    """Kendall's tau-b of two score lists over the same items (ties in either list count as ties): +1 the same
    order, -1 reversed; NaN when either list is constant."""
    if len(x) != len(y):
        raise ValueError("kendall_tau_b: lists of different lengths")
    conc = disc = tie_x = tie_y = 0
    n = len(x)
    for i in range(n):
        for j in range(i + 1, n):
            dx, dy = x[i] - x[j], y[i] - y[j]
            if dx == 0 and dy == 0:
                continue
            if dx == 0:
                tie_x += 1
            elif dy == 0:
                tie_y += 1
            elif (dx > 0) == (dy > 0):
                conc += 1
            else:
                disc += 1
    denom = math.sqrt((conc + disc + tie_x) * (conc + disc + tie_y))
    return (conc - disc) / denom if denom else math.nan


@dataclass(frozen=True)
class Cell:
    """One family at one (burn-in, scored length): per policy the seeds' scores."""

    family: str
    burn_in: int
    scored: int
    scores: dict[str, list[float]]

    def means(self) -> dict[str, float]:
        return {p: float(np.mean(v)) for p, v in self.scores.items()}

    def halves(self) -> dict[str, float]:
        """Per policy the half-width of the 95% t-interval of the mean over the seeds."""
        return {p: mean_ci(v)[1] for p, v in self.scores.items()}


def study(families_: Sequence[str], burn_ins: Sequence[int], lengths: Sequence[int], seeds: Sequence[int],
          backend: Backend, policies: Sequence[str] = POLICIES, progress: Any = None) -> list[Cell]:
    """Run every (family, burn-in, length, seed, policy) on ``backend``; the cells in that order."""
    keys: list[tuple[str, int, int, int, str]] = []
    tasks = []
    for fam in families_:
        for b in burn_ins:
            for n in lengths:
                sc = instance_scenario(fam, b, n)
                for s in seeds:
                    for p in policies:
                        keys.append((fam, b, n, s, p))
                        tasks.append(run_task(RunSpec(sc, p, s), f"{fam} B={b} L={n} seed {s} {p}"))
    results = backend.map(tasks, progress)
    by: dict[tuple[str, int, int], dict[str, list[float]]] = {}
    for (fam, b, n, _s, p), res in zip(keys, results, strict=True):
        by.setdefault((fam, b, n), {q: [] for q in policies})[p].append(float(res["slo_attainment"]))
    return [Cell(fam, b, n, by[(fam, b, n)]) for fam in families_ for b in burn_ins for n in lengths]


def summary_rows(cells: Sequence[Cell]) -> list[dict[str, Any]]:
    """Per cell: tau-b (None where either order is all ties) and the largest mean shift against its family's
    reference cell (the largest burn-in's longest length), the mean interval half-width, and the policies in order
    of mean score."""
    rows = []
    for fam in dict.fromkeys(c.family for c in cells):
        own = [c for c in cells if c.family == fam]
        ref = max(own, key=lambda c: (c.burn_in, c.scored))
        ref_means = ref.means()
        for c in own:
            m = c.means()
            pol = list(m)
            rows.append({
                "family": fam, "burn_in": c.burn_in, "scored": c.scored,
                "tau_b": _none_if_nan(kendall_tau_b([m[p] for p in pol], [ref_means[p] for p in pol])),
                "max_shift": max(abs(m[p] - ref_means[p]) for p in pol),
                "mean_half_width": float(np.mean(list(c.halves().values()))),
                "order": sorted(pol, key=lambda p: -m[p]),
                "means": m, "half_widths": c.halves(),
                "reference": c is ref,
            })
    return rows


def _none_if_nan(x: float) -> float | None:
    return None if math.isnan(x) else x


def markdown(rows: Sequence[dict[str, Any]], seeds: int) -> str:
    """The study's table: one row per family, burn-in and scored length."""
    out = [f"Seeds per cell: {seeds} (workload seeds from {SEED_BASE}); tau-b and shift against the family's "
           "reference (the largest burn-in's longest length, marked *); half-width: the 95% t-interval of a "
           "policy's mean over the seeds, averaged over the policies.", "",
           "| family | burn-in | scored | tau-b | max shift | mean ± half-width | order (best first) |",
           "|---|---|---|---|---|---|---|"]
    for r in rows:
        tau = "n/a" if r["tau_b"] is None else f"{r['tau_b']:.2f}"
        out.append(f"| {r['family']} | {r['burn_in']:,} | {r['scored']:,}{' *' if r['reference'] else ''} | {tau} | "
                   f"{r['max_shift']:.3f} | ±{r['mean_half_width']:.3f} | "
                   + ", ".join(f"{p} {r['means'][p]:.3f}" for p in r["order"]) + " |")
    return "\n".join(out) + "\n"


def check_grid(where: str, burn_ins: Sequence[int], lengths: Sequence[int], fams: Sequence[str]) -> None:
    """Refuse an unknown family and repeated values (the integers' bounds are checked where they are parsed)."""
    known = families()
    for f in fams:
        if f not in known:
            raise ConfigError(where, "--families", f, "synthetic families: " + ", ".join(known))
    if len(set(burn_ins)) != len(burn_ins) or len(set(lengths)) != len(lengths):
        raise ConfigError(where, "--burn-in/--lengths", f"{list(burn_ins)} / {list(lengths)}", "distinct values")
