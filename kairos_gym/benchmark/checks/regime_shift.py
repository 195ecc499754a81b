"""Does the regime-shift task make a policy switch? SLO attainment overall and per MMPP state, per tier.

    kairos-gym check regime-shift              # the suite's regime-shift tasks, test seeds 0-9
    kairos-gym check regime-shift --seeds 4    # test seeds 0-3 only

For each regime-shift task of the leaderboard suite (kairos_gym/benchmark/suite.py: 500 requests, sojourns 6 s / 12 s,
the
three SLO tiers) it runs no-deflect, kairos, always-deflect-ls and the task's best-static rule (tuned on the train
seeds as the leaderboard tunes it, :func:`~kairos_gym.benchmark.entries.tune_static`) on the test seeds, and
prints each one's mean SLO attainment over all requests and over the requests that arrived in the high-load (on)
and the low-load (off) state (:func:`kairos_gym.workload.arrival_states`; a request meets the SLO when it finishes
with TTFT <= slo.ttft_s and every inter-token gap <= slo.tbt_s, as in the run's ``slo_attainment``). It then
names the best rule of no-deflect + the static grid on each state's requests alone (test seeds): when they
differ, a policy that is right in one state is wrong in the other. Last, each state alone (:func:`stationary`:
Poisson arrivals at the state's rate with the state's lengths, no switching and no backlog carried over from the
other state). Deterministic; about 20 s for the whole output.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from kairos_gym.agents.runner import simulate
from kairos_gym.benchmark.entries import STATIC_GRID, rule_label, tune_static
from kairos_gym.benchmark.suite import SUITE, Task
from kairos_gym.progress import or_silent
from kairos_gym.scenario import ScenarioConfig
from kairos_gym.workload import arrival_states, state_only


def per_state(sc: ScenarioConfig, policy: str, seed: int, params: dict[str, Any]) -> tuple[float, float, float]:
    """(all, on, off): the fraction of requests meeting the SLO, overall and among those that arrived in each
    state, for one run of ``policy`` (registry name, ``params``) on workload seed ``seed``."""
    summary, sim = simulate(policy, sc, seed, **params)
    t = sim.requests_table()
    ok = (~np.isnan(t["finish_s"])) & (t["ttft_s"] <= sc.slo.ttft_s) & (t["max_tbt_s"] <= sc.slo.tbt_s)
    on = arrival_states(sc.workload, np.random.default_rng(seed))
    assert on.size == ok.size and abs(float(ok.mean()) - summary["slo_attainment"]) < 1e-12
    return float(ok.mean()), float(ok[on].mean()), float(ok[~on].mean())


def check(task: Task, seeds: list[int]) -> list[str]:
    """Markdown rows of ``task``: one per policy, then the best rule per state."""
    base = task.base()
    chosen = tune_static(task, base, or_silent(None))["chosen"]
    rules: list[tuple[str, str, dict[str, Any]]] = [
        ("no-deflect", "no-deflect", {}), ("kairos", "kairos", {}), ("always-deflect-ls", "always-deflect-ls", {}),
        (f"best-static ({chosen['rule']})", chosen["policy"], dict(chosen["params"]))]
    rows = []
    for label, name, params in rules:
        m = np.mean([per_state(base, name, s, params) for s in seeds], axis=0)
        rows.append(f"| {task.name} | {label} | {m[0]:.3f} | {m[1]:.3f} | {m[2]:.3f} |")
    grid = [("no-deflect", "no-deflect", {})] + [(rule_label(n, p), n, dict(p)) for n, p in STATIC_GRID]
    means = {label: np.mean([per_state(base, n, s, p) for s in seeds], axis=0) for label, n, p in grid}
    best_on = max(means, key=lambda k: means[k][1])
    best_off = max(means, key=lambda k: means[k][2])
    rows.append(f"| {task.name} | best rule on the on-state requests: {best_on} | {means[best_on][0]:.3f} | "
                f"**{means[best_on][1]:.3f}** | {means[best_on][2]:.3f} |")
    rows.append(f"| {task.name} | best rule on the off-state requests: {best_off} | {means[best_off][0]:.3f} | "
                f"{means[best_off][1]:.3f} | **{means[best_off][2]:.3f}** |")
    return rows


def stationary(task: Task, state: str) -> ScenarioConfig:
    """``task``'s scenario with one state only: Poisson arrivals at that state's rate, that state's lengths."""
    base = task.base()
    return ScenarioConfig.from_dict({**base.to_dict(), "workload": state_only(base.workload, state).to_dict()})


def check_stationary(task: Task, seeds: list[int]) -> list[str]:
    """Markdown rows: each state alone (:func:`stationary`), no-deflect, kairos, always-deflect-ls and the best
    rule of no-deflect + the static grid, mean SLO attainment over ``seeds``."""
    rows = []
    grid = [("no-deflect", "no-deflect", {}), ("kairos", "kairos", {})] + [
        (rule_label(n, p), n, dict(p)) for n, p in STATIC_GRID]
    for state in ("on", "off"):
        sc = stationary(task, state)
        means = {label: float(np.mean([simulate(n, sc, s, **p)[0]["slo_attainment"] for s in seeds]))
                 for label, n, p in grid}
        best = max((k for k in means if k != "kairos"), key=lambda k: means[k])
        rows.append(f"| {task.name} | {state} alone ({sc.workload.arrival.describe()}) | {means['no-deflect']:.3f} | "
                    f"{means['kairos']:.3f} | {means['always-deflect-ls']:.3f} | {best}: {means[best]:.3f} |")
    return rows


MAX_SEEDS = 10
"""Most test seeds (0..9: the suite's test instances)."""


def report(n_seeds: int) -> None:
    """Print the check's tables (markdown) over test seeds ``0..n_seeds-1`` (1 to :data:`MAX_SEEDS`)."""
    seeds = list(range(n_seeds))
    print(f"SLO attainment, mean over test seeds {seeds[0]}-{seeds[-1]}:\n")
    print("| task | policy | all requests | on (high load) | off (low load) |")
    print("|---|---|---:|---:|---:|")
    tasks = [t for t in SUITE if t.family == "regime-shift"]
    for task in tasks:
        for row in check(task, seeds):
            print(row)
    print("\nEach state alone (Poisson arrivals at its rate, its lengths), SLO attainment:\n")
    print("| task | state | no-deflect | kairos | always-deflect-ls | best static rule |")
    print("|---|---|---:|---:|---:|---|")
    for task in tasks:
        for row in check_stationary(task, seeds):
            print(row)

