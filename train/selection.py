"""Choosing between two distilled students on a train-side selection set (docs/training.md, "A second selection
protocol"): ``kairos-gym select --candidate DIR --incumbent DIR``.

The **selection set** (:func:`selection_cases`): every family x tier of a distill config x both information
tracks, at load 1 (:data:`~kairos_gym.train.domain.VALIDATION_LOAD`). A synthetic family: ``n`` train-side seeds
drawn by ``numpy.random.default_rng(SELECTION_SEED)`` in ``[TRAIN_SEED_MIN, 2**31)``, skipping every seed the
config's label jobs use (:func:`kairos_gym.train.distill.label_jobs`); a trace family: its validation window (the
train window never labelled, :func:`kairos_gym.train.domain.validation_instance`) with ``n`` noise seeds on the
realistic track and one run on the exact track (the seed changes nothing there: it is not reported as if it did).
No case is a test instance of the suite (test seeds 0-9, test windows after the train windows).

**Criteria** (:func:`decide`; the candidate against the incumbent, the realistic track unless said), each on the
18 cells (family x tier) of a track, every instance paired across the three policies (candidate, incumbent,
Kairos on the same track):

1. P(> Kairos): per cell the share of instances where the policy's SLO attainment beats Kairos's (ties 1/2),
   averaged over the cells; the candidate's minus the incumbent's, paired over the cells, must have its 95%
   Student-t interval above 0.
2. Collapses: cells whose mean SLO attainment is more than :data:`COLLAPSE` below Kairos's; the candidate has no
   more than the incumbent.
3. Mean SLO attainment over the cells, on each track: the candidate's is at least the incumbent's minus
   :data:`TOLERANCE`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from kairos_gym.benchmark.suite import TRAIN_SEED_MIN
from kairos_gym.errors import ConfigError
from kairos_gym.evaluation.stats import mean_ci

SELECTION_SEED = 20261201
"""Seeds the generator that draws the selection set's synthetic seeds."""
DEFAULT_INSTANCES = 20
MAX_INSTANCES = 1000
"""Most instances per cell and track."""
COLLAPSE = 0.05
"""A cell collapses when its mean SLO attainment is more than this below Kairos's."""
TOLERANCE = 0.005
"""Largest loss of mean SLO attainment (over the cells) criterion 3 allows."""
TRACKS = ("exact", "realistic")
WHERE = "selection"


@dataclass(frozen=True)
class Cell:
    """One family x tier x track with its instances (:class:`kairos_gym.train.domain.ValidationCase` each)."""

    family: str
    tier: str
    track: str
    cases: tuple[Any, ...]

    @property
    def label(self) -> str:
        """``task@track``, the label of its cases (every case of a cell has the same)."""
        return self.cases[0].label


def selection_seeds(n: int, exclude: set[int]) -> list[int]:
    """The first ``n`` seeds of the selection generator in ``[TRAIN_SEED_MIN, 2**31)`` not in ``exclude``, distinct."""
    rng = np.random.default_rng(SELECTION_SEED)
    out: list[int] = []
    while len(out) < n:
        s = int(rng.integers(TRAIN_SEED_MIN, 2**31))
        if s not in exclude and s not in out:
            out.append(s)
    return out


def label_seeds(cfg: Any) -> set[int]:
    """Every seed the label jobs of distill config ``cfg`` draw (round 0 and its DAgger rounds), reproduced from
    its ``label_seed`` exactly as :func:`kairos_gym.train.distill.run` draws them."""
    from kairos_gym.train.distill import LABEL_RNG_TAG, label_jobs

    rng = np.random.default_rng([cfg.label_seed, LABEL_RNG_TAG])
    jobs = label_jobs(cfg, cfg.instances_per_task, rng)
    for _ in range(cfg.dagger_rounds):
        jobs += label_jobs(cfg, cfg.dagger_instances_per_task, rng)
    return {int(j.instance.seed) for j in jobs}


def selection_cases(cfg: Any, n: int = DEFAULT_INSTANCES) -> list[Cell]:
    """The selection set of distill config ``cfg`` (see the module docstring), ``n`` instances per cell."""
    from kairos_gym.train.domain import ValidationCase, _suite, validation_instance

    from kairos_gym.benchmark.suite import Instance

    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_INSTANCES:
        raise ConfigError(WHERE, "--instances", n, f"a whole number from 1 to {MAX_INSTANCES}")
    seeds = selection_seeds(n, label_seeds(cfg))
    suite = _suite()
    cells = []
    for fam in cfg.families:
        for tier in cfg.tiers:
            task = suite[(fam, tier)]
            for track in TRACKS:
                if task.windows:
                    window = validation_instance(task).window_s
                    use = seeds if track == "realistic" else seeds[:1]
                    inst = [Instance(s, window) for s in use]
                else:
                    inst = [Instance(s) for s in seeds]
                cells.append(Cell(fam, tier, track, tuple(ValidationCase(fam, tier, track, i, True) for i in inst)))
    return cells


