"""Does a scenario's fault schedule make a policy switch? The fault-free cluster, then each policy inside and
outside the fault windows, per SLO tier.

    kairos-gym check fault-switch           # configs/scenarios/fault-shift.yaml, 1,000 requests
    kairos-gym check fault-switch --grid    # and every static rule, fault-switch minus each
    kairos-gym check fault-switch --scenario bursty-link-degraded --requests 1000 --tiers default

The scenario (a shipped name or a YAML path) must have a ``faults:`` section: timed events, a random generator or
both (:func:`fault_windows` reads each seed's windows off the run's fault events, ``Simulator.fault_events``: with
a generator they differ from seed to seed, and the workload varies with the seed too). The protocol is the one of
``kairos_gym/benchmark/checks/mix_shift.py`` (the leaderboard suite's):
``--requests`` requests per instance (default: the scenario's ``num_requests``), test seeds 0..N-1, train seeds
1000 and 1001, the SLO tiers of :func:`~kairos_gym.benchmark.suite.tier_slos`, ``best-static`` tuned on the train
seeds (:func:`~kairos_gym.benchmark.entries.tune_static`), exact track.

Per tier it prints:

1. **The fault-free cluster** (the scenario without its ``faults:`` section, same seeds): no-deflect,
   always-deflect-ls and kairos: whether deflection helps or hurts in normal operation.
2. **The episode, split by whether each request arrived while a fault was active** (:func:`fault_windows`; a
   request meets the SLO when it finishes with TTFT <= slo.ttft_s and every inter-token gap <= slo.tbt_s, as in
   the run's ``slo_attainment``): no-deflect, always-deflect-ls, kairos, best-static and ``fault-switch``
   (:class:`FaultSwitch`), a reference that switches by construction: it deflects (LargestSafe chunks,
   least-loaded node) every request that arrives while a fault is active and none otherwise. It knows the fault
   schedule, which no policy sees (the context shows node availability, not a link's state: docs/reliability.md,
   "Faults"), and nothing else: a switching rule, not an upper bound. And ``pending-switch``
   (:class:`PendingSwitch`: the registered policy), a rule that reads only the decision context: it deflects while
   the decode nodes' ``pending_admissions`` (KV arrived or arriving, not yet in a batch: stalled transfers count)
   sum to at least ``k``, ``k`` tuned on the train seeds from :data:`PENDING_GRID` (:func:`tune_pending`).
3. **Paired differences** over the test seeds (95% Student-t, :func:`kairos_gym.evaluation.stats.mean_ci`):
fault-switch -
   best-static, pending-switch - best-static and kairos - best-static, with wins / ties / losses.
4. With ``--grid``: every rule of the static grid in the episode, and fault-switch and pending-switch minus the
   rule, paired.
5. With ``--oracle N``: the clairvoyant rollout Oracle (agents/oracle.py) on the first N test seeds, with the
   leaderboard's default bases, the tier's best-static rule and this tool's tuned ``pending-switch``
   (:func:`~kairos_gym.benchmark.oracle_cache.task_bases` with that extra base, as the leaderboard's fault-shift
   tasks roll out ``pending-switch``), beside fault-switch, pending-switch and best-static on the same instances:
   by the improvement property the Oracle is never below best-static or pending-switch there; whether it is above
   fault-switch (which knows the outages, not a base) is what the rows show. O(requests^2): ~15-90 s per
   500-request instance on the shared 2-core machine. (Until 2026-12-02 the Oracle here had no switching base:
   docs/benchmark.md, "fault-shift", v1.)

Every table shows the mean KV preemptions per run (``n_preemptions``). Deterministic. About 0.1 s per
1,000-request run: ~22 s for the three tiers with ``--grid`` on the shared 2-core machine.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from kairos_gym.agents import baselines
from kairos_gym.agents.base import least_loaded_deflectable
from kairos_gym.agents.runner import simulate
from kairos_gym.benchmark.checks import mix_shift as _msc
from kairos_gym.benchmark.checks.mix_shift import paired, print_table
from kairos_gym.benchmark.entries import STATIC_GRID, rule_label, tune_static
from kairos_gym.benchmark.suite import Task
from kairos_gym.errors import ConfigError
from kairos_gym.progress import or_silent
from kairos_gym.scenario import ScenarioConfig
from kairos_gym.sim.hook import ARRIVAL, LARGEST_SAFE, Decision, DecisionContext

POLICIES = ("no-deflect", "always-deflect-ls", "kairos")
FAULT_STARTS = ("prefill_down", "decode_down", "prefill_slow", "decode_slow", "link_degraded", "link_cut")
"""The fault kinds that take a node or link out of its normal state (the others end such a state)."""
PENDING_GRID = (1, 2, 4, 8, 16)
"""The thresholds (requests) :func:`tune_pending` chooses :class:`PendingSwitch`'s ``k`` from."""


