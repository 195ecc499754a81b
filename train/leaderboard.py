"""The standard suite and ``LEADERBOARD.md`` (``kairos-gym leaderboard``); the protocol is docs/benchmark.md.

Every policy runs on the same fixed **instances** of every **task** (a shipped scenario): for a synthetic
scenario an instance is a workload seed; for a trace scenario, whose workload the seed does not change, an
instance is a disjoint window of the trace (``arrival.start_s/end_s``, run with seed 0, which then seeds only
the policies' own randomness). Each task also has **train** instances, disjoint from the test ones, on which
the ``best-static`` entry picks its rule; everything in the tables is scored on the test instances.

Per instance the score is the SLO attainment. Per task it is normalised, ``(x - no-deflect) / (Kairos-exact -
no-deflect)`` with the two anchors' means over the task's test instances: 0 is no-deflect, 1 is the upper
reference, Kairos-exact (a fresh view and an exact latency model; **not** an Oracle bound: a policy can score
above 1). A task where the reference beats no-deflect by less than :data:`MIN_HEADROOM` has no room to
normalise in: it is reported raw and left out of the aggregates. Across the tasks with headroom:
IQM, median, mean and optimality gap of the normalised scores, and the probability of improvement over Kairos
(paired on the instances), each with a 95% stratified-bootstrap percentile interval
(:mod:`kairos_gym.train.aggregate`); per task, means with 95% Student-t intervals over the instances
(:func:`kairos_gym.stats.mean_ci`).

Policies: registry names (``--policies``), ``best-static``, classes from files (``--policy file.py:Class``)
and safe-format checkpoints (``--checkpoint DIR``), all run through :func:`kairos_gym.agents.runner.simulate`.
"""

from __future__ import annotations

import datetime
import itertools
import math
import platform
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from kairos_gym.agents.loader import ExternalPolicy, probe, run_checked
from kairos_gym.train.aggregate import (
    BOOTSTRAP_REPS,
    BOOTSTRAP_SEED,
    aggregate_mean,
    aggregate_median,
    iqm,
    optimality_gap,
    probability_of_improvement,
    stratified_bootstrap,
)
from kairos_gym.train.evaluate import check_policies, run_one

from kairos_gym.config import ScenarioConfig, load_scenario
from kairos_gym.errors import ConfigError
from kairos_gym.flags import format_seeds
from kairos_gym.progress import RunProgress, or_silent
from kairos_gym.stats import mean_ci, nan_to_none

BASELINE = "no-deflect"
"""The 0 of the normalised score."""
REFERENCE = "kairos-exact"
"""The 1 of the normalised score (until a clairvoyant Oracle bound exists)."""
REFERENCE_LABEL = "Kairos-exact (fresh view, exact latency model; an upper reference, not an Oracle bound)"
COMPARISON = "kairos"
"""The policy every other is compared with, paired on the instances (probability of improvement, differences)."""
REQUIRED = (BASELINE, COMPARISON, REFERENCE)
BEST_STATIC = "best-static"
"""The entry that tunes a static rule (:data:`STATIC_GRID`) per task on the train instances."""
DEFAULT_POLICIES = ("no-deflect,always-deflect,always-deflect-ls,sq,sq-ls,sl,sl-ls,best-static,kairos,kairos-exact,"
                    "ppo")
REFUSED = {"oracle": "the Oracle rolls every option forward: about 7 min per 3,000-request run here "
                     "(docs/policies.md), hours for the suite; it is not a deployable scheduler either"}
METRIC = "slo_attainment"
"""The per-instance score (fraction of requests within both SLOs, docs/metrics.md)."""
MIN_HEADROOM = 0.01
"""Least ``reference - no-deflect`` (SLO attainment, means over the test instances) for a task to be normalised."""
MAX_EXTERNAL = 16
"""Most ``--policy`` plus ``--checkpoint`` entries of one leaderboard run."""
KEYS = ("slo_attainment", "ttft_p95", "tbt_violation_rate", "deflection_rate", "n_requests")
"""Figures kept per run."""


