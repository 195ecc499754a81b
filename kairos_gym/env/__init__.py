"""The Gymnasium environment of kairos-gym (``import kairos_gym.env`` registers the ids).

    import gymnasium as gym
    import kairos_gym  # noqa: F401  (registers kairos_gym/Kairos-v0, KairosSmall-v0, ...)

    env = gym.make("kairos_gym/Kairos-v0", workload={"max_requests": 500})
    obs, info = env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(env.action_space.sample(mask=env.action_masks()))

See ``docs/env.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kairos_gym.env.registration import env_ids, register_envs, scenario_env_id
from kairos_gym.env.wrapper import KairosWrapper

if TYPE_CHECKING:
    from kairos_gym.env.actions import MaskedActionWarning
    from kairos_gym.env.core import KairosEnv

register_envs()


def __getattr__(name: str) -> Any:
    # KairosEnv loads the simulator: imported on first use, so registration (on ``import kairos_gym``) stays light
    if name == "KairosEnv":
        from kairos_gym.env.core import KairosEnv

        return KairosEnv
    if name == "MaskedActionWarning":
        from kairos_gym.env.actions import MaskedActionWarning

        return MaskedActionWarning
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = ["KairosEnv", "KairosWrapper", "MaskedActionWarning", "env_ids", "register_envs", "scenario_env_id"]
