"""A training recipe over its seeds on a v2 leaderboard run (``kairos-gym leaderboard --suite v2 --seed-group``).

One trained agent is one draw of its recipe: two seeds of the same config can land 16 points apart on the unseen
families (docs/training.md). A **seed group** names the board entries that are the same recipe trained with
different seeds (``NAME=LABEL,LABEL,...``), and its row reports the recipe, not one agent:

- the headline (the unseen tasks' mean SLO attainment, points, each task weighted equally, as
  :mod:`kairos_gym.benchmark.board_v2_stats` defines it) of the recipe: the mean over its seeds, every seed on the
  same test instances;
- its interval: a **two-level bootstrap** (95% percentile): each resample draws the seeds with replacement, and
  within each task the instances with replacement, so the interval carries the seed-to-seed spread as well as the
  instances' (a single entry's interval carries only the latter);
- *vs kairos* and *vs best-rule* (when the board has it: the predictive tuned-rule baseline a learnt entry must
  beat): the recipe's headline minus the entry's on the same resampled instances (paired), same bootstrap;
- each seed's own headline, so the spread is visible.

With few seeds the seed level of the bootstrap is coarse (5 seeds: 126 distinct resamples); the interval is a
description of these seeds, not a guarantee about a sixth.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from kairos_gym.benchmark.aggregate import BOOTSTRAP_SEED, percentile_interval
from kairos_gym.errors import ConfigError
from kairos_gym.evaluation.stats import CONFIDENCE

MAX_GROUPS = 8
"""Most seed groups of one report."""
MAX_SEEDS = 16
"""Most entries (seeds) of one group."""
MIN_SEEDS = 2
"""Fewest entries of one group."""
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]{0,63}")
"""A group's name: a letter or digit, then up to 63 of letters, digits, ``_ . + -``."""


def parse_seed_group(where: str, flag: str, spec: Any) -> tuple[str, tuple[str, ...]]:
    """``NAME=LABEL,LABEL,...`` as (name, labels); one ConfigError naming the flag, the value and the form."""
    form = (f"NAME=LABEL,LABEL,... ({MIN_SEEDS} to {MAX_SEEDS} distinct entry labels of the board, e.g. "
            "ppo-v2=checkpoint:runs/a,checkpoint:runs/b; NAME: letters, digits, _ . + -, at most 64)")
    if not isinstance(spec, str) or "=" not in spec:
        raise ConfigError(where, flag, spec, form)
    name, _, rest = spec.partition("=")
    labels = tuple(s.strip() for s in rest.split(","))
    if (not NAME.fullmatch(name) or any(not s for s in labels) or not MIN_SEEDS <= len(labels) <= MAX_SEEDS
            or len(set(labels)) != len(labels)):
        raise ConfigError(where, flag, spec, form)
    return name, labels


def check_groups(where: str, flag: str, groups: Sequence[tuple[str, tuple[str, ...]]],
                 entries: Sequence[str]) -> dict[str, tuple[str, ...]]:
    """The groups as a dict, each name once and not an entry's, each label an entry of the board."""
    if len(groups) > MAX_GROUPS:
        raise ConfigError(where, flag, len(groups), f"at most {MAX_GROUPS} seed groups")
    out: dict[str, tuple[str, ...]] = {}
    for name, labels in groups:
        if name in out or name in entries:
            raise ConfigError(where, flag, name, "a group name used once, not an entry's label")
        missing = [lab for lab in labels if lab not in entries]
        if missing:
            raise ConfigError(where, flag, f"{name}={','.join(labels)}",
                              f"labels of the board's entries (not among them: {', '.join(missing)}; the entries: "
                              f"{', '.join(entries)})")
        out[name] = labels
    return out


def _task_matrices(res: Mapping[str, Any], labels: Sequence[str], split: str) -> list[np.ndarray]:
    """Per task of ``split``: the scores of ``labels`` as a (seeds, instances) array."""
    return [np.asarray([res["scores"][lab][t["task"]] for lab in labels], dtype=float)
            for t in res["tasks"] if t["split"] == split]


def _two_level(mats: Sequence[np.ndarray], ref: Sequence[np.ndarray] | None, reps: int,
               gen: np.random.Generator) -> np.ndarray:
    """``reps`` resampled headlines (points) of the recipe (minus ``ref``'s on the same instances, if given): seeds
    drawn with replacement once per resample (shared by the tasks), instances within each task."""
    k = mats[0].shape[0]
    seeds = gen.integers(0, k, size=(reps, k))
    w_seed = np.stack([np.bincount(row, minlength=k) for row in seeds]).astype(float) / k  # (reps, k)
    total = np.zeros(reps)
    for i, m in enumerate(mats):
        n = m.shape[1]
        inst = gen.integers(0, n, size=(reps, n))
        w_inst = np.stack([np.bincount(row, minlength=n) for row in inst]).astype(float) / n  # (reps, n)
        task = np.einsum("rk,kn,rn->r", w_seed, m, w_inst)
        if ref is not None:
            task = task - w_inst @ ref[i]
        total += task
    return 100 * total / len(mats)


COMPARISONS = ("kairos", "best-rule")
"""The entries a recipe is compared with (``vs_<entry>``), those the board has."""


def group_stats(res: Mapping[str, Any], groups: Mapping[str, Sequence[str]], reps: int = 20_000,
                comparisons: Sequence[str] = COMPARISONS, split: str = "unseen") -> list[dict[str, Any]]:
    """Per group: its seeds' headlines, the recipe's headline with its two-level bootstrap interval, and for each of
    ``comparisons`` the board has, the paired difference to it (``vs_<entry>``); the same for the seen tasks when
    the board has them. Points (x 100). Deterministic: the bootstrap draws from :data:`BOOTSTRAP_SEED`."""
    if isinstance(reps, bool) or not isinstance(reps, int) or not 1 <= reps <= 1_000_000:
        raise ConfigError("seed groups", "reps", reps, "a whole number 1..1000000")
    out = []
    for name, labels in groups.items():
        row: dict[str, Any] = {"name": name, "members": list(labels)}
        for sp in (split, "seen"):
            mats = _task_matrices(res, labels, sp)
            if not mats:
                row[sp] = None
                continue
            gen = np.random.default_rng(BOOTSTRAP_SEED)
            per_seed = 100 * np.mean([m.mean(axis=1) for m in mats], axis=0)  # (seeds,)
            lo, hi = percentile_interval(_two_level(mats, None, reps, gen), CONFIDENCE)
            row[sp] = {"mean": float(per_seed.mean()), "low": float(lo), "high": float(hi),
                       "per_seed": [float(x) for x in per_seed]}
            for comparison in (comparisons if sp == split else ()):
                if comparison not in res["scores"]:
                    continue
                ref = [np.asarray(res["scores"][comparison][t["task"]], dtype=float)
                       for t in res["tasks"] if t["split"] == sp]
                point = float(per_seed.mean() - 100 * np.mean([r.mean() for r in ref]))
                lo, hi = percentile_interval(_two_level(mats, ref, reps, np.random.default_rng(BOOTSTRAP_SEED)),
                                             CONFIDENCE)
                row["vs_" + comparison] = {"mean": point, "low": float(lo), "high": float(hi)}
        out.append(row)
    return out


__all__ = ["COMPARISONS", "MAX_GROUPS", "MAX_SEEDS", "MIN_SEEDS", "check_groups", "group_stats", "parse_seed_group"]