def check_faults(sc: ScenarioConfig, where: str = "fault_switch_check") -> None:
    """A ConfigError unless ``sc`` has a ``faults:`` section with timed events or a random generator."""
    if not sc.faults.enabled:
        raise ConfigError(where, "faults", None, "a faults: section with timed events or a random generator")


def event_windows(events: list[tuple[float, str, int, float]]) -> tuple[tuple[float, float], ...]:
    """The intervals ``[start, end)`` (seconds from the run's start) during which at least one node or link is not
    in its normal state (down, slow, degraded or cut), from a run's fault events (``Simulator.fault_events``: time
    s, kind, node, factor, by time; every fault ends); overlapping and touching intervals merged."""
    active, start, out = 0, 0.0, []
    for t, kind, _node, _factor in events:
        if kind in FAULT_STARTS:
            if active == 0:
                start = t
            active += 1
        else:
            active -= 1
            if active == 0:
                out.append((start, t))
    merged: list[tuple[float, float]] = []
    for a, b in out:
        if merged and a <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], b))
        elif b > a:
            merged.append((a, b))
    return tuple(merged)


def fault_windows(sc: ScenarioConfig, seed: int) -> tuple[tuple[float, float], ...]:
    """:func:`event_windows` of the run of ``sc`` at ``seed`` (timed events and, with a random generator, that
    seed's draws). A ConfigError unless ``sc`` has faults (:func:`check_faults`)."""
    from kairos_gym.sim import Simulator

    check_faults(sc)
    return event_windows(Simulator(sc, seed=seed).fault_events)


def in_windows(t: np.ndarray, windows: tuple[tuple[float, float], ...]) -> np.ndarray:
    """Boolean mask: ``t[i]`` (seconds) lies in one of ``windows``' ``[start, end)``."""
    t = np.asarray(t, dtype=float)
    mask = np.zeros(t.shape, dtype=bool)
    for a, b in windows:
        mask |= (t >= a) & (t < b)
    return mask


class FaultSwitch:
    """Deflect every arrival while a fault is active (``ctx.now_s`` in one of ``windows``; LargestSafe chunks, to
    the least-loaded decode node that can take one; the prefill path when none can), none otherwise. Other
    decision kinds (pull, re-entry) get the prefill path."""

    name = "fault-switch"

    def __init__(self, windows: tuple[tuple[float, float], ...]) -> None:
        self.windows = tuple(windows)

    def decide(self, ctx: DecisionContext) -> Decision:
        if ctx.kind == ARRIVAL and any(a <= ctx.now_s < b for a, b in self.windows):
            d = least_loaded_deflectable(ctx)
            if d is not None:
                return Decision.deflect(d, LARGEST_SAFE)
        return Decision.prefill_path()


class PendingSwitch(baselines.PendingSwitch):
    """The registered ``pending-switch`` (:class:`kairos_gym.agents.baselines.PendingSwitch`, LargestSafe chunks)
    with threshold ``k``: deflect while the decode nodes' ``pending_admissions`` sum to at least ``k`` requests."""

    def __init__(self, k: int) -> None:
        super().__init__(k=k)


def tune_pending(sc: ScenarioConfig, train: list[int]) -> int:
    """The ``k`` of :data:`PENDING_GRID` with the best mean SLO attainment of :class:`PendingSwitch` on the
    ``train`` seeds (the first on ties)."""
    scores = [float(np.mean([split(sc, PendingSwitch(k), s)[0] for s in train])) for k in PENDING_GRID]
    return PENDING_GRID[int(np.argmax(scores))]


def without_faults(sc: ScenarioConfig) -> ScenarioConfig:
    """``sc`` with no ``faults:`` section (the fault-free cluster, same workload)."""
    d = sc.to_dict()
    d.pop("faults", None)
    return ScenarioConfig.from_dict(d)


