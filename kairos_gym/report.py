"""Formatting of results: summary tables and per-request CSV files."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kairos_gym.sim.engine import Simulator

SUMMARY_ROWS = (
    ("requests (completed / rejected)", None),
    ("TTFT P50 / P95 / P99 (s)", ("ttft_p50", "ttft_p95", "ttft_p99")),
    ("TBT P50 / P95 / P99 (s)", ("tbt_p50", "tbt_p95", "tbt_p99")),
    ("TBT violation rate", ("tbt_violation_rate",)),
    ("SLO attainment", ("slo_attainment",)),
    ("goodput (req/s)", ("goodput_rps",)),
    ("deflection rate", ("deflection_rate",)),
    ("prefill / decode SM-util proxy", ("prefill_utilization", "decode_utilization")),
    ("prefill / decode busy fraction", ("prefill_busy_fraction", "decode_busy_fraction")),
    ("prefill / decode MFU", ("prefill_mfu", "decode_mfu")),
    ("simulated / wall time (s)", ("sim_time_s", "wall_time_s")),
)


def _fmt(v: Any) -> str:
    if v is None:
        return "n/a"
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def format_summary(s: dict[str, Any]) -> str:
    """A two-column text table of the main summary figures."""
    lines = [f"scenario {s['scenario']} ({s['source']}), policy {s['policy']}, seed {s['seed']}"]
    for label, keys in SUMMARY_ROWS:
        if keys is None:
            val = f"{s['n_requests']} ({s['n_completed']} / {s['n_rejected']})"
        else:
            val = " / ".join(_fmt(s.get(k)) for k in keys)
        lines.append(f"  {label:<34} {val}")
    lines.append(f"  {'SLOs':<34} TTFT <= {s['slo_ttft_s']} s, max TBT <= {s['slo_tbt_s']} s")
    lines.append("  (SM-util proxy: compute time at achievable kernel efficiency / wall time; see docs/metrics.md)")
    return "\n".join(lines)


def write_requests_csv(sim: Simulator, path: str | Path) -> None:
    """The per-request record as CSV (one row per request)."""
    table = sim.requests_table()
    cols = list(table)
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(cols)
        for i in range(sim.n):
            w.writerow([table[c][i] for c in cols])
