"""Sweeps: SLO attainment against load, and SQ/SL thresholds against Kairos and the Oracle.

``kairos-gym sweep --scenario bursty --loads 0.5,0.75,1,1.25 --seeds 0-2 --plots out/sweep``

A policy from a user's file or checkpoint (``--policy FILE.py:CLASS``, ``--checkpoint DIR``: ``externals``) runs in
the load sweep beside the registry policies and in the threshold sweep beside the references, labelled
``file:FILE.py:CLASS`` / ``checkpoint:DIR``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kairos_gym.errors import ConfigError
from kairos_gym.evaluation.backends import Backend, SerialBackend
from kairos_gym.evaluation.backends.runs import policy_label, policy_task
from kairos_gym.evaluation.evaluate import check_policies, interval_title
from kairos_gym.evaluation.stats import mean_ci, nan_to_none
from kairos_gym.extras import require
from kairos_gym.flags import format_seeds
from kairos_gym.output_file import save_figure
from kairos_gym.progress import RunProgress, or_silent
from kairos_gym.scenario import ScenarioConfig, load_scenario
from kairos_gym.table import ci_cell, render_table

if TYPE_CHECKING:
    from kairos_gym.agents.policy_file_loader import ExternalPolicy

    Entry = str | ExternalPolicy

DEFAULT_SQ = (2048.0, 8192.0, 32768.0)
DEFAULT_SL = (1024.0, 2048.0, 8192.0)
DEFAULT_CHUNKS = (512, 2048)
MAX_LOAD = 100.0
"""Largest load multiplier (``--loads``)."""
MAX_THRESHOLD = 1e9
"""Largest SQ/SL threshold (tokens)."""
ROW_KEYS = ("ttft_p95", "tbt_violation_rate", "slo_attainment", "deflection_rate", "goodput_rps")
"""Figures of a sweep row: the mean over the seeds as ``key``, the half-width of its 95% t-interval as
``key_ci95`` (None with one seed)."""


def scale_load(sc: ScenarioConfig, factor: float) -> ScenarioConfig:
    """The scenario with its arrival rate multiplied by ``factor`` (traces: rate_scale x factor)."""
    if isinstance(factor, bool) or not (isinstance(factor, (int, float)) and math.isfinite(factor)
                                        and 0 < factor <= MAX_LOAD):
        raise ConfigError("sweep", "--loads", factor, f"finite numbers > 0 and <= {MAX_LOAD:g} (multipliers of "
                          "the arrival rate)")
    arr = sc.workload.arrival
    return sc.with_overrides({"workload": {"arrival": {"kind": arr.kind, **arr.rate_overrides(factor)}}})


def _row(runs: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    out = dict(extra)
    out["n_seeds"] = len(runs)
    for key in ROW_KEYS:
        m, h = mean_ci([r.get(key) for r in runs])
        out[key] = m
        out[key + "_ci95"] = nan_to_none(h)
    return out


def _run_groups(groups: list[tuple[ScenarioConfig, Entry, dict[str, Any] | None, str]], seeds: list[int],
                bar: RunProgress, backend: Backend | None) -> list[list[dict[str, Any]]]:
    """The summaries of every ``(scenario, policy, params, label)`` group on every seed, one list per group, all
    runs handed to ``backend`` at once (default: serially, here; an external policy in this process)."""
    tasks = [policy_task(p, sc, s, f"{label} seed {s}", params=params) for sc, p, params, label in groups
             for s in seeds]
    out = (backend or SerialBackend(retries=0)).map(tasks, bar)
    n = len(seeds)
    return [out[k * n:(k + 1) * n] for k in range(len(groups))]


def _threshold_settings(sq: tuple[float, ...], sl: tuple[float, ...],
                        chunks: tuple[int, ...]) -> list[tuple[str, float, int, dict[str, Any]]]:
    out = []
    for c in chunks:
        out += [("sq", t, c, {"queue_threshold": t, "chunk": c}) for t in sq]
        out += [("sl", t, c, {"length_threshold": t, "chunk": c}) for t in sl]
    return out


def load_sweep(scenario: ScenarioConfig, loads: list[float], policies: Sequence[Entry], seeds: list[int],
               progress: RunProgress | None = None, backend: Backend | None = None) -> list[dict]:
    """Mean figures of each policy (a registry name or an external policy) at each load multiplier."""
    bar = or_silent(progress)
    scaled = [scale_load(scenario, f) for f in loads]  # every load checked before the first run
    keys = [(f, policy_label(p)) for f in loads for p in policies]
    groups = [(sc, p, None, f"load {f:g} {policy_label(p)}") for f, sc in zip(loads, scaled, strict=True)
              for p in policies]
    return [_row(runs, load=f, policy=p)
            for (f, p), runs in zip(keys, _run_groups(groups, seeds, bar, backend), strict=True)]


def threshold_sweep(scenario: ScenarioConfig, seeds: list[int], sq: tuple[float, ...], sl: tuple[float, ...],
                    chunks: tuple[int, ...], references: Sequence[Entry], progress: RunProgress | None = None,
                    backend: Backend | None = None) -> list[dict]:
    """SQ and SL at each (threshold, chunk), plus the reference policies (e.g. kairos, oracle, a user's)."""
    bar = or_silent(progress)
    settings = _threshold_settings(sq, sl, chunks)
    groups: list[tuple[ScenarioConfig, Entry, dict[str, Any] | None, str]] = [
        (scenario, p, params, f"{p} {t:g}/{c}") for p, t, c, params in settings]
    groups += [(scenario, p, None, policy_label(p)) for p in references]
    runs = _run_groups(groups, seeds, bar, backend)
    rows = [_row(r, policy=p, threshold=t, chunk=c) for (p, t, c, _), r in zip(settings, runs, strict=False)]
    return rows + [_row(r, policy=policy_label(p)) for p, r in zip(references, runs[len(settings):], strict=True)]


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


def seeds_label(seeds: list[int], bars: bool = True) -> str:
    """What a sweep figure aggregates: ``"means over seeds 0-2 (n=3), bars: 95% t-interval"``."""
    n = len(seeds)
    if n == 1:
        return f"seed {format_seeds(seeds)}" + (" (one seed: no interval)" if bars else "")
    return f"means over seeds {format_seeds(seeds)} (n={n})" + (", bars: 95% t-interval" if bars else "")


def write_sweep_plots(load_rows: list[dict], thr_rows: list[dict], out: Path, scenario: str,
                      seeds: list[int] | None = None) -> list[str]:
    """SLO attainment vs load; P95 TTFT vs TBT violation rate with the Pareto frontier. Titles say which
    seeds each figure aggregates; every point of the threshold plot is named in a legend beside the axes
    (no labels on the points, so none overlap). Needs the [plots] extra (matplotlib)."""
    require("plots", "plots")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    paths = []
    what = seeds_label(seeds) if seeds else "means over the seeds"
    what_pts = seeds_label(seeds, bars=False) if seeds else "means over the seeds"
    if load_rows:
        fig, ax = plt.subplots(figsize=(7, 4.5))
        for p in dict.fromkeys(r["policy"] for r in load_rows):
            rs = [r for r in load_rows if r["policy"] == p]
            err = [r.get("slo_attainment_ci95") for r in rs]
            yerr = None if any(e is None for e in err) else err
            ax.errorbar([r["load"] for r in rs], [r["slo_attainment"] for r in rs], yerr=yerr, marker="o",
                        capsize=3, label=p)
        ax.set(xlabel="load (x the scenario's arrival rate)", ylabel="SLO attainment")
        ax.set_title(f"{scenario}: load sweep\n{what}", fontsize=10)
        ax.legend()
        fig.tight_layout()
        save_figure(fig, out / "slo_vs_load.png", where="sweep", flag="--plots")
        plt.close(fig)
        paths.append(str(out / "slo_vs_load.png"))
    if thr_rows:
        fig, ax = plt.subplots(figsize=(10, 5))
        pts = [(r["tbt_violation_rate"], r["ttft_p95"]) for r in thr_rows]
        markers = {"sq": "s", "sl": "^"}
        colors = plt.get_cmap("tab20").colors
        for i, (r, (x, y)) in enumerate(zip(thr_rows, pts, strict=True)):
            label = (f"{r['policy']} threshold {r['threshold']:g}, chunk {r['chunk']}" if "threshold" in r
                     else r["policy"])
            ax.scatter([x], [y], marker=markers.get(r["policy"], "*"), s=40 if r["policy"] in markers else 120,
                       color=colors[i % len(colors)], edgecolors="black", linewidths=0.5, label=label, zorder=3)
        front = pareto_front(pts)
        ax.plot([pts[i][0] for i in front], [pts[i][1] for i in front], "k--", lw=1, label="Pareto frontier")
        ax.axvline(0.01, color="grey", ls=":", label="1% TBT violations")
        ax.set(xlabel="TBT violation rate", ylabel="P95 TTFT (s)")
        ax.set_title(f"{scenario}: SQ/SL thresholds vs references\n{what_pts}", fontsize=10)
        ax.set_xscale("symlog", linthresh=1e-3)
        ax.set_xlim(left=-1e-4)  # the markers at 0 TBT violations stay whole
        ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize=7, borderaxespad=0.0)
        fig.tight_layout()
        save_figure(fig, out / "pareto_ttft_tbt.png", where="sweep", flag="--plots")
        plt.close(fig)
        paths.append(str(out / "pareto_ttft_tbt.png"))
    return paths


