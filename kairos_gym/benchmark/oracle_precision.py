"""The Oracle's per-task means to a target precision (``kairos-gym oracle-precision``), by two-phase
sampling. The protocol is docs/benchmark.md, "Precision of the Oracle's means".

The clairvoyant rollout Oracle costs 2-60 s per instance, too much for the hundreds to thousands of instances
that its per-task mean SLO attainment ``O`` needs alone (``kairos-gym precision`` leaves it out). But the Oracle
is never below its base policies (the rollout improvement property, agents/oracle.py): with ``M`` the
per-instance maximum of its bases' SLO attainments (cheap: tens of ms per base) and the gap ``G = O - M >= 0``,
``E[O] = E[M] + E[G]``, and ``G`` varies far less than ``O``. So (:mod:`kairos_gym.benchmark.two_phase`):

- **Phase 1**: the phase-1 policies (by default the precision protocol's: the leaderboard's built-ins but the
  Oracle; they must include the Oracle's bases: no-deflect, kairos-exact, always-deflect-ls, sq-ls, sl-ls and
  best-static, whose tuned rule is the Oracle's extra base) run on the first ``n1`` instances of the task's
  precision list (:func:`kairos_gym.benchmark.precision.precision_instances`, the same instances as
  results/precision.md).
- **Phase 2**: the Oracle (with the leaderboard's bases for the task, :func:`oracle_cache.task_bases`) runs on
  the first ``n2 <= n1`` of them. A cached Oracle score (kairos_gym/benchmark/oracle_cache.json, valid entries only) is
  used
  where the instance is a leaderboard test instance (a synthetic task's seeds 0-9).
- **Sizes**: a pilot of ``n0`` instances (both phases) gives ``A = Var(O) - Var(G)`` and ``S = Var(G)``; the
  sizes minimise ``n1 + r n2`` (``r = --cost-ratio``, the cost of one Oracle instance in phase-1 instances,
  a fixed number so the sizes never depend on the machine's speed) subject to the estimated variance being
  ``(d / t_{0.975, n0-1})^2`` (:func:`kairos_gym.benchmark.two_phase.allocation`), at least ``n0 + 1`` each, ``n1`` at
  most
  ``--max-instances``, ``n2`` at most ``--max-oracle``. A pilot of 10 can underestimate the variances (this is not
  Stein's procedure, whose interval keeps the pilot's variance): each further round (``--rounds``, default 3)
  re-sizes a task whose half-width is still above the target from all its data so far (sizes only grow) and runs
  the extra instances. Stopping once the estimated half-width is below the target is a Chow-Robbins kind of
  sequential rule (Ann. Math. Statist. 36(2), 1965): coverage tends to 95% as the target shrinks, and can fall a
  little short at finite sizes.
- **Resume** (``--resume``, :func:`load_resume`): the per-instance scores of an earlier run's ``--json`` stand in
  for re-runs (each task's first instance of every entry is re-run and must be equal), so a run continued with
  more rounds gives exactly the result of a fresh run with those rounds.
- **Estimates** over all ``n1`` / ``n2`` instances: the Oracle's mean (``mean_n1 M + mean_n2 G``), its headroom
  over the best heuristic (``mean_n1 (M - H) + mean_n2 G``; the heuristic ``H`` with the highest phase-1 mean,
  chosen on the same instances), and every phase-1 policy's normalised score ``(P - no-deflect) / (O -
  no-deflect)`` (the delta method), each with its 95% interval (t quantile at ``n2 - 1`` degrees of freedom). The
  interval is approximate (normal theory, the delta method), not Stein's exact one; its coverage is checked by
  simulation (tests/benchmark/test_two_phase.py). A task where the Oracle's estimated mean is less than
  :data:`~kairos_gym.benchmark.leaderboard.MIN_HEADROOM` above no-deflect's has no normalised scores (the
  leaderboard's rule).

Every instance's gap is checked: ``G < 0`` would break the improvement property and stops the run (RuntimeError).

**Tracks** (``--track``): on the exact track every phase-1 entry runs on the exact track and the Oracle's bases are
phase-1 entries. On the realistic track (the leaderboard's realistic section) the phase-1 policies run on the
realistic track (``kairos-exact`` pinned to exact, :data:`~kairos_gym.benchmark.entries.PINNED_TRACK`) and
best-static is tuned there; the Oracle (clairvoyant: always on the exact track) rolls out its bases with exact
information and the realistic track's best-static rule, so ``M`` is the maximum of the bases run **on the exact
track** (extra phase-1 columns ``<base>@exact``; ``kairos-exact`` is one already), while the headroom's best
heuristic and the normalised scores are the realistic track's runs. The Oracle's mean, and so the sizes, depend
on the exact-track columns and the Oracle only: on a task whose realistic best-static rule is the exact track's,
they are the exact run's. ``--resume`` takes a file of either track: a column is reused where it is the same
run (the same entry on the same track; best-static and the Oracle only with the same tuned rule; a file of
this run's own track with another rule is refused), the rest is run.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from kairos_gym.benchmark import oracle_cache as cache_file
from kairos_gym.benchmark.entries import (
    BEST_STATIC,
    PINNED_TRACK,
    STATIC_GRID,
    Entry,
    builtin_entry,
    check_names,
    entry_task,
    rule_label,
    tune_static,
    tuned_entry,
)
from kairos_gym.benchmark.precision import DEFAULT_POLICIES as PRECISION_POLICIES
from kairos_gym.benchmark.precision import MAX_INSTANCES, check_instances, precision_instances, scored_task
from kairos_gym.benchmark.provenance import provenance, verify_note
from kairos_gym.benchmark.scoring import BASELINE, MIN_HEADROOM, NOT_HEURISTICS, REFERENCE
from kairos_gym.benchmark.suite import SUITE, TRACKS, Task, on_track
from kairos_gym.benchmark.two_phase import Estimate, allocation, ratio_estimate, sum_estimate
from kairos_gym.errors import ConfigError
from kairos_gym.evaluation.backends import Backend, SerialBackend
from kairos_gym.evaluation.backends.runs import RunSpec, run_task
from kairos_gym.evaluation.evaluate import check_policies
from kairos_gym.evaluation.stats import mean_ci, nan_to_none, t_quantile_975
from kairos_gym.json_file import read_json_file
from kairos_gym.progress import RunProgress, or_silent

WHERE = "oracle-precision"
TRACK = "exact"
"""The default information track (the Oracle's own)."""
EXACT_SUFFIX = "@exact"
"""On the realistic track, the suffix of a phase-1 column that runs an Oracle base on the exact track (its
rollouts' information): ``sq-ls@exact``."""
HALF_WIDTH = 0.01
"""Default target half-width of the 95% interval of the Oracle's mean (an interval narrower than 2 points)."""
MAX_HALF_WIDTH = 0.5
"""Largest ``--half-width``."""
PILOT = 10
"""Default pilot size ``n0`` (a synthetic task's pilot is the leaderboard's test seeds: its Oracle runs cached)."""
MIN_PILOT, MAX_PILOT = 3, 100
"""Bounds of ``--pilot``."""
COST_RATIO = 40.0
"""Default ``--cost-ratio``: one Oracle instance costs about 40 phase-1 instances of the 12 default policies
(Oracle 5-30 s per suite instance, kairos_gym/benchmark/oracle_cache.json ``wall_s``; the 12 policies 0.2-0.5 s
together,
results/precision.md's 171,890 runs in 2,560 s on 2 workers). Only the sizes' cost split depends on it, never a result's
validity."""
MAX_COST_RATIO = 10_000.0
"""Largest ``--cost-ratio``."""
DEFAULT_MAX_INSTANCES = MAX_INSTANCES
"""Default cap on ``n1`` (the precision lists' length, 5,000)."""
MAX_ORACLE = 2000
"""Largest ``--max-oracle`` (Oracle instances per task: hours of runs)."""
DEFAULT_MAX_ORACLE = 200
"""Default cap on ``n2`` (about 1-2 hours of Oracle runs for a task on one core at the suite's sizes)."""
ROUNDS = 3
"""Default ``--rounds``: the pilot, the sizes from the pilot, then one more re-sizing from all the data so far for a
task whose half-width is still above the target (its sizes only grow)."""
MAX_ROUNDS = 10
"""Largest ``--rounds``."""
MAX_RESUME_BYTES = 256 << 20
"""Largest ``--resume`` file read (bytes)."""
BASE_LABELS = ("no-deflect", "kairos-exact", "always-deflect-ls", "sq-ls", "sl-ls", "pending-switch", BEST_STATIC)
"""The phase-1 entries that run the Oracle's bases (:func:`oracle_cache.task_bases`: the defaults, a family's own
bases such as fault-shift's ``pending-switch``, the task's best-static rule); per task ``M`` is the per-instance
maximum of the task's own bases among them."""
DEFAULT_POLICIES = PRECISION_POLICIES
"""The default phase-1 policies (the leaderboard's default policies but the Oracle)."""


def check_settings(half_width: float, pilot: int, cost_ratio: float, max_instances: int, max_oracle: int,
                   rounds: int = ROUNDS) -> None:
    """Every setting in range (module constants), ``pilot < max_oracle <= max_instances``."""
    def number(v: Any) -> bool:
        return not isinstance(v, bool) and isinstance(v, (int, float)) and math.isfinite(v)

    def whole(v: Any) -> bool:
        return not isinstance(v, bool) and isinstance(v, int)

    if not number(half_width) or not 0 < half_width <= MAX_HALF_WIDTH:
        raise ConfigError(WHERE, "--half-width", half_width, f"a number > 0 and <= {MAX_HALF_WIDTH:g}")
    if not whole(pilot) or not MIN_PILOT <= pilot <= MAX_PILOT:
        raise ConfigError(WHERE, "--pilot", pilot, f"a whole number in [{MIN_PILOT}, {MAX_PILOT}]")
    if not number(cost_ratio) or not 1 <= cost_ratio <= MAX_COST_RATIO:
        raise ConfigError(WHERE, "--cost-ratio", cost_ratio, f"a number in [1, {MAX_COST_RATIO:g}]")
    if not whole(max_oracle) or not pilot + 1 <= max_oracle <= MAX_ORACLE:
        raise ConfigError(WHERE, "--max-oracle", max_oracle, f"a whole number in [--pilot + 1 = {pilot + 1}, "
                          f"{MAX_ORACLE}]")
    if not whole(max_instances) or not max_oracle <= max_instances <= MAX_INSTANCES:
        raise ConfigError(WHERE, "--max-instances", max_instances, f"a whole number in [--max-oracle = "
                          f"{max_oracle}, {MAX_INSTANCES}]")
    if not whole(rounds) or not 2 <= rounds <= MAX_ROUNDS:
        raise ConfigError(WHERE, "--rounds", rounds, f"a whole number in [2, {MAX_ROUNDS}] (2: the pilot and one "
                          "sizing)")


def check_track(track: str) -> None:
    """``--track``: one of :data:`~kairos_gym.benchmark.suite.TRACKS` (ConfigError otherwise)."""
    if track not in TRACKS:
        raise ConfigError(WHERE, "--track", track, "one of " + ", ".join(TRACKS))


def load_resume(path: Path | str) -> dict[str, Any]:
    """The per-instance scores of an earlier run's ``--json`` file, ``{"track": track, "tasks": {task: {"scores":
    {label: [...]}, "bases": [...], "best_static": rule}}}`` (a file without ``"track"`` is of the exact track, as
    every file before ``--track`` was): a ConfigError for a file that is too large, not JSON or not of that shape.
    Only data is read; :func:`run_oracle_precision` re-runs each task's first instance of every entry and
    refuses the file unless they reproduce."""
    p = Path(path)
    where = "--resume"
    data = read_json_file(WHERE, where, p, MAX_RESUME_BYTES, "file written by oracle-precision --json")
    tasks = data.get("tasks") if isinstance(data, dict) else None
    if not isinstance(tasks, dict):
        raise ConfigError(WHERE, where, str(p), "a JSON object with a \"tasks\" object (oracle-precision --json)")
    track = data.get("track", TRACK)
    if track not in TRACKS:
        raise ConfigError(WHERE, where, f"{p}: track {track!r}", "one of " + ", ".join(TRACKS))
    out: dict[str, Any] = {}
    for name, v in tasks.items():
        scores = v.get("scores") if isinstance(v, dict) else None
        ok = (isinstance(scores, dict) and isinstance(v.get("bases"), list) and isinstance(v.get("best_static"), str)
              and all(isinstance(k, str) and isinstance(xs, list) and len(xs) <= MAX_INSTANCES
                      and all(isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)
                              and 0.0 <= x <= 1.0 for x in xs) for k, xs in scores.items()))
        if not ok:
            raise ConfigError(WHERE, where, f"{p}: task {name}", "scores: {label: [SLO attainments in [0, 1]]}, "
                              "bases and best_static, as oracle-precision --json writes them")
        out[name] = {"scores": {k: [float(x) for x in xs] for k, xs in scores.items()}, "bases": list(v["bases"]),
                     "best_static": v["best_static"]}
    return {"track": track, "tasks": out}


