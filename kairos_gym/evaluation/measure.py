"""Measure the baselines on one scenario: a table of P95 TTFT, TBT violation rate, SLO attainment,
deflection rate and decision cost per policy, plus optional SQ/SL threshold sweeps.

    kairos-gym measure                       # the bursty stand-in dict scenario, 3000 requests at 20 req/s
    kairos-gym measure --scenario bursty --policies kairos,no-deflect
    kairos-gym measure --sweep --json results.json     # SQ / SL thresholds x chunk sizes too
    kairos-gym measure --acceptance                    # the acceptance criteria, PASS/FAIL

The default scenario is gamma arrivals (CV 3) at ``--rate`` req/s, lognormal prompts (median 1500,
sigma 0.8, max 8000) and outputs (median 150, sigma 0.8, max 1000) on the default 2P2D cluster.
"""

from __future__ import annotations

import json
import time
from typing import Any

from kairos_gym.agents.registry import POLICIES
from kairos_gym.agents.runner import run_policy
from kairos_gym.errors import ConfigError
from kairos_gym.scenario import load_scenario
from kairos_gym.table import render_table

COLUMNS = ("ttft_p95", "tbt_violation_rate", "slo_attainment", "deflection_rate", "decision_us_p50",
           "decision_us_p99", "decision_cpu_us_p50", "decision_cpu_us_p99")
SQ_THRESHOLDS = (0, 2048, 8192, 16384, 32768, 65536)
SL_THRESHOLDS = (512, 1024, 2048, 4096, 8192, 100000)
SWEEP_CHUNKS = (512, 2048)


def dict_scenario(num_requests: int = 3000, rate: float = 20.0, cv: float = 3.0) -> dict[str, Any]:
    """The bursty stand-in scenario (gamma arrivals, lognormal lengths) as a dict."""
    return {"name": f"gamma{rate:g}-cv{cv:g}", "workload": {
        "arrival": {"kind": "gamma", "rate": rate, "cv": cv}, "num_requests": num_requests,
        "lengths": {"kind": "lognormal", "prompt_median": 1500, "prompt_sigma": 0.8, "prompt_max": 8000,
                    "output_median": 150, "output_sigma": 0.8, "output_max": 1000}}}


def _row(label: str, s: dict[str, Any], wall: float) -> dict[str, Any]:
    return {"label": label, **{k: s.get(k) for k in COLUMNS}, "n_completed": s["n_completed"],
            "n_requests": s["n_requests"], "wall_s": round(wall, 1)}


_HEADERS = ("policy", "TTFT P95\n(s)", "TBT viol\n(frac)", "SLO att\n(frac)", "deflect\n(frac)",
            "decision\np50 (us)", "decision\np99 (us)", "CPU p50\n(us)", "CPU p99\n(us)", "wall\n(s)")
_SPECS = (("ttft_p95", ".3f"), ("tbt_violation_rate", ".4f"), ("slo_attainment", ".3f"), ("deflection_rate", ".3f"),
          ("decision_us_p50", ".1f"), ("decision_us_p99", ".1f"), ("decision_cpu_us_p50", ".1f"),
          ("decision_cpu_us_p99", ".1f"), ("wall_s", ".1f"))


def _fmt(rows: list[dict[str, Any]]) -> str:
    """The rows as one table (one run per row: no interval)."""
    def f(v: Any, spec: str) -> str:
        return format(v, spec) if isinstance(v, (int, float)) else "-"

    return render_table(_HEADERS, [[r["label"], *(f(r[k], spec) for k, spec in _SPECS)] for r in rows])


def _line(row: dict[str, Any]) -> str:
    """One row as it finishes (progress on stdout; the full table follows at the end)."""
    return f"{row['label']}: " + ", ".join(
        f"{h.replace(chr(10), ' ')} {format(row[k], spec) if isinstance(row[k], (int, float)) else '-'}"
        for h, (k, spec) in zip(_HEADERS[1:], _SPECS, strict=True))


def run_rows(scenario: Any, seed: int, policies: list[str], *, ppo_path: str | None = None,
             trust_checkpoint: bool = False, sweep: bool = False, json_path: str | None = None) -> int:
    """Run every policy (registry names; with ``sweep`` also SQ and SL over their thresholds x chunks 512/2048)
    on ``scenario`` (a name, YAML path or dict) with workload seed ``seed``: each row printed as it finishes, then
    the table; the rows as JSON to ``json_path``. Every name and parameter is checked before the first run."""
    runs: list[tuple[str, str, dict[str, Any]]] = []
    for n in policies:
        if n not in POLICIES:
            raise ConfigError("measure", "--policies", n, "one of " + ", ".join(POLICIES))
        kw: dict[str, Any] = {}
        if n == "ppo":
            kw = {"path": ppo_path, "trust_checkpoint": trust_checkpoint}
        runs.append((n, n, kw))
    if sweep:
        for c in SWEEP_CHUNKS:
            runs += [(f"sq(q>{t} tok, chunk {c})", "sq", {"queue_threshold": t, "chunk": c}) for t in SQ_THRESHOLDS]
            runs += [(f"sl(L<{t}, chunk {c})", "sl", {"length_threshold": t, "chunk": c}) for t in SL_THRESHOLDS]
    from kairos_gym.agents.registry import make_policy

    sc = load_scenario(scenario)
    for _, name, kw in runs:  # every policy and parameter checked before the first run
        make_policy(name, sc, seed, **kw)
    rows = []
    for label, name, kw in runs:
        t0 = time.perf_counter()
        s = run_policy(name, sc, seed, **kw)
        rows.append(_row(label, s, time.perf_counter() - t0))
        print(_line(rows[-1]), flush=True)
    print()
    print(_fmt(rows))
    if json_path:
        from kairos_gym.output_file import write_text

        write_text(json_path, json.dumps(rows, indent=2) + "\n", where="measure", flag="--json")
    return 0


