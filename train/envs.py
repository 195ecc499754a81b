"""Training environments: SB3 vector envs of kairos-gym ids, held-out seeds, VecNormalize.

Three vector-env backends (``vec_backend`` in the training config):

- ``native`` (default): :class:`HeldOutVecEnv`, a :class:`~kairos_gym.env.sb3_vec.KairosVecEnv` (one native
  ``VecStepper`` call steps the N envs) with the held-out seed stream of :class:`HeldOutSeeds` per env and
  Monitor-style ``episode`` infos; for ``kairos_train/KairosGeneral-v0`` over a
  :class:`~kairos_gym.train.domain_vec.DomainVectorEnv` (a new scenario per env and episode);
- ``dummy``: SB3's ``DummyVecEnv`` of ``gym.make`` envs, each ``Monitor`` + ``HeldOutSeeds`` (one Python
  ``step`` per env and decision);
- ``subproc``: the same envs in SB3's ``SubprocVecEnv`` (one worker process per env).

``native`` and ``dummy`` give env i the same episodes (workload seeds, windows, observations, rewards, flags,
episode infos) for the same seed, so a config trains the same parameters on either
(tests/train/test_vec_backend.py); ``subproc`` steps the ``dummy`` envs in worker processes.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from kairos_gym.benchmark.suite import TRAIN_SEED_MIN
from kairos_gym.env.registration import GENERAL_ENV_ID
from kairos_gym.env.sb3_vec import KairosVecEnv
from kairos_gym.errors import ConfigError

EPISODE_CUTS = ("episode_window", "max_decisions")
"""env_kwargs that cut training episodes short; evaluation runs whole workloads without them."""
VEC_BACKENDS = ("native", "dummy", "subproc")
"""Vector-env backends of a training run (``vec_backend``); the first is the default."""


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
            self._rng = _seed_rng(seed)
        sim_seed = _draw_seed(self._rng, self.seed_min)
        return self.env.reset(seed=sim_seed, options=options)

    def action_masks(self) -> np.ndarray:
        return self.env.unwrapped.action_masks()


def _draw_seed(rng: np.random.Generator, seed_min: int) -> int:
    return int(rng.integers(seed_min, 2**31))


def _seed_rng(seed: int) -> np.random.Generator:
    """The held-out seed generator of an env seeded ``seed`` (HeldOutSeeds and HeldOutVecEnv alike)."""
    return np.random.default_rng([int(seed), 0x6B61])


class HeldOutVecEnv(KairosVecEnv):
    """:class:`~kairos_gym.env.sb3_vec.KairosVecEnv` whose env i draws every episode's workload seed from
    ``[seed_min, 2**31)`` with its own generator, exactly as ``HeldOutSeeds`` over env i of a DummyVecEnv:
    ``seed(s)`` then ``reset()`` re-seeds generator i from ``s + i``; an episode's end (autoreset) takes
    generator i's next draw."""

    def __init__(self, num_envs: int, *, seed_min: int = TRAIN_SEED_MIN, **env_kwargs: Any) -> None:
        super().__init__(num_envs, **env_kwargs)
        self.seed_min = seed_min
        self._rngs = [np.random.default_rng() for _ in range(self.num_envs)]
        self.vec.autoreset_seed = self._next_seed

    def _next_seed(self, i: int) -> int:
        return _draw_seed(self._rngs[i], self.seed_min)

    def reset(self) -> np.ndarray:
        for i, s in enumerate(self._seeds):
            if s is not None:
                self._rngs[i] = _seed_rng(s)
        self._seeds = [self._next_seed(i) for i in range(self.num_envs)]
        return super().reset()


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


def env_inputs(venv: Any) -> str:
    """The input layout a (possibly VecNormalize-wrapped) training vec env observes: its envs' ``inputs``
    (:class:`~kairos_gym.train.domain.DomainEnv`: ``observation`` or ``observation+kairos``), ``observation`` for
    every env without the attribute."""
    from kairos_gym.agents.checkpoint import INPUTS

    try:
        values = venv.get_attr("inputs")
    except (AttributeError, NotImplementedError, TypeError):
        return "observation"
    found = {v for v in values if isinstance(v, str) and v in INPUTS}
    if len(found) > 1:
        raise ConfigError("make_vec_env", "inputs", sorted(found), "one input layout for every env")
    return found.pop() if found else "observation"


def make_vec_env(env_id: str, env_kwargs: dict[str, Any], n_envs: int, seed: int,
                 normalize: dict[str, Any] | None, gamma: float, backend: str = "native") -> Any:
    """``n_envs`` envs on ``backend`` (:data:`VEC_BACKENDS`, see the module docstring), seeded, wrapped in
    VecNormalize when ``normalize``."""
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv, VecNormalize

    if backend not in VEC_BACKENDS:
        raise ConfigError("make_vec_env", "vec_backend", backend, "one of " + ", ".join(VEC_BACKENDS))
    venv: Any
    if backend == "native" and env_id == GENERAL_ENV_ID:  # a new scenario per episode (train/domain_vec.py)
        from kairos_gym.train.domain_vec import DomainVectorEnv

        venv = HeldOutVecEnv(n_envs, vector_class=DomainVectorEnv, **env_kwargs)
    elif backend == "native":
        from kairos_gym.env.vector import spec_kwargs

        venv = HeldOutVecEnv(n_envs, **{**spec_kwargs(env_id, "make_vec_env"), **env_kwargs})
    elif backend == "dummy":
        venv = DummyVecEnv([make_env_fn(env_id, env_kwargs) for _ in range(n_envs)])
    else:
        venv = SubprocVecEnv([make_env_fn(env_id, env_kwargs) for _ in range(n_envs)])
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
