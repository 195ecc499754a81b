"""End-to-end training throughput: MaskablePPO steps per second of a training recipe, on this machine
(``kairos-gym perf-train``).

:func:`bench_train` times ``model.learn`` of each recipe (default: :data:`RECIPES`, the domain-randomised
``configs/ppo/general-fast.yaml`` and ``configs/ppo/v2-seen.yaml`` (suite v2's seen families, warm-started
instances) on the native domain vector env, and the single-scenario ``configs/ppo/kairos-v0-fast.yaml``) for
``timesteps`` environment steps, ``repeats`` times, alternating the recipes in one process so all see the same
machine state, and reports the median steps per second of each and its ratio to the last (domain / single).
Everything a training step does is inside the figure: the env steps and resets (a new scenario per episode on
the domain), the policy's forward passes, VecNormalize, the rollout buffer and the
gradient steps; building the envs and the model, periodic evaluations and checkpoints are not (no callbacks run).
A measurement, not a test: the figures vary by 10-20% with the VM's state (docs/training.md).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np

from kairos_gym.errors import ConfigError

RECIPES: tuple[tuple[str, str], ...] = (("domain", "general-fast.yaml"), ("domain-v2", "v2-seen.yaml"),
                                        ("single", "kairos-v0-fast.yaml"))
"""(label, file under ``kairos_gym.configs.PPO_CONFIG_DIR``) of the recipes timed by default."""
MAX_TIMESTEPS = 10_000_000
"""Most environment steps of one timing run."""
MAX_REPEATS = 20
"""Most timing runs per recipe."""
MAX_RECIPES = 8
"""Most recipes of one measurement."""


def _learn_rate(path: Path, timesteps: int, seed: int) -> dict[str, Any]:
    """One timing run: the recipe's envs and model built (not timed), then ``model.learn(timesteps)`` timed."""
    from kairos_gym.train.config import load_config
    from kairos_gym.train.envs import make_vec_env
    from kairos_gym.train.trainer import build_model, prepare_torch, with_overrides
    from stable_baselines3.common.logger import Logger
    from stable_baselines3.common.utils import set_random_seed

    prepare_torch()
    cfg = with_overrides(load_config(path), seed=seed)
    set_random_seed(cfg.seed)
    gamma = float(cfg.hyperparams.get("gamma", 0.99))
    venv = make_vec_env(cfg.env_id, cfg.env_kwargs, cfg.n_envs, cfg.seed, cfg.normalize, gamma, cfg.vec_backend)
    model = build_model(cfg, venv)
    model.set_logger(Logger(folder=None, output_formats=[]))  # no files
    start, cpu0 = time.perf_counter(), time.process_time()
    model.learn(total_timesteps=timesteps)
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu0
    steps = int(model.num_timesteps)  # whole rollouts: at least ``timesteps``
    episodes = len(model.ep_info_buffer)
    venv.close()
    return {"env_id": cfg.env_id, "vec_backend": cfg.vec_backend, "n_envs": cfg.n_envs, "steps": steps,
            "seconds": seconds, "steps_per_s": steps / seconds, "steps_per_cpu_s": steps / cpu,
            "episodes_seen": episodes}


def bench_train(timesteps: int = 40_960, repeats: int = 3, seed: int = 0,
                recipes: tuple[tuple[str, str | Path], ...] | None = None) -> dict[str, Any]:
    """Median MaskablePPO steps per second of every recipe (``(label, config path or file name under
    configs/ppo)``; default :data:`RECIPES`) over ``repeats`` alternating runs of ``timesteps`` steps each (rounded
    up to whole rollouts), and each recipe's ratio to the last (by default the single-scenario recipe).

    Returns ``{"timesteps", "repeats", "rows"}``, a row per recipe: ``recipe``, ``config``, ``env_id``,
    ``vec_backend``, ``n_envs``, ``steps`` (of one run), ``steps_per_s`` (median over wall time: the figure to quote
    on an idle machine), ``steps_per_s_runs``, ``steps_per_cpu_s`` (median over the process's CPU time, one torch
    thread: less sensitive to other processes on a shared machine) and ``ratio``."""
    from kairos_gym.configs import PPO_CONFIG_DIR

    where = "perf-train"
    if isinstance(timesteps, bool) or not isinstance(timesteps, int) or not 1 <= timesteps <= MAX_TIMESTEPS:
        raise ConfigError(where, "timesteps", timesteps, f"a whole number in [1, {MAX_TIMESTEPS:,}]")
    if isinstance(repeats, bool) or not isinstance(repeats, int) or not 1 <= repeats <= MAX_REPEATS:
        raise ConfigError(where, "repeats", repeats, f"a whole number in [1, {MAX_REPEATS}]")
    chosen = RECIPES if recipes is None else recipes
    if not chosen or len(chosen) > MAX_RECIPES:
        raise ConfigError(where, "config", list(chosen), f"1 to {MAX_RECIPES} training configs")
    paths = [(label, Path(c) if Path(c).is_absolute() or Path(c).parent != Path() else PPO_CONFIG_DIR / c)
             for label, c in chosen]
    for _, p in paths:
        if not p.is_file():
            raise ConfigError(where, "config", str(p), "an existing training config YAML (a bare name: in configs/ppo)")
    if len({label for label, _ in paths}) != len(paths):
        raise ConfigError(where, "config", [label for label, _ in paths], "each recipe once")
    runs: dict[str, list[dict[str, Any]]] = {label: [] for label, _ in paths}
    for _ in range(repeats):
        for label, p in paths:
            runs[label].append(_learn_rate(p, timesteps, seed))
    rows = []
    for label, p in paths:
        rs = runs[label]
        rows.append({"recipe": label, "config": p.name, "env_id": rs[0]["env_id"], "vec_backend": rs[0]["vec_backend"],
                     "n_envs": rs[0]["n_envs"], "steps": rs[0]["steps"],
                     "steps_per_s": round(float(np.median([r["steps_per_s"] for r in rs]))),
                     "steps_per_s_runs": [round(r["steps_per_s"]) for r in rs],
                     "steps_per_cpu_s": round(float(np.median([r["steps_per_cpu_s"] for r in rs])))})
    ref = rows[-1]["steps_per_s"]
    for r in rows:
        r["ratio"] = round(r["steps_per_s"] / ref, 3) if ref else None
    return {"timesteps": timesteps, "repeats": repeats, "rows": rows}
