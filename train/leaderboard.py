"""The standard suite and ``LEADERBOARD.md`` (``kairos-gym leaderboard``); the protocol is docs/benchmark.md.

Every policy runs on the same fixed **instances** of every **task** (a shipped scenario): for a synthetic
scenario an instance is a workload seed; for a trace scenario, whose workload the seed does not change, an
instance is a disjoint window of the trace (``arrival.start_s/end_s``, run with seed 0, which then seeds only
the policies' own randomness). Each task also has **train** instances, disjoint from the test ones, on which
the ``best-static`` entry picks its rule; everything in the tables is scored on the test instances.

Per instance the score is the SLO attainment. Per task it is normalised, ``(x - no-deflect) / (Oracle -
no-deflect)`` with the two anchors' means over the task's test instances: 0 is no-deflect, 1 is the clairvoyant
rollout Oracle (agents/oracle.py: never below any of its base policies on an instance, so a policy above 1 beat
the Oracle's bases and the Oracle itself; its scores come from train/oracle_scores.json when cached,
:mod:`kairos_gym.train.oracle_scores`). A task where the Oracle beats no-deflect by less than
:data:`MIN_HEADROOM` has no room to normalise in: it is reported raw and left out of the aggregates. Per task
the **headroom** is the Oracle minus the best shipped heuristic (:func:`headroom`), paired on the instances
with a 95% Student-t interval. Across the tasks with headroom:
IQM, median, mean and optimality gap of the normalised scores, and the probability of improvement over Kairos
(paired on the instances), each with a 95% stratified-bootstrap percentile interval
(:mod:`kairos_gym.train.aggregate`); per task, means with 95% Student-t intervals over the instances
(:func:`kairos_gym.stats.mean_ci`).

Policies: registry names (``--policies``), ``best-static``, classes from files (``--policy file.py:Class``)
and safe-format checkpoints (``--checkpoint DIR``), all run through :func:`kairos_gym.agents.runner.simulate`.

Tracks (issue 12): the information track is a property of the environment (the scenario's ``information``
section), not of a policy. :func:`run_suite` runs one track (every task's scenario set to it, every entry run on
it); :func:`run_tracks` runs several, and :func:`tracks_md` writes one section per track. The exceptions
(:data:`PINNED_TRACK`) always run on the exact track: the reference ``oracle`` (clairvoyant: it knows the workload)
and ``kairos-exact``, a (policy, track) pair by name, the "same rule with exact information" anchor of the
realistic section.
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
from kairos_gym.train import oracle_scores
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

from kairos_gym.backends import Backend, SerialBackend
from kairos_gym.backends import Task as BackendTask
from kairos_gym.backends.runs import RunSpec, run_task
from kairos_gym.config import ScenarioConfig, load_scenario
from kairos_gym.errors import ConfigError
from kairos_gym.flags import format_seeds
from kairos_gym.progress import RunProgress, or_silent
from kairos_gym.stats import mean_ci, nan_to_none

BASELINE = "no-deflect"
"""The 0 of the normalised score."""
REFERENCE = "oracle"
"""The 1 of the normalised score: the clairvoyant rollout Oracle."""
REFERENCE_LABEL = ("the clairvoyant rollout Oracle (agents/oracle.py: it knows the workload's future and rolls every "
                   "action out to the end of the instance under no-deflect, kairos-exact, always-deflect-ls, sq-ls, "
                   "sl-ls and the task's best-static rule; never below any of them on an instance)")
NOT_HEURISTICS = (REFERENCE, "ppo", "ppo-general")
"""Built-in entries that are not shipped heuristics (the headroom compares the Oracle with the best of the rest)."""
COMPARISON = "kairos"
"""The policy every other is compared with, paired on the instances (probability of improvement, differences)."""
REQUIRED = (BASELINE, COMPARISON, REFERENCE)
BEST_STATIC = "best-static"
"""The entry that tunes a static rule (:data:`STATIC_GRID`) per task on the train instances."""
DEFAULT_POLICIES = ("no-deflect,always-deflect,always-deflect-ls,sq,sq-ls,sl,sl-ls,best-static,kairos,kairos-exact,"
                    "ppo,ppo-general,oracle")
REFUSED: dict[str, str] = {}
"""Registry names the leaderboard refuses, with why."""
METRIC = "slo_attainment"
"""The per-instance score (fraction of requests within both SLOs, docs/metrics.md)."""
MIN_HEADROOM = 0.01
"""Least ``reference - no-deflect`` (SLO attainment, means over the test instances) for a task to be normalised."""
TRACKS = ("exact", "realistic")
"""The information tracks a leaderboard can run (``--track exact|realistic|both``; docs/benchmark.md)."""
PINNED_TRACK = {REFERENCE: "exact", "kairos-exact": "exact"}
"""Entries whose name fixes their track: run on it whatever the section's track (the Oracle is clairvoyant, so
exact; ``kairos-exact`` names the exact-track rule, the "same rule with exact information" anchor)."""
MAX_EXTERNAL = 16
"""Most ``--policy`` plus ``--checkpoint`` entries of one leaderboard run."""
BREAKDOWN = ("queue", "execution", "transfer")
KEYS = ("slo_attainment", "ttft_p95", "tbt_violation_rate", "tbt_request_attainment", "deflection_rate", "n_requests",
        *(f"ttft_breakdown_mean.{k}" for k in BREAKDOWN), *(f"ttft_breakdown_p95.{k}" for k in BREAKDOWN))
"""Figures kept per run (``a.b``: key ``b`` of the summary's dict ``a``)."""


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
    """A scenario (a task family) at one SLO tier, with its fixed test and train instances.

    ``overrides`` (deep-merged into the shipped scenario) shorten an instance, never change its physics;
    ``tier`` is ``"default"`` (the scenario's own SLOs) or a key of :data:`TIERS` (SLOs from
    :func:`tier_slos`)."""

    name: str
    scenario: str | Mapping[str, Any]
    test: tuple[Instance, ...]
    train: tuple[Instance, ...]
    windows: bool = field(default=False)
    family: str = ""
    tier: str = "default"
    overrides: Mapping[str, Any] = field(default_factory=dict)

    def describe(self, which: str = "test") -> str:
        inst = self.test if which == "test" else self.train
        if not self.windows:
            return "seeds " + format_seeds([i.seed for i in inst])
        return ", ".join(f"[{i.window_s[0]:g}, {i.window_s[1]:g})" for i in inst if i.window_s) + " s"

    def base(self) -> ScenarioConfig:
        """The task's scenario: the shipped one, its ``overrides``, and the tier's SLOs."""
        sc = load_scenario(self.scenario)
        if self.overrides:
            sc = sc.with_overrides(self.overrides)
        if self.tier != "default":
            sc = sc.with_overrides({"slo": tier_slos(sc, self.train[0])[self.tier]})
        return sc


def seeds(*values: int) -> tuple[Instance, ...]:
    """Instances of a synthetic scenario: one per seed."""
    return tuple(Instance(s) for s in values)


def windows(edges: Sequence[float], seed: int = 0) -> tuple[Instance, ...]:
    """Instances of a trace scenario: consecutive windows ``[edges[i], edges[i+1])`` (original trace seconds)."""
    return tuple(Instance(seed, (float(a), float(b))) for a, b in itertools.pairwise(edges))


# ---------------------------------------------------------------------------------------------- SLO tiers
TIERS: dict[str, float] = {"strict": 5.0, "relaxed": 25.0}
"""SLO tiers as multiples of the unloaded figures (Sarathi-Serve's convention: strict TBT = 5x and relaxed = 25x
an unloaded decode step; the TTFT tiers take the same factors of an unloaded TTFT). The ``default`` tier keeps
the scenario's own SLOs."""
TIER_NAMES = ("strict", "default", "relaxed")


def unloaded(sc: ScenarioConfig, inst: Instance) -> dict[str, float]:
    """The unloaded figures of a scenario (seconds), from the workload of ``inst``: its median prompt ``P`` and
    median output ``O`` (tokens, rounded down); ``decode_step_s``: the latency model's decode step at batch 1
    with context ``P + O // 2`` (the mean context of a median request while it decodes); ``ttft_s``: the TTFT
    of one request of ``P`` prompt tokens alone on the cluster (simulated: its prefill steps at the scenario's
    token budget, the KV transfer, the decode node's first step)."""
    from kairos_gym.latency.model import StepLatencyModel
    from kairos_gym.sim import Decision, Simulator

    sim = Simulator(inst.scenario(sc), seed=inst.seed)
    prompt = int(np.median(sim.workload.prompt_tokens))
    output = int(np.median(sim.workload.output_tokens))
    cl = sc.cluster
    model = StepLatencyModel.from_preset(cl.model, cl.gpu, cl.tp, dict(cl.calibration) or None)
    step = model.step_time([prompt + output // 2])
    one = sc.to_dict()
    one["workload"] = {"arrival": {"kind": "poisson", "rate": 1.0}, "num_requests": 1,
                       "lengths": {"kind": "fixed", "prompt_tokens": prompt, "output_tokens": 2}}

    class _Prefill:
        def decide(self, ctx: Any) -> Decision:
            return Decision.prefill_path()

    alone = Simulator(ScenarioConfig.from_dict(one), seed=0)
    ttft = float(alone.run(_Prefill())["ttft_mean"])
    return {"prompt_tokens": prompt, "output_tokens": output, "decode_step_s": step, "ttft_s": ttft}


def tier_slos(sc: ScenarioConfig, inst: Instance) -> dict[str, dict[str, float]]:
    """``{tier: {"ttft_s", "tbt_s"}}``: :data:`TIERS` times the unloaded TTFT and decode step (:func:`unloaded`),
    rounded to 0.1 ms; ``default``: the scenario's own SLOs."""
    u = unloaded(sc, inst)
    out = {t: {"ttft_s": round(f * u["ttft_s"], 4), "tbt_s": round(f * u["decode_step_s"], 4)}
           for t, f in TIERS.items()}
    out["default"] = {"ttft_s": sc.slo.ttft_s, "tbt_s": sc.slo.tbt_s}
    return out


INSTANCE_REQUESTS = 500
"""Requests per synthetic instance (and about as many per trace window): the clairvoyant Oracle's rollouts cost
O(requests^2) per instance (about 5 s at 500 requests, a minute at 1,500 on the 2-core machine), so the suite
sizes instances for it (issue 12 item 4: "windows of a few hundred to a few thousand requests")."""
TRACE_WINDOW_S = 240.0
"""Length of an azure-code instance (original seconds, replayed at 6x: 40 simulated seconds, 374-998 requests in
the test windows; the trace's 3,436 s give fourteen: two for training, ten for test, two unused. Shorter windows
are not an option: the trace's bursts leave some 120 s windows empty)."""
MOONCAKE_WINDOW_S = 140.0
"""Length of a long-tail (Mooncake) instance (original seconds, replayed at 0.15x: ~930 simulated seconds,
~475 requests; the trace's 3,537 s give 25: two for training, ten for test, the rest unused)."""
N_TEST = 10
"""Test instances per task (the Oracle's cost bounds it: ~5-10 s per 500-request instance on a quiet core, times
18 tasks)."""
_AZ = [TRACE_WINDOW_S * i for i in range(N_TEST + 3)]
_MC = [MOONCAKE_WINDOW_S * i for i in range(N_TEST + 3)]
_SEEDS = seeds(*range(N_TEST))
_TRAIN = seeds(1000, 1001)
_N = {"workload": {"num_requests": INSTANCE_REQUESTS}}
REGIME_SOJOURNS = {"mean_on_s": 6.0, "mean_off_s": 12.0}
"""regime-shift's MMPP sojourns in the suite (s): the scenario's 20 s / 40 s would give a 500-request instance
(~33 s at the mean rate of ~15 req/s) about one regime switch; 6 s / 12 s (the same 1:2 ratio, so the same mean
rate and time share of each state) give about three high-load bursts per instance."""
FAMILIES: tuple[tuple[str, str, dict[str, Any], tuple[Instance, ...], tuple[Instance, ...], bool], ...] = (
    ("bursty", "bursty", _N, _SEEDS, _TRAIN, False),
    ("regime-shift", "regime-shift", {"workload": {"num_requests": INSTANCE_REQUESTS,
                                                   "arrival": REGIME_SOJOURNS}}, _SEEDS, _TRAIN, False),
    ("decode-bound", "decode-bound", _N, _SEEDS, _TRAIN, False),
    ("long-tail", "mooncake", {}, windows(_MC[2:]), windows(_MC[:3]), True),
    ("kv-pressure", "kv-pressure", _N, _SEEDS, _TRAIN, False),
    ("azure-code", "azure-code", {}, windows(_AZ[2:]), windows(_AZ[:3]), True),
)
"""The task families: (family, shipped scenario, overrides, test instances, train instances, trace windows)."""
SUITE: tuple[Task, ...] = tuple(
    Task(fam if tier == "default" else f"{fam}/{tier}", scen, test, train, windows=win, family=fam, tier=tier,
         overrides=over)
    for fam, scen, over, test, train, win in FAMILIES for tier in TIER_NAMES)
"""The standard suite: every family at every tier; test instances (:data:`N_TEST` per task) and the disjoint
train instances of ``best-static``."""


def select_tasks(spec: str, suite: Sequence[Task] | None = None, where: str = "leaderboard") -> tuple[Task, ...]:
    """The tasks of a comma-separated ``--tasks`` list: task names (``bursty/strict``), family names (every
    tier of the family) or tier names (every family at that tier); in suite order, each once. ``suite``:
    :data:`SUITE` when None; ``where``: the command errors name."""
    w = where
    suite = SUITE if suite is None else tuple(suite)
    names = [p.strip() for p in spec.split(",")]
    fams = {t.family for t in suite}
    known = [t.name for t in suite]
    if not spec.strip() or any(not n for n in names):
        raise ConfigError(w, "--tasks", spec, "a comma-separated list of task, family or tier names")
    for n in names:
        if n not in known and n not in fams and n not in TIER_NAMES:
            raise ConfigError(w, "--tasks", n, "task names (" + ", ".join(known) + "), family names ("
                              + ", ".join(sorted(fams)) + ") or tier names (" + ", ".join(TIER_NAMES) + ")")
    if len(set(names)) != len(names):
        raise ConfigError(w, "--tasks", spec, "each name once")
    return tuple(t for t in suite if t.name in names or t.family in names or t.tier in names)


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
    spec: Callable[[Task, ScenarioConfig, int], RunSpec] | None = None
    """The same run as a picklable :class:`~kairos_gym.backends.runs.RunSpec` (any backend may run it); None:
    ``run`` runs in the driver process (a policy from a user's file or checkpoint)."""


def check_entries(policies: Sequence[str], externals: Sequence[ExternalPolicy]) -> None:
    """Names once each, the anchors present, nothing refused, external labels distinct (before any run)."""
    check_names("leaderboard", policies, externals, REFUSED, REQUIRED)


def check_names(where: str, policies: Sequence[str], externals: Sequence[ExternalPolicy], refused: Mapping[str, str],
                required: Sequence[str] = ()) -> None:
    """The checks of a ``--policies`` list and ``--policy`` / ``--checkpoint`` entries (the leaderboard's and the
    precision protocol's): at least one entry; registry names or best-static, none of ``refused`` (name -> why),
    each once; every name of ``required`` present; at most :data:`MAX_EXTERNAL` external entries, their labels
    distinct from each other and from the names."""
    from kairos_gym.agents.registry import POLICIES

    allowed = [p for p in (*POLICIES, BEST_STATIC) if p not in refused]
    if not policies and not externals:
        raise ConfigError(where, "--policies", list(policies), "at least one policy")
    for p in policies:
        if p in refused:
            raise ConfigError(where, "--policies", p, f"names from {', '.join(allowed)} ({p} is left out: "
                              f"{refused[p]})")
        if p not in allowed:
            raise ConfigError(where, "--policies", p, "names from " + ", ".join(allowed))
    if len(set(policies)) != len(policies):
        raise ConfigError(where, "--policies", ",".join(policies), "each policy once")
    missing = [p for p in required if p not in policies]
    if missing:
        raise ConfigError(where, "--policies", ",".join(policies), f"a list that includes {', '.join(required)} "
                          f"(the normalisation anchors and the comparison; missing: {', '.join(missing)})")
    if len(externals) > MAX_EXTERNAL:
        raise ConfigError(where, "--policy/--checkpoint", len(externals), f"at most {MAX_EXTERNAL} entries")
    labels = [e.label for e in externals]
    for i, e in enumerate(externals):
        if e.label in labels[:i] or e.label in policies:
            raise ConfigError(where, e.flag, e.spec, f"each policy once ({e.label} is given twice)")


def on_track(sc: ScenarioConfig, track: str) -> ScenarioConfig:
    """``sc`` with its information track set to ``track`` (its staleness and model error kept)."""
    if track not in TRACKS:
        raise ConfigError("leaderboard", "--track", track, "one of " + ", ".join(TRACKS) + " (or both)")
    return sc if sc.information.track == track else sc.with_overrides({"information": {"track": track}})


def _builtin(name: str) -> Entry:
    pinned = PINNED_TRACK.get(name)

    def run(task: Task, sc: ScenarioConfig, seed: int, tick: Any) -> dict[str, Any]:
        return run_one(sc if pinned is None else on_track(sc, pinned), name, seed, tick=tick)[0]

    def spec(task: Task, sc: ScenarioConfig, seed: int) -> RunSpec:
        return RunSpec(sc if pinned is None else on_track(sc, pinned), name, seed)

    return Entry(name, "built-in", run, spec)


def _external(ext: ExternalPolicy) -> Entry:
    def run(task: Task, sc: ScenarioConfig, seed: int, tick: Any) -> dict[str, Any]:
        return run_checked(ext, sc, seed, progress=tick)

    return Entry(ext.label, "file" if ext.flag == "--policy" else "checkpoint", run)


def _scores(runs: list[dict[str, Any]], key: str = METRIC) -> list[float]:
    out = []
    for r in runs:
        head, _, sub = key.partition(".")
        v = r.get(head)
        if sub:
            v = v.get(sub) if isinstance(v, Mapping) else None
        out.append(math.nan if v is None else float(v))
    return out


def tune_static(task: Task, base: ScenarioConfig, bar: RunProgress,
                backend: Backend | None = None) -> dict[str, Any]:
    """Mean train SLO attainment of every rule of :data:`STATIC_GRID`; the best (first on ties). ``backend`` runs
    the runs (default: serially, here)."""
    tasks = [run_task(RunSpec(inst.scenario(base), name, inst.seed, dict(params)),
                      f"tune {task.name} {rule_label(name, params)} {inst.label}")
             for name, params in STATIC_GRID for inst in task.train]
    out = (backend or SerialBackend(retries=0)).map(tasks, bar)
    grid = []
    n = len(task.train)
    for k, (name, params) in enumerate(STATIC_GRID):
        runs = out[k * n:(k + 1) * n]
        vals = [v for v in _scores(runs) if not math.isnan(v)]
        grid.append({"rule": rule_label(name, params), "policy": name, "params": dict(params),
                     "train_score": sum(vals) / len(vals) if vals else None})
    best = max(range(len(grid)), key=lambda i: (-math.inf if grid[i]["train_score"] is None
                                                else grid[i]["train_score"], -i))
    return {"chosen": grid[best], "grid": grid}


# ---------------------------------------------------------------------------------------------- the run
def _entry_task(e: Entry, task: Task, sc: ScenarioConfig, seed: int, label: str) -> BackendTask:
    """The backend task of entry ``e`` on one instance: its RunSpec, or (no spec) its ``run`` in the driver."""
    if e.spec is not None:
        return run_task(e.spec(task, sc, seed), label)

    def here(arg: Any, tick: Any) -> dict[str, Any]:
        return e.run(task, sc, seed, tick)

    return BackendTask(here, None, label, e.label, sc.workload.effective_num_requests, local=True)


def run_suite(policies: Sequence[str], externals: Sequence[ExternalPolicy] = (), suite: Sequence[Task] | None = None,
              progress: RunProgress | None = None, command: str = "kairos-gym leaderboard",
              reps: int = BOOTSTRAP_REPS, track: str = "exact",
              oracle_cache: Path | str = oracle_scores.CACHE, backend: Backend | None = None) -> dict[str, Any]:
    """Run every entry on every test instance of ``suite`` on information track ``track`` (every task's scenario
    set to it; :data:`PINNED_TRACK` entries on theirs); returns the JSON-ready result (see
    :func:`leaderboard_md`). Every entry is checked (built for every task; external policies also run on a
    short prefix, :func:`kairos_gym.agents.loader.probe`) before the first run. ``suite``: :data:`SUITE` when
    None. The Oracle's figures come from ``oracle_cache`` where it holds a valid entry (else it runs, in this
    process). ``backend`` runs the other runs (default: serially, here; the same result on every backend,
    docs/scale-out.md)."""
    t0 = time.perf_counter()
    suite = SUITE if suite is None else tuple(suite)
    policies = list(policies)
    check_entries(policies, externals)
    if not suite or any(not t.test or not t.train for t in suite) or len({t.name for t in suite}) != len(suite):
        raise ConfigError("leaderboard", "suite", [t.name for t in suite],
                          "tasks with distinct names, each with test and train instances")
    bases = {t.name: on_track(t.base(), track) for t in suite}
    registry = [p for p in policies if p != BEST_STATIC]
    for t in suite:
        check_policies("leaderboard", "--policies", [p for p in registry if p not in PINNED_TRACK], bases[t.name],
                       t.test[0].seed)
        for p in registry:
            if p in PINNED_TRACK:
                check_policies("leaderboard", "--policies", [p], on_track(bases[t.name], PINNED_TRACK[p]),
                               t.test[0].seed)
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
            best[t.name] = tune_static(t, bases[t.name], bar, backend)

    def run_best(task: Task, sc: ScenarioConfig, seed: int, tick: Any) -> dict[str, Any]:
        chosen = best[task.name]["chosen"]
        return run_one(sc, chosen["policy"], seed, params=chosen["params"], tick=tick)[0]

    cache = oracle_scores.load(oracle_cache) if REFERENCE in policies else {}
    sources: dict[str, int] = {"cache": 0, "run": 0}

    def run_oracle(task: Task, sc: ScenarioConfig, seed: int, tick: Any) -> dict[str, Any]:
        bases = oracle_scores.task_bases(best[task.name]["chosen"] if task.name in best else None)
        summary, source = oracle_scores.oracle_summary(cache, on_track(sc, PINNED_TRACK[REFERENCE]), seed, bases,
                                                       progress=tick)
        sources[source] += 1
        return summary

    def spec_best(task: Task, sc: ScenarioConfig, seed: int) -> RunSpec:
        chosen = best[task.name]["chosen"]
        return RunSpec(sc, chosen["policy"], seed, dict(chosen["params"]))

    entries = [Entry(BEST_STATIC, "tuned", run_best, spec_best) if p == BEST_STATIC
               else Entry(REFERENCE, "bound", run_oracle) if p == REFERENCE else _builtin(p) for p in policies]
    entries += [_external(e) for e in externals]
    figures: dict[str, dict[str, dict[str, list[float]]]] = {}
    jobs = [_entry_task(e, t, inst.scenario(bases[t.name]), inst.seed, f"{t.name} {e.label} {inst.label}")
            for e in entries for t in suite for inst in t.test]
    out = iter((backend or SerialBackend(retries=0)).map(jobs, bar))  # every run at once, results in this order
    for e in entries:
        figures[e.label] = {}
        for t in suite:
            runs = [next(out) for _ in t.test]
            figures[e.label][t.name] = {k: _scores(runs, k) for k in KEYS}
    res = {
        "command": command, **provenance(), "track": track, "pinned_track": dict(PINNED_TRACK),
        "suite": [{"task": t.name, "scenario": t.scenario if isinstance(t.scenario, str) else bases[t.name].name,
                   "instances": [i.label for i in t.test], "train_instances": [i.label for i in t.train],
                   "windows": t.windows, "test": t.describe("test"), "train": t.describe("train"),
                   "family": t.family or t.name, "tier": t.tier,
                   "slo": {"ttft_s": bases[t.name].slo.ttft_s, "tbt_s": bases[t.name].slo.tbt_s}} for t in suite],
        "entries": [{"label": e.label, "kind": e.kind} for e in entries],
        "figures": figures,
        "best_static": best,
        "oracle_sources": sources,
    }
    heuristics = [e.label for e in entries if e.kind in ("built-in", "tuned") and e.label not in NOT_HEURISTICS]
    res.update(score(figures, [t.name for t in suite], reps=reps, heuristics=heuristics))
    res["elapsed_s"] = time.perf_counter() - t0
    return res


# ---------------------------------------------------------------------------------------------- statistics
def _ci(values: Sequence[float]) -> dict[str, float | None]:
    m, h = mean_ci(values)
    return {"mean": nan_to_none(m), "ci95": nan_to_none(h), "n": len([v for v in values if not math.isnan(v)])}


def headroom(figures: Mapping[str, Mapping[str, Mapping[str, list[float]]]], task: str,
             heuristics: Sequence[str]) -> dict[str, Any]:
    """The Oracle minus the best shipped heuristic on ``task``: the heuristic with the highest mean SLO attainment
    over the test instances (first in entry order on ties), the per-instance differences' mean with its 95%
    Student-t half-width, wins/ties/losses of the Oracle, and ``where``: "none" when the mean difference is
    below :data:`MIN_HEADROOM` (one SLO-attainment point: a gap that small is no room to schedule better, even
    when its interval lies above 0), else "headroom" when the interval lies above 0, else "unclear"."""
    means = {h: float(np.mean(figures[h][task][METRIC])) for h in heuristics}
    best_h = max(heuristics, key=lambda h: (means[h], -list(heuristics).index(h)))
    x, y = figures[REFERENCE][task][METRIC], figures[best_h][task][METRIC]
    d = [a - b for a, b in zip(x, y, strict=True)]
    c = _ci(d)
    half = c["ci95"] if c["ci95"] is not None else math.inf
    where = ("none" if c["mean"] is not None and c["mean"] < MIN_HEADROOM else
             "headroom" if c["mean"] is not None and c["mean"] - half > 0 else "unclear")
    return {"best": best_h, "best_mean": means[best_h], "oracle_mean": float(np.mean(x)), **c,
            "wins": sum(a > b for a, b in zip(x, y, strict=True)),
            "ties": sum(a == b for a, b in zip(x, y, strict=True)),
            "losses": sum(a < b for a, b in zip(x, y, strict=True)), "where": where}


def score(figures: Mapping[str, Mapping[str, Mapping[str, list[float]]]], tasks: Sequence[str],
          reps: int = BOOTSTRAP_REPS, heuristics: Sequence[str] | None = None) -> dict[str, Any]:
    """Normalised scores, per-task intervals, paired comparisons with :data:`COMPARISON`, the Oracle's headroom
    over the best of ``heuristics`` (None: every label but :data:`NOT_HEURISTICS`) and the bootstrap
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
                            **{k: _ci(figures[label][t][k]) for k in KEYS if k != METRIC and k in figures[label][t]}}
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
    heur = [h for h in (labels if heuristics is None else heuristics) if h not in NOT_HEURISTICS and h in figures]
    head = {t: headroom(figures, t, heur) for t in tasks} if heur and REFERENCE in figures else {}
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
            "headroom": head,
            "aggregates": aggregates, "bootstrap": {"reps": reps, "seed": BOOTSTRAP_SEED, "method": "percentile",
                                                    "confidence": 0.95}}


# ---------------------------------------------------------------------------------------------- markdown
TRACK_TEXT = {"exact": "the simulator serves the true, fresh node state and exact predictions",
              "realistic": "the simulator serves the central dispatcher's stale view, refreshed every "
                           "`information.staleness_s`, and predictions with `information.model_error` MAPE noise "
                           "from the run's generator"}
"""One line per track for the protocol paragraph (docs/env.md, "Information tracks")."""


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


def _family_tables(res: Mapping[str, Any], order: Sequence[str]) -> list[str]:
    """Per family and tier SLO attainment; per task the per-request vs per-gap TBT figures and the TTFT
    breakdown of the anchors and the comparison; the precision of the per-task means."""
    suite = res["suite"]
    fams = list(dict.fromkeys(s.get("family", s["task"]) for s in suite))
    by = {(s.get("family", s["task"]), s.get("tier", "default")): s["task"] for s in suite}
    tiers = [t for t in TIER_NAMES if any((f, t) in by for f in fams)]
    pt = res["per_task"]
    lines = ["", "## SLO attainment per family and tier", "",
             "Mean over the test instances, " + " / ".join(tiers) + " (docs/benchmark.md, \"SLO tiers\"); "
             "-: the task was not run.", "",
             "| policy | " + " | ".join(fams) + " |", "|---|" + "---|" * len(fams)]
    for lb in order:
        cells = [" / ".join(_num(pt[lb][by[(f, t)]]["raw"]["mean"]) if (f, t) in by else "-" for t in tiers)
                 for f in fams]
        lines.append(f"| {lb} | " + " | ".join(cells) + " |")
    show = [lb for lb in (res["baseline"], res["comparison"], res["reference"]) if lb in pt]
    lines += ["", "## TBT per request and per gap, TTFT breakdown", "",
              "Means over the test instances. TBT req: `tbt_request_attainment` (share of completed requests whose "
              "every gap is within the TBT SLO); TBT gaps: `tbt_violation_rate` (share of gaps over it). TTFT "
              "breakdown of the prefill-path requests (docs/metrics.md): mean queue / execution / transfer, and "
              "P95 queue, in seconds (n/a: no request took the prefill path).", "",
              "| task | policy | SLO attainment | TBT req | TBT gaps | queue | execution | transfer | P95 queue |",
              "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for s in suite:
        t = s["task"]
        for lb in show:
            c = pt[lb][t]

            def m(k: str, spec: str = ".3f", c: Mapping[str, Any] = c) -> str:
                return _num(c[k]["mean"], spec) if k in c else "n/a"

            lines.append(f"| {t} | {lb} | {_num(c['raw']['mean'])} | {m('tbt_request_attainment')} | "
                         f"{m('tbt_violation_rate', '.4f')} | {m('ttft_breakdown_mean.queue', '.3f')} | "
                         f"{m('ttft_breakdown_mean.execution', '.3f')} | {m('ttft_breakdown_mean.transfer', '.4f')} | "
                         f"{m('ttft_breakdown_p95.queue', '.3f')} |")
    lines += ["", "## Precision of the per-task means", "",
              "Half-width of the 95% Student-t interval of the mean SLO attainment over the test instances (the "
              "target is < 0.02, two SLO-attainment points).", "",
              "| policy | " + " | ".join(s["task"] for s in suite) + " | max |", "|---|" + "---|" * (len(suite) + 1)]
    for lb in show:
        hs = [pt[lb][s["task"]]["raw"]["ci95"] for s in suite]
        finite = [h for h in hs if h is not None]
        lines.append(f"| {lb} | " + " | ".join(_num(h) for h in hs) + f" | {_num(max(finite) if finite else None)} |")
    return lines


def _headroom_table(res: Mapping[str, Any]) -> list[str]:
    """The Oracle minus the best shipped heuristic per task (:func:`headroom`)."""
    head = res.get("headroom") or {}
    if not head:
        return []
    src = res.get("oracle_sources") or {}
    lines = [
        "## Headroom: the Oracle minus the best shipped heuristic",
        "",
        "Per task, the shipped heuristic with the best mean SLO attainment over the test instances (every built-in "
        f"entry but {', '.join(NOT_HEURISTICS)}; best-static included), and the Oracle's SLO attainment minus its on "
        "the same instance: mean ± half-width of the 95% Student-t interval, then the Oracle's wins / ties / "
        f"losses. none: the mean difference is below {MIN_HEADROOM:g}; headroom: otherwise, when the interval lies "
        "above 0; unclear: neither."
        + (f" Oracle figures: {src.get('cache', 0)} instances from the cache (train/oracle_scores.json, checked "
           f"against fresh no-deflect and always-deflect-ls runs), {src.get('run', 0)} run now." if src else ""),
        "",
        "| task | best heuristic | its SLO attainment | Oracle | Oracle - best | W/T/L | headroom |",
        "|---|---|---:|---:|---|---|---|",
    ]
    for s in res["suite"]:
        h = head.get(s["task"])
        if h is None:
            continue
        lines.append(f"| {s['task']} | {h['best']} | {h['best_mean']:.3f} | {h['oracle_mean']:.3f} | "
                     f"{_pm(h, '+.3f')} | {h['wins']}/{h['ties']}/{h['losses']} | {h['where']} |")
    lines.append("")
    return lines


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
        f"Protocol (docs/benchmark.md): information track **{res.get('track', 'exact')}** ("
        + TRACK_TEXT[res.get("track", "exact")] + "; a policy sees the `DecisionContext`, no output lengths"
        + "".join(f"; {lb} always runs on the {tr} track" for lb, tr in res.get("pinned_track", {}).items()
                  if tr != res.get("track", "exact"))
        + "). Every policy runs on the same fixed instances of every task. Score per instance: SLO "
        "attainment (fraction of requests whose TTFT and every token gap are within the scenario's SLOs, "
        "docs/metrics.md). Normalised score per task: (x - no-deflect) / (reference - no-deflect), the anchors "
        f"being means over the task's instances; reference: {res['reference_label']}. The Oracle is an upper bound "
        "on its base policies, not the optimum: a score above 1 would mean a policy beat it. Tasks where the "
        f"reference beats no-deflect by less than {res['min_headroom']:g} have no "
        "headroom: they are shown raw and left out of the aggregates.",
        "",
        "## Suite",
        "",
        "| task | SLO TTFT / TBT (s) | instances (test) | n | train instances (best-static only) | what differs "
        "between instances |",
        "|---|---|---|---:|---|---|",
    ]
    for s in res["suite"]:
        what = ("the trace window (a trace workload does not depend on the seed: every window runs with seed 0, "
                "which seeds only the policies' own randomness); original trace seconds" if s["windows"]
                else "the workload seed")
        slo = f"{s['slo']['ttft_s']:g} / {s['slo']['tbt_s']:g}" if "slo" in s else "-"
        lines.append(f"| {s['task']} | {slo} | {s['test']} | {len(s['instances'])} | {s['train']} | {what} |")
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
    lines += _headroom_table(res)
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
    lines += _family_tables(res, order)
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


def parse_tracks(spec: str, where: str = "leaderboard") -> tuple[str, ...]:
    """``--track``: ``exact``, ``realistic`` or ``both`` (every track of :data:`TRACKS`, in that order); ``where``:
    the command errors name."""
    if spec == "both":
        return TRACKS
    if spec not in TRACKS:
        raise ConfigError(where, "--track", spec, "one of " + ", ".join(TRACKS) + " or both")
    return (spec,)


def run_tracks(tracks: Sequence[str], *args: Any, **kwargs: Any) -> dict[str, Any]:
    """:func:`run_suite` once per track (every track checked first); ``{"tracks": {track: result}, "elapsed_s"}``.
    A progress bar given as ``progress`` is shared (each track starts it again)."""
    for tr in tracks:
        parse_tracks(tr)
    if not tracks or len(set(tracks)) != len(tracks):
        raise ConfigError("leaderboard", "--track", list(tracks), "one or more tracks of " + ", ".join(TRACKS)
                          + ", each once")
    t0 = time.perf_counter()
    out = {tr: run_suite(*args, track=tr, **kwargs) for tr in tracks}
    return {"tracks": out, "elapsed_s": time.perf_counter() - t0}


def tracks_md(results: Mapping[str, Any]) -> str:
    """LEADERBOARD.md of a :func:`run_tracks` result: one track as :func:`leaderboard_md` writes it; several as
    one section per track (``## Track: <name>``, each with its own protocol line, tables one heading level
    down)."""
    tracks = results["tracks"]
    if len(tracks) == 1:
        return leaderboard_md(next(iter(tracks.values())))
    first = next(iter(tracks.values()))
    head = leaderboard_md(first).split("\n")[:5]  # title, command, code, run (the same for every track)
    head[4] = (f"Run: {first['date']}, wall time {results['elapsed_s']:.0f} s for {len(tracks)} tracks "
               f"(Python {first['python']}, numpy {first['numpy']})")
    lines = [*head, "", "Tracks: " + ", ".join(tracks) + " (docs/benchmark.md, \"Information tracks\"): the same "
             "policies, tasks and instances on each; scores are comparable within a track.", ""]
    for tr, res in tracks.items():
        body = leaderboard_md(res).split("\n")[6:]  # past the header lines
        lines += [f"## Track: {tr}", ""]
        lines += ["#" + ln if ln.startswith("## ") else ln for ln in body]
    return "\n".join(lines)


__all__ = ["BEST_STATIC", "DEFAULT_POLICIES", "STATIC_GRID", "SUITE", "TRACKS", "Instance", "Task", "leaderboard_md",
           "parse_tracks", "run_suite", "run_tracks", "score", "tracks_md"]
