"""``KairosWrapper``: the outermost wrapper ``gym.make`` puts on every kairos-gym id.

Gymnasium 1.x wrappers do not forward attributes, so without it ``gym.make(id).action_masks()`` would
raise AttributeError (the env is inside PassiveEnvChecker and OrderEnforcing), and a ``TimeLimit``
truncation (``gym.make(id, max_episode_steps=N)``) would end the episode without ``info["summary"]``,
because the env cannot know an outer wrapper is about to cut it. This wrapper fixes both and changes
nothing else: observations, rewards, flags and every other info key pass through untouched.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np


class KairosWrapper(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """Exposes :meth:`action_masks` and completes the info of a truncating step.

    ``gym.make`` applies it after ``TimeLimit`` (it is the spec's additional wrapper), so it sees the
    ``truncated`` flag a time limit sets; wrappers added around it later are outside its view (call
    ``env.unwrapped.summary()`` after their truncation).
    """

    def __init__(self, env: gym.Env) -> None:
        gym.utils.RecordConstructorArgs.__init__(self)
        gym.Wrapper.__init__(self, env)

    def action_masks(self) -> np.ndarray:
        """int8 mask of the valid actions at the pending decision (sb3-contrib's MaskablePPO)."""
        return self.env.get_wrapper_attr("action_masks")()

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        if (terminated or truncated) and "summary" not in info:
            info["summary"] = self.env.unwrapped.summary()  # type: ignore[attr-defined]
        return obs, reward, terminated, truncated, info
