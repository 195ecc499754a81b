"""Training callbacks: periodic evaluation with ``kairos/`` TensorBoard scalars, checkpoints, a progress bar."""

from __future__ import annotations

import json
import math
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from kairos_gym.agents.sb3_checkpoint import actor_from_sb3
from kairos_gym.train.checkpoints import run_episode, save_checkpoint, save_safe
from stable_baselines3.common.callbacks import BaseCallback

METRICS = ("ttft_p95", "tbt_violation_rate", "slo_attainment", "deflection_rate")
"""Figures logged under ``kairos/<name>`` and their gap to the reference under ``kairos/gap_<name>``."""


def eval_score(m: dict[str, Any]) -> tuple[float, float]:
    """Model-selection key (larger is better): SLO attainment, then lower P95 TTFT; for a
    :class:`DomainEvalCallback` evaluation (a ``normalized_score`` that is not None), the mean normalised score
    first."""
    if m.get("normalized_score") is not None:
        return (round(m["normalized_score"], 4), -m["ttft_p95"])
    return (round(m["slo_attainment"], 4), -m["ttft_p95"])


def reference_figures(scenario: Any, policy: str, seeds: list[int]) -> dict[str, float]:
    """Mean figures of a baseline policy over ``seeds`` on the simulator (same workloads as the env's)."""
    from kairos_gym.agents.runner import run_policy

    runs = [run_policy(policy, scenario, s) for s in seeds]
    return {k: float(sum(r[k] for r in runs) / len(runs)) for k in METRICS}


