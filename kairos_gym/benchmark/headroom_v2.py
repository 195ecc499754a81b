"""The Oracle's headroom on suite v2 (``kairos-gym headroom``; docs/benchmark.md, "Headroom against the Oracle").

v2 scores raw SLO points and has no Oracle row: at production length the Oracle costs minutes per instance
(docs/policies.md). How far the best entry is from the clairvoyant rollout Oracle is still worth knowing per task,
and two measures give it on the **exact track** (the Oracle always rolls out on exact information):

1. **A certified lower bound, on every test instance, with no Oracle run.** The Oracle's SLO attainment on an
   instance is at least each of its base policies' (the rollout-improvement property; tested in
   tests/agents/test_oracle.py and, with a burn-in, tests/sim/test_burn_in.py). The board already holds the scores
   of the bases that are entries (no-deflect, kairos = kairos-exact on the exact track, always-deflect-ls, sq-ls,
   sl-ls, and pending-switch where the family adds it), so per instance ``max over those bases - best entry`` is a
   lower bound on the Oracle's lead over the best entry (the entry with the highest mean on the task). Its mean has
   a paired bootstrap interval over the task's instances. Where the bases never beat the best entry, the bound is
   0 or below and says nothing.
2. **Measured, on the first K test instances.** The Oracle runs there (its bases: the leaderboard's,
   :func:`kairos_gym.benchmark.oracle_cache.task_bases`), and ``Oracle - best entry`` gets a paired 95% t-interval
   over the K instances. Every Oracle run is also checked against the board's scores of its bases: a base above the
   Oracle on an instance is an error (it would break the property measure 1 rests on).

The Oracle runs are kept in a cache file (the format of kairos_gym/benchmark/oracle_cache.py), so a study grows by
instances without redoing the ones it has.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from kairos_gym.errors import ConfigError

BASE_ENTRIES: dict[str, str] = {"no-deflect": "no-deflect", "kairos-exact": "kairos",
                                "always-deflect-ls": "always-deflect-ls", "sq-ls": "sq-ls", "sl-ls": "sl-ls",
                                "pending-switch": "pending-switch"}
"""The Oracle's bases (by registry name, at their default parameters) and the v2 board entry that is the same
policy on the exact track."""
MAX_INSTANCES = 30
"""Most Oracle instances per task (suite v2 has 30 test instances per task)."""
REPS = 20_000
"""Bootstrap resamples of the bound's interval (seeded: it reproduces)."""


def _task_map() -> dict[str, Any]:
    from kairos_gym.benchmark.suites import suite_named

    return {t.name: t for t in suite_named("v2")}


def check_board(board: Any, path: str) -> dict[str, Any]:
    """``board`` if it is a v2 run of the exact track (``kairos-gym leaderboard --suite v2 --track exact --json``),
    else a ConfigError naming ``--board``."""
    what = "the --json of a kairos-gym leaderboard --suite v2 --track exact run"
    if not isinstance(board, dict) or board.get("suite") != "v2" or not isinstance(board.get("scores"), dict):
        raise ConfigError("headroom", "--board", path, what)
    if board.get("track") != "exact":
        raise ConfigError("headroom", "--board", f"{path} (track {board.get('track')!r})",
                          what + ": the Oracle's improvement over its bases holds on the exact track")
    tasks = _task_map()
    for t in board.get("tasks", []):
        if t.get("task") not in tasks or t.get("n_test") != len(tasks[t["task"]].test):
            raise ConfigError("headroom", "--board", f"{path} (task {t.get('task')!r})", what + " (suite v2's tasks)")
    return board


def _base_rule(b: Any) -> str | None:
    """The board entry of Oracle base ``b`` (a name at default parameters), or None."""
    return BASE_ENTRIES.get(b) if isinstance(b, str) else None


def certified_bound(board: Mapping[str, Any], task: str, bases: Sequence[Any]) -> dict[str, Any]:
    """Measure 1 for one task: the best entry, the bases used, and ``max over bases - best`` (points) with its
    95% paired bootstrap interval over the instances."""
    from kairos_gym.benchmark.aggregate import aggregate_mean, stratified_bootstrap

    scores = {lab: np.asarray(v[task], dtype=float) for lab, v in board["scores"].items()}
    best = max(scores, key=lambda lab: (float(scores[lab].mean()), lab))
    used = [e for b in bases if (e := _base_rule(b)) is not None and e in scores]
    if not used:
        return {"best": best, "best_mean": 100 * float(scores[best].mean()), "bases": [], "bound": None}
    top = np.max([scores[e] for e in used], axis=0)
    pt, lo, hi = stratified_bootstrap(lambda a, b: aggregate_mean(a) - aggregate_mean(b), [[top], [scores[best]]],
                                      reps=REPS)
    return {"best": best, "best_mean": 100 * float(scores[best].mean()), "bases": used,
            "bound": {"mean": 100 * pt, "low": 100 * lo, "high": 100 * hi}}


