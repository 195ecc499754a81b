"""The leaderboard's entries (docs/benchmark.md): the policy names it runs and checks, one :class:`Entry` per row
(built-in registry policies, the tuned ``best-static`` rule, policies from a user's file or checkpoint), the
backend task of an entry on one instance, and the tuning of ``best-static`` on a task's train instances.

Every entry runs through :func:`kairos_gym.agents.runner.simulate`, as a picklable task any backend may run: a
registry policy as a :class:`~kairos_gym.evaluation.backends.runs.RunSpec`, a policy from a user's file or
checkpoint as a :class:`~kairos_gym.benchmark.submitted.SubmittedRun` (a worker loads the entry itself, under the
same guard). The
entries of :data:`PINNED_TRACK` always run on the exact track: the reference ``oracle`` (clairvoyant: it knows the
workload) and ``kairos-exact``, a (policy, track) pair by name, the "same rule with exact information" anchor of
the realistic section.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kairos_gym.agents.policy_file_loader import MAX_EXTERNAL, ExternalPolicy, run_checked
from kairos_gym.benchmark.scoring import BASELINE, COMPARISON, REFERENCE, run_scores
from kairos_gym.benchmark.submitted import Source, SubmittedRun, source_of, submitted_task
from kairos_gym.benchmark.suite import Task, on_track
from kairos_gym.errors import ConfigError
from kairos_gym.evaluation.backends import Backend, SerialBackend
from kairos_gym.evaluation.backends import Task as BackendTask
from kairos_gym.evaluation.backends.runs import RunSpec, run_task
from kairos_gym.evaluation.evaluate import run_one
from kairos_gym.progress import RunProgress
from kairos_gym.scenario import ScenarioConfig

REQUIRED = (BASELINE, COMPARISON, REFERENCE)
"""The names every leaderboard run includes: the normalisation anchors and the comparison."""
BEST_STATIC = "best-static"
"""The entry that tunes a static rule (:data:`STATIC_GRID`) per task on the train instances."""
DEFAULT_POLICIES = ("no-deflect,always-deflect,always-deflect-ls,sq,sq-ls,sl,sl-ls,pending-switch,best-static,kairos,"
                    "kairos-exact,ppo,distilled-oracle,oracle")
REFUSED: dict[str, str] = {}
"""Registry names the leaderboard refuses, with why."""
PINNED_TRACK = {REFERENCE: "exact", "kairos-exact": "exact"}
"""Entries whose name fixes their track: run on it whatever the section's track (the Oracle is clairvoyant, so
exact; ``kairos-exact`` names the exact-track rule, the "same rule with exact information" anchor)."""


# ---------------------------------------------------------------------------------------------- best-static grid
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


# ---------------------------------------------------------------------------------------------- entries
@dataclass(frozen=True)
class Entry:
    """One row of the leaderboard: ``run(task, scenario, seed, tick) -> summary``."""

    label: str
    kind: str  # "built-in", "tuned", "file", "checkpoint"
    run: Callable[[Task, ScenarioConfig, int, Any], dict[str, Any]]
    spec: Callable[[Task, ScenarioConfig, int], RunSpec | SubmittedRun] | None = None
    """The same run as a picklable :class:`~kairos_gym.evaluation.backends.runs.RunSpec` or
    :class:`~kairos_gym.benchmark.submitted.SubmittedRun` (any backend may run it); None: ``run`` runs in the
    driver process (the Oracle's cached figures, an external entry a worker cannot load by itself)."""


def check_entries(policies: Sequence[str], externals: Sequence[ExternalPolicy]) -> None:
    """Names once each, the anchors present, nothing refused, external labels distinct (before any run)."""
    check_names("leaderboard", policies, externals, REFUSED, REQUIRED)


def check_names(where: str, policies: Sequence[str], externals: Sequence[ExternalPolicy], refused: Mapping[str, str],
                required: Sequence[str] = (), tuned: str = BEST_STATIC) -> None:
    """The checks of a ``--policies`` list and ``--policy`` / ``--checkpoint`` entries (the leaderboards' and the
    precision protocol's): at least one entry; registry names or the suite's tuned entry ``tuned``, none of
    ``refused`` (name -> why), each once; every name of ``required`` present; at most :data:`MAX_EXTERNAL` external
    entries, their labels distinct from each other and from the names."""
    from kairos_gym.agents.registry import POLICIES

    allowed = [p for p in (*POLICIES, tuned) if p not in refused]
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
                          f"(the board's anchors and comparison; missing: {', '.join(missing)})")
    if len(externals) > MAX_EXTERNAL:
        raise ConfigError(where, "--policy/--checkpoint", len(externals), f"at most {MAX_EXTERNAL} entries")
    labels = [e.label for e in externals]
    for i, e in enumerate(externals):
        if e.label in labels[:i] or e.label in policies:
            raise ConfigError(where, e.flag, e.spec, f"each policy once ({e.label} is given twice)")


