"""The v2 leaderboard run (``kairos-gym leaderboard --suite v2``; docs/benchmark.md, "Suite v2"): every entry on every
test instance of every task of :mod:`kairos_gym.benchmark.suite_v2`, on one information track.

Entries: registry policies, ``best-rule`` (the tuned-rule baseline, below) and users' files or checkpoints, all as
picklable backend tasks (:mod:`kairos_gym.benchmark.entries`). The Oracle is not an entry of v2: at production
length it costs minutes per instance (docs/policies.md), so v2 scores raw SLO points, not Oracle-normalised ones.

``best-rule`` searches :data:`RULE_GRID`: the static queue and length thresholds of v1's ``best-static`` and the
predictive ``slo-guard`` rule (agents/slo_guard.py: predicted TTFT against the SLO, predicted deflection time) at
:data:`GUARD_FRACTIONS`. It is tuned on the **train split only**: on a seen task, the rule with the best mean SLO
attainment on that task's train instances; on an unseen task (whose data a learnt entry never sees either), the rule
with the best mean over every seen task's train instances. Ties go to the earlier rule of the grid.

The statistics are :mod:`kairos_gym.benchmark.board_v2_stats`; the markdown :mod:`kairos_gym.benchmark.board_v2_report`.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from kairos_gym.agents.policy_file_loader import ExternalPolicy, probe
from kairos_gym.benchmark.entries import (
    STATIC_GRID,
    builtin_entry,
    check_names,
    choose,
    entry_task,
    external_entry,
    tune_static,
    tuned_entry,
)
from kairos_gym.benchmark.provenance import provenance
from kairos_gym.benchmark.scoring import run_scores
from kairos_gym.benchmark.suite import Task, check_suite, on_track
from kairos_gym.benchmark.suite_v2 import NAME
from kairos_gym.benchmark.trained_on import declared
from kairos_gym.errors import ConfigError
from kairos_gym.evaluation.backends import Backend, SerialBackend
from kairos_gym.evaluation.evaluate import check_policies
from kairos_gym.progress import RunProgress, or_silent
from kairos_gym.scenario import ScenarioConfig

BEST_RULE = "best-rule"
"""The tuned-rule entry of v2."""
GUARD_FRACTIONS = (0.25, 0.5, 0.75, 1.0, 1.5)
"""``slo-guard``'s fractions of the TTFT SLO in :data:`RULE_GRID`."""
RULE_GRID: tuple[tuple[str, dict[str, Any]], ...] = (
    *STATIC_GRID, *(("slo-guard", {"fraction": f}) for f in GUARD_FRACTIONS))
"""The rules ``best-rule`` chooses from: v1's static grid, then the predictive rule."""
DEFAULT_POLICIES_V2 = ("no-deflect,always-deflect-ls,sq-ls,sl-ls,pending-switch,slo-guard,best-rule,kairos,ppo,"
                       "distilled-oracle")
"""The entries of a v2 run unless ``--policies`` says otherwise (``kairos-exact`` is ``kairos`` on the exact track:
one row)."""
REFUSED_V2 = {"oracle": "the Oracle is not a v2 entry (minutes per production-length instance)",
              "kairos-exact": "kairos on the exact track is the kairos row (one row per distinct policy)",
              "best-static": "v2's tuned-rule entry is best-rule (static and predictive rules)"}
"""Registry names a v2 run refuses, with why."""


def shipped_checkpoints() -> dict[str, Path]:
    """The checkpoint folder of each shipped learnt registry entry (agents/ppo.py)."""
    from kairos_gym.agents.ppo import DEFAULT_CHECKPOINT, GENERAL_CHECKPOINT

    return {"ppo": DEFAULT_CHECKPOINT.parent, "distilled-oracle": GENERAL_CHECKPOINT.parent}


def card(label: str, kind: str, spec: str | None = None) -> tuple[list[str] | None, str | None]:
    """``(trained_on, how_trained)`` of an entry: a shipped learnt entry's or a submitted checkpoint's, as its
    folder's config.yaml declares them (:mod:`kairos_gym.benchmark.trained_on`); ``(None, None)`` for a rule."""
    folder = shipped_checkpoints().get(label) if kind == "built-in" else (spec if kind == "checkpoint" else None)
    if folder is None:
        return None, None
    fams, how = declared(folder)
    return (list(fams) if fams else None), how


def check_v2_entries(policies: Sequence[str], externals: Sequence[ExternalPolicy]) -> None:
    """The names: registry policies or best-rule, none of :data:`REFUSED_V2`, each once, kairos among them (the
    comparison)."""
    check_names("leaderboard", policies, externals, REFUSED_V2, ("kairos",), tuned=BEST_RULE)


def tune_rules(suite: Sequence[Task], bases: Mapping[str, ScenarioConfig], bar: RunProgress,
               backend: Backend | None = None) -> dict[str, dict[str, Any]]:
    """``best-rule``'s choice per task: ``{"chosen": {rule, policy, params, train_score}, "from": what it was tuned
    on, "grid": [...]}`` (module docstring: a seen task on its own train instances, an unseen one on every seen
    task's)."""
    seen = [t for t in suite if t.split != "unseen"]
    out = {t.name: {**tune_static(t, bases[t.name], bar, backend, RULE_GRID), "from": "its own train instances"}
           for t in seen}
    unseen = [t for t in suite if t.split == "unseen"]
    if unseen:
        pooled: list[float | None] = []
        for k in range(len(RULE_GRID)):
            vals = [s for t in seen if (s := out[t.name]["grid"][k]["train_score"]) is not None]
            pooled.append(sum(vals) / len(vals) if vals else None)
        shared = {**choose(RULE_GRID, pooled), "from": "every seen task's train instances (mean of the task means)"}
        out.update({t.name: shared for t in unseen})
    return out