def sweep(scenario: str | ScenarioConfig, loads: list[float], policies: list[str], seeds: list[int],
          sq: tuple[float, ...] = DEFAULT_SQ, sl: tuple[float, ...] = DEFAULT_SL,
          chunks: tuple[int, ...] = DEFAULT_CHUNKS, references: list[str] | None = None,
          plots_dir: str | Path | None = None, progress: RunProgress | None = None,
          backend: Backend | None = None, externals: Sequence[ExternalPolicy] = ()) -> dict[str, Any]:
    """Both sweeps; ``{"load": rows, "thresholds": rows, "plots": paths}``. ``externals`` (policies from a user's
    file or checkpoint) run after ``policies`` in the load sweep and after ``references`` in the threshold sweep.
    ``backend`` runs the runs (default: serially, here; every backend gives the same result).

    Every input is checked before the first run: the load multipliers (finite, in (0, MAX_LOAD]), the policy
    and reference names, each SQ/SL setting (threshold, chunk from the scenario's menu) by building it, each
    external policy on a short prefix of the scenario, and that matplotlib (the [plots] extra) is installed when
    ``plots_dir`` is given.
    """
    if plots_dir is not None:
        require("plots", "plots (plots_dir)")
    sc = load_scenario(scenario)
    if not seeds:
        raise ConfigError("sweep", "--seeds", seeds, "at least one seed")
    refs: list[Entry] = list(references if references is not None else ["no-deflect", "kairos"])
    for f in loads:
        scale_load(sc, f)
    settings = _threshold_settings(sq, sl, chunks) if (sq or sl) else []
    if loads:
        check_policies("sweep", "--policies", policies, sc, seeds[0], externals)
    elif externals and settings:
        check_policies("sweep", "--references", [], sc, seeds[0], externals)
    load_policies: list[Entry] = [*policies, *externals]
    if settings:
        if refs:
            check_policies("sweep", "--references", refs, sc, seeds[0])
        refs += externals
        from kairos_gym.agents.registry import make_policy

        for p, t, c, params in settings:
            if not math.isfinite(t) or not 0 <= t <= MAX_THRESHOLD:
                raise ConfigError("sweep", f"--{p}-thresholds", t, f"finite numbers in [0, {MAX_THRESHOLD:g}] (tokens)")
            try:
                make_policy(p, sc, seeds[0], **params)
            except ConfigError as e:
                flag = "--chunks" if e.field == "chunk" else f"--{p}-thresholds"
                raise ConfigError("sweep", flag, c if flag == "--chunks" else t, e.allowed) from None
    bar = or_silent(progress)
    bar.start(len(seeds) * (len(loads) * len(load_policies) + (len(settings) + len(refs) if settings else 0)))
    load_rows = load_sweep(sc, loads, load_policies, seeds, bar, backend) if loads else []
    thr_rows = classify(threshold_sweep(sc, seeds, sq, sl, chunks, refs, bar, backend)) if settings else []
    res: dict[str, Any] = {"scenario": sc.name, "seeds": list(seeds), "load": load_rows, "thresholds": thr_rows}
    if plots_dir is not None:
        res["plots"] = write_sweep_plots(load_rows, thr_rows, Path(plots_dir), sc.name, list(seeds))
    return res


