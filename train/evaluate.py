"""The evaluation harness: every policy on the same workloads (same seeds), one table, JSON and plots.

``kairos-gym evaluate --scenario bursty --policies no-deflect,sq,sl,kairos --seeds 0-4``
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from kairos_gym.config import ScenarioConfig, load_scenario
from kairos_gym.errors import ConfigError

TABLE_KEYS = (
    ("ttft_p50", "TTFT P50 s"), ("ttft_p95", "TTFT P95 s"), ("tbt_p99", "TBT P99 s"),
    ("tbt_violation_rate", "TBT viol"), ("slo_attainment", "SLO att"), ("goodput_rps", "goodput"),
    ("deflection_rate", "deflect"), ("prefill_utilization", "P util"), ("decode_utilization", "D util"),
    ("decision_us_p50", "dec us p50"),
)


def parse_seeds(text: str) -> list[int]:
    """``"0-4"`` -> [0, 1, 2, 3, 4]; ``"0,3,7"`` -> [0, 3, 7]."""
    out: list[int] = []
    try:
        for part in text.split(","):
            if "-" in part:
                a, b = part.split("-")
                out.extend(range(int(a), int(b) + 1))
            elif part.strip():
                out.append(int(part))
    except ValueError:
        raise ConfigError("evaluate", "--seeds", text, "integers and ranges, e.g. 0-4 or 0,3,7") from None
    if not out or min(out) < 0:
        raise ConfigError("evaluate", "--seeds", text, "at least one seed >= 0, e.g. 0-4")
    return out


def run_one(scenario: ScenarioConfig, policy_name: str, seed: int, *, keep: bool = False,
            params: dict[str, Any] | None = None) -> tuple[dict[str, Any], Any]:
    """One run of ``policy_name`` (with policy ``params``); returns (summary, simulator if keep else None)."""
    from kairos_gym.agents.runner import simulate

    summary, sim = simulate(policy_name, scenario, seed, record_timeline=keep, **(params or {}))
    summary["policy"] = policy_name
    return summary, (sim if keep else None)


def mean_ci(values: list[float]) -> tuple[float, float]:
    """Mean and half-width of a 95% normal interval across seeds (0 for one seed)."""
    v = np.asarray([x for x in values if x is not None and not math.isnan(x)], dtype=float)
    if v.size == 0:
        return math.nan, math.nan
    if v.size == 1:
        return float(v[0]), 0.0
    return float(v.mean()), float(1.96 * v.std(ddof=1) / math.sqrt(v.size))


def evaluate(scenario: str | ScenarioConfig, policies: list[str], seeds: list[int],
             plots_dir: str | Path | None = None) -> dict[str, Any]:
    """Run every policy on every seed; returns ``{"runs": [summary, ...]}``; optionally writes plots."""
    from kairos_gym.agents.registry import POLICIES

    for p in policies:
        if p not in POLICIES:
            raise ConfigError("evaluate", "--policies", p, "names from " + ", ".join(POLICIES))
    sc = load_scenario(scenario)
    runs = []
    kept: dict[str, Any] = {}
    for name in policies:
        for i, seed in enumerate(seeds):
            summary, sim = run_one(sc, name, seed, keep=plots_dir is not None and i == 0)
            runs.append(summary)
            if sim is not None:
                kept[name] = sim
    result = {"scenario": sc.name, "seeds": seeds, "policies": policies, "runs": runs}
    if plots_dir is not None:
        from kairos_gym.train.plots import write_plots

        result["plots"] = write_plots(kept, Path(plots_dir), sc.name)
    return result


def format_table(result: dict[str, Any]) -> str:
    """Mean and 95% interval across seeds, one row per policy."""
    seeds = result["seeds"]
    head = f"{'policy':<15}" + "".join(f"{label:>20}" for _, label in TABLE_KEYS)
    lines = [f"scenario {result['scenario']}, seeds {seeds[0]}..{seeds[-1]} (n={len(seeds)}): mean ± 95% CI", head]
    for name in result["policies"]:
        rows = [r for r in result["runs"] if r["policy"] == name]
        cells = []
        for key, _ in TABLE_KEYS:
            m, h = mean_ci([r.get(key) for r in rows])
            cells.append("n/a" if math.isnan(m) else f"{m:.3g} ± {h:.2g}")
        lines.append(f"{name:<15}" + "".join(f"{c:>20}" for c in cells))
    return "\n".join(lines)
