"""A masking RLModule for PPO on Ray's new API stack (RLModule / Learner / EnvRunner, Ray 2.x).

:class:`MaskedPPOTorchModule` builds RLlib's default PPO torch networks on the ``observations`` part of the
Dict observation (:class:`~kairos_gym.train.rllib.env.MaskedObservation`) and adds ``log(mask)`` (clamped at
RLlib's FLOAT_MIN) to the action logits in every forward pass (inference, exploration, training), so an
invalid action has probability 0: it is never sampled, and the PPO loss sees the same masked distribution.
(The design is RLlib's own action-masking example, ``ray.rllib.examples.rl_modules.classes``.)
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
from ray.rllib.algorithms.ppo.torch.default_ppo_torch_rl_module import DefaultPPOTorchRLModule
from ray.rllib.core.columns import Columns
from ray.rllib.utils.torch_utils import FLOAT_MIN

MASK = "action_mask"
OBS = "observations"


class MaskedPPOTorchModule(DefaultPPOTorchRLModule):
    """PPO's default torch module on the unmasked part of a ``{observations, action_mask}`` observation."""

    def __init__(self, *, observation_space: gym.Space | None = None, **kwargs: Any) -> None:
        if not isinstance(observation_space, gym.spaces.Dict) or set(observation_space.spaces) != {OBS, MASK}:
            raise ValueError("MaskedPPOTorchModule needs a Dict observation {observations, action_mask} "
                             "(kairos_gym.train.rllib.env.MaskedObservation)")
        self.observation_space_with_mask = observation_space
        super().__init__(observation_space=observation_space[OBS], **kwargs)

    def setup(self) -> None:
        super().setup()  # the networks are built for the unmasked observation space
        self.observation_space = self.observation_space_with_mask

    @staticmethod
    def _split(batch: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
        obs = batch[Columns.OBS]
        if isinstance(obs, dict):
            batch = dict(batch)
            batch[MASK] = obs[MASK]
            batch[Columns.OBS] = obs[OBS]
        return batch[MASK], batch

    @staticmethod
    def _mask(out: dict[str, Any], mask: Any) -> dict[str, Any]:
        import torch

        out[Columns.ACTION_DIST_INPUTS] = out[Columns.ACTION_DIST_INPUTS] + torch.clamp(torch.log(mask), min=FLOAT_MIN)
        return out

    def _forward_inference(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        mask, batch = self._split(batch)
        return self._mask(super()._forward_inference(batch, **kwargs), mask)

    def _forward_exploration(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        mask, batch = self._split(batch)
        return self._mask(super()._forward_exploration(batch, **kwargs), mask)

    def _forward_train(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        mask, batch = self._split(batch)
        return self._mask(super()._forward_train(batch, **kwargs), mask)

    def compute_values(self, batch: dict[str, Any], embeddings: Any = None) -> Any:
        if embeddings is None:
            _, batch = self._split(batch)
        return super().compute_values(batch, embeddings)
