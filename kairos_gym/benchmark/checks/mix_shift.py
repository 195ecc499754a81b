"""Does a two-state MMPP scenario make a policy switch? Each state alone, then each policy per state, per SLO tier.

    kairos-gym check mix-shift                  # configs/scenarios/mix-shift.yaml, 3,000 requests
    kairos-gym check mix-shift --requests 500   # the suite's instance size
    kairos-gym check mix-shift --scenario regime-shift --seeds 4
    kairos-gym check mix-shift --scenario kv-shift --grid --kv   # KV preemptions per run in every table

The scenario (a shipped name or a YAML path) must have MMPP arrivals and ``lengths: {kind: by_state}``. The
protocol is the leaderboard suite's (kairos_gym/benchmark/suite.py): ``--requests`` requests per instance (default: the
scenario's ``num_requests``), test seeds 0..N-1, train seeds 1000 and 1001, the three SLO tiers from
:func:`~kairos_gym.benchmark.suite.tier_slos` (strict = 5x and relaxed = 25x the unloaded figures; default =
the scenario's own SLOs), and ``best-static``: the rule of :data:`~kairos_gym.benchmark.entries.STATIC_GRID` with
the best mean SLO attainment on the train seeds (:func:`~kairos_gym.benchmark.entries.tune_static`), scored on
the test seeds.

Per tier it prints:

1. **Each state alone** (:func:`stationary`: Poisson arrivals at the state's rate with the state's lengths, the
   same number of requests): no-deflect, always-deflect-ls and kairos. "Deflection helps" in a state when
   always-deflect-ls is above no-deflect there, "hurts" when below.
2. **The episode, split by the state each request arrived in** (:func:`kairos_gym.workload.arrival_states`; a
   request meets the SLO when it finishes with TTFT <= slo.ttft_s and every inter-token gap <= slo.tbt_s, as in
   the run's ``slo_attainment``): no-deflect, always-deflect-ls, kairos (exact track), best-static, and
   ``state-switch`` (:class:`StateSwitch`), a reference that switches by construction: it deflects (LargestSafe
   chunks, least-loaded node) every request that arrived in the on state and no request of the off state. It
   knows the MMPP state, which no policy sees, and nothing else (no output lengths): a switching rule, not an
   upper bound.
3. **Paired differences** over the test seeds (95% Student-t, :func:`kairos_gym.evaluation.stats.mean_ci`):
   state-switch - best-static and kairos - best-static, SLO attainment, with wins / ties / losses.
4. With ``--grid``: every rule of the static grid in the episode (test seeds), overall and per state, so that
   which static rules fail in which state can be read off, and state-switch minus the rule, paired over the test
   seeds as in 3. (a task where "the switch decides" has every one of these intervals above 0).

With ``--kv`` every table also shows the mean number of KV preemptions per run (the summary's
``n_preemptions``: swaps under ``memory_policy: swap``, always 0 under ``reserve``), the measure of a state that
binds by decode-node KV memory (``kv-shift``) rather than by the decode batch cap.

Deterministic (the same figures on every run). About 1 s per 1,000 requests per run on the 2-core machine:
~3 minutes at the defaults.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from kairos_gym.agents.base import least_loaded_deflectable
from kairos_gym.agents.runner import simulate
from kairos_gym.benchmark.entries import STATIC_GRID, rule_label, tune_static
from kairos_gym.benchmark.suite import TIER_NAMES, Task, seeds
from kairos_gym.errors import ConfigError
from kairos_gym.evaluation.stats import mean_ci
from kairos_gym.progress import or_silent
from kairos_gym.scenario import ScenarioConfig, load_scenario
from kairos_gym.sim.hook import ARRIVAL, LARGEST_SAFE, Decision, DecisionContext
from kairos_gym.workload import ByStateLengths, MMPPArrival, arrival_states, state_only

TRAIN = seeds(1000, 1001)
"""The suite's train instances (best-static's tuning and the tiers' unloaded figures)."""
MAX_REQUESTS = 20_000
"""Largest ``--requests`` (a run at 20,000 requests takes tens of seconds; the tool makes ~100 per tier)."""
MAX_SEEDS = 10
PAIRED_TITLE = "Paired over the test seeds (SLO attainment; mean ± 95% t half-width, wins/ties/losses):"
"""The title of the paired-differences table (both tools)."""
"""Most test seeds (0..9: the suite's test instances)."""
POLICIES = ("no-deflect", "always-deflect-ls", "kairos")


class StateSwitch:
    """Deflect every arrival of the on state (LargestSafe chunks, to the least-loaded decode node that can take
    one; the prefill path when none can), none of the off state. ``on[rid]``: the MMPP state at request ``rid``'s
    arrival (:func:`~kairos_gym.workload.arrival_states` of the run's workload). Other decision kinds (pull,
    re-entry) get the prefill path."""

    name = "state-switch"

    def __init__(self, on: np.ndarray) -> None:
        self.on = np.asarray(on, dtype=bool)

    def decide(self, ctx: DecisionContext) -> Decision:
        if ctx.kind == ARRIVAL and self.on[ctx.request.rid]:
            d = least_loaded_deflectable(ctx)
            if d is not None:
                return Decision.deflect(d, LARGEST_SAFE)
        return Decision.prefill_path()


