"""A KL anchor to the starting actor for RL fine-tuning (a training config's ``anchor_kl``; docs/training.md,
"Fine-tuning the distilled student").

PPO started from a trained actor (``init_from``: train/init_from.py) moves it by advantages its fresh critic
estimates, and those first steps can undo what the actor knew. :class:`AnchorKL` adds a behaviour-cloning phase
after each rollout (as Phasic Policy Gradient's auxiliary phase, with the starting actor as the target): one pass
over the rollout's observations in minibatches of ``batch_size``, each a gradient step on

    anchor_kl * mean over the batch of KL(start(. | obs) || policy(. | obs))

with both distributions masked to the valid actions the rollout recorded, taken with the policy's own optimizer and
learning rate (then PPO's update runs as usual); not while ``freeze_actor_steps`` holds the actor. The starting
actor is rebuilt from the ``init_from`` checkpoint's arrays (so a resumed run anchors to the same actor) and is
never trained; it reads the rollout's observations as
stored, which VecNormalize normalised with the checkpoint's held statistics. ``anchor_kl = 0`` (the default) adds
nothing. The phase's mean KL is logged as ``train/anchor_kl``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from stable_baselines3.common.callbacks import BaseCallback

NEG = -1e9
"""Logit given to a masked action (finite, so a zero probability times its log stays 0)."""


def masked_kl(target_logits: Any, logits: Any, masks: Any) -> Any:
    """Mean over rows of KL(softmax(target) || softmax(logits)), both restricted to each row's valid actions
    (torch; ``masks`` bool ``[batch, actions]``)."""
    import torch as th

    lt = th.where(masks, target_logits, th.full_like(target_logits, NEG)).log_softmax(dim=1)
    lp = th.where(masks, logits, th.full_like(logits, NEG)).log_softmax(dim=1)
    return (lt.exp() * (lt - lp)).sum(dim=1).mean()


def actor_module(folder: str | Path) -> Any:
    """The safe checkpoint's actor as a frozen torch ``Sequential`` (hidden layers, activation, logits layer)."""
    import torch as th
    import torch.nn as nn
    from kairos_gym.agents.checkpoint import load_policy

    actor = load_policy(folder)
    layers: list[Any] = []
    for w, b in [*actor.hidden, actor.head]:
        lin = nn.Linear(w.shape[1], w.shape[0])
        with th.no_grad():
            lin.weight.copy_(th.as_tensor(w))
            lin.bias.copy_(th.as_tensor(b))
        layers += [lin, getattr(nn, actor.activation)()]
    net = nn.Sequential(*layers[:-1])
    net.requires_grad_(False)
    return net


class AnchorKL(BaseCallback):
    """After each rollout, one pass of ``coef`` x KL(starting actor || policy) gradient steps; see the module
    docstring. ``folder``: the ``init_from`` checkpoint; ``batch_size``: the minibatch (PPO's)."""

    def __init__(self, folder: str | Path, coef: float, batch_size: int) -> None:
        super().__init__()
        self.folder = Path(folder)
        self.coef = float(coef)
        self.batch_size = int(batch_size)
        self.start: Any = None
        self.last_kl: float | None = None

    def _on_training_start(self) -> None:
        self.start = actor_module(self.folder)

    def _on_step(self) -> bool:
        return True

    def _logits(self, obs: Any) -> Any:
        pol = self.model.policy
        features = pol.extract_features(obs, pol.pi_features_extractor)
        return pol.action_net(pol.mlp_extractor.forward_actor(features))

    def _on_rollout_end(self) -> None:
        import numpy as np
        import torch as th

        pol = self.model.policy
        if not any(p.requires_grad for p in pol.action_net.parameters()):  # the actor is frozen (freeze_actor_steps)
            return
        buf = self.model.rollout_buffer
        obs = th.as_tensor(buf.observations.reshape(-1, buf.observations.shape[-1]), device=self.model.device)
        masks = th.as_tensor(buf.action_masks.reshape(len(obs), -1) > 0, device=self.model.device)
        with th.no_grad():
            target = self.start(obs)
        order = th.as_tensor(np.random.permutation(len(obs)), device=self.model.device)  # SB3's seeded generator
        pol.set_training_mode(True)
        kls = []
        for i in range(0, len(obs), self.batch_size):
            idx = order[i:i + self.batch_size]
            kl = masked_kl(target[idx], self._logits(obs[idx]), masks[idx])
            pol.optimizer.zero_grad()
            (self.coef * kl).backward()
            th.nn.utils.clip_grad_norm_(pol.parameters(), self.model.max_grad_norm)
            pol.optimizer.step()
            kls.append(float(kl.detach()))
        pol.set_training_mode(False)
        self.last_kl = float(np.mean(kls))
        self.logger.record("train/anchor_kl", self.last_kl)


__all__ = ["AnchorKL", "actor_module", "masked_kl"]
