"""The precision protocol (``kairos-gym precision``): enough instances per task that the 95% interval of
a policy's mean SLO attainment is as narrow as asked. The protocol is docs/benchmark.md, "Precision of the
per-task means".

**Instances** (:func:`precision_instances`): one list per task, of which every (policy, track) runs a prefix, so
any two policies are paired on their common prefix (the same workloads, in the same order).

- A synthetic task: workload seeds 0, 1, 2, ... below :data:`~kairos_gym.benchmark.suite.TRAIN_SEED_MIN` (training
  draws seeds at or above it), skipping the task's train seeds (1000, 1001): the first :data:`N_TEST` are the
  leaderboard's test seeds 0-9. The estimand is the mean over the workload generator's seeds.
- A trace task (``long-tail``, ``azure-code``): windows of the length of the task's test windows whose start
  offsets are drawn uniformly on ``[lo, hi - length]``, where ``[lo, hi)`` is the span the test windows cover
  (original trace seconds), by ``numpy.random.default_rng([WINDOW_SEED, crc32(family)])`` and rounded to the
  millisecond; instance ``i`` runs with seed ``i`` (the seed of the realistic track's noise and of the policies'
  own randomness; a trace workload does not depend on it). The train windows lie before the test span, so no
  precision window overlaps one, nor a training draw (:func:`kairos_gym.train.domain.training_instance` draws
  train windows only). The estimand: the mean over a uniformly placed window inside this trace's test span; the
  windows overlap, but their offsets are i.i.d., so the t-interval is valid for that estimand. It says nothing
  about other days or other traces.

At most :data:`MAX_INSTANCES` instances per task (checked before any run).

**Sample size**: Stein's two-stage procedure (C. Stein, "A two-sample test for a linear hypothesis whose power
is independent of the variance", Ann. Math. Statist. 16(3):243-258, 1945). Stage 1 runs the first ``n0``
instances of every (task, policy, track) cell; with their sample standard deviation ``s0`` the cell needs
``N = max(n0 + 1, ceil((t_{0.975, n0-1} * s0 / d)^2))`` instances (:func:`stein_n`), capped at
``max_instances``; stage 2 runs instances ``n0 .. N-1``. Stein's interval ``mean_N ± t_{0.975, n0-1} * s0 /
sqrt(N)`` has 95% coverage for normal scores whatever ``N`` the rule chose, and its half-width is at most ``d``
when ``N`` was not capped. The report also gives the ordinary Student-t half-width over all ``N`` instances
(:func:`kairos_gym.evaluation.stats.mean_ci`). A cell whose stage-1 scores are all equal (``s0 = 0``, e.g. a saturated
task at 1.000) gets ``n0 + 1`` instances; its zero-width interval only says the pilot saw no spread.

The Oracle is refused (:data:`REFUSED`): it costs 2-60 s per instance; ``kairos-gym oracle-precision``
(:mod:`kairos_gym.benchmark.oracle_precision`) estimates its means by two-phase sampling on these instance lists.
A policy of :data:`~kairos_gym.benchmark.entries.PINNED_TRACK`
(``kairos-exact``) runs on its own track whatever the section: with several tracks its cells share one set of
runs, made once (the first section's) and reported in every section, marked by ``ran_on`` and ``runs_of``.

Memory: every run's task returns its SLO attainment alone (:func:`scored_task`), so a backend's result list
and the cells hold one float per run, never a run summary.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import time
import zlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from kairos_gym.agents.policy_file_loader import ExternalPolicy, probe
from kairos_gym.benchmark.entries import (
    BEST_STATIC,
    PINNED_TRACK,
    STATIC_GRID,
    Entry,
    builtin_entry,
    check_names,
    entry_task,
    external_entry,
    tune_static,
    tuned_entry,
)
from kairos_gym.benchmark.entries import DEFAULT_POLICIES as LEADERBOARD_POLICIES
from kairos_gym.benchmark.precision_resume import same_rule
from kairos_gym.benchmark.provenance import provenance, verify_note
from kairos_gym.benchmark.scoring import COMPARISON, METRIC, REFERENCE, run_scores
from kairos_gym.benchmark.suite import N_TEST, SUITE, TRACKS, TRAIN_SEED_MIN, Instance, Task, on_track
from kairos_gym.errors import ConfigError
from kairos_gym.evaluation.backends import Backend, SerialBackend
from kairos_gym.evaluation.backends import Task as BackendTask
from kairos_gym.evaluation.evaluate import check_policies
from kairos_gym.evaluation.stats import mean_ci, nan_to_none, t_quantile_975
from kairos_gym.progress import RunProgress, or_silent
from kairos_gym.scenario import ScenarioConfig

WHERE = "precision"
HALF_WIDTH = 0.01
"""Default target half-width ``d`` of the 95% interval (SLO-attainment fraction): the issue's "narrower than 2
SLO-attainment points" read literally, a width below 0.02."""
MAX_HALF_WIDTH = 0.5
"""Largest ``--half-width`` (an interval of half-width 0.5 on a fraction in [0, 1] says nothing)."""
PILOT = N_TEST
"""Default stage-1 size ``n0`` (the leaderboard's instance count, so stage 1 of a synthetic task is its test set)."""
MIN_PILOT = 2
"""Smallest ``n0`` (a standard deviation needs two values)."""
MAX_PILOT = 200
"""Largest ``--pilot``."""
MAX_INSTANCES = 5000
"""Most instances of one task (``--max-instances`` at most this; a synthetic task has 9,998 seeds below
TRAIN_SEED_MIN once its train seeds are skipped)."""
DEFAULT_MAX_INSTANCES = 1000
"""Default cap on ``N`` per cell (about 20-50 s of runs per cell at 20-50 ms per 500-request run)."""
WINDOW_SEED = 12
"""Seed of the trace-window offsets (with the family's CRC-32: ``default_rng([WINDOW_SEED, crc32(family)])``)."""
REFUSED = {REFERENCE: "the clairvoyant rollout Oracle costs 2-60 s per instance (O(requests^2) rollouts), hours to "
                      "days for hundreds of instances per task; kairos-gym oracle-precision estimates its means "
                      "by two-phase sampling"}
