"""Training environments: SB3 vector envs of kairos-gym ids, held-out seeds, VecNormalize."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

TRAIN_SEED_MIN = 10_000
"""Training workloads use simulator seeds >= this; every seed below it (evaluation: 0-4, 100-102) is held out."""
EPISODE_CUTS = ("episode_window", "max_decisions")
"""env_kwargs that cut training episodes short; evaluation runs whole workloads without them."""


class HeldOutSeeds(gym.Wrapper):
    """Draws every episode's workload seed from ``[TRAIN_SEED_MIN, 2**31)`` with its own generator.

    ``reset(seed=s)`` re-seeds the generator from ``s`` (so a seeded vector env is reproducible);
    ``reset()`` takes the next draw. The wrapped KairosEnv is always reset with an explicit seed, so no
    training episode ever replays an evaluation workload (seeds below ``TRAIN_SEED_MIN``).
    """

    def __init__(self, env: gym.Env, seed_min: int = TRAIN_SEED_MIN) -> None:
        super().__init__(env)
        self.seed_min = seed_min
        self._rng = np.random.default_rng()

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        if seed is not None:
            self._rng = np.random.default_rng([int(seed), 0x6B61])
        sim_seed = int(self._rng.integers(self.seed_min, 2**31))
        return self.env.reset(seed=sim_seed, options=options)

    def action_masks(self) -> np.ndarray:
        return self.env.unwrapped.action_masks()


def make_env_fn(env_id: str, env_kwargs: dict[str, Any], *, held_out: bool = True) -> Any:
    """A picklable-enough factory for SB3 vector envs (imports kairos_gym.env in the worker)."""

    def _make() -> gym.Env:
        from kairos_gym.train.domain import register
        from stable_baselines3.common.monitor import Monitor

        import kairos_gym.env  # noqa: F401  (registers the ids)

        register()  # kairos_train/KairosGeneral-v0 (train/domain.py)

        env = gym.make(env_id, disable_env_checker=True, **env_kwargs)
        env = Monitor(env)
        return HeldOutSeeds(env) if held_out else env

    return _make


def make_vec_env(env_id: str, env_kwargs: dict[str, Any], n_envs: int, seed: int,
                 normalize: dict[str, Any] | None, gamma: float) -> Any:
    """``n_envs`` envs in one process (DummyVecEnv), seeded, wrapped in VecNormalize when ``normalize``."""
    from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize

    venv = DummyVecEnv([make_env_fn(env_id, env_kwargs) for _ in range(n_envs)])
    venv.seed(seed)
    if normalize is not None:
        kw = {"gamma": gamma, **normalize}
        venv = VecNormalize(venv, **kw)
    return venv


def eval_env_kwargs(train_kwargs: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    """The evaluation env's kwargs: the training ones without episode cuts, then ``extra``."""
    out = {k: v for k, v in train_kwargs.items() if k not in EPISODE_CUTS}
    out.update(extra)
    return out


def make_eval_env(env_id: str, kwargs: dict[str, Any]) -> Any:
    """The bare KairosEnv of an id (no wrappers: evaluation steps it directly)."""
    import kairos_gym.env  # noqa: F401

    return gym.make(env_id, disable_env_checker=True, **kwargs).unwrapped