def _oracle_jobs(names: Sequence[str], k: int) -> list[tuple[str, int, Any, int, list]]:
    from kairos_gym.benchmark import oracle_cache
    from kairos_gym.benchmark.suite import on_track

    tasks = _task_map()
    jobs = []
    for name in names:
        t = tasks[name]
        base = on_track(t.base(), "exact")
        bases = oracle_cache.task_bases(None, t.oracle_bases)
        for i, inst in enumerate(t.test[:k]):
            sc = inst.scenario(base)
            jobs.append((name, i, sc, inst.seed, bases))
    return jobs


def run_headroom(board: Mapping[str, Any], k: int, tasks: Sequence[str] | None = None, *,
                 cache: str | Path, backend: Any = None, log: Callable[[str], Any] = print,
                 command: str = "kairos-gym headroom", cached_only: bool = False) -> dict[str, Any]:
    """Both measures on every task of ``board`` (or ``tasks``): the Oracle on the first ``k`` test instances (runs
    found in ``cache`` reused; new ones added to it), checked against the board's base scores. ``cached_only``: run
    nothing; a task's K is then the longest run of its first test instances the cache holds (up to ``k``; 0: the
    bound alone). JSON-ready."""
    from kairos_gym.benchmark import oracle_cache
    from kairos_gym.benchmark.provenance import provenance
    from kairos_gym.evaluation.backends import SerialBackend
    from kairos_gym.evaluation.backends import Task as BackendTask
    from kairos_gym.evaluation.stats import mean_ci

    if isinstance(k, bool) or not isinstance(k, int) or not 0 <= k <= MAX_INSTANCES:
        raise ConfigError("headroom", "--instances", k, f"a whole number from 0 (the bound only) to {MAX_INSTANCES}")
    on_board = [t["task"] for t in board["tasks"]]
    names = on_board if tasks is None else list(tasks)
    for n in names:
        if n not in on_board:
            raise ConfigError("headroom", "--tasks", n, "tasks of the board: " + ", ".join(on_board))
    t0 = time.perf_counter()
    entries = dict(oracle_cache.load(cache))
    jobs = _oracle_jobs(names, k)
    # each lookup re-runs the entry's check policies: once per job
    scores: list[float | None] = [None if (hit := oracle_cache.lookup(entries, sc, seed, b)) is None
                                  else hit["slo_attainment"] for _, _, sc, seed, b in jobs]
    if cached_only:  # per task, the cached prefix of its first k instances: up to its first instance not cached
        first_missing: dict[str, int] = {}
        for (name, i, *_), x in zip(jobs, scores, strict=True):
            if x is None:
                first_missing.setdefault(name, i)
        keep = [j[1] < first_missing.get(j[0], k) for j in jobs]
        jobs = [j for j, kp in zip(jobs, keep, strict=True) if kp]
        scores = [x for x, kp in zip(scores, keep, strict=True) if kp]
    todo = [i for i, x in enumerate(scores) if x is None]
    log(f"{len(jobs)} Oracle instance(s), {len(jobs) - len(todo)} in the cache, {len(todo)} to run")
    for g in range(0, len(todo), oracle_cache.SAVE_EVERY):
        group = todo[g:g + oracle_cache.SAVE_EVERY]
        done = (backend or SerialBackend()).map(
            [BackendTask(oracle_cache.oracle_job, (jobs[j][2], jobs[j][3], jobs[j][4]), f"{jobs[j][0]} #{jobs[j][1]}",
                         policy="oracle") for j in group])
        for j, e in zip(group, done, strict=True):
            name, i, sc, seed, bases = jobs[j]
            scores[j] = e["summary"]["slo_attainment"]
            entries[oracle_cache.fingerprint(sc, seed, bases)] = {"task": name, "instance": f"seed {seed}", **e}
            log(f"{name} test instance {i} (seed {seed}): Oracle {e['summary']['slo_attainment']:.4f}, "
                f"{e['wall_s']:.0f} s")
        oracle_cache.save(entries, cache)
    out: dict[str, Any] = {}
    for name in names:
        mine = [j for j in jobs if j[0] == name]
        mine_scores = [x for j, x in zip(jobs, scores, strict=True) if j[0] == name]
        bound = certified_bound(board, name, oracle_cache.task_bases(None, _task_map()[name].oracle_bases))
        if not mine:  # k = 0: the bound only
            out[name] = {**bound, "k": 0, "oracle_mean": None, "best_mean_k": None,
                         "measured": {"mean": None, "half": None}, "oracle": [], "wall_s": []}
            continue
        oracle = np.asarray(mine_scores, dtype=float)
        best = np.asarray(board["scores"][bound["best"]][name][:len(mine)], dtype=float)
        for e in bound["bases"]:
            own = np.asarray(board["scores"][e][name][:len(mine)], dtype=float)
            if np.any(own > oracle):
                i = int(np.argmax(own > oracle))
                raise ValueError(f"{name} instance {i}: base {e} scores {own[i]} above the Oracle's {oracle[i]}: the "
                                 "board and the Oracle do not describe the same runs")
        m, h = mean_ci((oracle - best).tolist())
        out[name] = {**bound, "k": len(mine), "oracle_mean": 100 * float(oracle.mean()),
                     "best_mean_k": 100 * float(best.mean()),
                     "measured": {"mean": 100 * m, "half": None if math.isnan(h) else 100 * h},
                     "oracle": oracle.tolist(),
                     "wall_s": [entries[oracle_cache.fingerprint(sc, seed, b)]["wall_s"] for _, _, sc, seed, b in mine]}
    return {"study": "oracle-headroom", "suite": "v2", "track": "exact", "command": command, **provenance(),
            "board": board.get("commit"), "k": k, "tasks": out, "elapsed_s": round(time.perf_counter() - t0, 1)}