"""Registry names the precision protocol refuses, with why."""
DEFAULT_POLICIES = ",".join(p for p in LEADERBOARD_POLICIES.split(",") if p not in REFUSED)
"""The leaderboard's default policies but the Oracle."""


# ---------------------------------------------------------------------------------------------- instances
def test_span(task: Task) -> tuple[float, float]:
    """``(lo, hi)``: the span of a trace task's test windows (original trace seconds)."""
    wins = [i.window_s for i in task.test if i.window_s is not None]
    return min(a for a, _ in wins), max(b for _, b in wins)


def window_length(task: Task) -> float:
    """The length of a trace task's test windows (seconds; they all have one length)."""
    lengths = {round(i.window_s[1] - i.window_s[0], 9) for i in task.test if i.window_s is not None}
    if len(lengths) != 1:
        raise ConfigError(WHERE, task.name, sorted(lengths), "test windows of one length")
    return lengths.pop()


@functools.lru_cache(maxsize=64)
def _window_starts(family: str, lo: float, hi: float) -> tuple[float, ...]:
    rng = np.random.default_rng([WINDOW_SEED, zlib.crc32(family.encode())])
    return tuple(float(x) for x in np.round(rng.uniform(lo, hi, MAX_INSTANCES), 3))


def _check_count(n: int, field: str = "instances") -> None:
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_INSTANCES:
        raise ConfigError(WHERE, field, n, f"a whole number of instances in [1, {MAX_INSTANCES}]")


