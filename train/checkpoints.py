"""Checkpoints (model zip + VecNormalize statistics), loading them for inference, and a fast greedy actor.

Layout of a saved checkpoint (a folder): ``model.zip`` (SB3 / sb3-contrib) and ``vecnormalize.pkl``
(the VecNormalize statistics; absent when training ran without normalisation). Periodic checkpoints
of a run are ``checkpoints/ckpt_<steps>_steps.zip`` + ``checkpoints/ckpt_vecnormalize_<steps>_steps.pkl``.
"""

from __future__ import annotations

import pickle
import re
from pathlib import Path
from typing import Any

from kairos_gym.agents.ppo import GreedyActor

from kairos_gym.errors import ConfigError

MODEL_NAME = "model.zip"
STATS_NAME = "vecnormalize.pkl"
_CKPT = re.compile(r"^ckpt_(\d+)_steps\.zip$")


def save_checkpoint(model: Any, venv: Any, folder: str | Path) -> Path:
    """Write ``model.zip`` and (when ``venv`` is a VecNormalize) ``vecnormalize.pkl`` into ``folder``."""
    from stable_baselines3.common.vec_env import VecNormalize

    d = Path(folder)
    d.mkdir(parents=True, exist_ok=True)
    model.save(d / MODEL_NAME)
    if isinstance(venv, VecNormalize):
        venv.save(str(d / STATS_NAME))
    return d / MODEL_NAME


def stats_path_for(model_path: str | Path) -> Path | None:
    """The VecNormalize statistics saved with a model zip (either naming scheme), or None."""
    p = Path(model_path)
    m = _CKPT.match(p.name)
    cands = [p.with_name(f"ckpt_vecnormalize_{m.group(1)}_steps.pkl")] if m else []
    cands.append(p.with_name(STATS_NAME))
    return next((c for c in cands if c.is_file()), None)


def resolve_model_path(path: str | Path) -> Path:
    """A model zip from: a zip, a checkpoint folder (``model.zip``) or a run folder (its latest checkpoint)."""
    p = Path(path)
    if p.is_file():
        return p
    if p.with_suffix(".zip").is_file():
        return p.with_suffix(".zip")
    if p.is_dir():
        ckpts = sorted(((int(m.group(1)), f) for f in (p / "checkpoints").glob("ckpt_*_steps.zip")
                        if (m := _CKPT.match(f.name))), key=lambda t: t[0])
        if ckpts:
            return ckpts[-1][1]
        if (p / MODEL_NAME).is_file():
            return p / MODEL_NAME
    raise ConfigError("train", "checkpoint", str(path),
                      "a model .zip, a folder with model.zip, or a run folder with checkpoints/ckpt_*_steps.zip")


def load_obs_normalizer(model_path: str | Path) -> Any:
    """The VecNormalize object saved with a model (no env attached, frozen), or None."""
    sp = stats_path_for(model_path)
    if sp is None:
        return None
    with open(sp, "rb") as f:
        vn = pickle.load(f)
    vn.training = False
    vn.norm_reward = False
    return vn


def load_model(path: str | Path, device: str = "cpu") -> tuple[Any, Any]:
    """``(model, obs_normalizer_or_None)`` from a zip / checkpoint folder / run folder."""
    from kairos_gym.agents.ppo import load_sb3_model

    p = resolve_model_path(path)
    return load_sb3_model(p, "auto", device), load_obs_normalizer(p)


def run_episode(actor: GreedyActor, env: Any, seed: int) -> dict[str, Any]:
    """One whole episode of a bare KairosEnv with greedy actions; returns the run's summary."""
    obs, info = env.reset(seed=int(seed))
    while True:
        obs, _r, term, trunc, info = env.step(actor.act(obs, info["action_mask"]))
        if term or trunc:
            return dict(info["summary"])


def make_ppo_agent(path: str | Path, scenario: Any, seed: int = 0) -> Any:
    """A :class:`kairos_gym.agents.ppo.PPOAgent` for ``scenario`` from a checkpoint (zip, folder or run folder). The
    agent applies the checkpoint's observation normalisation and acts with :class:`GreedyActor`."""
    from kairos_gym.agents.ppo import PPOAgent

    return PPOAgent(scenario, seed=seed, path=str(resolve_model_path(path)))