def builtin_entry(name: str) -> Entry:
    """The entry of registry policy ``name`` (on its :data:`PINNED_TRACK` track, if it has one)."""
    pinned = PINNED_TRACK.get(name)

    def run(task: Task, sc: ScenarioConfig, seed: int, tick: Any) -> dict[str, Any]:
        return run_one(sc if pinned is None else on_track(sc, pinned), name, seed, tick=tick)[0]

    def spec(task: Task, sc: ScenarioConfig, seed: int) -> RunSpec:
        return RunSpec(sc if pinned is None else on_track(sc, pinned), name, seed)

    return Entry(name, "built-in", run, spec)


def tuned_entry(chosen: Callable[[Task, ScenarioConfig], Mapping[str, Any]], label: str = BEST_STATIC) -> Entry:
    """A tuned entry (``best-static``; suite v2's ``best-rule``): on each (task, scenario) the rule
    ``chosen(task, sc)`` (a ``"policy"`` and its ``"params"``, as :func:`tune_static` chose it)."""
    def run(task: Task, sc: ScenarioConfig, seed: int, tick: Any) -> dict[str, Any]:
        c = chosen(task, sc)
        return run_one(sc, c["policy"], seed, params=c["params"], tick=tick)[0]

    def spec(task: Task, sc: ScenarioConfig, seed: int) -> RunSpec:
        c = chosen(task, sc)
        return RunSpec(sc, c["policy"], seed, dict(c["params"]))

    return Entry(label, "tuned", run, spec)


def external_entry(ext: ExternalPolicy) -> Entry:
    """The entry of a policy from a user's file (``--policy``) or checkpoint (``--checkpoint``), checked
    (:func:`kairos_gym.agents.policy_file_loader.run_checked`): its runs go to the backend's workers, which load
    the entry themselves (:mod:`kairos_gym.benchmark.submitted`); one a worker cannot load (no
    :func:`~kairos_gym.benchmark.submitted.source_of`) runs in the driver."""
    def run(task: Task, sc: ScenarioConfig, seed: int, tick: Any) -> dict[str, Any]:
        return run_checked(ext, sc, seed, progress=tick)

    kind = "file" if ext.flag == "--policy" else "checkpoint"
    src = source_of(ext)
    if src is None:
        return Entry(ext.label, kind, run)
    source: Source = src

    def spec(task: Task, sc: ScenarioConfig, seed: int) -> SubmittedRun:
        return SubmittedRun(source, sc, seed)

    return Entry(ext.label, kind, run, spec)


def entry_task(e: Entry, task: Task, sc: ScenarioConfig, seed: int, label: str) -> BackendTask:
    """The backend task of entry ``e`` on one instance: its RunSpec or SubmittedRun, or (no spec) its ``run`` in
    the driver."""
    if e.spec is not None:
        arg = e.spec(task, sc, seed)
        return submitted_task(arg, label) if isinstance(arg, SubmittedRun) else run_task(arg, label)

    def here(arg: Any, tick: Any) -> dict[str, Any]:
        return e.run(task, sc, seed, tick)

    return BackendTask(here, None, label, e.label, sc.workload.effective_num_requests, local=True)


# ---------------------------------------------------------------------------------------------- tuning
def tune_static(task: Task, base: ScenarioConfig, bar: RunProgress, backend: Backend | None = None,
                grid: Sequence[tuple[str, Mapping[str, Any]]] = STATIC_GRID) -> dict[str, Any]:
    """Mean train SLO attainment of every rule of ``grid`` (default :data:`STATIC_GRID`); the best (first on ties)
    as ``"chosen"``, every rule's as ``"grid"``. ``backend`` runs the runs (default: serially, here)."""
    tasks = [run_task(RunSpec(inst.scenario(base), name, inst.seed, dict(params)),
                      f"tune {task.name} {rule_label(name, params)} {inst.label}")
             for name, params in grid for inst in task.train]
    out = (backend or SerialBackend(retries=0)).map(tasks, bar)
    n = len(task.train)
    scores = []
    for k in range(len(grid)):
        vals = [v for v in run_scores(out[k * n:(k + 1) * n]) if not math.isnan(v)]
        scores.append(sum(vals) / len(vals) if vals else None)
    return choose(grid, scores)


def choose(grid: Sequence[tuple[str, Mapping[str, Any]]], scores: Sequence[float | None]) -> dict[str, Any]:
    """``{"chosen": the best rule, "grid": every rule}`` of ``grid`` with its mean train ``scores`` (None: no
    finite score; the first rule wins a tie)."""
    rows = [{"rule": rule_label(name, params), "policy": name, "params": dict(params), "train_score": s}
            for (name, params), s in zip(grid, scores, strict=True)]
    best = max(range(len(rows)), key=lambda i: (-math.inf if scores[i] is None else scores[i], -i))
    return {"chosen": rows[best], "grid": rows}


__all__ = ["BEST_STATIC", "DEFAULT_POLICIES", "MAX_EXTERNAL", "PINNED_TRACK", "REFUSED", "REQUIRED", "STATIC_GRID",
           "Entry", "builtin_entry", "check_entries", "check_names", "choose", "entry_task", "external_entry",
           "rule_label", "tune_static", "tuned_entry"]