def resume_key(label: str, file_track: str, track: str) -> str | None:
    """The column of a run on ``track`` that a file's column ``label`` (from a run on ``file_track``) holds the
    scores of, or None (a column this run has no use for: a realistic-track run's column in an exact-track run).
    Pinned entries (the Oracle, ``kairos-exact``) are the same run on every track; ``<base>@exact`` is the base on
    the exact track, a plain label in an exact-track file too."""
    base, on = (label[:-len(EXACT_SUFFIX)], "exact") if label.endswith(EXACT_SUFFIX) else (
        label, PINNED_TRACK.get(label, file_track))
    if base in PINNED_TRACK or on == track:
        return base
    return base + EXACT_SUFFIX if on == "exact" else None


def check_policy_names(policies: Sequence[str]) -> None:
    """Registry names or best-static, each once, the Oracle refused (it is phase 2), the bases present."""
    check_names(WHERE, policies, [], {REFERENCE: "it is phase 2 of this protocol, run on its own"})
    missing = [b for b in BASE_LABELS if b not in policies]
    if missing:
        raise ConfigError(WHERE, "--policies", ",".join(policies), "a list that includes the Oracle's bases "
                          f"{', '.join(BASE_LABELS)} (their best is phase 1's M; missing: {', '.join(missing)})")


