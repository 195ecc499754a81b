"""The standard suite (docs/benchmark.md): its tasks, their fixed instances, the SLO tiers and the information
tracks they run on.

Every policy runs on the same fixed **instances** of every **task** (a shipped scenario): for a synthetic
scenario an instance is a workload seed; for a trace scenario, whose workload the seed does not change, an
instance is a disjoint window of the trace (``arrival.start_s/end_s``, run with seed 0, which then seeds only
the policies' own randomness). Each task also has **train** instances, disjoint from the test ones, on which
the ``best-static`` entry picks its rule (:func:`kairos_gym.benchmark.entries.tune_static`). A task is a family
(:data:`FAMILIES`) at one SLO tier (:data:`TIERS`); :data:`SUITE` is every family at every tier.

Tracks: the information track is a property of the environment (the scenario's ``information``
section), not of a policy: :func:`on_track` sets it, :func:`parse_tracks` reads ``--track``.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kairos_gym.errors import ConfigError
from kairos_gym.flags import format_seeds
from kairos_gym.scenario import ScenarioConfig, load_scenario

TRACKS = ("exact", "realistic")
"""The information tracks a leaderboard can run (``--track exact|realistic|both``; docs/benchmark.md)."""


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
    oracle_bases: tuple[Any, ...] = ()
    """Base policies the task's Oracle rolls out beside the leaderboard's (:func:`kairos_gym.benchmark.oracle_cache.
    task_bases`): registry names or ``(name, params)`` pairs with a native twin (:data:`FAMILY_ORACLE_BASES`)."""
    split: str = ""
    """Suite v2's family split (``seen``: a learnt entry may train on it; ``unseen``: never); "" in v1."""

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
sizes instances for it (windows of a few hundred to a few thousand requests)."""
TRACE_WINDOW_S = 240.0
"""Length of an azure-code instance (original seconds, replayed at 6x: 40 simulated seconds, 374-998 requests in
the test windows; the trace's 3,436 s give fourteen: two for training, ten for test, two unused. Shorter windows
are not an option: the trace's bursts leave some 120 s windows empty)."""
MOONCAKE_WINDOW_S = 140.0
"""Length of a long-tail (Mooncake) instance (original seconds, replayed at 0.15x: ~930 simulated seconds,
~475 requests; the trace's 3,537 s give 25: two for training, ten for test, the rest unused)."""
TRAIN_SEED_MIN = 10_000
"""Training workloads use simulator seeds >= this; every seed below it (the suite's test and train seeds,
evaluation seeds) is held out from training."""
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
    ("fault-shift", "fault-shift", _N, _SEEDS, _TRAIN, False),
)
"""The task families: (family, shipped scenario, overrides, test instances, train instances, trace windows)."""
FAMILY_ORACLE_BASES: dict[str, tuple[Any, ...]] = {"fault-shift": ("pending-switch",)}
"""Oracle bases a family adds to the leaderboard's (:func:`kairos_gym.benchmark.oracle_cache.task_bases`). In
``fault-shift`` the right decision flips with a network outage that no default base sees (each is a static rule or
Kairos, none reads the decode nodes' pending admissions), so a rule that switches (``pending-switch``, which does)
beats every static one there; its Oracle also rolls out ``pending-switch``, and so bounds it (docs/benchmark.md,
"fault-shift")."""
SUITE: tuple[Task, ...] = tuple(
    Task(fam if tier == "default" else f"{fam}/{tier}", scen, test, train, windows=win, family=fam, tier=tier,
         overrides=over, oracle_bases=FAMILY_ORACLE_BASES.get(fam, ()))
    for fam, scen, over, test, train, win in FAMILIES for tier in TIER_NAMES)
"""The standard suite: every family at every tier; test instances (:data:`N_TEST` per task) and the disjoint
train instances of ``best-static``."""


def check_suite(suite: Sequence[Task], where: str = "leaderboard") -> tuple[Task, ...]:
    """``suite`` as a tuple when its tasks have distinct names and each has test and train instances (ConfigError
    otherwise: a run would have nothing to score or tune on)."""
    suite = tuple(suite)
    if not suite or any(not t.test or not t.train for t in suite) or len({t.name for t in suite}) != len(suite):
        raise ConfigError(where, "suite", [t.name for t in suite],
                          "tasks with distinct names, each with test and train instances")
    return suite


def select_tasks(spec: str, suite: Sequence[Task] | None = None, where: str = "leaderboard") -> tuple[Task, ...]:
    """The tasks of a comma-separated ``--tasks`` list: task names (``bursty/strict``; ``<family>/default`` is a
    family's default tier alone, whose task name is the family's), family names (every tier of the family) or
    tier names (every family at that tier); in suite order, each once. ``suite``: :data:`SUITE` when None;
    ``where``: the command errors name."""
    w = where
    suite = SUITE if suite is None else tuple(suite)
    names = [p.strip() for p in spec.split(",")]
    fams = {t.family for t in suite}
    known = [t.name for t in suite]
    alias = {f"{t.family}/default": t.name for t in suite if t.family and t.tier == "default"}
    if not spec.strip() or any(not n for n in names):
        raise ConfigError(w, "--tasks", spec, "a comma-separated list of task, family or tier names")
    picked: set[str] = set()
    for n in names:
        if n in alias:
            picked.add(alias[n])
        elif n in fams:
            picked |= {t.name for t in suite if t.family == n}
        elif n in known:
            picked.add(n)
        elif n in TIER_NAMES:
            picked |= {t.name for t in suite if t.tier == n}
        else:
            raise ConfigError(w, "--tasks", n, "task names (" + ", ".join(known) + "; <family>/default: a family's "
                              "default tier alone), family names (" + ", ".join(sorted(fams)) + ") or tier names ("
                              + ", ".join(TIER_NAMES) + ")")
    if len(set(names)) != len(names):
        raise ConfigError(w, "--tasks", spec, "each name once")
    return tuple(t for t in suite if t.name in picked)


# ---------------------------------------------------------------------------------------------- tracks
def on_track(sc: ScenarioConfig, track: str) -> ScenarioConfig:
    """``sc`` with its information track set to ``track`` (its staleness and model error kept)."""
    if track not in TRACKS:
        raise ConfigError("leaderboard", "--track", track, "one of " + ", ".join(TRACKS) + " (or both)")
    return sc if sc.information.track == track else sc.with_overrides({"information": {"track": track}})


def parse_tracks(spec: str, where: str = "leaderboard") -> tuple[str, ...]:
    """``--track``: ``exact``, ``realistic`` or ``both`` (every track of :data:`TRACKS`, in that order); ``where``:
    the command errors name."""
    if spec == "both":
        return TRACKS
    if spec not in TRACKS:
        raise ConfigError(where, "--track", spec, "one of " + ", ".join(TRACKS) + " or both")
    return (spec,)


__all__ = ["FAMILIES", "FAMILY_ORACLE_BASES", "INSTANCE_REQUESTS", "N_TEST", "SUITE", "TIERS", "TIER_NAMES", "TRACKS",
           "Instance", "Task", "on_track", "parse_tracks", "seeds", "select_tasks", "tier_slos", "unloaded", "windows"]