def make_task(scenario: str, requests: int | None, tier: str, n_test: int) -> Task:
    """The suite-style task of ``scenario`` at ``tier`` (``mix_shift_check.make_task``, for a scenario with timed
    faults)."""
    return _msc.make_task(scenario, requests, tier, n_test, check=check_faults)


def split(sc: ScenarioConfig, policy: Any, seed: int, params: dict[str, Any] | None = None) -> tuple[float, ...]:
    """``(all, in, out, in_share, preemptions)`` of one run: the fraction of requests meeting the SLO overall,
    among those that arrived while a fault was active and among the others, the share of the former, and the run's
    ``n_preemptions``. ``policy``: a registry name (with ``params``), ``"fault-switch"``, or an object."""
    windows = fault_windows(sc, seed)
    pol = FaultSwitch(windows) if policy == "fault-switch" else policy
    summary, sim = simulate(pol, sc, seed, **(params or {}))
    t = sim.requests_table()
    ok = (~np.isnan(t["finish_s"])) & (t["ttft_s"] <= sc.slo.ttft_s) & (t["max_tbt_s"] <= sc.slo.tbt_s)
    if abs(float(ok.mean()) - summary["slo_attainment"]) > 1e-12:
        raise RuntimeError("the in/out split does not recombine to the run's slo_attainment")
    inside = in_windows(t["arrival_s"], windows)
    nan = math.nan
    return (float(ok.mean()), float(ok[inside].mean()) if inside.any() else nan,
            float(ok[~inside].mean()) if (~inside).any() else nan, float(inside.mean()),
            float(summary["n_preemptions"]))


def _column_means(a: np.ndarray) -> list[float]:
    """Per column, the mean of the values that are not NaN (NaN when there are none: no instance had a request in a
    fault window)."""
    return [float(c[~np.isnan(c)].mean()) if (~np.isnan(c)).any() else math.nan for c in a.T]


def _windows(w: tuple[tuple[float, float], ...]) -> str:
    return ", ".join(f"[{a:.4g}, {b:.4g})" for a, b in w) or "none"


def _f(x: float) -> str:
    return "n/a" if math.isnan(x) else f"{x:.3f}"


def check_tier(task: Task, grid: bool = False, oracle: int = 0) -> dict[str, Any]:
    """The tool's figures for one task (see the module docstring), as markdown rows and raw numbers; ``oracle``:
    the Oracle on that many of the first test seeds."""
    base = task.base()
    test = [i.seed for i in task.test]
    chosen = tune_static(task, base, or_silent(None))["chosen"]
    free = without_faults(base)
    sums = [[simulate(p, free, s)[0] for s in test] for p in POLICIES]
    means = [float(np.mean([r["slo_attainment"] for r in rs])) for rs in sums]
    pre = " / ".join(f"{np.mean([r['n_preemptions'] for r in rs]):.1f}" for rs in sums)
    normal = f"| {task.name} | " + " | ".join(_f(m) for m in means) + f" | {pre} |"
    entries: list[tuple[str, Any, dict[str, Any]]] = [(p, p, {}) for p in POLICIES]
    k = tune_pending(base, [i.seed for i in task.train])
    entries += [(f"best-static ({chosen['rule']})", chosen["policy"], dict(chosen["params"])),
                ("fault-switch", "fault-switch", {}), (f"pending-switch (k={k})", PendingSwitch(k), {})]
    runs = {label: [split(base, name, s, params) for s in test] for label, name, params in entries}

    def row(label: str, r: list[tuple[float, ...]], extra: str = "") -> str:
        m = _column_means(np.asarray(r))
        return f"| {task.name} | {label} | {_f(m[0])} | {_f(m[1])} | {_f(m[2])} |{extra} {m[4]:.1f} |"

    rows = [row(label, r) for label, r in runs.items()]
    bs = [r[0] for r in runs[entries[3][0]]]
    switch = [r[0] for r in runs["fault-switch"]]
    pend = [r[0] for r in runs[entries[5][0]]]
    diffs = [f"| {task.name} | fault-switch - best-static | {paired(switch, bs)} |",
             f"| {task.name} | pending-switch - best-static | {paired(pend, bs)} |",
             f"| {task.name} | kairos - best-static | {paired([r[0] for r in runs['kairos']], bs)} |"]
    grid_rows = []
    for name, params in STATIC_GRID if grid else ():
        rule = [split(base, name, s, dict(params)) for s in test]
        other = [r[0] for r in rule]
        grid_rows.append(row(rule_label(name, params), rule, f" {paired(switch, other)} | {paired(pend, other)} |"))
    oracle_rows = []
    if oracle:
        from kairos_gym.benchmark.oracle_cache import run_oracle, task_bases

        for j, s in enumerate(test[:oracle]):
            o = float(run_oracle(base, s, task_bases(chosen, (("pending-switch", {"k": k}),)))["summary"]
                      ["slo_attainment"])
            oracle_rows.append(f"| {task.name} | {s} | {_f(o)} | {_f(switch[j])} | {_f(pend[j])} | {_f(bs[j])} | "
                               f"{o - switch[j]:+.3f} | {o - bs[j]:+.3f} |")
    first = np.asarray(runs["no-deflect"])
    return {"normal": normal, "episode": rows, "paired": diffs, "grid": grid_rows, "oracle": oracle_rows,
            "in_share": float(first[:, 3].mean()), "chosen": chosen["rule"], "k": k, "runs": runs}


