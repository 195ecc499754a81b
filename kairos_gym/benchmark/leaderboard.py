"""The leaderboard run (``kairos-gym leaderboard``; the protocol is docs/benchmark.md): every entry on every
test instance of every task of the suite, on one information track (:func:`run_suite`) or several
(:func:`run_tracks`).

The parts live in their own modules: the tasks, instances, SLO tiers and tracks in
:mod:`kairos_gym.benchmark.suite`; the entries, their names and checks and the ``best-static`` tuning in
:mod:`kairos_gym.benchmark.entries`; the normalised scores, intervals, headroom and bootstrap aggregates in
:mod:`kairos_gym.benchmark.scoring`; the report's provenance in :mod:`kairos_gym.benchmark.provenance`; the markdown of
results/leaderboard.md in :mod:`kairos_gym.benchmark.leaderboard_report`.

Policies: registry names (``--policies``), ``best-static``, classes from files (``--policy file.py:Class``)
and safe-format checkpoints (``--checkpoint DIR``), all run through :func:`kairos_gym.agents.runner.simulate` on the
backend's workers (a worker loads a file or checkpoint itself: :mod:`kairos_gym.benchmark.submitted`).
Every policy runs on the same fixed test instances of every task; ``best-static`` picks its rule on the disjoint
train instances. The Oracle's scores come from kairos_gym/benchmark/oracle_cache.json when cached
(:mod:`kairos_gym.benchmark.oracle_cache`). The entries of :data:`~kairos_gym.benchmark.entries.PINNED_TRACK` (the
clairvoyant ``oracle`` and ``kairos-exact``) always run on the exact track.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kairos_gym.agents.policy_file_loader import ExternalPolicy, probe
from kairos_gym.benchmark import oracle_cache as cache_file
from kairos_gym.benchmark import suite as standard
from kairos_gym.benchmark.aggregate import BOOTSTRAP_REPS
from kairos_gym.benchmark.entries import (
    BEST_STATIC,
    PINNED_TRACK,
    STATIC_GRID,
    Entry,
    builtin_entry,
    check_entries,
    entry_task,
    external_entry,
    tune_static,
    tuned_entry,
)
from kairos_gym.benchmark.provenance import provenance
from kairos_gym.benchmark.scoring import KEYS, NOT_HEURISTICS, REFERENCE, run_scores, score
from kairos_gym.benchmark.suite import TRACKS, Task, check_suite, on_track, parse_tracks
from kairos_gym.errors import ConfigError
from kairos_gym.evaluation.backends import Backend, SerialBackend
from kairos_gym.evaluation.evaluate import check_policies
from kairos_gym.progress import RunProgress, or_silent
from kairos_gym.scenario import ScenarioConfig


def run_count(policies: Sequence[str], externals: Sequence[ExternalPolicy] = (),
              suite: Sequence[Task] | None = None) -> int:
    """Runs of one track of :func:`run_suite`: every entry on every test instance, and best-static's tuning (every
    rule of the grid on every train instance) when it is among ``policies``."""
    suite = standard.SUITE if suite is None else tuple(suite)
    n_test = sum(len(t.test) for t in suite)
    tuning = len(STATIC_GRID) * sum(len(t.train) for t in suite) if BEST_STATIC in policies else 0
    return (len(policies) + len(externals)) * n_test + tuning


def run_suite(policies: Sequence[str], externals: Sequence[ExternalPolicy] = (), suite: Sequence[Task] | None = None,
              progress: RunProgress | None = None, command: str = "kairos-gym leaderboard",
              reps: int = BOOTSTRAP_REPS, track: str = "exact",
              oracle_cache: Path | str = cache_file.CACHE, backend: Backend | None = None,
              announce: int = 1) -> dict[str, Any]:
    """Run every entry on every test instance of ``suite`` on information track ``track`` (every task's scenario
    set to it; :data:`~kairos_gym.benchmark.entries.PINNED_TRACK` entries on theirs); returns the JSON-ready result
    (see :func:`kairos_gym.benchmark.leaderboard_report.leaderboard_md`). Every entry is checked (built for every task;
    external policies also run on a short prefix, :func:`kairos_gym.agents.policy_file_loader.probe`) before the first
    run.
    ``suite``: :data:`kairos_gym.benchmark.suite.SUITE` when None. The Oracle's figures come from ``oracle_cache``
    where it holds a valid entry (else it runs, in this process). ``backend`` runs the other runs (default:
    serially, here; the same result on every backend, docs/scale-out.md). ``announce``: once the checks pass, tell
    ``progress`` that this many tracks' runs come (:func:`run_count` each): 1, this run's; :func:`run_tracks` has
    its first track announce them all and the others 0, so the estimate of the time left covers the command."""
    t0 = time.perf_counter()
    suite = check_suite(standard.SUITE if suite is None else suite)
    policies = list(policies)
    check_entries(policies, externals)
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
    tuning = BEST_STATIC in policies
    if announce:
        bar.start(announce * run_count(policies, externals, suite))
    best: dict[str, dict[str, Any]] = {}
    if tuning:
        for t in suite:
            best[t.name] = tune_static(t, bases[t.name], bar, backend)

    cache = cache_file.load(oracle_cache) if REFERENCE in policies else {}
    sources: dict[str, int] = {"cache": 0, "run": 0}

    def run_oracle(task: Task, sc: ScenarioConfig, seed: int, tick: Any) -> dict[str, Any]:
        bases = cache_file.task_bases(best[task.name]["chosen"] if task.name in best else None, task.oracle_bases)
        summary, source = cache_file.oracle_summary(cache, on_track(sc, PINNED_TRACK[REFERENCE]), seed, bases,
                                                       progress=tick)
        sources[source] += 1
        return summary

    entries = [tuned_entry(lambda task, sc: best[task.name]["chosen"]) if p == BEST_STATIC
               else Entry(REFERENCE, "bound", run_oracle) if p == REFERENCE else builtin_entry(p) for p in policies]
    entries += [external_entry(e) for e in externals]
    figures: dict[str, dict[str, dict[str, list[float]]]] = {}
    jobs = [entry_task(e, t, inst.scenario(bases[t.name]), inst.seed, f"{t.name} {e.label} {inst.label}")
            for e in entries for t in suite for inst in t.test]
    out = iter((backend or SerialBackend(retries=0)).map(jobs, bar))  # every run at once, results in this order
    for e in entries:
        figures[e.label] = {}
        for t in suite:
            runs = [next(out) for _ in t.test]
            figures[e.label][t.name] = {k: run_scores(runs, k) for k in KEYS}
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


def run_tracks(tracks: Sequence[str], policies: Sequence[str], externals: Sequence[ExternalPolicy] = (),
               suite: Sequence[Task] | None = None, progress: RunProgress | None = None,
               **kwargs: Any) -> dict[str, Any]:
    """:func:`run_suite` once per track (every track checked first); ``{"tracks": {track: result}, "elapsed_s"}``.
    A progress bar given as ``progress`` is shared: it is told every track's runs at once (after the first track's
    checks), so its estimate of the time left covers the whole command."""
    for tr in tracks:
        parse_tracks(tr)
    if not tracks or len(set(tracks)) != len(tracks):
        raise ConfigError("leaderboard", "--track", list(tracks), "one or more tracks of " + ", ".join(TRACKS)
                          + ", each once")
    t0 = time.perf_counter()
    out = {tr: run_suite(policies, externals, suite, progress=progress, track=tr,
                         announce=len(tracks) if i == 0 else 0, **kwargs) for i, tr in enumerate(tracks)}
    return {"tracks": out, "elapsed_s": time.perf_counter() - t0}


__all__ = ["run_count", "run_suite", "run_tracks"]