SWEEP_COLUMNS = (("ttft_p95", "P95 TTFT\n(s)", ".3g"), ("tbt_violation_rate", "TBT viol\n(frac)", ".2g"),
                 ("slo_attainment", "SLO att\n(frac)", ".3g"), ("deflection_rate", "deflect\n(frac)", ".3g"))


def _cells(r: dict[str, Any]) -> list[Any]:
    out: list[Any] = []
    for key, _, spec in SWEEP_COLUMNS:
        h = r.get(key + "_ci95")
        cell = ci_cell(r[key], math.nan if h is None else h, spec)
        out.append(cell[0] if isinstance(cell, tuple) and r.get("n_seeds", 2) == 1 else cell)
    return out


def format_sweep(res: dict[str, Any]) -> str:
    """Text tables of both sweeps (:func:`kairos_gym.table.render_table`): mean ± 95% t-interval over the
    seeds."""
    lines = [interval_title(res["scenario"], list(res["seeds"]))]
    heads = [h for _, h, _ in SWEEP_COLUMNS]
    if res["load"]:
        rows = [[f"{r['load']:g}", r["policy"], *_cells(r)] for r in res["load"]]
        lines.append(render_table(["load\n(x rate)", "policy", *heads], rows, keep=2,
                                  align=("right", "left", *["right"] * len(heads))))
    if res["thresholds"]:
        if res["load"]:
            lines.append("")
        rows = [[r["policy"], f"{r['threshold']:g}" if "threshold" in r else "-", str(r.get("chunk", "-")),
                 *_cells(r), r.get("verdict", "")] for r in res["thresholds"]]
        lines.append(render_table(["policy", "threshold\n(tokens)", "chunk\n(tokens)", *heads, "verdict"], rows,
                                  keep=3, align=("left", "right", "right", *["right"] * len(heads), "left")))
    return "\n".join(lines)


__all__ = ["classify", "format_sweep", "load_sweep", "pareto_front", "scale_load", "sweep", "threshold_sweep"]