ORACLE_REQUESTS = 300
"""Requests of the acceptance's Oracle check (the first ones of bursty: full-horizon rollouts cost O(n^2))."""


def acceptance(seed: int = 0, json_path: str | None = None) -> int:
    """The baselines' acceptance criteria (Kairos against no-deflect on bursty and decode-heavy, the Oracle against
    kairos-exact, Kairos's decision cost, SQ/SL thresholds that under- and over-deflect), printed as PASS/FAIL lines;
    exit status 1 if any fails. ``json_path``: also ``{"rows": [every run's row, labelled "scenario: policy"],
    "checks": [{"check", "pass"}]}`` as JSON there."""
    checks: list[tuple[str, bool]] = []
    rows: list[dict[str, Any]] = []

    def run(label: str, name: str, scenario: Any, **kw: Any) -> dict[str, Any]:
        t0 = time.perf_counter()
        s = run_policy(name, scenario, seed, **kw)
        where = scenario if isinstance(scenario, str) else f"bursty[:{ORACLE_REQUESTS}]"
        rows.append(_row(f"{where}: {label}", s, time.perf_counter() - t0))
        print(_line(rows[-1]), flush=True)
        return s

    nd = run("no-deflect", "no-deflect", "bursty")
    k = run("kairos", "kairos", "bursty")
    prefix = load_scenario("bursty").with_overrides({"workload": {"num_requests": ORACLE_REQUESTS}})
    o = run("oracle", "oracle", prefix)
    ke = run("kairos-exact", "kairos-exact", prefix)
    checks += [
        ("bursty: kairos P95 TTFT <= 0.5 x no-deflect", k["ttft_p95"] <= 0.5 * nd["ttft_p95"]),
        ("bursty: kairos TBT violation rate <= 1%", k["tbt_violation_rate"] <= 0.01),
        ("bursty: kairos SLO attainment > no-deflect", k["slo_attainment"] > nd["slo_attainment"]),
        (f"bursty[:{ORACLE_REQUESTS}]: oracle SLO attainment >= kairos-exact",
         o["slo_attainment"] >= ke["slo_attainment"]),
        ("bursty: kairos decision cost P50 < 100 us", k["decision_us_p50"] < 100.0),
        ("bursty: kairos decision cost P99 < 1 ms", k["decision_us_p99"] < 1000.0),
    ]
    dnd = run("no-deflect", "no-deflect", "decode-heavy")
    dk = run("kairos", "kairos", "decode-heavy")
    checks += [
        ("decode-heavy: kairos P95 TTFT <= 1.05 x no-deflect", dk["ttft_p95"] <= 1.05 * dnd["ttft_p95"]),
        ("decode-heavy: kairos SLO attainment >= 0.95 x no-deflect",
         dk["slo_attainment"] >= 0.95 * dnd["slo_attainment"]),
    ]
    for name, param, values in (("sq", "queue_threshold", SQ_THRESHOLDS), ("sl", "length_threshold", SL_THRESHOLDS)):
        under = over = None
        for c in SWEEP_CHUNKS:
            for v in values:
                s = run(f"{name}({param}={v}, chunk={c})", name, "bursty", **{param: v, "chunk": c})
                if under is None and s["ttft_p95"] > k["ttft_p95"] and s["tbt_violation_rate"] <= 0.01:
                    under = (v, c)
                if over is None and s["tbt_violation_rate"] > 0.01:
                    over = (v, c)
        checks += [
            (f"bursty: some {name} threshold under-deflects (TTFT worse than kairos): {under}", under is not None),
            (f"bursty: some {name} threshold over-deflects (TBT violations > 1%): {over}", over is not None),
        ]
    print()
    for text, ok in checks:
        print(("PASS  " if ok else "FAIL  ") + text)
    if json_path:
        from kairos_gym.output_file import write_text

        res = {"seed": seed, "rows": rows, "checks": [{"check": text, "pass": ok} for text, ok in checks]}
        write_text(json_path, json.dumps(res, indent=2) + "\n", where="measure", flag="--json")
    return 0 if all(ok for _, ok in checks) else 1

