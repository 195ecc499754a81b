"""Checkpoints of training runs: what a run writes, in the safe format and as SB3 training state.

Every checkpoint a run saves is written in the project's safe format (:mod:`kairos_gym.agents.checkpoint`:
``policy.json`` + ``policy.npz`` + ``normalize.json``; data only, loaded without unpickling anything):
``final/``, ``best/`` and, every ``checkpoint_freq`` timesteps, ``checkpoints/ckpt_<steps>_steps/``.
Beside them the run keeps Stable-Baselines3's own training state (optimizer included) for ``--resume``:
``final/model.zip`` + ``final/vecnormalize.pkl``, ``best/`` likewise, and
``checkpoints/ckpt_<steps>_steps.zip`` + ``checkpoints/ckpt_vecnormalize_<steps>_steps.pkl``. Reading those
(trusted only) and converting them is :mod:`kairos_gym.agents.sb3_checkpoint`.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kairos_gym.agents.checkpoint import GreedyActor, write_policy
from kairos_gym.agents.sb3_checkpoint import MODEL_NAME, STATS_NAME, actor_from_sb3, normalize_stats

__all__ = ["run_episode", "save_checkpoint", "save_safe"]


def save_safe(model: Any, venv: Any, folder: str | Path, provenance: Mapping[str, Any] | None = None) -> Path:
    """Write ``model`` (with ``venv``'s statistics when it is a VecNormalize) in the safe format into ``folder``."""
    from kairos_gym.train.envs import env_inputs

    stats = normalize_stats(venv)
    actor = actor_from_sb3(model, venv if stats is not None else None, env_inputs(venv))
    return write_policy(folder, actor, stats, {"timesteps": int(model.num_timesteps), **(provenance or {})})


def save_checkpoint(model: Any, venv: Any, folder: str | Path) -> Path:
    """Write the safe format and SB3's training state (``model.zip``, and ``vecnormalize.pkl`` when ``venv``
    is a VecNormalize) into ``folder``; returns the folder."""
    from stable_baselines3.common.vec_env import VecNormalize

    d = Path(folder)
    d.mkdir(parents=True, exist_ok=True)
    model.save(d / MODEL_NAME)
    if isinstance(venv, VecNormalize):
        venv.save(str(d / STATS_NAME))
    elif (d / STATS_NAME).is_file():
        (d / STATS_NAME).unlink()
    save_safe(model, venv, d)
    return d


def run_episode(actor: GreedyActor, env: Any, seed: int) -> dict[str, Any]:
    """One whole episode of a bare KairosEnv with greedy actions; returns the run's summary."""
    obs, info = env.reset(seed=int(seed))
    while True:
        obs, _r, term, trunc, info = env.step(actor.act(obs, info["action_mask"]))
        if term or trunc:
            return dict(info["summary"])