def precision_instances(task: Task, n: int) -> tuple[Instance, ...]:
    """The first ``n`` precision instances of ``task`` (module docstring): seeds for a synthetic task, uniformly
    placed windows of the test span for a trace task. Every ``n`` gives a prefix of the same list."""
    _check_count(n)
    if not task.windows:
        skip = {i.seed for i in task.train}
        out: list[Instance] = []
        s = 0
        while len(out) < n and s < TRAIN_SEED_MIN:
            if s not in skip:
                out.append(Instance(s))
            s += 1
        if len(out) < n:
            raise ConfigError(WHERE, task.name, n, f"at most {len(out)} seeds below {TRAIN_SEED_MIN}")
        return tuple(out)
    lo, hi = test_span(task)
    length = window_length(task)
    starts = _window_starts(task.family or task.name, lo, hi - length)
    return tuple(Instance(i, (s, s + length)) for i, s in enumerate(starts[:n]))


def window_requests(task: Task, base: ScenarioConfig, instances: Sequence[Instance]) -> list[int]:
    """Requests of the trace in each window (no run): the check that no window is empty."""
    from kairos_gym.workload.traces import load_trace

    arr = load_trace(base.workload.arrival.path).arrival_s
    return [int(np.searchsorted(arr, b, side="left") - np.searchsorted(arr, a, side="left"))
            for a, b in (i.window_s for i in instances if i.window_s is not None)]


def check_instances(where: str, task: Task, base: ScenarioConfig, instances: Sequence[Instance]) -> list[int]:
    """Before any run: the first and last instance's scenarios build (a bad window fails here) and, for a trace
    task, no window is empty (ConfigError naming up to three). Returns each trace window's request count ([] for a
    synthetic task)."""
    instances[0].scenario(base), instances[-1].scenario(base)
    if not task.windows:
        return []
    requests = window_requests(task, base, instances)
    empty = [i.label for i, k in zip(instances, requests, strict=True) if k == 0]
    if empty:
        raise ConfigError(where, task.name, empty[:3], "windows that hold at least one request")
    return requests


# ---------------------------------------------------------------------------------------------- sample size
def stein_n(scores: Sequence[float], half_width: float, cap: int) -> tuple[int, int]:
    """``(N, required)``: Stein's stage-2 size for the stage-1 ``scores`` (``n0 = len(scores)`` >= 2):
    ``required = max(n0 + 1, ceil((t_{0.975, n0-1} * s0 / half_width)^2))``, ``N = min(required, cap)``."""
    n0 = len(scores)
    if n0 < MIN_PILOT:
        raise ConfigError(WHERE, "stage-1 scores", list(scores), f"at least {MIN_PILOT} values")
    s0 = float(np.std(np.asarray(scores, dtype=float), ddof=1))
    need = (t_quantile_975(n0 - 1) * s0 / half_width) * (t_quantile_975(n0 - 1) * s0 / half_width)
    # a hair of slack so that a quotient that is a whole number up to rounding is not pushed one up
    required = max(n0 + 1, math.ceil(need - 1e-9))
    return min(required, cap), required


def cell_stats(scores: Sequence[float], n0: int, half_width: float, required: int) -> dict[str, Any]:
    """The figures of one (task, policy, track) cell from its ``N`` scores (the first ``n0`` the pilot)."""
    x = [float(v) for v in scores]
    n = len(x)
    s0 = float(np.std(x[:n0], ddof=1))
    mean, t_half = mean_ci(x)
    stein = t_quantile_975(n0 - 1) * s0 / math.sqrt(n)
    return {"n": n, "required": required, "capped": required > n, "s0": s0, "pilot_mean": float(np.mean(x[:n0])),
            "mean": mean, "stein_half": stein, "t_half": nan_to_none(t_half), "met": stein <= half_width,
            "t_met": t_half < half_width, "saturated": s0 == 0.0}


def paired(a: Sequence[float], b: Sequence[float]) -> dict[str, Any]:
    """``a - b`` on their common prefix (the same instances): mean, t half-width, n."""
    n = min(len(a), len(b))
    d = [x - y for x, y in zip(a[:n], b[:n], strict=True)]
    m, h = mean_ci(d)
    return {"n": n, "mean": nan_to_none(m), "t_half": nan_to_none(h)}


