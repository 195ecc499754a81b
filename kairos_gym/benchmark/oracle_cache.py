"""The Oracle's scores per leaderboard instance, cached in a committed data file
(``kairos_gym/benchmark/oracle_cache.json``).

The rollout Oracle (agents/oracle.py) costs O(requests^2) per instance: about a minute on a 1,500-request
instance, hours for the whole suite, far beyond the leaderboard's other runs. So the leaderboard reads its
per-instance figures from this cache and runs the Oracle only where an entry is missing or stale.

An entry is keyed by a fingerprint (sha256) of everything that defines the Oracle's run: the instance's scenario
(``ScenarioConfig.to_dict``, windows and tier SLOs included), the seed, the base policies and ``fixed_chunks``,
and :data:`CACHE_VERSION`. Every entry also holds the no-deflect and always-deflect-ls SLO attainment and P95 TTFT
of the instance: before an entry is used both are run again (tens of ms) and compared bit for bit, so a change of
the simulator's physics or of a trace file makes the entry stale (it is then recomputed, never used). The test
``tests/benchmark/test_oracle_cache.py`` also checks the committed file against a fresh Oracle run.

Regenerate (every task, or some; ``--max-requests`` only computes instances of at most that many requests)::

    kairos-gym oracle-cache [--tasks bursty,azure-code] [--max-requests 600] [--out PATH]
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kairos_gym.agents.oracle import DEFAULT_BASES, Oracle
from kairos_gym.agents.runner import run_policy
from kairos_gym.errors import ConfigError
from kairos_gym.json_file import read_json_file
from kairos_gym.scenario import ScenarioConfig

if TYPE_CHECKING:
    from kairos_gym.benchmark.suite import Task
    from kairos_gym.evaluation.backends import Backend

CACHE = Path(__file__).resolve().with_name("oracle_cache.json")
"""The committed cache."""
CACHE_VERSION = 1
"""Part of every fingerprint: bump it when the Oracle's algorithm changes (every entry becomes stale)."""
STORED = ("slo_attainment", "ttft_p95", "tbt_violation_rate", "tbt_request_attainment", "deflection_rate",
          "n_requests", "n_completed", "n_rejected", "ttft_breakdown_mean", "ttft_breakdown_p95")
"""Summary keys kept per entry (the leaderboard's figures)."""
CHECKS = ("no-deflect", "always-deflect-ls")
"""Policies re-run before an entry is used (their SLO attainment and P95 TTFT must match the stored ones)."""
MAX_CACHE_BYTES = 16 << 20
"""Largest cache file read (bytes)."""

Bases = Sequence[Any]


