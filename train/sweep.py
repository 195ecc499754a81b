"""Sweeps: SLO attainment against load, and SQ/SL thresholds against Kairos and the Oracle.

``kairos-gym sweep --scenario bursty --loads 0.5,0.75,1,1.25 --seeds 0-2 --plots out/sweep``
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from kairos_gym.train.evaluate import mean_ci, run_one

from kairos_gym.config import ScenarioConfig, load_scenario
from kairos_gym.errors import ConfigError

DEFAULT_SQ = (2048.0, 8192.0, 32768.0)
DEFAULT_SL = (1024.0, 2048.0, 8192.0)
DEFAULT_CHUNKS = (512, 2048)


def scale_load(sc: ScenarioConfig, factor: float) -> ScenarioConfig:
    """The scenario with its arrival rate multiplied by ``factor`` (traces: rate_scale x factor)."""
    if not (isinstance(factor, (int, float)) and math.isfinite(factor) and factor > 0):
        raise ConfigError("sweep", "--loads", factor, "finite numbers > 0 (multipliers of the arrival rate)")
    arr = sc.workload.to_dict()["arrival"]
    kind = arr["kind"]
    if kind == "trace":
        new = {"rate_scale": arr["rate_scale"] * factor}
    elif kind in ("poisson", "gamma"):
        new = {"rate": arr["rate"] * factor}
    elif kind == "mmpp":
        new = {"rate_on": arr["rate_on"] * factor, "rate_off": arr["rate_off"] * factor}
    else:  # pragma: no cover - every arrival kind is listed above
        raise ConfigError("sweep", "arrival.kind", kind, "poisson, gamma, mmpp or trace")
    return sc.with_overrides({"workload": {"arrival": {"kind": kind, **new}}})


def _row(runs: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    out = dict(extra)
    for key in ("ttft_p95", "tbt_violation_rate", "slo_attainment", "deflection_rate", "goodput_rps"):
        m, h = mean_ci([r.get(key) for r in runs])
        out[key] = m
        out[key + "_ci95"] = h
    return out


def load_sweep(scenario: ScenarioConfig, loads: list[float], policies: list[str], seeds: list[int]) -> list[dict]:
    """Mean figures of each policy at each load multiplier."""
    rows = []
    for f in loads:
        sc = scale_load(scenario, f)
        for p in policies:
            rows.append(_row([run_one(sc, p, s)[0] for s in seeds], load=f, policy=p))
    return rows


def threshold_sweep(scenario: ScenarioConfig, seeds: list[int], sq: tuple[float, ...], sl: tuple[float, ...],
                    chunks: tuple[int, ...], references: list[str]) -> list[dict]:
    """SQ and SL at each (threshold, chunk), plus the reference policies (e.g. kairos, oracle)."""
    rows = []
    for c in chunks:
        for t in sq:
            runs = [run_one(scenario, "sq", s, params={"queue_threshold": t, "chunk": c})[0] for s in seeds]
            rows.append(_row(runs, policy="sq", threshold=t, chunk=c))
        for t in sl:
            runs = [run_one(scenario, "sl", s, params={"length_threshold": t, "chunk": c})[0] for s in seeds]
            rows.append(_row(runs, policy="sl", threshold=t, chunk=c))
    for p in references:
        rows.append(_row([run_one(scenario, p, s)[0] for s in seeds], policy=p))
    return rows


def classify(rows: list[dict], reference: str = "kairos", tbt_limit: float = 0.01) -> list[dict]:
    """Mark each SQ/SL setting as under-deflecting (P95 TTFT worse than the reference while within the
    TBT limit) or over-deflecting (TBT violation rate above the limit)."""
    ref = next((r for r in rows if r["policy"] == reference), None)
    for r in rows:
        if r["policy"] not in ("sq", "sl"):
            continue
        if r["tbt_violation_rate"] > tbt_limit:
            r["verdict"] = "over-deflects"
        elif ref is not None and r["ttft_p95"] > ref["ttft_p95"]:
            r["verdict"] = "under-deflects"
        else:
            r["verdict"] = "matches reference"
    return rows


def pareto_front(points: list[tuple[float, float]]) -> list[int]:
    """Indices of the points not dominated in (x, y), both minimised, sorted by x."""
    order = sorted(range(len(points)), key=lambda i: (points[i][0], points[i][1]))
    front, best = [], math.inf
    for i in order:
        if points[i][1] < best:
            front.append(i)
            best = points[i][1]
    return front


def write_sweep_plots(load_rows: list[dict], thr_rows: list[dict], out: Path, scenario: str) -> list[str]:
    """SLO attainment vs load; P95 TTFT vs TBT violation rate with the Pareto frontier."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    paths = []
    if load_rows:
        fig, ax = plt.subplots(figsize=(7, 4.5))
        for p in dict.fromkeys(r["policy"] for r in load_rows):
            rs = [r for r in load_rows if r["policy"] == p]
            ax.errorbar([r["load"] for r in rs], [r["slo_attainment"] for r in rs],
                        yerr=[r["slo_attainment_ci95"] for r in rs], marker="o", capsize=3, label=p)
        ax.set(xlabel="load (x the scenario's arrival rate)", ylabel="SLO attainment", title=f"{scenario}: load sweep")
        ax.legend()
        fig.tight_layout()
        fig.savefig(out / "slo_vs_load.png", dpi=110)
        plt.close(fig)
        paths.append(str(out / "slo_vs_load.png"))
    if thr_rows:
        fig, ax = plt.subplots(figsize=(7, 4.5))
        pts = [(r["tbt_violation_rate"], r["ttft_p95"]) for r in thr_rows]
        markers = {"sq": "s", "sl": "^"}
        for r, (x, y) in zip(thr_rows, pts, strict=True):
            label = f"{r['policy']} {r['threshold']:g}/{r['chunk']}" if "threshold" in r else r["policy"]
            ax.scatter([x], [y], marker=markers.get(r["policy"], "*"), s=80 if r["policy"] not in markers else 40)
            ax.annotate(label, (x, y), fontsize=7, xytext=(3, 3), textcoords="offset points")
        front = pareto_front(pts)
        ax.plot([pts[i][0] for i in front], [pts[i][1] for i in front], "k--", lw=1, label="Pareto frontier")
        ax.axvline(0.01, color="grey", ls=":", label="1% TBT violations")
        ax.set(xlabel="TBT violation rate", ylabel="P95 TTFT (s)", title=f"{scenario}: SQ/SL thresholds vs Kairos")
        ax.set_xscale("symlog", linthresh=1e-3)
        ax.set_xlim(left=0)
        ax.legend()
        fig.tight_layout()
        fig.savefig(out / "pareto_ttft_tbt.png", dpi=110)
        plt.close(fig)
        paths.append(str(out / "pareto_ttft_tbt.png"))
    return paths