# ---------------------------------------------------------------------------------------------- checks
def check_settings(half_width: float, pilot: int, max_instances: int) -> None:
    """``--half-width`` in (0, :data:`MAX_HALF_WIDTH`], ``--pilot`` in [:data:`MIN_PILOT`, :data:`MAX_PILOT`],
    ``--max-instances`` in [pilot + 1, :data:`MAX_INSTANCES`]."""
    if (isinstance(half_width, bool) or not isinstance(half_width, (int, float)) or not math.isfinite(half_width)
            or not 0 < half_width <= MAX_HALF_WIDTH):
        raise ConfigError(WHERE, "--half-width", half_width, f"a number > 0 and <= {MAX_HALF_WIDTH:g}")
    if isinstance(pilot, bool) or not isinstance(pilot, int) or not MIN_PILOT <= pilot <= MAX_PILOT:
        raise ConfigError(WHERE, "--pilot", pilot, f"a whole number in [{MIN_PILOT}, {MAX_PILOT}]")
    if (isinstance(max_instances, bool) or not isinstance(max_instances, int)
            or not pilot + 1 <= max_instances <= MAX_INSTANCES):
        raise ConfigError(WHERE, "--max-instances", max_instances,
                          f"a whole number in [--pilot + 1 = {pilot + 1}, {MAX_INSTANCES}]")


def check_policy_names(policies: Sequence[str], externals: Sequence[ExternalPolicy]) -> None:
    """Registry names or best-static, each once, the Oracle refused; external labels distinct."""
    check_names(WHERE, policies, externals, REFUSED)


# ---------------------------------------------------------------------------------------------- the run
def ran_on(e: Entry, track: str) -> str:
    """The track entry ``e`` runs on in a section of track ``track``: its :data:`PINNED_TRACK` one for a pinned
    built-in entry, else ``track``."""
    return PINNED_TRACK.get(e.label, track) if e.kind == "built-in" else track


def _metric_of(arg: tuple[Callable[[Any, Any], Mapping[str, Any]], Any], tick: Any) -> float:
    fn, inner = arg
    return run_scores([fn(inner, tick)])[0]


def scored_task(task: BackendTask) -> BackendTask:
    """``task`` returning only its run's :data:`METRIC` (a float, NaN when the run has none) instead of its
    summary: what crosses back from a worker and what a backend's result list holds."""
    return dataclasses.replace(task, fn=_metric_of, arg=(task.fn, task.arg))