# ---------------------------------------------------------------------------------------------- the suite
@dataclass(frozen=True)
class Instance:
    """One workload every policy runs on: a seed, and for a trace a window ``[start_s, end_s)`` in original
    trace seconds (before ``rate_scale``)."""

    seed: int
    window_s: tuple[float, float] | None = None

    @property
    def label(self) -> str:
        if self.window_s is None:
            return f"seed {self.seed}"
        return f"window [{self.window_s[0]:g}, {self.window_s[1]:g}) s"

    def scenario(self, base: ScenarioConfig) -> ScenarioConfig:
        if self.window_s is None:
            return base
        a, b = self.window_s
        return base.with_overrides({"workload": {"arrival": {"start_s": a, "end_s": b}}})


@dataclass(frozen=True)
class Task:
    """A scenario with its fixed test and train instances."""

    name: str
    scenario: str | Mapping[str, Any]
    test: tuple[Instance, ...]
    train: tuple[Instance, ...]
    windows: bool = field(default=False)

    def describe(self, which: str = "test") -> str:
        inst = self.test if which == "test" else self.train
        if not self.windows:
            return "seeds " + format_seeds([i.seed for i in inst])
        return ", ".join(f"[{i.window_s[0]:g}, {i.window_s[1]:g})" for i in inst if i.window_s) + " s"


def seeds(*values: int) -> tuple[Instance, ...]:
    """Instances of a synthetic scenario: one per seed."""
    return tuple(Instance(s) for s in values)


def windows(edges: Sequence[float], seed: int = 0) -> tuple[Instance, ...]:
    """Instances of a trace scenario: consecutive windows ``[edges[i], edges[i+1])`` (original trace seconds)."""
    return tuple(Instance(seed, (float(a), float(b))) for a, b in itertools.pairwise(edges))


TRACE_WINDOW_S = 480.0
"""Length of a trace instance (original seconds; azure-code's 3,436 s give seven, the first two for training)."""
_W = [TRACE_WINDOW_S * i for i in range(8)]
SUITE: tuple[Task, ...] = (
    Task("bursty", "bursty", seeds(0, 1, 2, 3, 4), seeds(1000, 1001)),
    Task("steady", "steady", seeds(0, 1, 2, 3, 4), seeds(1000, 1001)),
    Task("decode-heavy", "decode-heavy", seeds(0, 1, 2, 3, 4), seeds(1000, 1001)),
    Task("azure-code", "azure-code", windows(_W[2:]), windows(_W[:3]), windows=True),
)
"""The standard suite: test instances (5 per task) and the disjoint train instances of ``best-static``."""

STATIC_GRID: tuple[tuple[str, dict[str, Any]], ...] = (
    ("always-deflect", {"chunk": 512}), ("always-deflect-ls", {}),
    *(("sq", {"queue_threshold": q, "chunk": 512}) for q in (0, 2048, 8192, 32768)),
    *(("sq-ls", {"queue_threshold": q}) for q in (0, 2048, 8192, 32768)),
    *(("sl", {"length_threshold": n, "chunk": 512}) for n in (1024, 2048, 4096, 8192)),
    *(("sl-ls", {"length_threshold": n}) for n in (1024, 2048, 4096, 8192)),
)
"""The static rules ``best-static`` chooses from (registry name, parameters): thresholds in tokens."""


def rule_label(name: str, params: Mapping[str, Any]) -> str:
    """``"sq-ls queue_threshold=2048"``."""
    return " ".join([name, *(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in params.items())])


# ---------------------------------------------------------------------------------------------- provenance
def provenance() -> dict[str, Any]:
    """The package version, the git commit of the checkout it runs from (None outside one) and whether tracked
    files other than ``*.md`` differ from it, the date, Python and numpy versions."""
    from kairos_gym import __version__

    root = Path(__file__).resolve().parents[1]
    commit, dirty = None, None
    if (root / ".git").exists():
        try:
            commit = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                                    timeout=10, check=True).stdout.strip() or None
            status = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                                    capture_output=True, text=True, timeout=10, check=True).stdout
            dirty = any(not line.rstrip().endswith(".md") for line in status.splitlines() if line.strip())
        except (OSError, subprocess.SubprocessError):
            commit, dirty = None, None
    return {"version": __version__, "commit": commit, "dirty": dirty,
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "python": platform.python_version(), "numpy": np.__version__}


