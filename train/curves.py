"""Learning curves across training seeds, rliable style (``kairos-gym curves``; docs/training.md, "Learning curves
across seeds").

A domain run (``kairos_train/KairosGeneral-v0``) validates every ``eval.freq`` timesteps on held-out train-side
cases (family x track, train/domain.py) and writes each validation, case by case, to ``eval_history.jsonl``: the
agent's SLO attainment and the reference's (``eval.reference``, Kairos) on the same case. This module reads those
files from several runs of one recipe (one per seed) and aggregates them per validation step the way rliable does
(Agarwal et al., 2021): the score of a (run, case) pair is the agent's SLO attainment minus the reference's, in
points; the aggregate is the interquartile mean (IQM) over every (run, case) pair, and the mean beside it; the 95%
interval is the stratified bootstrap that resamples the runs within each case
(:func:`kairos_gym.benchmark.aggregate.stratified_bootstrap`, unpaired: each case draws its own runs). With few
runs the interval is wide, and it says so: it is over seeds, the thing a recipe's claim is about.

Only the steps every run has validated at are aggregated (a run stopped early shortens the curve, it does not
bias it). The runs must share their cases and reference.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from kairos_gym.errors import ConfigError

MAX_RUNS = 64
"""Most runs one curve aggregates."""
MAX_HISTORY_BYTES = 64 * 2**20
"""Largest eval_history.jsonl read (bytes)."""
REPS = 20_000
"""Bootstrap resamples per step (seeded: the intervals reproduce)."""


def read_history(run: str | Path) -> list[dict[str, Any]]:
    """A run folder's validations (its ``eval_history.jsonl``), in order; ConfigError naming the run when there is
    none or a line is not a domain validation (per-case figures and the timestep)."""
    from kairos_gym.json_file import parse_json_text

    path = Path(run) / "eval_history.jsonl"
    if not path.is_file():
        raise ConfigError("curves", "run", str(run), "a training run folder with eval_history.jsonl (a run with "
                          "eval.freq > 0)")
    if path.stat().st_size > MAX_HISTORY_BYTES:
        raise ConfigError("curves", "run", str(run), f"an eval_history.jsonl of at most {MAX_HISTORY_BYTES} bytes")
    out = []
    for i, line in enumerate(path.read_text(encoding="utf-8").splitlines()):
        if not line.strip():
            continue
        rec = parse_json_text("curves", f"{path} line {i + 1}", line, "a JSON object")
        if not isinstance(rec, dict) or not isinstance(rec.get("cases"), dict) or not isinstance(
                rec.get("timesteps"), int):
            raise ConfigError("curves", "run", f"{path} line {i + 1}", "a domain run's validation (cases, timesteps;"
                              " kairos_train/KairosGeneral-v0)")
        out.append(rec)
    if not out:
        raise ConfigError("curves", "run", str(run), "a run with at least one validation")
    return out


def reference_scores(run: str | Path, rec: dict[str, Any]) -> tuple[str, dict[str, float]]:
    """``(reference, {case: its SLO attainment})``: the validation's comparison policy (``eval.reference``) on each
    case, on the case's own track. Read from the record where the run stored it; otherwise run again from the run's
    config.yaml (the cases and the policy are deterministic: the same figures the run compared against)."""
    ref = rec.get("reference")
    if isinstance(ref, dict) and len(ref) == 1:
        name, body = next(iter(ref.items()))
        if isinstance(body, dict) and isinstance(body.get("cases"), dict):
            return str(name), {k: float(v) for k, v in body["cases"].items()}
    return _rerun_reference(str(Path(run) / "config.yaml"))


_RERUN: dict[str, tuple[str, dict[str, float]]] = {}


def _rerun_reference(config: str) -> tuple[str, dict[str, float]]:
    if config not in _RERUN:
        from kairos_gym.train.config import load_config
        from kairos_gym.train.domain import run_reference, spec_from_kwargs, validation_cases

        cfg = load_config(config)
        cases = validation_cases(spec_from_kwargs(cfg.env_kwargs))
        _RERUN[config] = (cfg.eval.reference,
                          {c.label: run_reference(c, cfg.eval.reference)["slo_attainment"] for c in cases})
    return _RERUN[config]


def _gaps(run: str | Path, rec: dict[str, Any]) -> tuple[str, dict[str, float]]:
    """Per case: the agent's SLO attainment minus the reference's, in points."""
    name, ref = reference_scores(run, rec)
    if set(ref) != set(rec["cases"]):
        raise ConfigError("curves", "run", str(run), "a run whose reference covers its validation cases")
    return name, {lab: 100 * (float(c["slo_attainment"]) - ref[lab]) for lab, c in rec["cases"].items()}


def curves(runs: Sequence[str | Path], reps: int = REPS) -> dict[str, Any]:
    """Per validation step every run has: the IQM and the mean of the (run, case) gaps to the reference in points,
    each with its stratified-bootstrap 95% interval over the runs, and each run's mean gap. JSON-ready."""
    from kairos_gym.benchmark.aggregate import aggregate_mean, iqm, stratified_bootstrap

    if not runs or len(runs) > MAX_RUNS or len({str(r) for r in runs}) != len(runs):
        raise ConfigError("curves", "runs", [str(r) for r in runs], f"1 to {MAX_RUNS} distinct run folders")
    gaps = {str(r): {rec["timesteps"]: _gaps(r, rec) for rec in read_history(r)} for r in runs}
    refs = {name for h in gaps.values() for name, _ in h.values()}
    hist = {r: {step: g for step, (_, g) in h.items()} for r, h in gaps.items()}
    cases = {tuple(sorted(g)) for h in hist.values() for g in h.values()}
    if len(cases) != 1 or len(refs) != 1:
        raise ConfigError("curves", "runs", [str(r) for r in runs], "runs of one recipe (the same validation cases "
                          "and reference)")
    labels = sorted(next(iter(cases)))
    steps = sorted(set.intersection(*(set(h) for h in hist.values())))
    rows = []
    for step in steps:
        per_case = [np.asarray([hist[r][step][c] for r in hist], dtype=float) for c in labels]
        row: dict[str, Any] = {"timesteps": step}
        for name, stat in (("iqm", iqm), ("mean", aggregate_mean)):
            pt, lo, hi = stratified_bootstrap(stat, [per_case], reps=reps, paired=False)
            row[name] = {"point": float(pt), "low": float(lo), "high": float(hi)}
        row["per_run"] = {r: float(np.mean([hist[r][step][c] for c in labels])) for r in hist}
        rows.append(row)
    return {"runs": list(hist), "cases": labels, "reference": refs.pop(),
            "score": "SLO attainment minus the reference's on the same case and track, points", "rows": rows}


