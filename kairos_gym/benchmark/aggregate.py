"""Aggregate scores across tasks and their uncertainty: rliable's estimators (Agarwal et al., "Deep
Reinforcement Learning at the Edge of the Statistical Precipice", NeurIPS 2021) in numpy.

``rliable`` itself is not a dependency: it pulls in arch, scipy, seaborn and pandas. The estimators below are
its definitions (``rliable/metrics.py`` and ``rliable/library.py``, version 1.2.0), generalised to tasks with
different numbers of instances; with the same number of instances on every task they are rliable's exactly.

Scores come as one array per task, one score per instance (a fixed seed or trace window every policy runs
on). Every estimator also accepts a leading batch axis (arrays of shape ``(B, n_task)``) and then returns
``B`` values: this is how the bootstrap evaluates all its resamples at once.

- :func:`iqm`: interquartile mean of all scores pooled: ``scipy.stats.trim_mean(scores, 0.25)``, i.e. the mean
  of the sorted scores after dropping ``floor(0.25 * N)`` from each end (N scores in all).
- :func:`aggregate_mean`: the mean over tasks of the per-task mean.
- :func:`aggregate_median`: the median over tasks of the per-task mean.
- :func:`optimality_gap`: ``gamma - mean(min(score, gamma))`` over all scores pooled (default ``gamma = 1``:
  how far below the reference a policy stays; scores above it count as ``gamma``).
- :func:`probability_of_improvement`: the mean over tasks of ``P(X > Y)``, ties counting 1/2. ``paired=True``
  compares X and Y on the same instance (``mean_i [x_i > y_i] + 1/2 [x_i = y_i]``), which is right when both
  ran on the same seeds/windows; ``paired=False`` is rliable's (all ``n_x * n_y`` pairs: the Mann-Whitney U
  statistic over ``n_x n_y``).
- :func:`stratified_bootstrap`: percentile intervals from resampling the instances of each task with
  replacement, separately per task (the strata), :data:`BOOTSTRAP_REPS` times, with a seeded
  ``numpy.random.Generator``. ``paired=True`` draws the same instance indices for every score set, so a paired
  statistic keeps its pairs; ``paired=False`` resamples each score set on its own (rliable's
  ``StratifiedIndependentBootstrap``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from kairos_gym.errors import ConfigError
from kairos_gym.evaluation.stats import CONFIDENCE

BOOTSTRAP_REPS = 50_000
"""Resamples of :func:`stratified_bootstrap` (rliable's default for interval estimates)."""

BOOTSTRAP_SEED = 0
"""Seed of the leaderboard's bootstrap generator (``numpy.random.default_rng``): the intervals reproduce."""

MAX_BOOTSTRAP_CELLS = 50_000_000
"""Largest ``reps * instances`` one bootstrap may draw (index array cells), checked before allocation."""

Tasks = Sequence[Any]
"""Scores of one policy: one array per task (shape ``(n_task,)``, or ``(B, n_task)`` for B resamples)."""


def _tasks(tasks: Tasks, what: str = "scores") -> list[np.ndarray]:
    out = [np.asarray(t, dtype=float) for t in tasks]
    if not out:
        raise ConfigError("aggregate", what, tasks, "at least one task")
    for t in out:
        if t.ndim not in (1, 2) or t.shape[-1] == 0:
            raise ConfigError("aggregate", what, t.shape, "per task a non-empty array (n,) or (batch, n)")
        if not np.all(np.isfinite(t)):
            raise ConfigError("aggregate", what, t, "finite numbers")
    return out


def _pooled(tasks: Tasks) -> np.ndarray:
    return np.concatenate(_tasks(tasks), axis=-1)


def iqm(tasks: Tasks) -> Any:
    """Interquartile mean of every score of every task pooled (``scipy.stats.trim_mean(x, 0.25)``)."""
    x = np.sort(_pooled(tasks), axis=-1)
    n = x.shape[-1]
    cut = int(0.25 * n)
    return x[..., cut:n - cut].mean(axis=-1)


def aggregate_mean(tasks: Tasks) -> Any:
    """Mean over tasks of each task's mean score."""
    return np.mean(np.stack([t.mean(axis=-1) for t in _tasks(tasks)], axis=-1), axis=-1)


def aggregate_median(tasks: Tasks) -> Any:
    """Median over tasks of each task's mean score."""
    return np.median(np.stack([t.mean(axis=-1) for t in _tasks(tasks)], axis=-1), axis=-1)


def optimality_gap(tasks: Tasks, gamma: float = 1.0) -> Any:
    """``gamma - mean(min(score, gamma))`` over every score pooled."""
    return gamma - np.minimum(_pooled(tasks), gamma).mean(axis=-1)


def probability_of_improvement(x_tasks: Tasks, y_tasks: Tasks, paired: bool = True) -> Any:
    """Mean over tasks of ``P(X > Y) + 1/2 P(X = Y)``: per instance when ``paired`` (same instances, same
    order), over all pairs of instances otherwise (rliable's definition)."""
    xs, ys = _tasks(x_tasks, "x"), _tasks(y_tasks, "y")
    if len(xs) != len(ys):
        raise ConfigError("aggregate", "tasks", (len(xs), len(ys)), "the same tasks for X and Y")
    per_task = []
    for x, y in zip(xs, ys, strict=True):
        if paired:
            if x.shape[-1] != y.shape[-1]:
                raise ConfigError("aggregate", "instances", (x.shape[-1], y.shape[-1]),
                                  "the same instances for X and Y (paired)")
            per_task.append(((x > y) + 0.5 * (x == y)).mean(axis=-1))
        else:
            a, b = x[..., :, None], y[..., None, :]
            per_task.append(((a > b) + 0.5 * (a == b)).mean(axis=(-2, -1)))
    return np.mean(np.stack(per_task, axis=-1), axis=-1)


def percentile_interval(values: np.ndarray, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """The central ``confidence`` interval of bootstrap statistics (``numpy.percentile``, linear)."""
    tail = 100.0 * (1.0 - confidence) / 2.0
    lo, hi = np.percentile(values, [tail, 100.0 - tail])
    return float(lo), float(hi)


def stratified_bootstrap(statistic: Callable[..., Any], score_sets: Sequence[Tasks], *,
                         reps: int = BOOTSTRAP_REPS, rng: np.random.Generator | int = BOOTSTRAP_SEED,
                         paired: bool = True, confidence: float = CONFIDENCE) -> tuple[float, float, float]:
    """``(point, low, high)``: ``statistic(*score_sets)`` and its stratified-bootstrap percentile interval.

    ``score_sets`` are the arguments of ``statistic``, each a list of per-task score arrays (one policy's
    scores, say, or two for :func:`probability_of_improvement`). Each of ``reps`` resamples draws, for every
    task, as many instances as it has, uniformly with replacement, and evaluates ``statistic`` on the resampled
    arrays (shape ``(reps, n_task)``). ``paired``: one set of indices per task, shared by every score set;
    otherwise each score set draws its own. ``rng``: a Generator or a seed.
    """
    if isinstance(reps, bool) or not isinstance(reps, int) or reps < 1:
        raise ConfigError("aggregate", "reps", reps, "a whole number >= 1")
    sets = [_tasks(s, "score_sets") for s in score_sets]
    if not sets:
        raise ConfigError("aggregate", "score_sets", score_sets, "at least one set of per-task scores")
    sizes = [[t.shape[-1] for t in s] for s in sets]
    if any(len(s) != len(sizes[0]) for s in sizes) or (paired and any(s != sizes[0] for s in sizes)):
        raise ConfigError("aggregate", "score_sets", sizes, "the same tasks (and, paired, the same instances)")
    if any(t.ndim != 1 for s in sets for t in s):
        raise ConfigError("aggregate", "score_sets", "batched", "one score per instance (1-d arrays)")
    cells = reps * sum(sizes[0]) * (1 if paired else len(sets))
    if cells > MAX_BOOTSTRAP_CELLS:
        raise ConfigError("aggregate", "reps", reps, f"reps * instances <= {MAX_BOOTSTRAP_CELLS:,} ({cells:,})")
    gen = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
    point = float(statistic(*sets))
    if paired:
        idx = [gen.integers(0, n, size=(reps, n)) for n in sizes[0]]
        resampled = [[t[i] for t, i in zip(s, idx, strict=True)] for s in sets]
    else:
        resampled = [[t[gen.integers(0, t.shape[0], size=(reps, t.shape[0]))] for t in s] for s in sets]
    lo, hi = percentile_interval(np.asarray(statistic(*resampled), dtype=float), confidence)
    return point, lo, hi


__all__ = ["BOOTSTRAP_REPS", "BOOTSTRAP_SEED", "aggregate_mean", "aggregate_median", "iqm", "optimality_gap",
           "percentile_interval", "probability_of_improvement", "stratified_bootstrap"]