def run_precision(policies: Sequence[str], externals: Sequence[ExternalPolicy] = (),
                  suite: Sequence[Task] | None = None, tracks: Sequence[str] = TRACKS,
                  half_width: float = HALF_WIDTH, pilot: int = PILOT, max_instances: int = DEFAULT_MAX_INSTANCES,
                  progress: RunProgress | None = None, command: str = "kairos-gym precision",
                  backend: Backend | None = None, resume: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Stein's two-stage procedure for every (task, policy, track) cell (module docstring); the JSON-ready
    result (:func:`precision_md` writes it). Everything is checked before the first run: the settings, the
    names, every policy built for every task and track, every instance's scenario and (trace) request count,
    external policies probed. ``backend`` runs the runs (default: serially, here; a worker loads an external
    policy itself, :mod:`kairos_gym.benchmark.submitted`). ``resume``
    (:func:`~kairos_gym.benchmark.precision_resume.load_precision_resume`): an earlier run's scores, used instead
    of re-running an instance (instance 0 of each reused cell is re-run and must be equal; the result is a fresh
    run's)."""
    t0 = time.perf_counter()
    check_settings(half_width, pilot, max_instances)
    policies = list(policies)
    check_policy_names(policies, externals)
    suite = SUITE if suite is None else tuple(suite)
    if not suite or len({t.name for t in suite}) != len(suite):
        raise ConfigError(WHERE, "--tasks", [t.name for t in suite], "one or more distinct tasks")
    if not tracks or len(set(tracks)) != len(tracks) or any(tr not in TRACKS for tr in tracks):
        raise ConfigError(WHERE, "--track", list(tracks), "one or more of " + ", ".join(TRACKS) + ", each once")
    instances = {t.name: precision_instances(t, max_instances) for t in suite}
    bases = {(tr, t.name): on_track(t.base(), tr) for tr in tracks for t in suite}
    registry = [p for p in policies if p != BEST_STATIC]
    requests: dict[str, list[int]] = {}
    for t in suite:
        for tr in tracks:
            sc = bases[(tr, t.name)]
            if registry:
                for p in registry:
                    check_policies(WHERE, "--policies", [p], on_track(sc, PINNED_TRACK.get(p, tr)), 0)
        requests[t.name] = check_instances(WHERE, t, bases[(tracks[0], t.name)], instances[t.name])
    for ext in externals:
        for t in suite:
            for tr in tracks:
                probe(ext, instances[t.name][0].scenario(bases[(tr, t.name)]), instances[t.name][0].seed)
    bar = or_silent(progress)
    run = backend or SerialBackend(retries=0)
    tuning = BEST_STATIC in policies
    bar.start(len(STATIC_GRID) * sum(len(t.train) for t in suite) * len(tracks) if tuning else 0)
    best: dict[tuple[str, str], dict[str, Any]] = {}
    if tuning:
        for tr in tracks:
            for t in suite:
                best[(tr, t.name)] = tune_static(t, bases[(tr, t.name)], bar, run)
    entries: list[Entry] = [tuned_entry(lambda task, sc: best[(sc.information.track, task.name)]["chosen"])
                            if p == BEST_STATIC else builtin_entry(p) for p in policies]
    entries += [external_entry(e) for e in externals]
    cells = [(tr, t, e) for tr in tracks for t in suite for e in entries]
    # a pinned entry (kairos-exact) runs on its track whatever the section: its cells of every section share
    # one set of runs (the first section's), run once
    runs: list[tuple[str, Task, Entry]] = []
    of_cell: list[int] = []
    index: dict[tuple[str, str, str], int] = {}
    for tr, t, e in cells:
        key = (ran_on(e, tr), t.name, e.label)
        if key not in index:
            index[key] = len(runs)
            runs.append((tr, t, e))
        of_cell.append(index[key])

    def check_complete(k: int) -> None:
        if any(math.isnan(v) for v in scores[k]):
            tr, t, e = runs[k]
            raise ConfigError(WHERE, e.label, f"{tr} {t.name}", f"runs that complete requests (a {METRIC} on "
                              "every instance)")

    known: dict[int, list[float]] = {}  # run k -> the resumed file's scores of that cell
    for k, (tr, t, e) in enumerate(runs):
        xs = (resume or {}).get("cells", {}).get((ran_on(e, tr), t.name, e.label))
        if xs and (e.label != BEST_STATIC or same_rule(resume["best_static"].get((tr, t.name)),
                                                       best[(tr, t.name)]["chosen"])):
            known[k] = xs
    n_runs = 0
    n_resumed = 0

    def run_range(lo: Mapping[int, int], hi: Mapping[int, int]) -> dict[int, list[float]]:
        """Instances lo[k] .. hi[k]-1 of every run k: the file's scores where it has them (instance 0 always run
        and compared), the others run now."""
        nonlocal n_runs, n_resumed
        todo = [(k, i) for k in range(len(runs)) for i in range(lo[k], hi[k]) if i == 0 or i >= len(known.get(k, ()))]
        tasks = [scored_task(entry_task(e, t, inst.scenario(bases[(tr, t.name)]), inst.seed,
                                        f"{tr} {t.name} {e.label} {inst.label}"))
                 for k, i in todo for tr, t, e in (runs[k],) for inst in (instances[t.name][i],)]
        n_runs += len(tasks)
        bar.start(len(tasks))
        got = dict(zip(todo, run.map(tasks, bar), strict=True))  # one float per run (scored_task)
        del tasks
        out: dict[int, list[float]] = {}
        for k in range(len(runs)):
            xs = []
            for i in range(lo[k], hi[k]):
                v = got.get((k, i))
                if v is None:
                    v = known[k][i]
                    n_resumed += 1
                elif i == 0 and k in known and repr(v) != repr(known[k][0]):
                    tr, t, e = runs[k]
                    raise ConfigError(WHERE, "--resume", f"{resume['path']}: {tr} {t.name} {e.label}, instance 0: "
                                      f"{known[k][0]!r}, a fresh run {v!r}", "a file of this code version (its "
                                      "scores reproduce)")
                xs.append(v)
            out[k] = xs
        return out

    zero = dict.fromkeys(range(len(runs)), 0)
    stage1 = dict.fromkeys(range(len(runs)), pilot)
    scores: dict[int, list[float]] = run_range(zero, stage1)
    for k in range(len(runs)):
        check_complete(k)
    sizes = {k: stein_n(scores[k], half_width, max_instances) for k in range(len(runs))}
    rest = run_range(stage1, {k: n for k, (n, _) in sizes.items()})
    for k in range(len(runs)):
        scores[k] += rest[k]
        check_complete(k)
    result: dict[str, Any] = {tr: {} for tr in tracks}
    for k, (tr, t, e) in enumerate(cells):
        r = of_cell[k]
        c = cell_stats(scores[r], pilot, half_width, sizes[r][1])
        c["scores"] = scores[r]
        c["ran_on"] = ran_on(e, tr)
        if runs[r][0] != tr:
            c["runs_of"] = runs[r][0]  # the section whose runs these are (counted there)
        result[tr].setdefault(t.name, {})[e.label] = c
    labels = [e.label for e in entries]
    pairs: dict[str, Any] = {}
    if COMPARISON in labels:
        for tr in tracks:
            pairs[tr] = {t.name: {lb: paired(result[tr][t.name][lb]["scores"], result[tr][t.name][COMPARISON]["scores"])
                                  for lb in labels if lb != COMPARISON} for t in suite}
    return {
        "command": command, **provenance(), "half_width": half_width, "pilot": pilot,
        "max_instances": max_instances, "tracks": list(tracks), "pinned_track": dict(PINNED_TRACK),
        "policies": labels, "refused": dict(REFUSED), "window_seed": WINDOW_SEED,
        "suite": [{"task": t.name, "windows": t.windows, "family": t.family or t.name, "tier": t.tier,
                   "instances_max": max(result[tr][t.name][lb]["n"] for tr in tracks for lb in labels),
                   **({"test_span_s": list(test_span(t)), "window_s": window_length(t),
                       "requests": [min(requests[t.name]), max(requests[t.name])]} if t.windows else {})}
                  for t in suite],
        "best_static": {f"{tr} {name}": b["chosen"] for (tr, name), b in best.items()},
        "cells": result, "paired": pairs, "comparison": COMPARISON if pairs else None,
        "runs": n_runs, "resumed": n_resumed, "resumed_from": (resume or {}).get("path"),
        "elapsed_s": time.perf_counter() - t0,
    }


# ---------------------------------------------------------------------------------------------- markdown
def _f(v: float | None, spec: str = ".3f") -> str:
    return "n/a" if v is None or (isinstance(v, float) and math.isnan(v)) else format(v, spec)


def _pinned_here(res: Mapping[str, Any], track: str) -> dict[str, list[str]]:
    """``{track run on: labels}`` of the cells of section ``track`` whose runs were made on another track."""
    out: dict[str, list[str]] = {}
    for row in res["cells"][track].values():
        for lb, c in row.items():
            on = c.get("ran_on", track)
            if on != track and lb not in out.get(on, []):
                out.setdefault(on, []).append(lb)
    return out


def summary(res: Mapping[str, Any], track: str) -> dict[str, Any]:
    """Counts of one track: cells, cells whose Stein half-width meets the target, capped cells, saturated cells,
    cells whose t half-width is below 0.01 and below 0.02, the largest t half-width and the instances run (a cell
    that repeats another section's runs, ``runs_of``, counts there)."""
    cs = [c for task in res["cells"][track].values() for c in task.values()]
    return {"cells": len(cs), "met": sum(c["met"] for c in cs), "capped": sum(c["capped"] for c in cs),
            "saturated": sum(c["saturated"] for c in cs),
            "t_below_0.01": sum(c["t_half"] is not None and c["t_half"] < 0.01 for c in cs),
            "t_below_0.02": sum(c["t_half"] is not None and c["t_half"] < 0.02 for c in cs),
            "max_t_half": max((c["t_half"] for c in cs if c["t_half"] is not None), default=None),
            "max_stein_half": max((c["stein_half"] for c in cs), default=None),
            "runs": sum(c["n"] for c in cs if "runs_of" not in c)}


def precision_md(res: Mapping[str, Any]) -> str:
    """The markdown text of results/precision.md."""
    commit = res["commit"]
    where = (f"commit `{commit}`" + (" with uncommitted changes to tracked files" if res["dirty"] else "")
             if commit else "outside a git checkout") + verify_note(res)
    d, n0, cap = res["half_width"], res["pilot"], res["max_instances"]
    pinned = "".join(f"; {lb} always runs on the {tr} track" for lb, tr in res["pinned_track"].items()
                     if lb in res["policies"])
    lines = [
        "# Precision of the per-task means",
        "",
        f"Command: `{res['command']}`  ",
        f"Code: kairos-gym {res['version']}, {where}  ",
        f"Run: {res['date']}, wall time {res['elapsed_s']:.0f} s, {res['runs']:,} runs (Python {res['python']}, "
        f"numpy {res['numpy']})" + (f"; {res['resumed']:,} scores from `{res['resumed_from']}` (--resume: each "
                                    "reused cell's instance 0 re-run and equal, the result of a fresh run)"
                                    if res.get("resumed_from") else ""),
        "",
        f"Protocol (docs/benchmark.md, \"Precision of the per-task means\"; "
        "`kairos_gym/benchmark/precision.py`): target half-width "
        f"d = {d:g} of the 95% interval of a policy's mean SLO attainment per task (an interval of width "
        f"{2 * d:g}; the issue's \"narrower than 2 SLO-attainment points\" is d = 0.01). Stein's two-stage "
        f"procedure (Stein 1945): stage 1 runs n0 = {n0} instances of every (task, policy, track) cell; with their "
        "sample standard deviation s0 the cell needs N = max(n0 + 1, ceil((t_{0.975, n0-1} s0 / d)^2)) "
        f"instances, capped at {cap}; stage 2 runs the rest. Stein: t_{{0.975, n0-1}} s0 / sqrt(N), the half-width "
        "of Stein's interval (95% coverage for normal scores; at most d unless the cell was capped); t: the "
        "ordinary Student-t half-width over the N instances. A cell with s0 = 0 (every pilot score equal, e.g. "
        "saturated at 1.000) gets n0 + 1 instances and a zero-width interval that only says the pilot saw no "
        "spread. Every policy of a task runs a prefix of one instance list, so any two are paired on their common "
        "prefix. Instances: synthetic tasks, workload seeds 0, 1, ... (skipping the train seeds 1000, 1001; the "
        f"first {N_TEST} are the leaderboard's test seeds); trace tasks, windows of the test windows' length at "
        f"offsets drawn uniformly in the span the test windows cover (`default_rng([{res['window_seed']}, "
        "crc32(family)])`, millisecond grid), instance i run with seed i: their mean estimates the mean over a "
        "uniformly placed window of that span of this trace (overlapping windows, i.i.d. offsets), not other "
        f"days. The Oracle is left out ({res['refused'].get(REFERENCE, '')}){pinned}.",
        "",
        "## Summary",
        "",
        "| track | cells | Stein <= d | capped | s0 = 0 | t < 0.01 | t < 0.02 | max t | max Stein | instances run |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for tr in res["tracks"]:
        s = summary(res, tr)
        lines.append(f"| {tr} | {s['cells']} | {s['met']} | {s['capped']} | {s['saturated']} | {s['t_below_0.01']} | "
                     f"{s['t_below_0.02']} | {_f(s['max_t_half'])} | {_f(s['max_stein_half'])} | {s['runs']:,} |")
    lines += ["", "Stein <= d holds by construction for every uncapped cell (Stein's interval is the one with the "
              "coverage guarantee). The ordinary t half-width over the same N instances uses their own standard "
              "deviation, which exceeds the pilot's s0 where the pilot underestimated the spread: the t columns "
              "count the cells below the issue's literal target (0.01: an interval narrower than 2 points) and "
              "below 0.02."
              + (" Instances run: the runs made for the section; a pinned policy's runs count once, in the first "
                 "section that reports them." if any(_pinned_here(res, tr) for tr in res["tracks"]) else "")]
    traces = list({s["family"]: s for s in res["suite"] if s["windows"]}.values())  # the tiers share the windows
    if traces:
        lines += ["", "Trace tasks: " + "; ".join(
            f"{s['family']}: windows of {s['window_s']:g} s in [{s['test_span_s'][0]:g}, {s['test_span_s'][1]:g}) s, "
            f"{s['requests'][0]}-{s['requests'][1]} requests per window" for s in traces)
                  + f" (over the list's first {cap} windows, the most any cell may run)."]
    labels = res["policies"]
    for tr in res["tracks"]:
        lines += ["", f"## Track: {tr}", "",
                  f"Per task and policy: mean SLO attainment ± t half-width (N instances); * = capped at {cap} "
                  "(Stein's half-width above d); s0 = 0: every pilot score was equal"
                  + "".join(f"; {on}-track runs: {', '.join(lbs)} always runs on the {on} track, its runs are made "
                            "once and reported in every section" for on, lbs in _pinned_here(res, tr).items())
                  + ".", "",
                  "| task | " + " | ".join(labels) + " |", "|---|" + "---|" * len(labels)]
        for task, row in res["cells"][tr].items():
            cells = []
            for lb in labels:
                c = row[lb]
                mark = "*" if c["capped"] else ", s0 = 0" if c["saturated"] else ""
                if c.get("ran_on", tr) != tr:
                    mark += f", {c['ran_on']}-track runs"
                cells.append(f"{c['mean']:.3f} ± {_f(c['t_half'])} ({c['n']}{mark})")
            lines.append(f"| {task} | " + " | ".join(cells) + " |")
        lines += ["", f"Stein's half-width per cell ({tr}); bold: above d = {d:g}.", "",
                  "| task | " + " | ".join(labels) + " |", "|---|" + "---|" * len(labels)]
        for task, row in res["cells"][tr].items():
            cells = [(f"**{row[lb]['stein_half']:.3f}**" if not row[lb]["met"] else f"{row[lb]['stein_half']:.3f}")
                     for lb in labels]
            lines.append(f"| {task} | " + " | ".join(cells) + " |")
        if res.get("paired"):
            comp = res["comparison"]
            others = [lb for lb in labels if lb != comp]
            lines += ["", f"Paired against {comp} ({tr}): SLO attainment minus {comp}'s on the same instances (their "
                      "common prefix): mean ± t half-width (n).", "",
                      "| task | " + " | ".join(others) + " |", "|---|" + "---|" * len(others)]
            for task, row in res["paired"][tr].items():
                lines.append(f"| {task} | " + " | ".join(
                    f"{row[lb]['mean']:+.3f} ± {_f(row[lb]['t_half'])} ({row[lb]['n']})" for lb in others) + " |")
    if res["best_static"]:
        lines += ["", "## best-static", "", "The rule chosen on the train instances, exactly as the leaderboard "
                  "does (`tune_static` in kairos_gym/benchmark/entries.py).", "",
                  "| track and task | rule | train SLO attainment |", "|---|---|---:|"]
        for key, b in res["best_static"].items():
            lines.append(f"| {key} | `{b['rule']}` | {_f(b['train_score'])} |")
    lines.append("")
    return "\n".join(lines)


__all__ = ["DEFAULT_POLICIES", "HALF_WIDTH", "MAX_INSTANCES", "PILOT", "REFUSED", "cell_stats", "check_settings",
           "paired", "precision_instances", "precision_md", "run_precision", "stein_n"]
