"""Plots of an evaluation: TTFT CDF, TBT CDF, utilization over time, node timeline with deflected chunks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np


def write_plots(sims: dict[str, Any], out: Path, scenario: str) -> list[str]:
    """One PNG per figure from the first seed's run of each policy; returns the paths."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    paths = []
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for name, sim in sims.items():
        t = sim.requests_table()
        ttft = np.sort(t["ttft_s"][~np.isnan(t["ttft_s"])])
        ax.plot(ttft, np.arange(1, ttft.size + 1) / max(ttft.size, 1), label=name)
    ax.axvline(next(iter(sims.values())).scenario.slo.ttft_s, color="grey", ls="--", label="TTFT SLO")
    ax.set_xscale("log")
    ax.set(xlabel="TTFT (s)", ylabel="CDF", title=f"TTFT CDF: {scenario}")
    ax.legend()
    paths.append(_save(fig, out / "ttft_cdf.png"))
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for name, sim in sims.items():
        v, w = sim.stats.gaps()
        if v.size:
            o = np.argsort(v)
            ax.plot(v[o] * 1e3, np.cumsum(w[o]) / w.sum(), label=name)
    ax.axvline(next(iter(sims.values())).scenario.slo.tbt_s * 1e3, color="grey", ls="--", label="TBT SLO")
    ax.set(xlabel="token gap (ms)", ylabel="CDF (weighted by tokens)", title=f"TBT CDF: {scenario}")
    ax.legend()
    paths.append(_save(fig, out / "tbt_cdf.png"))
    fig, axes = plt.subplots(len(sims), 1, figsize=(9, 2.2 * len(sims)), sharex=True, squeeze=False)
    for ax, (name, sim) in zip(axes[:, 0], sims.items(), strict=True):
        _utilization(ax, sim)
        ax.set_title(name, fontsize=9)
    axes[-1, 0].set_xlabel("time (s)")
    fig.suptitle(f"Busy fraction per node over time (10 s bins): {scenario}")
    paths.append(_save(fig, out / "utilization.png"))
    fig, axes = plt.subplots(len(sims), 1, figsize=(9, 1.8 * len(sims)), sharex=True, squeeze=False)
    for ax, (name, sim) in zip(axes[:, 0], sims.items(), strict=True):
        _timeline(ax, sim)
        ax.set_title(name, fontsize=9)
    axes[-1, 0].set_xlabel("time (s), first 30 s")
    from matplotlib.patches import Patch

    fig.legend(handles=[Patch(color="tab:blue", label="prefill step"), Patch(color="tab:green", label="decode steps"),
                        Patch(color="tab:red", label="decode step with a deflected chunk")],
               loc="upper center", ncol=3, fontsize=8)
    fig.suptitle(" ")
    paths.append(_save(fig, out / "timeline.png"))
    return paths


def _save(fig: Any, path: Path) -> str:
    fig.tight_layout()
    fig.savefig(path, dpi=110)
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
    ax.set_ylim(0, 1.05)
    ax.legend(fontsize=7, ncol=4)


def _timeline(ax: Any, sim: Any, horizon: float = 30.0) -> None:
    rows = sorted({(k, i) for k, i, *_ in sim.timeline})
    colors = {"prefill": "tab:blue", "decode": "tab:green"}
    for y, (kind, idx) in enumerate(rows):
        spans = [(a, b - a, lab) for k, i, a, b, lab in sim.timeline if k == kind and i == idx and a < horizon]
        for a, w, lab in spans:
            ax.broken_barh([(a, w)], (y - 0.4, 0.8), color=colors.get(lab, "tab:red"))
    ax.set_yticks(range(len(rows)), [f"{k}{i}" for k, i in rows])
    ax.set_xlim(0, horizon)
