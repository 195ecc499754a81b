"""``KairosVecEnv``: a Stable-Baselines3 ``VecEnv`` over a :class:`~kairos_gym.env.vector.KairosVectorEnv`
in SAME_STEP autoreset mode.

SB3's conventions, as ``DummyVecEnv`` + ``Monitor`` give them: ``reset()`` returns the observations only
(seeds from :meth:`seed`, env i gets s + i, used at the next reset); ``step_wait`` returns float32 rewards,
one ``dones`` flag per env and a list of N info dicts, empty except where an episode ended:
``terminal_observation`` (the last observation; the returned one is the next episode's first),
``TimeLimit.truncated`` (truncated and not terminated), ``terminal_action_mask`` (the int8 mask of the last
observation: what a value-based learner bootstraps from at a truncation), a Monitor-style ``episode``
``{"r", "l", "t"}`` (return rounded to 6 decimals, length in decisions, wall seconds since the VecEnv was built, as
SB3's ``Monitor`` writes them) and, with ``summaries=True``,
``summary``. ``env_method("action_masks")`` returns the N int8 mask rows, which is what sb3-contrib's
``get_action_masks`` stacks for MaskablePPO. Needs the [train] extra (Stable-Baselines3).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np

from kairos_gym.env.vector import KairosVectorEnv
from kairos_gym.env.vector_infos import unbatch_info
from kairos_gym.errors import ConfigError
from kairos_gym.extras import MissingExtraError, missing

try:
    from stable_baselines3.common.vec_env.base_vec_env import VecEnv, VecEnvIndices, VecEnvStepReturn
except ImportError:  # one line naming the extra, not a traceback into Stable-Baselines3
    raise MissingExtraError("kairos_gym.env.sb3_vec", "train", missing("train") or ("stable_baselines3",)) from None

WHERE = "KairosVecEnv"


class KairosVecEnv(VecEnv):
    """``num_envs`` KairosEnvs (built with ``env_kwargs``) as one SB3 VecEnv; see the module docstring.
    ``vector_class``: the vector env built with them (default :class:`KairosVectorEnv`; a subclass such as
    :class:`kairos_gym.train.domain_vec.DomainVectorEnv`, which draws a new scenario per episode)."""

    def __init__(self, num_envs: int, *, summaries: bool = False,
                 vector_class: type[KairosVectorEnv] = KairosVectorEnv, **env_kwargs: Any) -> None:
        if not (isinstance(vector_class, type) and issubclass(vector_class, KairosVectorEnv)):
            raise ConfigError(WHERE, "vector_class", vector_class, "KairosVectorEnv or a subclass of it")
        self.vec = vector_class(num_envs, autoreset_mode="same_step", summaries=summaries, step_infos=False,
                                **env_kwargs)
        self.envs = self.vec.envs
        super().__init__(self.vec.num_envs, self.vec.single_observation_space, self.vec.single_action_space)
        self._actions: np.ndarray | None = None
        self._ep_return = np.zeros(self.num_envs, dtype=np.float64)
        self._ep_len = np.zeros(self.num_envs, dtype=np.int64)
        self._t0 = time.time()

    def reset(self) -> np.ndarray:
        obs, infos = self.vec.reset(seed=list(self._seeds))
        self.reset_infos = [{"sim_seed": int(infos["sim_seed"][i])} for i in range(self.num_envs)]
        self._reset_seeds()
        self._ep_return[:] = 0.0
        self._ep_len[:] = 0
        return obs

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = np.asarray(actions)  # checked by KairosVectorEnv.step before any env moves

    def step_wait(self) -> VecEnvStepReturn:
        if self._actions is None:
            raise RuntimeError("KairosVecEnv.step_wait() called without step_async()")
        actions, self._actions = self._actions, None
        obs, rewards, terminated, truncated, infos = self.vec.step(actions)
        self._ep_return += rewards
        self._ep_len += 1
        dones = terminated | truncated
        out: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
        for i in np.flatnonzero(dones).tolist():
            info = out[i]
            info["terminal_observation"] = infos["final_obs"][i]
            final = infos["final_info"]  # Gymnasium's vector layout: a dict of arrays
            info["TimeLimit.truncated"] = bool(truncated[i] and not terminated[i])
            if "action_mask" in final:
                info["terminal_action_mask"] = np.array(final["action_mask"][i], dtype=np.int8)
            info["episode"] = {"r": round(float(self._ep_return[i]), 6), "l": int(self._ep_len[i]),
                               "t": round(time.time() - self._t0, 6)}
            if self.vec.summaries and final["_summary"][i]:
                info["summary"] = unbatch_info(final["summary"], i)
            self._ep_return[i] = 0.0
            self._ep_len[i] = 0
        return obs, rewards.astype(np.float32), dones, out

    def close(self) -> None:
        self.vec.close()

    def seed(self, seed: int | None = None) -> Sequence[int | None]:
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0):
            raise ConfigError(f"{WHERE}.seed", "seed", seed, "None or a whole number >= 0")
        return super().seed(None if seed is None else int(seed))

    # ------------------------------------------------------------------ attribute access
    def _targets(self, indices: VecEnvIndices) -> list[int]:
        return list(self._get_indices(indices))

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        return [getattr(self.envs[i], attr_name) for i in self._targets(indices)]

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        for i in self._targets(indices):
            setattr(self.envs[i], attr_name, value)

    def env_method(self, method_name: str, *method_args: Any, indices: VecEnvIndices = None,
                   **method_kwargs: Any) -> list[Any]:
        targets = self._targets(indices)
        if method_name == "action_masks" and not method_args and not method_kwargs:
            masks = self.vec.action_masks()
            return [masks[i] for i in targets]
        return [getattr(self.envs[i], method_name)(*method_args, **method_kwargs) for i in targets]

    def env_is_wrapped(self, wrapper_class: type[gym.Wrapper], indices: VecEnvIndices = None) -> list[bool]:
        return [False for _ in self._targets(indices)]