# ---------------------------------------------------------------------------------------------- checks
@dataclass(frozen=True)
class Entry:
    """One row of the leaderboard: ``run(task, scenario, seed, tick) -> summary``."""

    label: str
    kind: str  # "built-in", "tuned", "file", "checkpoint"
    run: Callable[[Task, ScenarioConfig, int, Any], dict[str, Any]]


def check_entries(policies: Sequence[str], externals: Sequence[ExternalPolicy]) -> None:
    """Names once each, the anchors present, nothing refused, external labels distinct (before any run)."""
    from kairos_gym.agents.registry import POLICIES

    w = "leaderboard"
    allowed = [*POLICIES, BEST_STATIC]
    for p in policies:
        if p in REFUSED:
            raise ConfigError(w, "--policies", p, f"names from {', '.join(n for n in allowed if n not in REFUSED)} "
                              f"({p} is left out: {REFUSED[p]})")
        if p not in allowed:
            raise ConfigError(w, "--policies", p, "names from " + ", ".join(allowed))
    if len(set(policies)) != len(policies):
        raise ConfigError(w, "--policies", ",".join(policies), "each policy once")
    missing = [p for p in REQUIRED if p not in policies]
    if missing:
        raise ConfigError(w, "--policies", ",".join(policies), f"a list that includes {', '.join(REQUIRED)} "
                          f"(the normalisation anchors and the comparison; missing: {', '.join(missing)})")
    if len(externals) > MAX_EXTERNAL:
        raise ConfigError(w, "--policy/--checkpoint", len(externals), f"at most {MAX_EXTERNAL} entries")
    labels = [e.label for e in externals]
    for i, e in enumerate(externals):
        if e.label in labels[:i] or e.label in policies:
            raise ConfigError(w, e.flag, e.spec, f"each policy once ({e.label} is given twice)")


def _builtin(name: str) -> Entry:
    def run(task: Task, sc: ScenarioConfig, seed: int, tick: Any) -> dict[str, Any]:
        return run_one(sc, name, seed, tick=tick)[0]

    return Entry(name, "built-in", run)


def _external(ext: ExternalPolicy) -> Entry:
    def run(task: Task, sc: ScenarioConfig, seed: int, tick: Any) -> dict[str, Any]:
        return run_checked(ext, sc, seed, progress=tick)

    return Entry(ext.label, "file" if ext.flag == "--policy" else "checkpoint", run)


def _scores(runs: list[dict[str, Any]], key: str = METRIC) -> list[float]:
    out = []
    for r in runs:
        v = r.get(key)
        out.append(math.nan if v is None else float(v))
    return out


def tune_static(task: Task, base: ScenarioConfig, bar: RunProgress) -> dict[str, Any]:
    """Mean train SLO attainment of every rule of :data:`STATIC_GRID`; the best (first on ties)."""
    grid = []
    for name, params in STATIC_GRID:
        runs = []
        for inst in task.train:
            with bar.run(f"tune {task.name} {rule_label(name, params)} {inst.label}", name) as tick:
                runs.append(run_one(inst.scenario(base), name, inst.seed, params=params, tick=tick)[0])
        vals = [v for v in _scores(runs) if not math.isnan(v)]
        grid.append({"rule": rule_label(name, params), "policy": name, "params": dict(params),
                     "train_score": sum(vals) / len(vals) if vals else None})
    best = max(range(len(grid)), key=lambda i: (-math.inf if grid[i]["train_score"] is None
                                                else grid[i]["train_score"], -i))
    return {"chosen": grid[best], "grid": grid}