def _base_label(base: Any, chosen: Mapping[str, Any]) -> str:
    """The phase-1 label that runs Oracle base ``base`` (a registry name, or the task's best-static rule)."""
    if isinstance(base, str) and base in BASE_LABELS:
        return base
    name, params = (base, {}) if isinstance(base, str) else (base[0], dict(base[1]))
    if name == chosen["policy"] and params == dict(chosen["params"]):
        return BEST_STATIC
    raise ConfigError(WHERE, "bases", base, "the Oracle's bases run by phase-1 entries: " + ", ".join(BASE_LABELS))


def _pm(e: Estimate) -> dict[str, float | int]:
    return {"mean": e.value, "half": e.half, "se": e.se, "df": e.df}


def gaps(x: Mapping[str, Sequence[float]], oracle: Sequence[float],
         base_labels: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """``(M, G)``: the best of the bases' scores on each of the ``n1`` phase-1 instances (``n1`` the shortest list
    of ``x``) and the Oracle's gain over it on the first ``n2 = len(oracle)``. RuntimeError when the Oracle is below
    its best base on an instance (the rollout improvement property would be broken)."""
    n1 = min(len(v) for v in x.values())
    m = np.max(np.vstack([np.asarray(x[b][:n1], dtype=float) for b in base_labels]), axis=0)
    o = np.asarray(oracle, dtype=float)
    g = o - m[:len(o)]
    if (g < 0).any():
        i = int(np.argmax(g < 0))
        raise RuntimeError(f"oracle-precision: instance {i}: Oracle {o[i]!r} below its best base {m[i]!r} (the "
                           "rollout improvement property is broken)")
    return m, g


def task_estimates(x: Mapping[str, Sequence[float]], oracle: Sequence[float], base_labels: Sequence[str],
                   heuristics: Sequence[str], policies: Sequence[str] | None = None) -> dict[str, Any]:
    """The figures of one task from its phase-1 scores ``x[column]`` (``n1`` each) and the Oracle's ``n2`` scores
    (module docstring): ``base_labels`` the columns whose maximum is ``M``, ``policies`` those normalised (default
    every column). RuntimeError when the Oracle is below its best base on an instance."""
    m, g = gaps(x, oracle, base_labels)
    n1, n2 = len(m), len(g)
    o = np.asarray(oracle, dtype=float)
    xs = {k: np.asarray(v[:n1], dtype=float) for k, v in x.items()}
    est = sum_estimate(m, g)
    means = {h: float(xs[h].mean()) for h in heuristics}
    best_h = max(heuristics, key=lambda h: (means[h], -list(heuristics).index(h)))
    head = sum_estimate(m - xs[best_h], g)
    alone_mean, alone_half = mean_ci(o)
    room = sum_estimate(m - xs[BASELINE], g)
    normalized: dict[str, Any] = {}
    if room.value >= MIN_HEADROOM:
        for k in (xs if policies is None else policies):
            if k != BASELINE:
                normalized[k] = _pm(ratio_estimate(xs[k] - xs[BASELINE], m - xs[BASELINE], g))
    return {"n1": n1, "n2": n2, "oracle": _pm(est), "m_mean": float(m.mean()), "g_mean": float(g.mean()),
            "g_sd": float(np.std(g, ddof=1)), "oracle_alone": {"mean": alone_mean, "half": nan_to_none(alone_half)},
            "best": best_h, "best_mean": means[best_h], "headroom": _pm(head),
            "room": _pm(room), "normalized": normalized, "gap_zero": int((g == 0).sum())}


def run_oracle_precision(policies: Sequence[str] = tuple(DEFAULT_POLICIES.split(",")),
                         suite: Sequence[Task] | None = None, half_width: float = HALF_WIDTH, pilot: int = PILOT,
                         cost_ratio: float = COST_RATIO, max_instances: int = DEFAULT_MAX_INSTANCES,
                         max_oracle: int = DEFAULT_MAX_ORACLE, progress: RunProgress | None = None,
                         command: str = "kairos-gym oracle-precision", backend: Backend | None = None,
                         oracle_cache: Path | str = cache_file.CACHE, rounds: int = ROUNDS,
                         resume: Mapping[str, Any] | None = None, track: str = TRACK) -> dict[str, Any]:
    """Two-phase sampling of the Oracle on every task of ``suite`` (module docstring); the JSON-ready result
    (:func:`oracle_precision_md` writes it). Settings, names, every policy on every task, every instance's scenario
    and trace request count and the cache file are checked before the first run. ``resume``
    (:func:`load_resume`): scores of an earlier run, used instead of re-running an instance (the result is the one
    a fresh run gives: every score is a function of the code and the instance), after each task's first instance
    of every entry is re-run and found equal. ``track``: the information track of the phase-1 policies (module
    docstring, "Tracks")."""
    t0 = time.perf_counter()
    check_settings(half_width, pilot, cost_ratio, max_instances, max_oracle, rounds)
    check_track(track)
    policies = list(policies)
    check_policy_names(policies)
    suite = SUITE if suite is None else tuple(suite)
    if not suite or len({t.name for t in suite}) != len(suite):
        raise ConfigError(WHERE, "--tasks", [t.name for t in suite], "one or more distinct tasks")
    cache = cache_file.load(oracle_cache)
    instances = {t.name: precision_instances(t, max_instances) for t in suite}
    bases = {t.name: on_track(t.base(), track) for t in suite}  # the phase-1 policies' scenarios
    exact = {t.name: on_track(t.base(), "exact") for t in suite}  # the Oracle's and its bases' (rollouts)
    for t in suite:
        sc = bases[t.name]
        for p in policies:
            if p != BEST_STATIC:
                check_policies(WHERE, "--policies", [p], on_track(sc, PINNED_TRACK.get(p, track)), 0)
        check_instances(WHERE, t, sc, instances[t.name])
    bar = or_silent(progress)
    run = backend or SerialBackend(retries=0)
    bar.start(len(STATIC_GRID) * sum(len(t.train) for t in suite))
    best = {t.name: tune_static(t, bases[t.name], bar, run)["chosen"] for t in suite}
    oracle_bases = {t.name: cache_file.task_bases(best[t.name], t.oracle_bases) for t in suite}
    base_labels = {t.name: list(dict.fromkeys(_base_label(b, best[t.name]) for b in oracle_bases[t.name]))
                   for t in suite}

    known: dict[tuple[str, str], list[float]] = {}  # (task, column): an earlier run's scores
    file_track = (resume or {}).get("track", TRACK)
    for t in suite:
        r = (resume or {}).get("tasks", {}).get(t.name)
        if r is None:
            continue
        rule = rule_label(best[t.name]["policy"], best[t.name]["params"])
        same_rule = r["best_static"] == rule and r["bases"] == base_labels[t.name]
        if file_track == track and not same_rule:
            raise ConfigError(WHERE, "--resume", f"task {t.name}: best-static {r['best_static']}, bases {r['bases']}",
                              f"the same best-static rule ({rule}) and bases ({base_labels[t.name]}) as this run")
        for label, xs in r["scores"].items():
            key = resume_key(label, file_track, track)
            if key is not None and (same_rule or key.removesuffix(EXACT_SUFFIX) not in (BEST_STATIC, REFERENCE)):
                known[(t.name, key)] = xs  # another track's best-static rule or Oracle is another run: not used
    entries: list[Entry] = [tuned_entry(lambda task, sc: best[task.name]) if p == BEST_STATIC
                            else builtin_entry(p) for p in policies]
    heuristics = [e.label for e in entries if e.label not in NOT_HEURISTICS]
    columns: list[tuple[str, Entry, Mapping[str, Any]]] = [(e.label, e, bases) for e in entries]
    if track != "exact":  # the Oracle's bases as its rollouts run them: on the exact track
        used = {lb for t in suite for lb in base_labels[t.name]}  # pending-switch only where a task rolls it out
        columns += [(lb + EXACT_SUFFIX, next(e for e in entries if e.label == lb), exact)
                    for lb in BASE_LABELS if lb not in PINNED_TRACK and lb in used]
    base_keys = {t.name: [lb if track == "exact" or lb in PINNED_TRACK else lb + EXACT_SUFFIX
                          for lb in base_labels[t.name]] for t in suite}
    x: dict[str, dict[str, list[float]]] = {t.name: {key: [] for key, _, _ in columns} for t in suite}
    oracle: dict[str, list[float]] = {t.name: [] for t in suite}
    sources = {"cache": 0, "run": 0, "resumed": 0}
    phase1_resumed = 0  # phase-1 scores taken from the resumed file

    def resumed(name: str, label: str, i: int) -> float | None:
        """The earlier run's score of instance ``i`` (None: not there, or ``i`` = 0, which is always re-run)."""
        xs = known.get((name, label))
        return xs[i] if xs is not None and 0 < i < len(xs) else None

    def stage(lo1: Mapping[str, int], hi1: Mapping[str, int], lo2: Mapping[str, int], hi2: Mapping[str, int]) -> None:
        """Phase 2 (the Oracle) on instances [lo2, hi2) and phase 1 on [lo1, hi1) of every task."""
        nonlocal phase1_resumed
        jobs: list[Any] = []
        slots: list[tuple[str, str | None, int]] = []  # (task, entry label or None: the Oracle, instance), job order
        cached: dict[tuple[str, int], float] = {}
        reused: dict[tuple[str, str, int], float] = {}
        for t in suite:
            for i in range(lo2[t.name], hi2[t.name]):
                inst = instances[t.name][i]
                sc = inst.scenario(exact[t.name])
                old = resumed(t.name, REFERENCE, i)
                if old is not None:
                    reused[(t.name, REFERENCE, i)] = old
                    continue
                hit = cache_file.lookup(cache, sc, inst.seed, oracle_bases[t.name])
                if hit is not None:
                    cached[(t.name, i)] = float(hit["slo_attainment"])
                    continue
                jobs.append(scored_task(run_task(RunSpec(sc, REFERENCE, inst.seed, {"bases": oracle_bases[t.name]}),
                                                 f"{t.name} oracle {inst.label}")))
                slots.append((t.name, None, i))
        for t in suite:  # the long Oracle runs first, so the short ones fill the workers at the end
            for key, e, scs in columns:
                for i in range(lo1[t.name], hi1[t.name]):
                    old = resumed(t.name, key, i)
                    if old is not None:
                        reused[(t.name, key, i)] = old
                        continue
                    inst = instances[t.name][i]
                    jobs.append(scored_task(entry_task(e, t, inst.scenario(scs[t.name]), inst.seed,
                                                       f"{t.name} {key} {inst.label}")))
                    slots.append((t.name, key, i))
        bar.start(len(jobs))
        got = [float(v) for v in run.map(jobs, bar)]  # SLO attainments (scored_task), NaN without one
        sources["cache"] += len(cached)
        sources["resumed"] += sum(1 for k in reused if k[1] == REFERENCE)
        sources["run"] += sum(1 for _, lb, _ in slots if lb is None)
        phase1_resumed += sum(1 for k in reused if k[1] != REFERENCE)
        value = {(name, REFERENCE if lb is None else lb, i): v for v, (name, lb, i) in zip(got, slots, strict=True)}
        value.update({(name, REFERENCE, i): v for (name, i), v in cached.items()})
        value.update(reused)
        for (name, lb, i), v in value.items():  # an earlier run's scores must reproduce where re-run
            xs = known.get((name, lb))
            if i == 0 and xs and xs[0] != v:
                raise ConfigError(WHERE, "--resume", f"task {name}, {lb}, instance 0: {xs[0]!r}",
                                  f"scores this code reproduces (a fresh run gives {v!r})")
        for t in suite:
            for i in range(lo2[t.name], hi2[t.name]):
                oracle[t.name].append(value[(t.name, REFERENCE, i)])
            for key in x[t.name]:
                x[t.name][key].extend(value[(t.name, key, i)] for i in range(lo1[t.name], hi1[t.name]))
        for t in suite:
            bad = [lb for lb, vals in x[t.name].items() if any(math.isnan(v) for v in vals)]
            if bad or any(math.isnan(v) for v in oracle[t.name]):
                raise ConfigError(WHERE, (bad or [REFERENCE])[0], t.name, "runs that complete requests (an SLO "
                                  "attainment on every instance)")

    zero = dict.fromkeys(instances, 0)
    first = dict.fromkeys(instances, pilot)
    stage(zero, first, zero, first)
    sizes: dict[str, dict[str, Any]] = {t.name: {"n1": pilot, "n2": pilot, "capped": False, "sizes": []}
                                        for t in suite}
    for r in range(2, rounds + 1):  # round 2 sizes every task from its pilot; later ones those still above d
        lo1 = {k: v["n1"] for k, v in sizes.items()}
        lo2 = {k: v["n2"] for k, v in sizes.items()}
        for t in suite:
            z = sizes[t.name]
            m, g = gaps(x[t.name], oracle[t.name], base_keys[t.name])
            if r > 2 and (z["capped"] or sum_estimate(m, g).half <= half_width):
                continue
            a = float(np.var(m, ddof=1) + 2 * np.cov(m[:z["n2"]], g, ddof=1)[0, 1])  # Var(O) - Var(G)
            s = float(np.var(g, ddof=1))
            n1, n2, capped = allocation(a, s, half_width, t_quantile_975(z["n2"] - 1), cost_ratio,
                                        max(z["n2"], pilot + 1), max_instances, max_oracle)
            z.update({"n1": max(n1, z["n1"]), "n2": max(n2, z["n2"]), "capped": capped})
            z["sizes"].append([z["n1"], z["n2"]])
            if r == 2:
                z.update({"pilot_a": a, "pilot_s": s})
        if all((v["n1"], v["n2"]) == (lo1[k], lo2[k]) for k, v in sizes.items()):
            break
        stage(lo1, {k: v["n1"] for k, v in sizes.items()}, lo2, {k: v["n2"] for k, v in sizes.items()})
    tasks: dict[str, Any] = {}
    for t in suite:
        est = task_estimates(x[t.name], oracle[t.name], base_keys[t.name], heuristics, [e.label for e in entries])
        est.update({"capped": sizes[t.name]["capped"], "pilot_a": sizes[t.name]["pilot_a"],
                    "sizes": sizes[t.name]["sizes"],
                    "pilot_s": sizes[t.name]["pilot_s"], "met": est["oracle"]["half"] <= half_width,
                    "bases": base_labels[t.name], "base_columns": base_keys[t.name],
                    "best_static": rule_label(best[t.name]["policy"],
                                                                            best[t.name]["params"]),
                    "scores": {**x[t.name], REFERENCE: oracle[t.name]}})
        tasks[t.name] = est
    n_oracle = sum(len(v) for v in oracle.values())
    return {"command": command, **provenance(), "track": track, "half_width": half_width, "pilot": pilot,
            "cost_ratio": cost_ratio, "max_instances": max_instances, "max_oracle": max_oracle, "rounds": rounds,
            "policies": [e.label for e in entries], "heuristics": heuristics, "baseline": BASELINE,
            "min_headroom": MIN_HEADROOM, "tasks": tasks, "oracle_runs": n_oracle, "oracle_sources": sources,
            "phase1_runs": sum(len(v) for t in x.values() for v in t.values()), "phase1_resumed": phase1_resumed,
            "elapsed_s": time.perf_counter() - t0}


# ---------------------------------------------------------------------------------------------- markdown
def _f(v: float | None, spec: str = ".3f") -> str:
    return "n/a" if v is None or (isinstance(v, float) and math.isnan(v)) else format(v, spec)


def oracle_precision_md(res: Mapping[str, Any]) -> str:
    """The markdown text of results/oracle-precision.md."""
    commit = res["commit"]
    where = (f"commit `{commit}`" + (" with uncommitted changes to tracked files" if res["dirty"] else "")
             if commit else "outside a git checkout") + verify_note(res)
    d = res["half_width"]
    tasks = res["tasks"]
    met = sum(v["met"] for v in tasks.values())
    capped = sum(v["capped"] for v in tasks.values())
    src = res["oracle_sources"]
    realistic = res.get("track", TRACK) != "exact"
    if realistic:
        track_text = (
            "two-phase sampling on the realistic track: the phase-1 policies run on the realistic track (kairos-exact "
            "on the exact one), best-static is tuned there; the Oracle (clairvoyant, on the exact track) rolls its "
            "bases out with exact information and the realistic track's best-static rule, so M = the per-instance "
            "maximum of its bases **run on the exact track** (phase-1 columns "
            f"{', '.join(dict.fromkeys(b for v in tasks.values() for b in v['base_columns']))}); the best heuristic "
            "and the normalised scores are the realistic track's runs")
    else:
        track_text = ("two-phase sampling on the exact track. M = the per-instance maximum of the Oracle's bases "
                      f"(phase-1 entries {', '.join(dict.fromkeys(b for v in tasks.values() for b in v['bases']))})")
    lines = [
        "# Precision of the Oracle's per-task means" + (" (realistic track)" if realistic else ""),
        "",
        f"Command: `{res['command']}`  ",
        f"Code: kairos-gym {res['version']}, {where}  ",
        f"Run: {res['date']}, wall time {res['elapsed_s']:.0f} s, {res['oracle_runs']:,} Oracle instances "
        f"({src['run']:,} run, {src['cache']:,} from kairos_gym/benchmark/oracle_cache.json"
        + (f", {src['resumed']:,} from the resumed file" if src.get("resumed") else "")
        + f") and {res['phase1_runs']:,} phase-1 scores (Python {res['python']}, numpy {res['numpy']})"
        + (f"; resumed from `{res['resumed_from']}` (its scores used where present, each task's first instance "
           "re-run and equal: the same result as a fresh run)" if res.get("resumed_from") else ""),
        "",
        "Protocol (docs/benchmark.md, \"Precision of the Oracle's means\"; "
        "`kairos_gym/benchmark/oracle_precision.py`): "
        f"{track_text}, G = Oracle - M >= 0 (the "
        "rollout improvement property, checked on every instance). Phase 1 runs every policy on the first n1 "
        "instances of the task's precision list (the instances of results/precision.md), phase 2 the Oracle on "
        "the first "
        f"n2 of them; the Oracle's mean is mean_n1(M) + mean_n2(G). Pilot n0 = {res['pilot']} instances; sizes "
        f"minimise n1 + {res['cost_ratio']:g} n2 (the cost ratio, a fixed setting) for a target half-width d = "
        f"{d:g}, n1 <= {res['max_instances']}, n2 <= {res['max_oracle']}; up to {res['rounds']} rounds (pilot, "
        "sizes from the pilot, then re-sizing from all the data so far where the half-width is still above d; "
        "sizes only grow). Intervals: 95%, delta method on the "
        "two-phase covariance, t quantile at n2 - 1 degrees of freedom (approximate, not Stein's exact interval; "
        "coverage checked by simulation in tests/benchmark/test_two_phase.py). \"Oracle alone\": the ordinary t "
        "interval of the Oracle's n2 scores without phase 1, for comparison.",
        "",
        f"**Summary**: the Oracle's half-width <= {d:g} in {met} of {len(tasks)} tasks ({capped} capped); largest "
        f"{max(v['oracle']['half'] for v in tasks.values()):.4f}.",
        "",
        "| task | n1 | n2 | E[M] | E[G] (sd) | Oracle mean ± half | Oracle alone (n2) | best heuristic | headroom ± "
        "half |",
        "|---|---:|---:|---:|---:|---:|---:|---|---:|",
    ]
    for name, v in tasks.items():
        o, h = v["oracle"], v["headroom"]
        mark = "*" if v["capped"] else ""
        lines.append(f"| {name} | {v['n1']}{mark} | {v['n2']}{mark} | {v['m_mean']:.3f} | {v['g_mean']:.4f} "
                     f"({v['g_sd']:.4f}) | {o['mean']:.3f} ± {o['half']:.4f} | {v['oracle_alone']['mean']:.3f} ± "
                     f"{_f(v['oracle_alone']['half'], '.3f')} | {v['best']} ({v['best_mean']:.3f}) | "
                     f"{h['mean']:+.3f} ± {h['half']:.4f} |")
    lines += ["", "`*`: a cap was hit (the target may be missed). E[G]: the Oracle's mean gain over the best of its "
              "bases on each instance; its sd is what phase 2 has to pay for.", ""]
    labels = [lb for lb in res["policies"] if lb != res["baseline"]]
    lines += ["## Normalised scores", "",
              f"(P - {res['baseline']}) / (Oracle - {res['baseline']}) per task, ± the 95% half-width (delta "
              f"method); tasks where the Oracle is less than {res['min_headroom']:g} above {res['baseline']} are "
              "not normalised (the leaderboard's rule).", "",
              "| task | " + " | ".join(labels) + " |", "|---|" + "---|" * len(labels)]
    for name, v in tasks.items():
        if not v["normalized"]:
            lines.append(f"| {name} | " + " | ".join("—" for _ in labels) + " |")
            continue
        lines.append(f"| {name} | " + " | ".join(
            f"{v['normalized'][lb]['mean']:.3f} ± {v['normalized'][lb]['half']:.3f}" for lb in labels) + " |")
    lines.append("")
    return "\n".join(lines)


__all__ = ["BASE_LABELS", "COST_RATIO", "DEFAULT_POLICIES", "HALF_WIDTH", "PILOT", "check_settings", "check_track",
           "oracle_precision_md", "run_oracle_precision", "task_estimates"]
