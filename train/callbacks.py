"""Training callbacks: periodic evaluation with ``kairos/`` TensorBoard scalars, checkpoints, a progress bar."""

from __future__ import annotations

import json
import math
import sys
import time
from pathlib import Path
from typing import Any

from kairos_gym.train.checkpoints import actor_from_sb3, run_episode, save_checkpoint, save_safe
from stable_baselines3.common.callbacks import BaseCallback

METRICS = ("ttft_p95", "tbt_violation_rate", "slo_attainment", "deflection_rate")
"""Figures logged under ``kairos/<name>`` and their gap to the reference under ``kairos/gap_<name>``."""


def eval_score(m: dict[str, float]) -> tuple[float, float]:
    """Model-selection key (larger is better): SLO attainment, then lower P95 TTFT."""
    return (round(m["slo_attainment"], 4), -m["ttft_p95"])


def reference_figures(scenario: Any, policy: str, seeds: list[int]) -> dict[str, float]:
    """Mean figures of a baseline policy over ``seeds`` on the simulator (same workloads as the env's)."""
    from kairos_gym.agents.runner import run_policy

    runs = [run_policy(policy, scenario, s) for s in seeds]
    return {k: float(sum(r[k] for r in runs) / len(runs)) for k in METRICS}


class KairosEvalCallback(BaseCallback):
    """Every ``freq`` timesteps: greedy episodes of the bare eval env on held-out ``seeds``.

    Logs ``kairos/<metric>`` (mean over seeds), ``kairos/<reference>_<metric>`` and ``kairos/gap_<metric>``
    (agent minus reference: negative TTFT gap / positive SLO gap = better than the reference) for
    P95 TTFT, TBT violation rate, SLO attainment and deflection rate; keeps the best model (by
    :func:`eval_score`) in ``best_dir`` and appends every evaluation to ``history_path`` (JSON lines).
    """

    def __init__(self, eval_env: Any, seeds: list[int], freq: int, *, reference: str = "kairos",
                 best_dir: str | Path | None = None, history_path: str | Path | None = None, verbose: int = 0) -> None:
        super().__init__(verbose)
        self.eval_env = eval_env
        self.seeds = list(seeds)
        self.freq = int(freq)
        self.reference = reference
        self.best_dir = None if best_dir is None else Path(best_dir)
        self.history_path = None if history_path is None else Path(history_path)
        self.ref: dict[str, float] | None = None
        self.best: tuple[float, float] | None = None
        self.best_metrics: dict[str, Any] | None = None
        self.last: dict[str, Any] | None = None
        self.eval_seconds = 0.0
        self._next = 0

    def _on_training_start(self) -> None:
        if self.ref is None:
            t0 = time.perf_counter()
            self.ref = reference_figures(self.eval_env.scenario, self.reference, self.seeds)
            self.eval_seconds += time.perf_counter() - t0
        self._next = (self.num_timesteps // self.freq + 1) * self.freq if self.freq else math.inf

    def _on_step(self) -> bool:
        if self.freq and self.num_timesteps >= self._next:
            self._next = (self.num_timesteps // self.freq + 1) * self.freq
            self.evaluate()
        return True

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
        score = eval_score(m)
        m["timesteps"] = int(self.num_timesteps)
        m["reference"] = {self.reference: dict(self.ref)}
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
        if self.verbose:
            print(f"eval @ {self.num_timesteps}: " + ", ".join(f"{k} {m[k]:.4g} (gap {m[k] - self.ref[k]:+.3g})"
                                                              for k in METRICS), file=sys.stderr)
        return m


class CheckpointEvery(BaseCallback):
    """Every ``freq`` timesteps (by the model's timestep count, so resumed runs keep the grid), in ``folder``:
    the safe checkpoint ``ckpt_<steps>_steps/`` (policy.json, policy.npz, normalize.json) and SB3's training
    state for resume, ``ckpt_<steps>_steps.zip`` and ``ckpt_vecnormalize_<steps>_steps.pkl``."""

    def __init__(self, folder: str | Path, freq: int) -> None:
        super().__init__(0)
        self.folder = Path(folder)
        self.freq = int(freq)
        self._next = 0

    def _on_training_start(self) -> None:
        self._next = (self.num_timesteps // self.freq + 1) * self.freq if self.freq else math.inf

    def _on_step(self) -> bool:
        if self.freq and self.num_timesteps >= self._next:
            self._next = (self.num_timesteps // self.freq + 1) * self.freq
            self.save()
        return True

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

    SB3 trains whole rollouts of ``n_steps * n_envs`` timesteps, so a run asked for ``total`` timesteps
    ends at the next multiple of the rollout above the starting count: the bar's total is that count
    (:func:`rollout_end`), and it never runs past it."""

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
        rollout = int(getattr(self.model, "n_steps", 1)) * self.training_env.num_envs
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