# ---------------------------------------------------------------------------------------------- the run
def run_suite(policies: Sequence[str], externals: Sequence[ExternalPolicy] = (), suite: Sequence[Task] | None = None,
              progress: RunProgress | None = None, command: str = "kairos-gym leaderboard",
              reps: int = BOOTSTRAP_REPS) -> dict[str, Any]:
    """Run every entry on every test instance of ``suite``; returns the JSON-ready result (see
    :func:`leaderboard_md`). Every entry is checked (built for every task; external policies also run on a
    short prefix, :func:`kairos_gym.agents.loader.probe`) before the first run. ``suite``: :data:`SUITE` when
    None."""
    t0 = time.perf_counter()
    suite = SUITE if suite is None else tuple(suite)
    policies = list(policies)
    check_entries(policies, externals)
    if not suite or any(not t.test or not t.train for t in suite) or len({t.name for t in suite}) != len(suite):
        raise ConfigError("leaderboard", "suite", [t.name for t in suite],
                          "tasks with distinct names, each with test and train instances")
    bases = {t.name: load_scenario(t.scenario) for t in suite}
    registry = [p for p in policies if p != BEST_STATIC]
    for t in suite:
        check_policies("leaderboard", "--policies", registry, bases[t.name], t.test[0].seed)
        for inst in (*t.test, *t.train):
            inst.scenario(bases[t.name])  # a bad window fails here
    for ext in externals:
        for t in suite:
            probe(ext, t.test[0].scenario(bases[t.name]), t.test[0].seed)
    bar = or_silent(progress)
    n_test = sum(len(t.test) for t in suite)
    tuning = BEST_STATIC in policies
    bar.start((len(policies) + len(externals)) * n_test
              + (len(STATIC_GRID) * sum(len(t.train) for t in suite) if tuning else 0))
    best: dict[str, dict[str, Any]] = {}
    if tuning:
        for t in suite:
            best[t.name] = tune_static(t, bases[t.name], bar)

    def run_best(task: Task, sc: ScenarioConfig, seed: int, tick: Any) -> dict[str, Any]:
        chosen = best[task.name]["chosen"]
        return run_one(sc, chosen["policy"], seed, params=chosen["params"], tick=tick)[0]

    entries = [Entry(BEST_STATIC, "tuned", run_best) if p == BEST_STATIC else _builtin(p) for p in policies]
    entries += [_external(e) for e in externals]
    figures: dict[str, dict[str, dict[str, list[float]]]] = {}
    for e in entries:
        figures[e.label] = {}
        for t in suite:
            runs = []
            for inst in t.test:
                with bar.run(f"{t.name} {e.label} {inst.label}", e.label) as tick:
                    runs.append(e.run(t, inst.scenario(bases[t.name]), inst.seed, tick))
            figures[e.label][t.name] = {k: _scores(runs, k) for k in KEYS}
    res = {
        "command": command, **provenance(),
        "suite": [{"task": t.name, "scenario": t.scenario if isinstance(t.scenario, str) else bases[t.name].name,
                   "instances": [i.label for i in t.test], "train_instances": [i.label for i in t.train],
                   "windows": t.windows, "test": t.describe("test"), "train": t.describe("train")} for t in suite],
        "entries": [{"label": e.label, "kind": e.kind} for e in entries],
        "figures": figures,
        "best_static": best,
    }
    res.update(score(figures, [t.name for t in suite], reps=reps))
    res["elapsed_s"] = time.perf_counter() - t0
    return res


# ---------------------------------------------------------------------------------------------- statistics
def _ci(values: Sequence[float]) -> dict[str, float | None]:
    m, h = mean_ci(values)
    return {"mean": nan_to_none(m), "ci95": nan_to_none(h), "n": len([v for v in values if not math.isnan(v)])}