def check_scenario(sc: ScenarioConfig, where: str = "mix_shift_check") -> None:
    """A ConfigError unless ``sc`` has MMPP arrivals and by-state lengths (what the tool splits by)."""
    if not isinstance(sc.workload.arrival, MMPPArrival):
        raise ConfigError(where, "workload.arrival.kind", sc.workload.arrival.kind, "'mmpp' (two states)")
    if not isinstance(sc.workload.lengths, ByStateLengths):
        raise ConfigError(where, "workload.lengths.kind", getattr(sc.workload.lengths, "kind", None),
                          "'by_state' (one length section per MMPP state)")


def make_task(scenario: str, requests: int | None, tier: str, n_test: int,
              check: Callable[[ScenarioConfig], Any] | None = None) -> Task:
    """The suite-style task of ``scenario`` at ``tier``: ``requests`` per instance (None: the scenario's own),
    test seeds 0..n_test-1, train seeds 1000 and 1001. ``check`` raises a ConfigError for a scenario the tool cannot
    measure (default :func:`check_scenario`: MMPP arrivals with lengths by state)."""
    sc = load_scenario(scenario)
    (check or check_scenario)(sc)
    over = {} if requests is None else {"workload": {"num_requests": int(requests)}}
    return Task(f"{sc.name}/{tier}", scenario, seeds(*range(n_test)), TRAIN, family=sc.name, tier=tier,
                overrides=over)


def split(sc: ScenarioConfig, policy: Any, seed: int, params: dict[str, Any] | None = None) -> tuple[float, ...]:
    """``(all, on, off, on_share, switches)`` of one run: the fraction of requests meeting the SLO overall and
    among those that arrived in each state, the on state's share of the requests, and the number of state changes
    between consecutive arrivals. ``policy``: a registry name (with ``params``), ``"state-switch"``, or an
    object."""
    return split_kv(sc, policy, seed, params)[:5]


def split_kv(sc: ScenarioConfig, policy: Any, seed: int, params: dict[str, Any] | None = None) -> tuple[float, ...]:
    """:func:`split`'s five figures and the run's KV preemptions (``n_preemptions``, a count) as a sixth."""
    on = arrival_states(sc.workload, np.random.default_rng(seed))
    pol = StateSwitch(on) if policy == "state-switch" else policy
    summary, sim = simulate(pol, sc, seed, **(params or {}))
    t = sim.requests_table()
    ok = (~np.isnan(t["finish_s"])) & (t["ttft_s"] <= sc.slo.ttft_s) & (t["max_tbt_s"] <= sc.slo.tbt_s)
    if on.size != ok.size or abs(float(ok.mean()) - summary["slo_attainment"]) > 1e-12:
        raise RuntimeError("the per-state split does not recombine to the run's slo_attainment")
    nan = math.nan
    return (float(ok.mean()), float(ok[on].mean()) if on.any() else nan,
            float(ok[~on].mean()) if (~on).any() else nan, float(on.mean()), float(np.count_nonzero(np.diff(on))),
            float(summary["n_preemptions"]))


def stationary(sc: ScenarioConfig, state: str) -> ScenarioConfig:
    """``sc`` with one state only: Poisson arrivals at that state's rate, that state's lengths."""
    check_scenario(sc)
    return ScenarioConfig.from_dict({**sc.to_dict(), "workload": state_only(sc.workload, state).to_dict()})


def _f(x: float) -> str:
    return "n/a" if math.isnan(x) else f"{x:.3f}"


def print_table(title: str, header: str, rule: str, groups: Sequence[Sequence[str]]) -> None:
    """Print ``title`` (after a blank line, then a blank line), a markdown table's ``header`` and ``rule`` lines, and
    the rows of every group (one group per task)."""
    print(f"\n{title}\n")
    print(header)
    print(rule)
    for g in groups:
        print("\n".join(g))


def paired(a: Sequence[float], b: Sequence[float]) -> str:
    """``"+0.012 ± 0.008 (7/2/1)"``: mean and 95% t half-width of ``a - b``, wins / ties / losses of ``a``."""
    d = [x - y for x, y in zip(a, b, strict=True)]
    m, h = mean_ci(d)
    wins, ties = sum(x > 1e-12 for x in d), sum(abs(x) <= 1e-12 for x in d)
    hw = "n/a" if math.isnan(h) else f"{h:.3f}"
    return f"{m:+.3f} ± {hw} ({wins}/{ties}/{len(d) - wins - ties})"


def _kv(x: float) -> str:
    return f" {x:.1f} |"