def report(scenario: str, requests: int | None, n_seeds: int, tiers: list[str], grid: bool, oracle: int) -> int:
    """Print the check's tables (markdown) for ``scenario`` at ``requests`` requests per instance (None: the
    scenario's), test seeds ``0..n_seeds-1`` and the SLO ``tiers``; ``grid``: every static rule too; ``oracle``:
    the Oracle on the first ``oracle`` test seeds of every tier. The flags are checked by the caller."""
    tasks = [make_task(scenario, requests, tier, n_seeds) for tier in tiers]
    results = [check_tier(t, grid, oracle) for t in tasks]
    sc = tasks[0].base()
    wins = [fault_windows(sc, s) for s in range(n_seeds)]
    shown = ("the same on every seed: " + _windows(wins[0]) if all(w == wins[0] for w in wins) else
             "seed 0: " + _windows(wins[0]) + f"; {np.mean([len(w) for w in wins]):.1f} per seed, mean")
    print(f"{sc.name}: {sc.workload.arrival.describe()}, {sc.workload.effective_num_requests:,} requests per "
          f"instance; test seeds 0-{n_seeds - 1}, best-static tuned on seeds 1000, 1001; exact track. Fault "
          f"windows (s, {shown}); {results[0]['in_share']:.3f} of the requests arrive in one (mean).")
    print("SLOs (TTFT s / TBT s): " + ", ".join(f"{t.tier} {t.base().slo.ttft_s:g} / {t.base().slo.tbt_s:g}"
                                               for t in tasks) + "\n")
    print("The fault-free cluster (no faults: section), SLO attainment:\n")
    print("| task | " + " | ".join(POLICIES) + " | preemptions (" + " / ".join(POLICIES) + ") |")
    print("|---|" + "---:|" * len(POLICIES) + "---:|")
    print("\n".join(r["normal"] for r in results))
    print_table("The episode, SLO attainment over all requests, those arriving in a fault window and the others:",
                "| task | policy | all requests | in a fault | outside | preemptions |",
                "|---|---|---:|---:|---:|---:|", [r["episode"] for r in results])
    print_table(_msc.PAIRED_TITLE, "| task | difference | mean ± half-width (W/T/L) |", "|---|---|---|",
                [r["paired"] for r in results])
    if grid:
        print_table("Every static rule in the episode, and fault-switch and pending-switch minus the rule (paired, as "
                    "above):", "| task | rule | all requests | in a fault | outside | fault-switch - rule (W/T/L) | "
                    "pending-switch - rule (W/T/L) | preemptions |", "|---|---|---:|---:|---:|---|---|---:|",
                    [r["grid"] for r in results])
    if oracle:
        print_table("The Oracle (the leaderboard's bases, the tier's best-static rule and the tuned pending-switch) "
                    "per instance, beside the switching rules and best-static on the same instance (SLO "
                    "attainment):",
                    "| task | seed | oracle | fault-switch | pending-switch | best-static | oracle - fault-switch | "
                    "oracle - best-static |", "|---|---:|---:|---:|---:|---:|---:|---:|",
                    [r["oracle"] for r in results])
    return 0