def score(figures: Mapping[str, Mapping[str, Mapping[str, list[float]]]], tasks: Sequence[str],
          reps: int = BOOTSTRAP_REPS) -> dict[str, Any]:
    """Normalised scores, per-task intervals, paired comparisons with :data:`COMPARISON` and the bootstrap
    aggregates, from ``figures[label][task][key]`` (one value per test instance, the same instances for every
    label)."""
    labels = list(figures)
    for label in labels:
        for t in tasks:
            if any(math.isnan(v) for v in figures[label][t][METRIC]):
                raise ConfigError("leaderboard", label, t, f"runs that complete requests (a {METRIC} on every "
                                  "instance)")
    anchors = {}
    scored, saturated = [], []
    for t in tasks:
        nd = float(np.mean(figures[BASELINE][t][METRIC]))
        ref = float(np.mean(figures[REFERENCE][t][METRIC]))
        anchors[t] = {"no_deflect": nd, "reference": ref, "headroom": ref - nd}
        (scored if ref - nd >= MIN_HEADROOM else saturated).append(t)
    normalized = {label: {t: [(x - anchors[t]["no_deflect"]) / anchors[t]["headroom"]
                              for x in figures[label][t][METRIC]] for t in scored} for label in labels}
    per_task = {label: {t: {"raw": _ci(figures[label][t][METRIC]),
                            "normalized": _ci(normalized[label][t]) if t in scored else None,
                            **{k: _ci(figures[label][t][k]) for k in KEYS if k != METRIC}}
                        for t in tasks} for label in labels}
    paired = {}
    for label in labels:
        paired[label] = {}
        for t in tasks:
            x, y = figures[label][t][METRIC], figures[COMPARISON][t][METRIC]
            d = [a - b for a, b in zip(x, y, strict=True)]
            paired[label][t] = {**_ci(d), "wins": sum(a > b for a, b in zip(x, y, strict=True)),
                                "ties": sum(a == b for a, b in zip(x, y, strict=True)),
                                "losses": sum(a < b for a, b in zip(x, y, strict=True))}
    aggregates: dict[str, Any] = {}
    if scored:
        for label in labels:
            xs = [np.asarray(normalized[label][t]) for t in scored]
            ys = [np.asarray(figures[COMPARISON][t][METRIC]) for t in scored]
            raw = [np.asarray(figures[label][t][METRIC]) for t in scored]
            agg = {name: list(stratified_bootstrap(f, [xs], reps=reps, rng=BOOTSTRAP_SEED))
                   for name, f in (("iqm", iqm), ("median", aggregate_median), ("mean", aggregate_mean),
                                   ("optimality_gap", optimality_gap))}
            agg["poi_vs_comparison"] = list(stratified_bootstrap(probability_of_improvement, [raw, ys], reps=reps,
                                                                 rng=BOOTSTRAP_SEED))
            aggregates[label] = agg
    return {"metric": METRIC, "baseline": BASELINE, "reference": REFERENCE, "reference_label": REFERENCE_LABEL,
            "comparison": COMPARISON, "min_headroom": MIN_HEADROOM, "anchors": anchors, "scored_tasks": scored,
            "saturated_tasks": saturated, "normalized": normalized, "per_task": per_task, "paired": paired,
            "aggregates": aggregates, "bootstrap": {"reps": reps, "seed": BOOTSTRAP_SEED, "method": "percentile",
                                                    "confidence": 0.95}}


# ---------------------------------------------------------------------------------------------- markdown
def _num(v: float | None, spec: str = ".3f") -> str:
    return "n/a" if v is None or (isinstance(v, float) and math.isnan(v)) else format(v, spec)


def _pm(c: Mapping[str, Any] | None, spec: str = ".3f", half_spec: str = ".3f") -> str:
    if c is None or c["mean"] is None:
        return "n/a"
    return f"{c['mean']:{spec}} ± {_num(c['ci95'], half_spec)}"


def _iv(a: Sequence[float]) -> str:
    return f"{a[0]:.3f} [{a[1]:.3f}, {a[2]:.3f}]"


def ranking(res: Mapping[str, Any]) -> list[str]:
    """Labels by IQM of the normalised score (highest first; ties by label), or in entry order without one."""
    labels = [e["label"] for e in res["entries"]]
    agg = res["aggregates"]
    if not agg:
        return labels
    return sorted(labels, key=lambda lb: (-agg[lb]["iqm"][0], lb))