def run_v2(policies: Sequence[str], externals: Sequence[ExternalPolicy] = (), suite: Sequence[Task] | None = None,
           progress: RunProgress | None = None, command: str = "kairos-gym leaderboard --suite v2",
           track: str = "exact", backend: Backend | None = None) -> dict[str, Any]:
    """Run every entry on every test instance of ``suite`` (default: suite v2) on ``track``; the JSON-ready result
    (per entry and task the per-instance SLO attainment in test-instance order, best-rule's choices, the tasks)."""
    from kairos_gym.benchmark.suite_v2 import SUITE

    t0 = time.perf_counter()
    suite = check_suite(SUITE if suite is None else suite)
    policies = list(policies)
    check_v2_entries(policies, externals)
    bases = {t.name: on_track(t.base(), track) for t in suite}
    registry = [p for p in policies if p != BEST_RULE]
    for t in suite:
        check_policies("leaderboard", "--policies", registry, bases[t.name], t.test[0].seed)
    for ext in externals:
        for t in suite:
            probe(ext, t.test[0].scenario(bases[t.name]), t.test[0].seed)
    bar = or_silent(progress)
    n_test = sum(len(t.test) for t in suite)
    seen_train = sum(len(t.train) for t in suite if t.split != "unseen")
    bar.start((len(policies) + len(externals)) * n_test + (len(RULE_GRID) * seen_train if BEST_RULE in policies
                                                            else 0))
    best = tune_rules(suite, bases, bar, backend) if BEST_RULE in policies else {}

    entries = [tuned_entry(lambda task, sc: best[task.name]["chosen"], BEST_RULE) if p == BEST_RULE
               else builtin_entry(p) for p in policies]
    entries += [external_entry(e) for e in externals]
    specs = {e.label: e.spec for e in externals}
    jobs = [entry_task(e, t, inst.scenario(bases[t.name]), inst.seed, f"{t.name} {e.label} {inst.label}")
            for e in entries for t in suite for inst in t.test]
    out = iter((backend or SerialBackend(retries=0)).map(jobs, bar))
    scores: dict[str, dict[str, list[float]]] = {}
    for e in entries:
        scores[e.label] = {t.name: run_scores([next(out) for _ in t.test]) for t in suite}
    return {
        "suite": NAME, "command": command, **provenance(), "track": track,
        "tasks": [{"task": t.name, "family": t.family, "split": t.split, "scenario": bases[t.name].name,
                   "burn_in_requests": bases[t.name].slo.burn_in_requests,
                   "scored_requests": bases[t.name].workload.num_requests - bases[t.name].slo.burn_in_requests,
                   "test": t.describe("test"), "train": t.describe("train"), "n_test": len(t.test),
                   "slo": {"ttft_s": bases[t.name].slo.ttft_s, "tbt_s": bases[t.name].slo.tbt_s}} for t in suite],
        "entries": [dict(zip(("label", "kind", "trained_on", "how_trained"),
                             (e.label, e.kind, *card(e.label, e.kind, specs.get(e.label))), strict=True))
                    for e in entries],
        "scores": scores,
        "best_rule": best,
        "elapsed_s": round(time.perf_counter() - t0, 1),
    }


def restrict_tasks(res: dict[str, Any], names: Sequence[str], path: str) -> dict[str, Any]:
    """A saved v2 run reduced to the tasks ``names`` (``--tasks`` with ``--from-json``: e.g. the unseen tasks of a
    whole board, to merge it with a run of those tasks alone); its entries' scores on the other tasks and best-rule's
    choices there dropped. ConfigError naming ``--tasks`` when the run lacks one of them."""
    have = [t["task"] for t in res["tasks"]]
    missing = [n for n in names if n not in have]
    if missing:
        raise ConfigError("leaderboard", "--tasks", ",".join(missing), f"tasks of the saved run {path} ("
                          + ", ".join(have) + ")")
    keep = [t for t in res["tasks"] if t["task"] in names]
    return {**res, "tasks": keep,
            "scores": {lab: {t["task"]: s[t["task"]] for t in keep} for lab, s in res["scores"].items()},
            "best_rule": {k: v for k, v in res.get("best_rule", {}).items() if k in names}}


def merge_runs(a: dict[str, Any], b: dict[str, Any], path: str) -> dict[str, Any]:
    """Two saved v2 runs of one track as one: the same tasks and test instances, ``b``'s entries added after
    ``a``'s; an entry in both must have the same scores on every instance (the runs are deterministic: e.g.
    kairos in each of two submissions). ConfigError naming ``--from-json`` otherwise."""
    key = [(t["task"], t["n_test"], t["test"]) for t in a["tasks"]]
    if key != [(t["task"], t["n_test"], t["test"]) for t in b["tasks"]]:
        raise ConfigError("leaderboard", "--from-json", path, f"a {a['track']}-track run on the same tasks and "
                          "test instances as the first one (to merge their entries)")
    out = {**a, "entries": list(a["entries"]), "scores": dict(a["scores"]),
           "best_rule": {**a.get("best_rule", {}), **b.get("best_rule", {})},
           "command": a["command"] + " + " + b["command"], "elapsed_s": a["elapsed_s"] + b["elapsed_s"]}
    for e in b["entries"]:
        lab = e["label"]
        if lab in out["scores"]:
            if out["scores"][lab] != b["scores"][lab]:
                raise ConfigError("leaderboard", "--from-json", path, f"runs whose common entry {lab} has the same "
                                  "scores (the runs differ: other code or instances)")
            continue
        out["entries"].append(e)
        out["scores"][lab] = b["scores"][lab]
    return out