def render(res: dict[str, Any]) -> str:
    """The curves as a markdown table."""
    lines = [f"Validation gap to {res['reference']} over {len(res['runs'])} run(s) x {len(res['cases'])} cases "
             f"({res['score']}); IQM and mean with 95% stratified-bootstrap intervals over the runs.", "",
             "| steps | IQM | mean | per run |", "|---|---|---|---|"]
    for r in res["rows"]:
        per = ", ".join(f"{v:+.1f}" for v in r["per_run"].values())
        lines.append(f"| {r['timesteps']:,} | {r['iqm']['point']:+.1f} [{r['iqm']['low']:+.1f}, "
                     f"{r['iqm']['high']:+.1f}] | {r['mean']['point']:+.1f} [{r['mean']['low']:+.1f}, "
                     f"{r['mean']['high']:+.1f}] | {per} |")
    return "\n".join(lines) + "\n"


def plot(res: dict[str, Any], path: str | Path) -> None:
    """The IQM curve with its interval band and each run's mean gap (matplotlib, the ``[plots]`` extra)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    x = [r["timesteps"] for r in res["rows"]]
    fig, ax = plt.subplots(figsize=(6, 3.5))
    for run in res["runs"]:
        ax.plot(x, [r["per_run"][run] for r in res["rows"]], color="0.75", lw=1)
    ax.plot(x, [r["iqm"]["point"] for r in res["rows"]], color="C0", lw=2, label="IQM over runs x cases")
    ax.fill_between(x, [r["iqm"]["low"] for r in res["rows"]], [r["iqm"]["high"] for r in res["rows"]],
                    color="C0", alpha=0.25, label="95% stratified bootstrap")
    ax.axhline(0, color="k", lw=0.8)
    ax.set_xlabel("timesteps")
    ax.set_ylabel("SLO attainment - reference (points)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def write_tensorboard(res: dict[str, Any], folder: str | Path) -> None:
    """The aggregate curves as TensorBoard scalars (``curves/iqm``, ``curves/iqm_low``, ... by timestep)."""
    from torch.utils.tensorboard import SummaryWriter

    w = SummaryWriter(str(folder))
    for r in res["rows"]:
        for name in ("iqm", "mean"):
            for part in ("point", "low", "high"):
                tag = f"curves/{name}" + ("" if part == "point" else f"_{part}")
                w.add_scalar(tag, r[name][part], r["timesteps"])
    w.close()


__all__ = ["MAX_RUNS", "curves", "plot", "read_history", "render", "write_tensorboard"]
