"""The evaluation harness: every policy on the same workloads (same seeds), one table, JSON and plots.

``kairos-gym evaluate --scenario bursty --policies no-deflect,sq,sl,kairos --seeds 0-4``
``kairos-gym evaluate --policies kairos --policy my_policy.py:MyPolicy --checkpoint runs/ppo/fast/final``

Policies are registry names and, beside them, policies from a user's file or checkpoint
(:class:`~kairos_gym.agents.policy_file_loader.ExternalPolicy`, ``externals``): those run in this process under
their guard, their rows labelled ``file:FILE.py:CLASS`` and ``checkpoint:DIR``.

The seed-list parser (:func:`parse_seeds`) and the interval (:func:`mean_ci`, Student-t 95% over the seeds)
live in :mod:`kairos_gym.flags` and :mod:`kairos_gym.evaluation.stats`; they are re-exported here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kairos_gym.errors import ConfigError
from kairos_gym.evaluation.backends import Backend, SerialBackend
from kairos_gym.evaluation.backends.runs import policy_label, policy_task
from kairos_gym.evaluation.stats import INTERVAL_LABEL, mean_ci
from kairos_gym.extras import require
from kairos_gym.flags import format_seeds, parse_seeds
from kairos_gym.progress import RunProgress, or_silent
from kairos_gym.scenario import ScenarioConfig, load_scenario
from kairos_gym.table import ci_cell, render_table

if TYPE_CHECKING:
    from kairos_gym.agents.policy_file_loader import ExternalPolicy

TABLE_KEYS = (
    ("ttft_p50", "TTFT P50\n(s)"), ("ttft_p95", "TTFT P95\n(s)"), ("tbt_p99", "TBT P99\n(s)"),
    ("tbt_violation_rate", "TBT viol\n(frac)"), ("slo_attainment", "SLO att\n(frac)"),
    ("goodput_rps", "goodput\n(req/s)"), ("deflection_rate", "deflect\n(frac)"),
    ("prefill_utilization", "P util\n(proxy)"), ("decode_utilization", "D util\n(proxy)"),
    ("decision_us_p50", "decision\np50 (us)"),
)
"""Columns of :func:`format_table`, most important first (the last are left out first if the table would not
fit): summary key and header with units (frac: a fraction in [0, 1]; proxy: the SM-utilization proxy of
docs/metrics.md, not the busy fraction)."""

TABLE_NOTE = ("frac: fraction in [0, 1]; P/D util (proxy): SM-utilization proxy, compute time at achievable "
              "kernel efficiency / time (docs/metrics.md)")

__all__ = ["TABLE_KEYS", "check_policies", "evaluate", "format_seeds", "format_table", "interval_table", "mean_ci",
           "parse_seeds", "run_one"]


def run_one(scenario: ScenarioConfig, policy_name: str, seed: int, *, keep: bool = False,
            params: dict[str, Any] | None = None, tick: Callable[[], Any] | None = None) -> tuple[dict[str, Any], Any]:
    """One run of ``policy_name`` (with policy ``params``); returns (summary, simulator if keep else None).
    ``tick()`` is called after every decision (a progress bar)."""
    from kairos_gym.agents.runner import simulate

    summary, sim = simulate(policy_name, scenario, seed, record_timeline=keep, progress=tick, **(params or {}))
    summary["policy"] = policy_name
    return summary, (sim if keep else None)


def check_policies(where: str, flag: str, policies: list[str], scenario: ScenarioConfig, seed: int = 0,
                   externals: Sequence[ExternalPolicy] = ()) -> None:
    """Before any run: every name is registered and builds for ``scenario`` (e.g. ppo finds its checkpoint);
    each name once; each external policy runs on a short prefix of ``scenario``
    (:func:`kairos_gym.agents.policy_file_loader.probe`: a constructor or a ``decide`` that fails is reported
    now, naming its flag)."""
    from kairos_gym.agents.registry import POLICIES, make_policy

    if not policies and not externals:
        raise ConfigError(where, flag, policies, "at least one of " + ", ".join(POLICIES)
                          + " (or a --policy FILE.py:CLASS / --checkpoint DIR)")
    for p in policies:
        if p not in POLICIES:
            raise ConfigError(where, flag, p, "names from " + ", ".join(POLICIES))
    if len(set(policies)) != len(policies):
        raise ConfigError(where, flag, ",".join(policies), "each policy once")
    labels = [e.label for e in externals]
    for i, e in enumerate(externals):
        if e.label in labels[:i]:
            raise ConfigError(where, e.flag, e.spec, f"each policy once ({e.label} is given twice)")
    for p in policies:
        make_policy(p, scenario, seed)
    if externals:
        from kairos_gym.agents.policy_file_loader import probe

        for e in externals:
            probe(e, scenario, seed)


def evaluate(scenario: str | ScenarioConfig, policies: list[str], seeds: list[int],
             plots_dir: str | Path | None = None, progress: RunProgress | None = None,
             backend: Backend | None = None, externals: Sequence[ExternalPolicy] = ()) -> dict[str, Any]:
    """Run every policy (the registry names ``policies``, then ``externals``) on every seed; returns
    ``{"scenario", "seeds", "policies": labels, "runs": [summary, ...]}``; optionally writes plots of the first
    seed's runs (``"plots"``: their paths). ``progress`` counts the runs; ``backend`` runs them (default: serially
    in this process; the result is the same on every backend; external policies run in this process). Plots
    need the [plots] extra (matplotlib): without it ``plots_dir`` raises MissingExtraError before any run."""
    if plots_dir is not None:
        require("plots", "plots (plots_dir)")
    sc = load_scenario(scenario)
    if not seeds:
        raise ConfigError("evaluate", "--seeds", seeds, "at least one seed")
    check_policies("evaluate", "--policies", policies, sc, seeds[0], externals)
    entries: list[str | ExternalPolicy] = [*policies, *externals]
    bar = or_silent(progress)
    bar.start(len(entries) * len(seeds))
    runs = []
    kept: dict[str, Any] = {}
    plan = [(policy_label(p), plots_dir is not None and i == 0) for p in entries for i in range(len(seeds))]
    tasks = [policy_task(p, sc, seed, f"{sc.name} {policy_label(p)} seed {seed}", keep=plots_dir is not None and i == 0)
             for p in entries for i, seed in enumerate(seeds)]
    for (label, keep), out in zip(plan, (backend or SerialBackend(retries=0)).map(tasks, bar), strict=True):
        summary, sim = out if keep else (out, None)
        runs.append(summary)
        if sim is not None:
            kept[label] = sim
    result = {"scenario": sc.name, "seeds": list(seeds), "policies": [policy_label(p) for p in entries], "runs": runs}
    if plots_dir is not None:
        from kairos_gym.evaluation.plots import write_plots

        result["plots"] = write_plots(kept, Path(plots_dir), sc.name, seeds[0])
    return result


def interval_title(scenario: str, seeds: list[int]) -> str:
    """The title line of an interval table: the scenario, the seeds as given, what ``±`` means."""
    n = len(seeds)
    what = INTERVAL_LABEL if n > 1 else "the values of one seed, no interval (± n/a)"
    return f"scenario {scenario}, {'seeds' if n > 1 else 'seed'} {format_seeds(seeds)} (n={n}): {what}"


def format_table(result: dict[str, Any]) -> str:
    """One row per policy: mean and 95% Student-t interval (half-width) across the seeds of each figure in
    :data:`TABLE_KEYS`, fitted to 120 columns (:func:`kairos_gym.table.render_table`)."""
    return interval_table(result, TABLE_KEYS, notes=[TABLE_NOTE])


def interval_table(result: dict[str, Any], keys: tuple[tuple[str, str], ...], notes: list[str] | None = None) -> str:
    """One row per policy of ``result`` (as :func:`evaluate` returns), one column per ``(key, header)``:
    ``mean ± half-width`` of the 95% t-interval over the seeds; with one seed, the value alone (the title
    says there is no interval)."""
    seeds = list(result["seeds"])
    rows = []
    for name in result["policies"]:
        runs = [r for r in result["runs"] if r["policy"] == name]
        cells = []
        for key, _ in keys:
            m, h = mean_ci([r.get(key) for r in runs])
            cell = ci_cell(m, h)
            cells.append(cell[0] if isinstance(cell, tuple) and len(seeds) == 1 else cell)
        rows.append([name, *cells])
    return render_table(["policy"] + [label for _, label in keys], rows,
                        title=interval_title(result["scenario"], seeds), notes=notes or ())
