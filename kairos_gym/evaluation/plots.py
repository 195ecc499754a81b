"""Plots of an evaluation: TTFT CDF, TBT CDF, utilization, node timeline with deflected chunks.

Every figure shows one seed's run of each policy (the first seed of the evaluation) and says so in its title.
``utilization.png`` shows, per policy, the busy fraction of each node over time (10 s bins) and, beside it,
each node's SM-utilization proxy over the whole run (the ``P util`` / ``D util`` of the tables, docs/metrics.md)
next to its busy fraction: a decode node can be busy almost all the time while its SM proxy stays near 0.1,
because decode steps are memory-bound.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from kairos_gym.extras import require
from kairos_gym.output_file import save_figure

PLOT_FILES = ("ttft_cdf.png", "tbt_cdf.png", "utilization.png", "timeline.png")
"""The files :func:`write_plots` writes into its folder."""


def write_plots(sims: dict[str, Any], out: Path, scenario: str, seed: int | None = None) -> list[str]:
    """One PNG per figure (:data:`PLOT_FILES`) from one seed's run of each policy (``sims``: policy name ->
    simulator run with ``record_timeline``); ``seed`` is named in every title. Returns the paths. Needs the
    [plots] extra (matplotlib)."""
    require("plots", "plots")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    which = f"{scenario}, seed {seed}" if seed is not None else scenario
    paths = []
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for name, sim in sims.items():
        t = sim.requests_table()
        ttft = np.sort(t["ttft_s"][~np.isnan(t["ttft_s"])])
        ax.plot(ttft, np.arange(1, ttft.size + 1) / max(ttft.size, 1), label=name)
    ax.axvline(next(iter(sims.values())).scenario.slo.ttft_s, color="grey", ls="--", label="TTFT SLO")
    ax.set_xscale("log")
    ax.set(xlabel="TTFT (s)", ylabel="CDF", title=f"TTFT CDF: {which}")
    ax.legend()
    paths.append(_save(fig, out / PLOT_FILES[0]))
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for name, sim in sims.items():
        v, w = sim.stats.gaps()
        if v.size:
            o = np.argsort(v)
            ax.plot(v[o] * 1e3, np.cumsum(w[o]) / w.sum(), label=name)
    ax.axvline(next(iter(sims.values())).scenario.slo.tbt_s * 1e3, color="grey", ls="--", label="TBT SLO")
    ax.set(xlabel="token gap (ms)", ylabel="CDF (weighted by tokens)", title=f"TBT CDF: {which}")
    ax.legend()
    paths.append(_save(fig, out / PLOT_FILES[1]))
    fig, axes = plt.subplots(len(sims), 2, figsize=(11, 2.4 * len(sims)), squeeze=False,
                             gridspec_kw={"width_ratios": [3, 1]})
    for row, (name, sim) in zip(axes, sims.items(), strict=True):
        _utilization(row[0], sim)
        row[0].set_title(f"{name}: busy fraction over time (10 s bins)", fontsize=9)
        _run_utilization(row[1], sim)
        row[1].set_title(f"{name}: whole run", fontsize=9)
    for ax in axes[1:, 0]:
        ax.sharex(axes[0, 0])
    axes[-1, 0].set_xlabel("time (s)")
    fig.suptitle(f"Node utilization: {which}. Left: busy fraction (share of time a step runs). Right: SM-util "
                 "proxy\n(compute time at achievable kernel efficiency / time: the tables' P/D util) beside the "
                 "busy fraction", fontsize=9)
    paths.append(_save(fig, out / PLOT_FILES[2]))
    fig, axes = plt.subplots(len(sims), 1, figsize=(9, 1.8 * len(sims) + 0.6), sharex=True, squeeze=False)
    for ax, (name, sim) in zip(axes[:, 0], sims.items(), strict=True):
        _timeline(ax, sim)
        ax.set_title(name, fontsize=9)
    axes[-1, 0].set_xlabel("time (s), first 30 s")
    from matplotlib.patches import Patch

    fig.suptitle(f"Node timeline: {which}", fontsize=10)
    fig.legend(handles=[Patch(color="tab:blue", label="prefill step"), Patch(color="tab:green", label="decode steps"),
                        Patch(color="tab:red", label="decode step with a deflected chunk")],
               loc="lower center", ncol=3, fontsize=8)
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    paths.append(_save(fig, out / PLOT_FILES[3], layout=False))
    return paths


def _save(fig: Any, path: Path, layout: bool = True) -> str:
    if layout:
        fig.tight_layout()
    save_figure(fig, path, where="plots", flag="--plots")
    import matplotlib.pyplot as plt

    plt.close(fig)
    return str(path)


def _utilization(ax: Any, sim: Any, bin_s: float = 10.0) -> None:
    end = max(sim.now, bin_s)
    edges = np.arange(0.0, end + bin_s, bin_s)
    for kind, idx in sorted({(k, i) for k, i, *_ in sim.timeline}):
        busy = np.zeros(edges.size - 1)
        for k, i, a, b, _ in sim.timeline:
            if k == kind and i == idx:
                lo = np.clip(edges[:-1], a, b)
                hi = np.clip(edges[1:], a, b)
                busy += hi - lo
        ax.plot(edges[:-1], busy / bin_s, label=f"{kind}{idx}")
    ax.set_ylim(0, 1.4)  # room above 1.0 for the legend
    ax.set_yticks([0, 0.25, 0.5, 0.75, 1.0])
    ax.set_ylabel("busy fraction")
    ax.legend(fontsize=7, ncol=4, loc="upper center")


def run_utilization(sim: Any) -> list[tuple[str, float, float]]:
    """Per node ``(name, SM-util proxy, busy fraction)`` over the run, as the summary computes them
    (compute time / makespan and busy time / makespan; the summary's ``*_utilization`` are their means)."""
    s = sim.summary()
    span = s["sim_time_s"] if s["sim_time_s"] > 0 else 1.0
    nodes = [("P", n) for n in sim.pnodes] + [("D", n) for n in sim.dnodes]
    return [(f"{k}{n.idx}", n.compute_s / span, n.busy_s / span) for k, n in nodes]


def _run_utilization(ax: Any, sim: Any) -> None:
    rows = run_utilization(sim)
    x = np.arange(len(rows))
    ax.bar(x - 0.2, [r[1] for r in rows], 0.4, color="tab:purple", label="SM-util proxy")
    ax.bar(x + 0.2, [r[2] for r in rows], 0.4, color="tab:gray", label="busy fraction")
    ax.set_xticks(x, [r[0] for r in rows])
    ax.set_ylim(0, 1.4)  # room above 1.0 for the legend
    ax.set_yticks([0, 0.25, 0.5, 0.75, 1.0])
    ax.legend(fontsize=6, ncol=2, loc="upper center")


def _timeline(ax: Any, sim: Any, horizon: float = 30.0) -> None:
    rows = sorted({(k, i) for k, i, *_ in sim.timeline})
    colors = {"prefill": "tab:blue", "decode": "tab:green"}
    for y, (kind, idx) in enumerate(rows):
        spans = [(a, b - a, lab) for k, i, a, b, lab in sim.timeline if k == kind and i == idx and a < horizon]
        for a, w, lab in spans:
            ax.broken_barh([(a, w)], (y - 0.4, 0.8), color=colors.get(lab, "tab:red"))
    ax.set_yticks(range(len(rows)), [f"{k}{i}" for k, i in rows])
    ax.set_xlim(0, horizon)