def check_tier(task: Task, grid: bool = False, kv: bool = False) -> dict[str, Any]:
    """The tool's figures for one task (see the module docstring), as markdown rows and raw numbers; ``grid``:
    also every rule of the static grid in the episode; ``kv``: a last column of mean KV preemptions per run (the
    ``alone`` rows: one per policy)."""
    base = task.base()
    test = [i.seed for i in task.test]
    chosen = tune_static(task, base, or_silent(None))["chosen"]
    alone = []
    for state in ("on", "off"):
        one = stationary(base, state)
        sums = [[simulate(p, one, s)[0] for s in test] for p in POLICIES]
        means = [float(np.mean([r["slo_attainment"] for r in rs])) for rs in sums]
        row = f"| {task.name} | {state} alone ({one.workload.arrival.describe()}) | " + " | ".join(_f(m) for m in means)
        if kv:
            row += " | " + " / ".join(f"{np.mean([r['n_preemptions'] for r in rs]):.1f}" for rs in sums)
        alone.append(row + " |")
    entries: list[tuple[str, Any, dict[str, Any]]] = [(p, p, {}) for p in POLICIES]
    entries += [(f"best-static ({chosen['rule']})", chosen["policy"], dict(chosen["params"])),
                ("state-switch", "state-switch", {})]
    runs = {label: [split_kv(base, name, s, params) for s in test] for label, name, params in entries}
    rows = []
    for label, r in runs.items():
        m = np.nanmean(np.asarray(r), axis=0)
        rows.append(f"| {task.name} | {label} | {_f(m[0])} | {_f(m[1])} | {_f(m[2])} |" + (_kv(m[5]) if kv else ""))
    bs = [r[0] for r in runs[entries[3][0]]]
    diffs = [f"| {task.name} | state-switch - best-static | {paired([r[0] for r in runs['state-switch']], bs)} |",
             f"| {task.name} | kairos - best-static | {paired([r[0] for r in runs['kairos']], bs)} |"]
    grid_rows = []
    switch = [r[0] for r in runs["state-switch"]]
    for name, params in STATIC_GRID if grid else ():
        rule = [split_kv(base, name, s, dict(params)) for s in test]
        m = np.nanmean(np.asarray(rule), axis=0)
        grid_rows.append(f"| {task.name} | {rule_label(name, params)} | {_f(m[0])} | {_f(m[1])} | {_f(m[2])} | "
                         f"{paired(switch, [r[0] for r in rule])} |" + (_kv(m[5]) if kv else ""))
    first = np.asarray(runs["no-deflect"])
    return {"alone": alone, "episode": rows, "paired": diffs, "grid": grid_rows, "on_share": float(first[:, 3].mean()),
            "switches": float(first[:, 4].mean()), "chosen": chosen["rule"], "runs": runs}


def report(scenario: str, requests: int | None, n_seeds: int, grid: bool, kv: bool) -> int:
    """Print the check's tables (markdown) for ``scenario`` at ``requests`` requests per instance (None: the
    scenario's) on test seeds ``0..n_seeds-1``, every SLO tier; ``grid``: every static rule too; ``kv``: the
    mean KV preemptions per run in every table. The flags are checked by the caller."""
    tasks = [make_task(scenario, requests, tier, n_seeds) for tier in TIER_NAMES]
    results = [check_tier(t, grid, kv) for t in tasks]
    sc = tasks[1].base()
    print(f"{sc.name}: {sc.workload.arrival.describe()}, {sc.workload.effective_num_requests:,} requests per "
          f"instance; test seeds 0-{n_seeds - 1}, best-static tuned on seeds 1000, 1001; exact track. "
          f"On state: {results[0]['on_share']:.2f} of the requests, {results[0]['switches']:.1f} state changes "
          "per instance (mean).")
    print("SLOs (TTFT s / TBT s): " + ", ".join(f"{t.tier} {t.base().slo.ttft_s:g} / {t.base().slo.tbt_s:g}"
                                               for t in tasks) + "\n")
    print("Each state alone (Poisson at its rate, its lengths), SLO attainment:\n")
    kv_head = (" | preemptions (" + " / ".join(POLICIES) + ")", "---:|") if kv else ("", "")
    print("| task | state | " + " | ".join(POLICIES) + kv_head[0] + " |")
    print("|---|---|" + "---:|" * len(POLICIES) + kv_head[1])
    for r in results:
        print("\n".join(r["alone"]))
    ep_head = (" preemptions |", "---:|") if kv else ("", "")
    print_table("The episode, SLO attainment over all requests and per arrival state:",
                "| task | policy | all requests | on | off |" + ep_head[0], "|---|---|---:|---:|---:|" + ep_head[1],
                [r["episode"] for r in results])
    print_table(PAIRED_TITLE, "| task | difference | mean ± half-width (W/T/L) |", "|---|---|---|",
                [r["paired"] for r in results])
    if grid:
        print_table("Every static rule in the episode, SLO attainment over all requests and per arrival state, and "
                    "state-switch minus the rule (paired, as above):",
                    "| task | rule | all requests | on | off | state-switch - rule (W/T/L) |" + ep_head[0],
                    "|---|---|---:|---:|---:|---|" + ep_head[1], [r["grid"] for r in results])
    return 0

