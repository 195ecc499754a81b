"""The env RLlib sees: a kairos-gym env whose observation is ``{"observations": <flat obs>, "action_mask": <mask>}``.

RLlib does not read ``info["action_mask"]`` (nor ``action_masks()``): an RLModule sees only the observation.
:class:`MaskedObservation` puts the mask there (float32, 1 = valid), so
:class:`~kairos_gym.train.rllib.module.MaskedPPOTorchModule` can give the invalid actions zero probability. The env
still counts invalid actions itself (``info["n_invalid_actions"]``, ``info["invalid_action"]``); the RLlib run
sums them (:class:`~kairos_gym.train.rllib.train.InvalidActionCounter`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import gymnasium as gym
import numpy as np

from kairos_gym.errors import ConfigError

ENV_NAME = "kairos_gym_masked"
"""The name :func:`kairos_gym.train.rllib.train.register` gives the env creator in Ray's registry."""


class MaskedObservation(gym.ObservationWrapper):
    """Dict observation: ``observations`` (the env's flat Box) and ``action_mask`` (Box [0, 1] of the
    action count, float32). The env must use ``obs_mode="flat"`` (the default)."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        inner = env.observation_space
        if not isinstance(inner, gym.spaces.Box):
            raise ConfigError("rllib env", "obs_mode", getattr(env.unwrapped, "obs_mode", None), "flat (a Box)")
        n = int(env.action_space.n)  # type: ignore[attr-defined]
        self.observation_space = gym.spaces.Dict({
            "observations": inner,
            "action_mask": gym.spaces.Box(0.0, 1.0, shape=(n,), dtype=np.float32),
        })

    def observation(self, observation: Any) -> dict[str, np.ndarray]:
        mask = self.env.unwrapped.action_masks()  # type: ignore[attr-defined]
        return {"observations": np.asarray(observation, dtype=np.float32),
                "action_mask": np.asarray(mask, dtype=np.float32)}


def make_masked_env(config: Mapping[str, Any] | None = None) -> MaskedObservation:
    """The env creator: ``config`` is ``{"env_id": <a kairos_gym id>, **<its gym.make keyword arguments>}``
    (Ray's EnvContext is such a mapping); default env id ``kairos_gym/KairosSmall-v0``."""
    import kairos_gym  # noqa: F401 - registers the ids in this (worker) process

    kw = dict(config or {})
    env_id = kw.pop("env_id", "kairos_gym/KairosSmall-v0")
    if not isinstance(env_id, str) or not env_id.startswith("kairos_gym/"):
        raise ConfigError("rllib env", "env_id", env_id, "a kairos_gym env id, e.g. kairos_gym/KairosSmall-v0")
    return MaskedObservation(gym.make(env_id, **kw))