def score_cells(cells: Sequence[Cell], students: Mapping[str, Any]) -> dict[str, dict[str, list[float]]]:
    """``{cell label: {"kairos": [...], name: [...]}}``: SLO attainment per instance of Kairos (on the cell's
    track) and of every student (a greedy actor, run as the distill validation runs it)."""
    from kairos_gym.train.distill import run_student
    from kairos_gym.train.domain import run_reference

    out: dict[str, dict[str, list[float]]] = {}
    for cell in cells:
        row: dict[str, list[float]] = {"kairos": [run_reference(c, "kairos")["slo_attainment"] for c in cell.cases]}
        for name, actor in students.items():
            row[name] = [run_student(actor, c)["slo_attainment"] for c in cell.cases]
        out[cell.label] = row
    return out


def p_beats(x: Sequence[float], ref: Sequence[float]) -> float:
    """The share of paired instances where ``x`` beats ``ref`` (ties count 1/2): the leaderboard's probability of
    improvement (:func:`kairos_gym.benchmark.aggregate.probability_of_improvement`) on one cell."""
    from kairos_gym.benchmark.aggregate import probability_of_improvement

    return float(probability_of_improvement([np.asarray(x, dtype=float)], [np.asarray(ref, dtype=float)]))


def decide(scores: Mapping[str, Mapping[str, Sequence[float]]], candidate: str = "candidate",
           incumbent: str = "incumbent") -> dict[str, Any]:
    """The three criteria of the module docstring on the per-instance ``scores`` of :func:`score_cells`, their
    figures, and ``ship`` (all three hold)."""
    out: dict[str, Any] = {}
    for track in TRACKS:
        labels = [k for k in scores if k.endswith(f"@{track}")]
        if not labels:
            raise ConfigError(WHERE, "scores", track, "cells of both tracks")
        fig: dict[str, Any] = {}
        for who in (candidate, incumbent):
            fig[who] = {
                "p_beats_kairos": float(np.mean([p_beats(scores[k][who], scores[k]["kairos"]) for k in labels])),
                "collapses": sorted(k for k in labels
                                    if np.mean(scores[k][who]) < np.mean(scores[k]["kairos"]) - COLLAPSE),
                "mean_slo": float(np.mean([np.mean(scores[k][who]) for k in labels])),
            }
        diffs = [p_beats(scores[k][candidate], scores[k]["kairos"]) - p_beats(scores[k][incumbent], scores[k]["kairos"])
                 for k in labels]
        m, h = mean_ci(diffs)
        fig["p_diff"] = {"mean": m, "half_width": h, "cells": len(labels)}
        out[track] = fig
    r, e = out["realistic"], out["exact"]
    c1 = bool(r["p_diff"]["mean"] - r["p_diff"]["half_width"] > 0)
    c2 = len(r[candidate]["collapses"]) <= len(r[incumbent]["collapses"])
    c3 = all(t[candidate]["mean_slo"] >= t[incumbent]["mean_slo"] - TOLERANCE for t in (r, e))
    out["criteria"] = {"1_p_beats_kairos_above": c1, "2_no_more_collapses": c2, "3_mean_slo_within_tolerance": c3}
    out["ship"] = c1 and c2 and c3
    return out


def _actor(path: str, flag: str) -> Any:
    from kairos_gym.agents.checkpoint import load_policy

    p = Path(path)
    target = p / "policy.json" if p.is_dir() else p
    if not target.is_file():
        raise ConfigError(WHERE, flag, path, "a checkpoint folder holding policy.json (the safe format)")
    return load_policy(target)


def select(candidate: str, incumbent: str, config: str, instances: int, json_path: str | None = None) -> int:
    """Score the ``candidate`` and ``incumbent`` checkpoint folders (policy.json) and Kairos on the selection set of
    the distill ``config`` (``instances`` per cell and track), print each track's figures and the decision, and
    write the per-instance scores and the decision to ``json_path``. Bad input raises ConfigError before the runs."""
    from kairos_gym.train.distill import load_config

    students = {"candidate": _actor(candidate, "--candidate"), "incumbent": _actor(incumbent, "--incumbent")}
    cells = selection_cases(load_config(config), instances)
    t0 = time.perf_counter()
    scores = score_cells(cells, students)
    result = decide(scores)
    wall = time.perf_counter() - t0
    for track in TRACKS:
        t = result[track]
        print(f"{track}: P(> kairos) candidate {t['candidate']['p_beats_kairos']:.3f} incumbent "
              f"{t['incumbent']['p_beats_kairos']:.3f} (difference {t['p_diff']['mean']:+.3f} ± "
              f"{t['p_diff']['half_width']:.3f}, 95% t over {t['p_diff']['cells']} cells); mean SLO attainment "
              f"{t['candidate']['mean_slo']:.4f} vs {t['incumbent']['mean_slo']:.4f}; collapses "
              f"{t['candidate']['collapses']} vs {t['incumbent']['collapses']}")
    print(f"criteria {result['criteria']}: ship = {result['ship']} ({wall:.0f} s)")
    if json_path:
        from kairos_gym.output_file import write_text

        write_text(json_path, json.dumps({"scores": scores, "decision": result, "wall_s": round(wall, 1),
                                          "instances": instances, "config": config, "candidate": candidate,
                                          "incumbent": incumbent}, indent=1) + "\n", where="select", flag="--json")
    return 0