class PeriodicCallback(BaseCallback):
    """Base of the callbacks that act every ``freq`` timesteps (0: never) on the grid of the model's timestep
    count, so a resumed run keeps the grid: :meth:`_prepare` once at the start of training, then
    :meth:`_on_period` at the first step on or past each multiple of ``freq``."""

    def __init__(self, freq: int, verbose: int = 0) -> None:
        super().__init__(verbose)
        self.freq = int(freq)
        self._next: float = 0

    def _arm(self) -> None:
        self._next = (self.num_timesteps // self.freq + 1) * self.freq if self.freq else math.inf

    def _on_training_start(self) -> None:
        self._prepare()
        self._arm()

    def _on_step(self) -> bool:
        if self.freq and self.num_timesteps >= self._next:
            self._arm()
            self._on_period()
        return True

    def _prepare(self) -> None:
        """Subclass hook: work done once before the first period."""

    def _on_period(self) -> None:
        raise NotImplementedError


class KairosEvalCallback(PeriodicCallback):
    """Every ``freq`` timesteps: greedy episodes of the bare eval env on held-out ``seeds``.

    Logs ``kairos/<metric>`` (mean over seeds), ``kairos/<reference>_<metric>`` and ``kairos/gap_<metric>``
    (agent minus reference: negative TTFT gap / positive SLO gap = better than the reference) for
    P95 TTFT, TBT violation rate, SLO attainment and deflection rate; keeps the best model (by
    :func:`eval_score`) in ``best_dir`` and appends every evaluation to ``history_path`` (JSON lines).
    """

    def __init__(self, eval_env: Any, seeds: list[int], freq: int, *, reference: str = "kairos",
                 best_dir: str | Path | None = None, history_path: str | Path | None = None, verbose: int = 0) -> None:
        super().__init__(freq, verbose)
        self.eval_env = eval_env
        self.seeds = list(seeds)
        self.reference = reference
        self.best_dir = None if best_dir is None else Path(best_dir)
        self.history_path = None if history_path is None else Path(history_path)
        self.ref: dict[str, float] | None = None
        self.best: tuple[float, float] | None = None
        self.best_metrics: dict[str, Any] | None = None
        self.last: dict[str, Any] | None = None
        self.eval_seconds = 0.0

    def _prepare(self) -> None:
        if self.ref is None:
            t0 = time.perf_counter()
            self.ref = reference_figures(self.eval_env.scenario, self.reference, self.seeds)
            self.eval_seconds += time.perf_counter() - t0

    def _on_period(self) -> None:
        self.evaluate()

    def _on_training_end(self) -> None:
        if self.freq and (self.last is None or self.last["timesteps"] != self.num_timesteps):
            self.evaluate()

    def evaluate(self) -> dict[str, Any]:
        """Run the evaluation now, log it and return the figures."""
        t0 = time.perf_counter()
        from stable_baselines3.common.vec_env import VecNormalize

        venv = self.model.get_env()
        # a snapshot of the current weights and statistics: exactly what a checkpoint saved now would act like
        actor = actor_from_sb3(self.model, venv if isinstance(venv, VecNormalize) else None)
        runs = [run_episode(actor, self.eval_env, s) for s in self.seeds]
        m: dict[str, Any] = {k: float(sum(r[k] for r in runs) / len(runs)) for k in METRICS}
        assert self.ref is not None
        for k in METRICS:
            self.logger.record(f"kairos/{k}", m[k])
            self.logger.record(f"kairos/{self.reference}_{k}", self.ref[k])
            self.logger.record(f"kairos/gap_{k}", m[k] - self.ref[k])
        self.logger.record("kairos/invalid_actions", float(sum(r.get("n_invalid_actions", 0) for r in runs)))
        m["timesteps"] = int(self.num_timesteps)
        m["reference"] = {self.reference: dict(self.ref)}
        self._keep(m, t0)
        if self.verbose:
            print(f"eval @ {self.num_timesteps}: " + ", ".join(f"{k} {m[k]:.4g} (gap {m[k] - self.ref[k]:+.3g})"
                                                              for k in METRICS), file=sys.stderr)
        return m

    def _keep(self, m: dict[str, Any], t0: float) -> None:
        """Keep ``m`` as the last evaluation (and the best one, by :func:`eval_score`, saving the model), log the
        evaluation's seconds, dump the logger and append ``m`` to the history."""
        score = eval_score(m)
        if self.best is None or score > self.best:
            self.best = score
            self.best_metrics = dict(m)
            if self.best_dir is not None:
                save_checkpoint(self.model, self.model.get_env(), self.best_dir)
                (self.best_dir / "eval.json").write_text(json.dumps(m, indent=2) + "\n", encoding="utf-8")
        self.last = m
        self.eval_seconds += time.perf_counter() - t0
        self.logger.record("kairos/eval_seconds", time.perf_counter() - t0)
        self.logger.dump(self.num_timesteps)
        if self.history_path is not None:
            with open(self.history_path, "a", encoding="utf-8") as f:
                f.write(json.dumps(m) + "\n")


class DomainEvalCallback(KairosEvalCallback):
    """Periodic evaluation of a :mod:`kairos_gym.train.domain` run on its held-out TRAIN-side validation cases
    (every family x tier x track on the family's last train instance, load 1; never the suite's test split).

    At the start: the anchors (no-deflect, kairos-exact on the exact track) and the comparison policy
    (``reference``, default kairos) on every case. Every ``freq`` timesteps: one greedy episode per case and
    the normalised score per case, ``(x - no-deflect) / (kairos-exact - no-deflect)`` (cases where the anchors
    differ by less than the leaderboard's ``MIN_HEADROOM`` are left out). Logs ``kairos/normalized_score``
    (mean over the scored cases), ``kairos/normalized_iqm``, ``kairos/normalized_score_<track>``, the
    comparison's ``kairos/<reference>_normalized_score`` and ``kairos/gap_normalized_score``, plus the
    ``kairos/<metric>`` means of :data:`METRICS` as :class:`KairosEvalCallback` does; keeps the best model by
    the mean normalised score."""

    def __init__(self, cases: list[Any], freq: int, *, reference: str = "kairos", best_dir: str | Path | None = None,
                 history_path: str | Path | None = None, verbose: int = 0) -> None:
        super().__init__(None, [], freq, reference=reference, best_dir=best_dir, history_path=history_path,
                         verbose=verbose)
        self.cases = list(cases)
        self.anchors: dict[str, dict[str, float]] | None = None
        self.ref_cases: dict[str, dict[str, float]] | None = None
        self.ref_scores: dict[str, Any] | None = None

    def _prepare(self) -> None:
        if self.ref is None:
            self.compute_anchors()

    def compute_anchors(self) -> None:
        """Run the anchors and the comparison policy on every case (once)."""
        from kairos_gym.train.domain import (
            ANCHOR_BASELINE,
            ANCHOR_REFERENCE,
            normalized_score,
            run_reference,
            summarize_scores,
        )

        t0 = time.perf_counter()
        self.anchors, self.ref_cases = {}, {}
        for c in self.cases:
            self.anchors[c.label] = {"no_deflect": run_reference(c, ANCHOR_BASELINE)["slo_attainment"],
                                     "reference": run_reference(c, ANCHOR_REFERENCE)["slo_attainment"]}
            self.ref_cases[c.label] = run_reference(c, self.reference)
        self.ref = {k: float(np.mean([f[k] for f in self.ref_cases.values()])) for k in METRICS}
        self.ref_scores = summarize_scores({lb: normalized_score(f["slo_attainment"], **self.anchors[lb])
                                            for lb, f in self.ref_cases.items()})
        self.eval_seconds += time.perf_counter() - t0

    def evaluate(self) -> dict[str, Any]:
        from kairos_gym.train.distill import run_student
        from kairos_gym.train.domain import normalized_score, summarize_scores
        from kairos_gym.train.envs import env_inputs
        from stable_baselines3.common.vec_env import VecNormalize

        t0 = time.perf_counter()
        venv = self.model.get_env()
        actor = actor_from_sb3(self.model, venv if isinstance(venv, VecNormalize) else None, env_inputs(venv))
        assert self.anchors is not None and self.ref is not None and self.ref_scores is not None
        per_case = {c.label: run_student(actor, c) for c in self.cases}  # the actor's inputs, as PPOAgent builds them
        scores = {lb: normalized_score(f["slo_attainment"], **self.anchors[lb]) for lb, f in per_case.items()}
        agg = summarize_scores(scores)
        m: dict[str, Any] = {k: float(np.mean([f[k] for f in per_case.values()])) for k in METRICS}
        m["normalized_score"] = agg["all"]["mean"]
        m["normalized_iqm"] = agg["all"]["iqm"]
        for k in METRICS:
            self.logger.record(f"kairos/{k}", m[k])
            self.logger.record(f"kairos/{self.reference}_{k}", self.ref[k])
            self.logger.record(f"kairos/gap_{k}", m[k] - self.ref[k])
        for part, a in agg.items():
            if a["mean"] is None:
                continue
            suffix = "" if part == "all" else f"_{part}"
            self.logger.record(f"kairos/normalized_score{suffix}", a["mean"])
            self.logger.record(f"kairos/normalized_iqm{suffix}", a["iqm"])
            ref_mean = self.ref_scores[part]["mean"]
            if ref_mean is not None:
                self.logger.record(f"kairos/{self.reference}_normalized_score{suffix}", ref_mean)
                self.logger.record(f"kairos/gap_normalized_score{suffix}", a["mean"] - ref_mean)
        m["normalized"] = agg
        m["cases"] = {lb: {**per_case[lb], "normalized": scores[lb], **self.anchors[lb]} for lb in per_case}
        m["timesteps"] = int(self.num_timesteps)
        m["reference"] = {self.reference: {**self.ref, "normalized": self.ref_scores,
                                           "cases": {lb: f["slo_attainment"] for lb, f in self.ref_cases.items()}}}
        self._keep(m, t0)
        if self.verbose:
            ns, rs = m["normalized_score"], self.ref_scores["all"]["mean"]
            print(f"eval @ {self.num_timesteps}: normalized score "
                  + ("n/a" if ns is None else f"{ns:.3f}") + f" ({self.reference} "
                  + ("n/a" if rs is None else f"{rs:.3f}") + f"), slo_attainment {m['slo_attainment']:.3f} "
                  f"({self.reference} {self.ref['slo_attainment']:.3f}) over {len(self.cases)} validation cases",
                  file=sys.stderr)
        return m


class CheckpointEvery(PeriodicCallback):
    """Every ``freq`` timesteps (by the model's timestep count, so resumed runs keep the grid), in ``folder``:
    the safe checkpoint ``ckpt_<steps>_steps/`` (policy.json, policy.npz, normalize.json) and SB3's training
    state for resume, ``ckpt_<steps>_steps.zip`` and ``ckpt_vecnormalize_<steps>_steps.pkl``."""

    def __init__(self, folder: str | Path, freq: int) -> None:
        super().__init__(freq)
        self.folder = Path(folder)

    def _on_period(self) -> None:
        self.save()

    def save(self) -> Path:
        from stable_baselines3.common.vec_env import VecNormalize

        self.folder.mkdir(parents=True, exist_ok=True)
        n = self.num_timesteps
        path = self.folder / f"ckpt_{n}_steps.zip"
        self.model.save(path)
        venv = self.model.get_env()
        if isinstance(venv, VecNormalize):
            venv.save(str(self.folder / f"ckpt_vecnormalize_{n}_steps.pkl"))
        save_safe(self.model, venv, self.folder / f"ckpt_{n}_steps")
        return path


class ProgressBar(BaseCallback):
    """A tqdm bar over the timesteps the run will reach (starts at the resumed count); shows the last evaluation.

    SB3 trains whole rollouts of ``n_steps * n_envs`` timesteps (MaskableDQN: ``train_freq * n_envs``), so a run
    asked for ``total`` timesteps ends at the next multiple of the rollout above the starting count: the bar's total
    is that count (:func:`rollout_end`), and it never runs past it."""

    def __init__(self, total: int, evaluator: KairosEvalCallback | None = None, file: Any = None) -> None:
        super().__init__(0)
        self.total = int(total)
        self.evaluator = evaluator
        self.file = file
        self.bar: Any = None
        self._shown: Any = None

    def _on_training_start(self) -> None:
        from tqdm import tqdm

        out = self.file if self.file is not None else sys.stderr
        tty = hasattr(out, "isatty") and out.isatty()
        freq = getattr(self.model, "train_freq", None)  # off-policy (MaskableDQN): train_freq vector steps per round
        per_env = int(freq.frequency) if freq is not None else int(getattr(self.model, "n_steps", 1))
        rollout = per_env * self.training_env.num_envs
        end = rollout_end(self.num_timesteps, self.total, rollout)
        self.bar = tqdm(total=end, initial=self.num_timesteps, unit="step", file=out,
                        dynamic_ncols=True, desc="train", mininterval=0.2 if tty else 30.0)

    def _on_step(self) -> bool:
        self.bar.update(min(self.training_env.num_envs, self.bar.total - self.bar.n))
        ev = self.evaluator.last if self.evaluator is not None else None
        if ev is not None and ev is not self._shown:
            self._shown = ev
            self.bar.set_postfix(slo=f"{ev['slo_attainment']:.3f}", p95=f"{ev['ttft_p95']:.2f}")
        return True

    def _on_training_end(self) -> None:
        if self.bar is not None:
            self.bar.close()


def rollout_end(start: int, total: int, rollout: int) -> int:
    """The timestep count a PPO run started at ``start`` and asked for ``total`` ends at: ``start`` plus
    whole rollouts of ``rollout`` timesteps until ``total`` is reached (``start`` when already there)."""
    if total <= start:
        return start
    return start + -(-(total - start) // rollout) * rollout