def fingerprint(sc: ScenarioConfig, seed: int, bases: Bases, fixed_chunks: bool = True) -> str:
    """The sha256 hex digest naming one Oracle run (see the module docstring)."""
    blob = json.dumps({"version": CACHE_VERSION, "scenario": sc.to_dict(), "seed": int(seed),
                       "bases": [b if isinstance(b, str) else [b[0], dict(b[1])] for b in bases],
                       "fixed_chunks": bool(fixed_chunks)}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def _checks(sc: ScenarioConfig, seed: int) -> dict[str, list[float | None]]:
    return {p: [s["slo_attainment"], s["ttft_p95"]] for p in CHECKS for s in (run_policy(p, sc, seed),)}


def load(path: Path | str = CACHE) -> dict[str, Any]:
    """The cache's entries (``{fingerprint: entry}``); an absent file is an empty cache. A file that is not a
    cache of this version is a ConfigError."""
    p = Path(path)
    if not p.exists():
        return {}
    data = read_json_file("oracle cache", "file", p, MAX_CACHE_BYTES, "Oracle cache file written by this module")
    if not isinstance(data, dict) or data.get("version") != CACHE_VERSION or not isinstance(data.get("entries"), dict):
        raise ConfigError("oracle cache", "version", data.get("version") if isinstance(data, dict) else data,
                          f"a cache of version {CACHE_VERSION} (regenerate: "
                          "kairos-gym oracle-cache)")
    return data["entries"]


def save(entries: Mapping[str, Any], path: Path | str = CACHE) -> None:
    """Write the cache (entries sorted by task and instance, so diffs stay readable)."""
    order = sorted(entries, key=lambda k: (entries[k].get("task", ""), entries[k].get("instance", ""), k))
    text = json.dumps({"version": CACHE_VERSION, "entries": {k: entries[k] for k in order}}, indent=1,
                      sort_keys=False)
    tmp = Path(f"{path}.tmp")
    tmp.write_text(text + "\n", encoding="utf-8")
    os.replace(tmp, path)  # atomic: an interrupted regeneration never leaves a truncated cache


def run_oracle(sc: ScenarioConfig, seed: int, bases: Bases, fixed_chunks: bool = True,
               progress: Callable[[], Any] | None = None) -> dict[str, Any]:
    """A fresh Oracle run of one instance: its stored figures, the checks, the Oracle's counters and wall time."""
    t0 = time.perf_counter()
    o = Oracle(sc, seed=seed, bases=list(bases), fixed_chunks=fixed_chunks)
    from kairos_gym.agents.runner import simulate

    s, _ = simulate(o, sc, seed, progress=progress)
    return {"summary": {k: s[k] for k in STORED}, "checks": _checks(sc, seed), "oracle": o.stats,
            "bases": [b if isinstance(b, str) else [b[0], dict(b[1])] for b in bases], "fixed_chunks": fixed_chunks,
            "wall_s": round(time.perf_counter() - t0, 1)}


def lookup(entries: Mapping[str, Any], sc: ScenarioConfig, seed: int, bases: Bases,
           fixed_chunks: bool = True) -> dict[str, Any] | None:
    """The cached summary of this Oracle run when present and not stale (its checks reproduce), else None."""
    e = entries.get(fingerprint(sc, seed, bases, fixed_chunks))
    if e is None:
        return None
    if repr(_checks(sc, seed)) != repr({k: list(v) for k, v in e["checks"].items()}):
        return None
    return dict(e["summary"])


def oracle_summary(entries: Mapping[str, Any], sc: ScenarioConfig, seed: int, bases: Bases,
                   fixed_chunks: bool = True, progress: Callable[[], Any] | None = None) -> tuple[dict[str, Any], str]:
    """``(summary, "cache" | "run")``: the cached figures, or a fresh run's when the entry is missing or stale."""
    got = lookup(entries, sc, seed, bases, fixed_chunks)
    if got is not None:
        return got, "cache"
    return run_oracle(sc, seed, bases, fixed_chunks, progress)["summary"], "run"


def compare(ours: Mapping[str, Any], theirs: Mapping[str, Any]) -> dict[str, Any]:
    """Two caches' entries (:func:`load`) compared on the keys of ``ours``: equal when the stored summary and the
    checks are equal (the wall times and Oracle counters are machine or search figures, not results). Returns
    ``{"compared", "equal", "differ": [(task, instance)], "missing": [(task, instance)]}`` (missing: in ``ours``
    only)."""
    out: dict[str, Any] = {"compared": 0, "equal": 0, "differ": [], "missing": []}
    for key, e in ours.items():
        other = theirs.get(key)
        if other is None:
            out["missing"].append((e.get("task"), e.get("instance")))
            continue
        out["compared"] += 1
        if e["summary"] == other["summary"] and e["checks"] == other["checks"]:
            out["equal"] += 1
        else:
            out["differ"].append((e.get("task"), e.get("instance")))
    return out


def task_bases(best_static: Mapping[str, Any] | None, extra: Sequence[Any] = ()) -> list[Any]:
    """The leaderboard Oracle's bases for a task: :data:`DEFAULT_BASES`, then the task's own ``extra`` bases
    (``Task.oracle_bases``), then its tuned best-static rule (when tuned and not already one of them), so the
    Oracle is never below any of them on an instance."""
    bases: list[Any] = list(DEFAULT_BASES)
    for b in extra:
        rule: Any = b if isinstance(b, str) else [b[0], dict(b[1])]
        if rule not in bases:
            bases.append(rule)
    if best_static:
        name, params = best_static["policy"], dict(best_static["params"])
        rule = name if not params else [name, params]
        if rule not in bases:
            bases.append(rule)
    return bases


def oracle_job(arg: tuple[ScenarioConfig, int, Bases], tick: Callable[[], Any] | None) -> dict[str, Any]:
    """One backend task: :func:`run_oracle` of (scenario, seed, bases)."""
    sc, seed, bases = arg
    return run_oracle(sc, seed, bases, progress=tick)


SAVE_EVERY = 8
"""Oracle runs between two saves of the cache file (an interrupted regeneration keeps what it finished)."""


def regenerate(tasks: str | None = None, max_requests: int | None = None, out: Path | str = CACHE,
               log: Callable[[str], Any] = print, backend: Backend | None = None,
               suite: Sequence[Task] | None = None) -> dict[str, Any]:
    """Compute the Oracle on the test instances of the suite's tasks (``tasks``: a ``--tasks`` spec, None: all;
    ``suite``: another suite, for tests), once per distinct base set of the task's track sections (best-static is
    tuned per track), skipping instances of more than ``max_requests`` requests, and merge the entries into
    ``out``. The Oracle runs go to ``backend`` (serial by default; a process pool or Ray give the same entries,
    their ``wall_s`` aside), :data:`SAVE_EVERY` at a time, the cache saved after each group."""
    from kairos_gym.benchmark.entries import tune_static
    from kairos_gym.benchmark.suite import SUITE, TRACKS, on_track, select_tasks
    from kairos_gym.evaluation.backends import SerialBackend
    from kairos_gym.evaluation.backends import Task as BackendTask
    from kairos_gym.progress import or_silent
    from kairos_gym.sim import Simulator

    if suite is None:
        suite = SUITE if tasks is None else select_tasks(tasks)
    backend = backend or SerialBackend()
    entries = dict(load(out))
    jobs: list[tuple[str, str, ScenarioConfig, int, list[Any], str, int]] = []
    for t in suite:
        base = t.base()
        # the leaderboard tunes best-static per track section, and the Oracle's bases include it: one Oracle run
        # per distinct base set (the Oracle itself always runs on the exact track)
        base_sets: list[list[Any]] = []
        for track in TRACKS:
            bases = task_bases(tune_static(t, on_track(base, track), or_silent(None))["chosen"], t.oracle_bases)
            if bases not in base_sets:
                base_sets.append(bases)
        for bases in base_sets:
            for inst in t.test:
                sc = inst.scenario(base)
                n = Simulator(sc, seed=inst.seed).n
                if max_requests is not None and n > max_requests:
                    log(f"{t.name} {inst.label}: {n} requests > {max_requests}, skipped")
                    continue
                if lookup(entries, sc, inst.seed, bases) is not None:
                    log(f"{t.name} {inst.label}: cached")
                    continue
                jobs.append((t.name, inst.label, sc, inst.seed, bases, fingerprint(sc, inst.seed, bases), n))
    for i in range(0, len(jobs), SAVE_EVERY):
        group = jobs[i:i + SAVE_EVERY]
        done = backend.map([BackendTask(oracle_job, (sc, seed, bases), f"{name} {label}", policy="oracle")
                            for name, label, sc, seed, bases, _key, _n in group])
        for (name, label, _sc, _seed, bases, key, n), e in zip(group, done, strict=True):
            entries[key] = {"task": name, "instance": label, **e}
            log(f"{name} {label}: {n} requests, SLO attainment {e['summary']['slo_attainment']:.4f}, "
                f"{e['wall_s']:.1f} s (bases {bases})")
        save(entries, out)
    return entries