def _ci(d: Mapping[str, Any] | None) -> str:
    if d is None or d.get("mean") is None:
        return "n/a"
    if "half" in d:
        return f"{d['mean']:+.2f}" + ("" if d["half"] is None else f" ± {d['half']:.2f}")
    return f"{d['mean']:+.2f} [{d['low']:+.2f}, {d['high']:+.2f}]"


def verdict(row: Mapping[str, Any]) -> str:
    """``headroom`` when either measure's interval lies above 0, ``none found`` otherwise."""
    b, m = row.get("bound"), row["measured"]
    if (b is not None and b["low"] > 0) or (m["half"] is not None and m["mean"] is not None
                                            and m["mean"] - m["half"] > 0):
        return "headroom"
    return "none found"


def render(res: Mapping[str, Any]) -> str:
    """The study as markdown (results/headroom-v2.md)."""
    lines = ["# Headroom against the Oracle, suite v2 (exact track)", "",
             f"Generated by `{res['command']}` at {res.get('commit', '?')}, from the board run at {res['board']} "
             "(docs/benchmark.md, \"Headroom against the Oracle\").", "",
             "*best*: the entry with the highest mean on the task (30 test instances). *certified bound*: the mean "
             "over all 30 instances of (the best of the Oracle's bases that are board entries) minus best, with a "
             "95% paired bootstrap interval (20,000 resamples); the Oracle is never below its bases, so its lead "
             "over best is at least this. *measured*: the Oracle run on the first K test instances, Oracle minus "
             "best, mean ± the 95% Student-t half-width over those K. SLO points (x 100).", "",
             "| task | best (mean of 30) | certified bound (30) | K | Oracle (K) | best (K) | "
             "measured: Oracle - best (K) | verdict | Oracle wall s |",
             "|---|---|---|---|---|---|---|---|---|"]
    for name, r in res["tasks"].items():
        wall = ", ".join(f"{w:.0f}" for w in r["wall_s"])
        om = "n/a" if r["oracle_mean"] is None else f"{r['oracle_mean']:.1f}"
        bk = "n/a" if r["best_mean_k"] is None else f"{r['best_mean_k']:.1f}"
        lines.append(f"| {name} | {r['best']} {r['best_mean']:.1f} | {_ci(r['bound'])} | {r['k']} | {om} | {bk} | "
                     f"{_ci(r['measured'])} | {verdict(r)} | {wall} |")
    n = sum(verdict(r) == "headroom" for r in res["tasks"].values())
    lines += ["", f"Headroom shown on {n} of {len(res['tasks'])} tasks. Oracle wall times are this machine's "
              "(one thread, other jobs running); the scores do not depend on the machine."]
    return "\n".join(lines) + "\n"


__all__ = ["BASE_ENTRIES", "MAX_INSTANCES", "certified_bound", "check_board", "render", "run_headroom", "verdict"]
