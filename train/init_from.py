"""Start a PPO run from a trained actor (a training config's ``init_from`` and ``freeze_actor_steps``;
docs/training.md, "Fine-tuning the distilled student").

``init_from`` names a safe checkpoint folder (policy.json + policy.npz + normalize.json, e.g.
agents/checkpoints/distilled-oracle). Before the first step, its actor becomes the new model's actor: every hidden
layer's weights and biases and the logits layer are copied into the SB3 policy's ``mlp_extractor.policy_net`` and
``action_net``, and its observation statistics become VecNormalize's mean and variance, held there: their count is
set to :data:`STATISTICS_COUNT`, so the training's own observations do not move them (otherwise the inputs the copied
actor sees would drift, and even a frozen actor would act differently from the checkpoint). The value network starts
from scratch. Everything must
match, or one ConfigError names what differs: the input layout (``inputs``: the checkpoint's and the training env's),
the observation and action sizes, the hidden sizes and activation (``policy_kwargs``), and the normalisation
(``normalize: {norm_obs: true}`` with the checkpoint's ``clip_obs`` and ``epsilon``).

A fresh critic's advantages are noise, and PPO steps taken on them move a good actor away from what it knew.
``freeze_actor_steps`` keeps the actor's parameters out of the gradient for that many timesteps (:class:`FreezeActor`):
the value network learns the actor's returns first, then both train.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from stable_baselines3.common.callbacks import BaseCallback

from kairos_gym.errors import ConfigError

STATISTICS_COUNT = 1e15
"""VecNormalize's ``obs_rms.count`` after loading the checkpoint's statistics: a run of 10^9 steps moves the mean
and variance by a relative 10^-6 at most, so the actor keeps reading its inputs as the checkpoint did."""


def check_init_from(where: str, value: Any) -> str | None:
    """``init_from`` as a config gives it: None, or a folder holding a safe checkpoint (policy.json)."""
    if value is None:
        return None
    if not isinstance(value, str) or not (Path(value) / "policy.json").is_file():
        raise ConfigError(where, "init_from", value, "a safe checkpoint folder with policy.json (e.g. "
                          "agents/checkpoints/distilled-oracle), relative to the working directory")
    return value


def load_actor_into(model: Any, venv: Any, folder: str | Path, inputs: str) -> dict[str, Any]:
    """Copy the actor and observation statistics of the checkpoint in ``folder`` into ``model`` (an SB3 PPO /
    MaskablePPO with an MlpPolicy) and ``venv`` (its VecNormalize); ``inputs``: the training env's input layout.
    Returns what was loaded (for the run's meta.json)."""
    import torch
    import torch.nn as nn
    from kairos_gym.agents.checkpoint import load_policy
    from stable_baselines3.common.vec_env import VecNormalize

    where = f"init_from {folder}"
    actor = load_policy(folder)
    if actor.inputs != inputs:
        raise ConfigError(where, "inputs", actor.inputs,
                          f"the training env's input layout, {inputs} (env_kwargs.inputs)")
    obs_n, act_n = int(model.observation_space.shape[0]), int(model.action_space.n)
    if (actor.observation_size, actor.action_count) != (obs_n, act_n):
        raise ConfigError(where, "sizes", f"{actor.observation_size} inputs, {actor.action_count} actions",
                          f"the env's {obs_n} inputs and {act_n} actions")
    pol = model.policy
    linears = [m for m in pol.mlp_extractor.policy_net if isinstance(m, nn.Linear)]
    acts = {type(m).__name__ for m in pol.mlp_extractor.policy_net if not isinstance(m, nn.Linear)}
    want = [w.shape[0] for w, _ in actor.hidden]
    have = [m.out_features for m in linears]
    if have != want or acts != {actor.activation}:
        raise ConfigError(where, "policy_kwargs", f"hidden {have}, activation {sorted(acts)}",
                          f"the checkpoint's actor: hidden {want}, activation {actor.activation} (net_arch pi, "
                          "activation_fn)")
    with torch.no_grad():
        for lin, (w, b) in zip(linears, actor.hidden, strict=True):
            lin.weight.copy_(torch.as_tensor(w))
            lin.bias.copy_(torch.as_tensor(b))
        pol.action_net.weight.copy_(torch.as_tensor(actor.head[0]))
        pol.action_net.bias.copy_(torch.as_tensor(actor.head[1]))
    norm = actor.normalizer
    if norm is not None:
        if not isinstance(venv, VecNormalize) or not venv.norm_obs:
            raise ConfigError(where, "normalize", "no observation normalisation",
                              "normalize: {norm_obs: true} (the checkpoint normalises its inputs)")
        if (float(venv.clip_obs), float(venv.epsilon)) != (float(norm.clip_obs), float(norm.epsilon)):
            raise ConfigError(where, "normalize_kwargs", f"clip_obs {venv.clip_obs}, epsilon {venv.epsilon}",
                              f"the checkpoint's clip_obs {norm.clip_obs}, epsilon {norm.epsilon}")
        venv.obs_rms.mean = np.array(norm.mean, dtype=np.float64)
        venv.obs_rms.var = np.array(norm.var, dtype=np.float64)
        venv.obs_rms.count = STATISTICS_COUNT
    elif isinstance(venv, VecNormalize) and venv.norm_obs:
        raise ConfigError(where, "normalize", "norm_obs: true", "norm_obs: false (the checkpoint reads raw inputs)")
    return {"init_from": str(folder), "hidden": want, "activation": actor.activation, "inputs": actor.inputs,
            "obs_statistics": norm is not None}


class FreezeActor(BaseCallback):
    """Keep the actor (``mlp_extractor.policy_net`` and ``action_net``) out of the gradient until the model has
    taken ``steps`` timesteps; the value network trains throughout."""

    def __init__(self, steps: int) -> None:
        super().__init__()
        self.steps = int(steps)
        self.frozen = False

    def _params(self) -> list[Any]:
        pol = self.model.policy
        return [*pol.mlp_extractor.policy_net.parameters(), *pol.action_net.parameters()]

    def _set(self, frozen: bool) -> None:
        for p in self._params():
            p.requires_grad_(not frozen)
        self.frozen = frozen

    def _on_training_start(self) -> None:
        if self.num_timesteps < self.steps:
            self._set(True)

    def _on_step(self) -> bool:
        if self.frozen and self.num_timesteps >= self.steps:
            self._set(False)
        return True

    def _on_training_end(self) -> None:
        if self.frozen:
            self._set(False)


__all__ = ["STATISTICS_COUNT", "FreezeActor", "check_init_from", "load_actor_into"]
