"""Kairos vs Kairos-pull on the suite's prefill-bound tasks: ``kairos-gym pull-compare
[--tasks bursty,regime-shift,long-tail] [--tier default]``.

Each rule runs on the test instances of each task (``kairos_gym.benchmark.suite``: the same fixed seeds and
trace windows as the leaderboard) twice: with ``deflection.decision_points: arrival`` (the paper's) and with
``arrival+pull`` (Kairos-pull, and the same static rule asked at pulls too). Scores: SLO attainment, means with
95% Student-t intervals over the instances, and the paired per-instance difference. docs/policies.md
("kairos-pull") quotes the table.
"""

from __future__ import annotations

from typing import Any

from kairos_gym.agents.runner import simulate
from kairos_gym.benchmark.suite import select_tasks
from kairos_gym.evaluation.stats import mean_ci

# ---------------------------------------------------------------------------------------------- measurement
MEASURED: tuple[tuple[str, str, str, str], ...] = (
    ("kairos (realistic)", "kairos", "arrival", "realistic"),
    ("kairos-pull (realistic)", "kairos-pull", "arrival+pull", "realistic"),
    ("kairos (exact)", "kairos", "arrival", "exact"),
    ("kairos-pull (exact)", "kairos-pull", "arrival+pull", "exact"),
    ("always-deflect-ls (exact)", "always-deflect-ls", "arrival", "exact"),
    ("always-deflect-ls +pull (exact)", "always-deflect-ls", "arrival+pull", "exact"),
)
"""What :func:`measure` runs: (label, registry name, ``deflection.decision_points``, ``information.track``)."""
DEFAULT_TASKS = "bursty,regime-shift,long-tail"
"""The suite's prefill-bound task families (default SLO tier) :func:`measure` runs by default."""


def measure(tasks: str = DEFAULT_TASKS, tier: str = "default", instances: int | None = None) -> list[dict[str, Any]]:
    """Every :data:`MEASURED` entry on the test instances of the suite's ``tasks`` (``kairos_gym.benchmark.suite``
    task or family names) at SLO ``tier``: per task and entry the mean SLO attainment with its 95% Student-t
    half-width over the instances, and the paired difference to the same rule without pulls (kairos-pull vs
    kairos on each information track, always-deflect-ls +pull vs always-deflect-ls). ``instances``: only
    the first that many test instances of each task (None: all)."""
    rows: list[dict[str, Any]] = []
    for task in select_tasks(tasks):
        if task.tier != tier:
            continue
        base = task.base()
        scores: dict[str, list[float]] = {}
        for label, name, points, track in MEASURED:
            sc = base.with_overrides({"deflection": {"decision_points": points}, "information": {"track": track}})
            scores[label] = [float(simulate(name, inst.scenario(sc), inst.seed)[0]["slo_attainment"])
                             for inst in task.test[:instances]]
        for i, (label, _, points, _) in enumerate(MEASURED):
            m, h = mean_ci(scores[label])
            row = {"task": task.name, "policy": label, "decision_points": points, "slo_attainment": m, "ci": h,
                   "n": len(scores[label])}
            if points != "arrival":
                ref = MEASURED[i - 1][0]
                dm, dh = mean_ci([a - b for a, b in zip(scores[label], scores[ref], strict=True)])
                row.update({"vs": ref, "diff": dm, "diff_ci": dh})
            rows.append(row)
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    """:func:`measure`'s rows as the markdown table docs/policies.md ("kairos-pull") shows."""
    lines = ["| task | policy | decision points | SLO attain. (95% CI) | paired diff. vs arrival-only (95% CI) |",
             "|---|---|---|---|---|"]
    for r in rows:
        diff = f"{r['diff']:+.3f} ± {r['diff_ci']:.3f} (vs {r['vs']})" if "diff" in r else ""
        lines.append(f"| {r['task']} | {r['policy']} | {r['decision_points']} | {r['slo_attainment']:.3f} ± "
                     f"{r['ci']:.3f} | {diff} |")
    return "\n".join(lines) + "\n"