def sweep(scenario: str | ScenarioConfig, loads: list[float], policies: list[str], seeds: list[int],
          sq: tuple[float, ...] = DEFAULT_SQ, sl: tuple[float, ...] = DEFAULT_SL,
          chunks: tuple[int, ...] = DEFAULT_CHUNKS, references: list[str] | None = None,
          plots_dir: str | Path | None = None) -> dict[str, Any]:
    """Both sweeps; ``{"load": rows, "thresholds": rows, "plots": paths}``."""
    sc = load_scenario(scenario)
    refs = references if references is not None else ["no-deflect", "kairos"]
    load_rows = load_sweep(sc, loads, policies, seeds) if loads else []
    thr_rows = classify(threshold_sweep(sc, seeds, sq, sl, chunks, refs)) if (sq or sl) else []
    res: dict[str, Any] = {"scenario": sc.name, "seeds": seeds, "load": load_rows, "thresholds": thr_rows}
    if plots_dir is not None:
        res["plots"] = write_sweep_plots(load_rows, thr_rows, Path(plots_dir), sc.name)
    return res


def format_sweep(res: dict[str, Any]) -> str:
    """Text tables of both sweeps."""
    lines = [f"scenario {res['scenario']}, seeds {res['seeds']}"]
    if res["load"]:
        lines.append(f"{'load':>6} {'policy':<15} {'P95 TTFT s':>11} {'TBT viol':>9} {'SLO att':>8} {'deflect':>8}")
        for r in res["load"]:
            lines.append(f"{r['load']:>6g} {r['policy']:<15} {r['ttft_p95']:>11.3f} {r['tbt_violation_rate']:>9.4f} "
                         f"{r['slo_attainment']:>8.3f} {r['deflection_rate']:>8.3f}")
    if res["thresholds"]:
        lines.append(f"{'policy':<8} {'threshold':>10} {'chunk':>6} {'P95 TTFT s':>11} {'TBT viol':>9} {'SLO att':>8} "
                     f"{'deflect':>8}  verdict")
        for r in res["thresholds"]:
            thr = f"{r['threshold']:g}" if "threshold" in r else "-"
            lines.append(f"{r['policy']:<8} {thr:>10} {r.get('chunk', '-')!s:>6} {r['ttft_p95']:>11.3f} "
                         f"{r['tbt_violation_rate']:>9.4f} {r['slo_attainment']:>8.3f} {r['deflection_rate']:>8.3f}  "
                         f"{r.get('verdict', '')}")
    return "\n".join(lines)


def parse_floats(flag: str, text: str) -> list[float]:
    """Comma-separated numbers for a CLI flag (empty string: none)."""
    try:
        vals = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise ConfigError("sweep", flag, text, "comma-separated numbers") from None
    if any(not math.isfinite(v) or v < 0 for v in vals):
        raise ConfigError("sweep", flag, text, "comma-separated finite numbers >= 0")
    return vals


__all__ = ["format_sweep", "load_sweep", "pareto_front", "scale_load", "sweep", "threshold_sweep"]
