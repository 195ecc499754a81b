"""The Gymnasium environment of kairos-gym (``import kairos_gym.env`` registers the ids).

    import gymnasium as gym
    import kairos_gym.env  # noqa: F401  (registers kairos_gym/Kairos-v0, KairosSmall-v0, ...)

    env = gym.make("kairos_gym/Kairos-v0", workload={"max_requests": 500})
    obs, info = env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(env.action_space.sample(mask=info["action_mask"]))

See ``docs/env.md``.
"""

from kairos_gym.env.core import KairosEnv
from kairos_gym.env.registration import env_ids, register_envs, scenario_env_id

register_envs()

__all__ = ["KairosEnv", "env_ids", "register_envs", "scenario_env_id"]