def leaderboard_md(res: Mapping[str, Any]) -> str:
    """The markdown text of LEADERBOARD.md."""
    tasks = [s["task"] for s in res["suite"]]
    scored, saturated = res["scored_tasks"], res["saturated_tasks"]
    commit = res["commit"]
    where = (f"commit `{commit}`" + (" with uncommitted changes to tracked files" if res["dirty"] else "")
             if commit else "outside a git checkout")
    boot = res["bootstrap"]
    lines = [
        "# Leaderboard",
        "",
        f"Command: `{res['command']}`  ",
        f"Code: kairos-gym {res['version']}, {where}  ",
        f"Run: {res['date']}, wall time {res['elapsed_s']:.0f} s (Python {res['python']}, numpy {res['numpy']})",
        "",
        "Protocol (docs/benchmark.md): one track (realistic information: a policy sees the `DecisionContext`, no "
        "output lengths). Every policy runs on the same fixed instances of every task. Score per instance: SLO "
        "attainment (fraction of requests whose TTFT and every token gap are within the scenario's SLOs, "
        "docs/metrics.md). Normalised score per task: (x - no-deflect) / (reference - no-deflect), the anchors "
        f"being means over the task's instances; reference: {res['reference_label']}, so scores above 1 are "
        f"possible. Tasks where the reference beats no-deflect by less than {res['min_headroom']:g} have no "
        "headroom: they are shown raw and left out of the aggregates.",
        "",
        "## Suite",
        "",
        "| task | instances (test) | n | train instances (best-static only) | what differs between instances |",
        "|---|---|---:|---|---|",
    ]
    for s in res["suite"]:
        what = ("the trace window (a trace workload does not depend on the seed: every window runs with seed 0, "
                "which seeds only the policies' own randomness); original trace seconds" if s["windows"]
                else "the workload seed")
        lines.append(f"| {s['task']} | {s['test']} | {len(s['instances'])} | {s['train']} | {what} |")
    lines.append("")
    if scored:
        lines += [
            f"## Ranking: aggregates over the {len(scored)} tasks with headroom ({', '.join(scored)})",
            "",
            "Point estimate [95% stratified-bootstrap percentile interval]: "
            f"{boot['reps']:,} resamples of the instances within each task (numpy Generator seed {boot['seed']}; "
            "the same resamples for every policy). IQM, median and mean of the normalised score (higher is "
            "better); optimality gap = 1 - mean(min(score, 1)) (lower is better); P(> kairos): probability that "
            "the policy's SLO attainment beats kairos's on the same instance (ties 1/2), averaged over tasks. "
            "With this few tasks and instances the intervals are wide: policies whose intervals overlap are not "
            "separated by this suite, whatever their rank."
            + (" With two tasks the median of the task means is their mean." if len(scored) == 2 else ""),
            "",
            "| rank | policy | IQM | median | mean | optimality gap | P(> kairos) |",
            "|---:|---|---|---|---|---|---|",
        ]
        for i, lb in enumerate(ranking(res), 1):
            a = res["aggregates"][lb]
            lines.append(f"| {i} | {lb} | {_iv(a['iqm'])} | {_iv(a['median'])} | {_iv(a['mean'])} | "
                         f"{_iv(a['optimality_gap'])} | {_iv(a['poi_vs_comparison'])} |")
        lines.append("")
    else:
        lines += ["## Ranking", "", "No task has headroom: nothing to aggregate.", ""]
    if saturated:
        lines += ["Tasks without headroom (left out of the aggregates): "
                  + ", ".join(f"{t} (no-deflect {res['anchors'][t]['no_deflect']:.3f}, reference "
                              f"{res['anchors'][t]['reference']:.3f})" for t in saturated) + ".", ""]
    order = ranking(res)
    if scored:
        lines += [
            "## Normalised score per task",
            "",
            "Mean ± half-width of the 95% Student-t interval over the task's instances (n/a: one instance). "
            "Anchors (SLO attainment, means): "
            + "; ".join(f"{t}: no-deflect {res['anchors'][t]['no_deflect']:.3f}, reference "
                        f"{res['anchors'][t]['reference']:.3f}" for t in scored) + ".",
            "",
            "| policy | " + " | ".join(scored) + " |",
            "|---|" + "---|" * len(scored),
        ]
        for lb in order:
            lines.append(f"| {lb} | " + " | ".join(_pm(res["per_task"][lb][t]["normalized"]) for t in scored) + " |")
        lines.append("")
    lines += [
        "## Raw figures per task",
        "",
        "SLO attainment (mean ± 95% t-interval) / P95 TTFT (s, mean) / TBT violation rate (mean), over the "
        "instances.",
        "",
        "| policy | " + " | ".join(tasks) + " |",
        "|---|" + "---|" * len(tasks),
    ]
    for lb in order:
        cells = []
        for t in tasks:
            c = res["per_task"][lb][t]
            cells.append(f"{_pm(c['raw'])} / {_num(c['ttft_p95']['mean'], '.2f')} / "
                         f"{_num(c['tbt_violation_rate']['mean'], '.4f')}")
        lines.append(f"| {lb} | " + " | ".join(cells) + " |")
    lines += [
        "",
        f"## Paired against {res['comparison']}",
        "",
        f"SLO attainment minus {res['comparison']}'s on the same instance: mean ± 95% t-interval, then wins / ties "
        "/ losses over the instances.",
        "",
        "| policy | " + " | ".join(tasks) + " |",
        "|---|" + "---|" * len(tasks),
    ]
    for lb in order:
        if lb == res["comparison"]:
            continue
        cells = [f"{_pm(res['paired'][lb][t], '+.3f')} ({res['paired'][lb][t]['wins']}/{res['paired'][lb][t]['ties']}"
                 f"/{res['paired'][lb][t]['losses']})" for t in tasks]
        lines.append(f"| {lb} | " + " | ".join(cells) + " |")
    lines.append("")
    if res["best_static"]:
        lines += [
            "## best-static: the static rule tuned on the train instances",
            "",
            f"Per task, the rule of {len(STATIC_GRID)} (always-deflect, SQ and SL, thresholds in tokens, 512-token or "
            "LargestSafe chunks; `STATIC_GRID` in train/leaderboard.py) with the best mean SLO attainment on the "
            "task's train instances (first in grid order on ties); its test scores are the best-static rows above.",
            "",
            "| task | chosen rule | train SLO attainment | train instances |",
            "|---|---|---:|---|",
        ]
        for s in res["suite"]:
            b = res["best_static"][s["task"]]["chosen"]
            lines.append(f"| {s['task']} | `{b['rule']}` | {_num(b['train_score'])} | {s['train']} |")
        lines.append("")
    lines += [
        "## Submit a policy",
        "",
        "No edit of the package is needed:",
        "",
        "1. Write a class with `decide(ctx: DecisionContext) -> Decision` in a file (docs/policies.md, \"Writing a",
        "   policy\"); its `__init__` may take `scenario` and `seed` keywords.",
        "2. Run `kairos-gym leaderboard --policy path/to/file.py:ClassName --out LEADERBOARD.md` (a trained agent:",
        "   `--checkpoint DIR`, a safe-format checkpoint). `--policy` executes the file as `python file.py` would:",
        "   only pass code you trust. The instances are fixed, so every policy sees the same workloads, and runs",
        "   are deterministic.",
        "3. Open a pull request with the file (and checkpoint), the regenerated LEADERBOARD.md and, for a learned",
        "   policy, the training command and time.",
        "",
        "Rules: a policy sees only the `DecisionContext` (no output lengths, no simulator internals).",
        "",
    ]
    return "\n".join(lines)


__all__ = ["BEST_STATIC", "DEFAULT_POLICIES", "STATIC_GRID", "SUITE", "Instance", "Task", "leaderboard_md",
           "run_suite", "score"]
