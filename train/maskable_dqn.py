"""MaskableDQN: Stable-Baselines3's DQN with invalid-action masking (the value-based family beside MaskablePPO).

SB3's DQN knows nothing of action masks: it explores with ``action_space.sample()`` and bootstraps from the
largest Q-value of the next state over every action. kairos-gym's action space has masked actions at most
decisions (chunk sizes a node cannot take, deflection with no decode node able to), so this subclass

- acts epsilon-greedily **within the valid actions** of each env: with probability epsilon (per env and step;
  1 before ``learning_starts``) a uniform draw among the valid actions, else the masked argmax of the Q-network;
- stores the mask of every transition's next state beside it (:class:`MaskedReplayBuffer`; at a truncated
  episode end the final state's mask, which :class:`~kairos_gym.env.sb3_vec.KairosVecEnv` reports as
  ``terminal_action_mask`` and a ``DummyVecEnv`` of KairosEnvs as the final step's ``action_mask``);
- bootstraps from the **largest valid** next Q-value of the target network (a terminal transition bootstraps
  nothing, whatever its mask).

The rest is SB3's DQN unchanged: Huber loss, gradient clipping, a hard (``tau = 1``) or Polyak target update every
``target_update_interval`` transitions, a linear epsilon schedule, VecNormalize statistics applied at sampling
time. Random draws come from numpy's global generator, which SB3 seeds from the run's ``seed``, so a run is
reproducible.

``n_steps = n > 1`` learns from n-step returns, computed at sampling time from the stored one-step transitions of
the same env: ``sum_{k<m} gamma^k r_{t+k} + gamma^m max_valid Q_target(s_{t+m})``, where ``m <= n`` stops at the
first episode end (a terminal one bootstraps nothing, a truncated one from its final state) and at the newest
stored transition, and the max is over the valid actions of ``s_{t+m}`` (the mask stored with transition
``t + m - 1``). A misses reward arrives tens of decisions after the decision that caused it, so one-step targets
propagate it slowly.

A trained MaskableDQN is exported in the same safe MLP format as the PPO agents (``algo: maskable_dqn``): its
greedy policy is the masked argmax of the Q-network's outputs, which is what :class:`GreedyActor` computes from
the Q-network's layers (:func:`kairos_gym.agents.sb3_checkpoint.actor_from_sb3`). See docs/training.md.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
from stable_baselines3 import DQN
from stable_baselines3.common.buffers import ReplayBuffer

from kairos_gym.errors import ConfigError

WHERE = "maskable_dqn"
FIXED = ("replay_buffer_class", "replay_buffer_kwargs", "optimize_memory_usage")
"""DQN constructor arguments MaskableDQN sets itself (its replay buffer)."""
MAX_RETURN_STEPS = 256
"""Largest ``n_steps`` (transitions summed into one return)."""


class MaskedReplayBufferSamples(NamedTuple):
    """SB3's ``ReplayBufferSamples`` plus the next states' masks (bool, ``[batch, actions]``)."""

    observations: Any
    actions: Any
    next_observations: Any
    dones: Any
    rewards: Any
    next_action_masks: Any
    discounts: Any  # gamma ** (transitions summed), [batch, 1]


class MaskedReplayBuffer(ReplayBuffer):
    """SB3's ``ReplayBuffer`` that also keeps each transition's next-state action mask in :attr:`next_masks`
    (bool, ``[buffer_size, n_envs, actions]``), written by :meth:`MaskableDQN._store_transition` at :attr:`pos`
    before the transition itself; samples ``n_steps``-step returns (the module docstring) with ``gamma``."""

    def __init__(self, buffer_size: int, observation_space: Any, action_space: Any, device: Any = "auto",
                 n_envs: int = 1, optimize_memory_usage: bool = False, handle_timeout_termination: bool = True,
                 n_steps: int = 1, gamma: float = 0.99) -> None:
        check_return_steps(n_steps)
        self.n_steps, self.gamma = int(n_steps), float(gamma)
        if optimize_memory_usage:
            raise ConfigError(WHERE, "optimize_memory_usage", optimize_memory_usage, "false (not with masks)")
        super().__init__(buffer_size, observation_space, action_space, device, n_envs=n_envs,
                         optimize_memory_usage=False, handle_timeout_termination=handle_timeout_termination)
        self.next_masks = np.ones((self.buffer_size, self.n_envs, int(action_space.n)), dtype=np.bool_)

    def returns(self, batch_inds: np.ndarray, env_indices: np.ndarray, env: Any = None
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """For each sampled transition ``(t, e)``: the ``m``-step return (``m <= n_steps``, the module docstring;
        rewards normalised as VecNormalize does), the index of its last transition, whether that one ends the
        episode without bootstrapping, and ``gamma ** m``."""
        count = self.buffer_size if self.full else self.pos
        oldest = self.pos if self.full else 0
        k = np.arange(self.n_steps)
        age = (batch_inds - oldest) % self.buffer_size  # 0: the oldest stored transition
        idx = (batch_inds[:, None] + k[None, :]) % self.buffer_size
        stored = (age[:, None] + k[None, :]) < count
        ended = self.dones[idx, env_indices[:, None]] > 0
        before = np.concatenate([np.zeros((len(idx), 1), dtype=bool), np.cumsum(ended, axis=1)[:, :-1] > 0], axis=1)
        used = stored & ~before  # step k is summed: stored, and no episode end before it
        m = used.sum(axis=1)
        rewards = self._normalize_reward(self.rewards[idx, env_indices[:, None]], env)
        ret = (np.where(used, rewards, 0.0) * self.gamma ** k[None, :]).sum(axis=1)
        last = idx[np.arange(len(idx)), m - 1]
        terminal = self.dones[last, env_indices] * (1 - self.timeouts[last, env_indices])
        return ret.astype(np.float32), last, terminal.astype(np.float32), (self.gamma ** m).astype(np.float32)

    def _get_samples(self, batch_inds: np.ndarray, env: Any = None) -> MaskedReplayBufferSamples:  # type: ignore[override]
        import torch as th

        env_indices = np.random.randint(0, high=self.n_envs, size=(len(batch_inds),))
        ret, last, terminal, discounts = self.returns(batch_inds, env_indices, env)
        data = (
            self._normalize_obs(self.observations[batch_inds, env_indices, :], env),
            self.actions[batch_inds, env_indices, :],
            self._normalize_obs(self.next_observations[last, env_indices, :], env),
            terminal.reshape(-1, 1),
            ret.reshape(-1, 1),
        )
        masks = th.as_tensor(self.next_masks[last, env_indices, :], device=self.device)
        return MaskedReplayBufferSamples(*tuple(map(self.to_torch, data)), masks,
                                         self.to_torch(discounts.reshape(-1, 1)))


def check_return_steps(n_steps: Any) -> None:
    """``n_steps``: a whole number from 1 to :data:`MAX_RETURN_STEPS`."""
    if isinstance(n_steps, bool) or not isinstance(n_steps, (int, np.integer)) or not 1 <= n_steps <= MAX_RETURN_STEPS:
        raise ConfigError(WHERE, "n_steps", n_steps, f"a whole number from 1 to {MAX_RETURN_STEPS}")


def masked_greedy(q_values: Any, masks: Any) -> Any:
    """Index of the largest Q-value among the valid actions of each row (torch tensors; ties: the lowest index,
    as ``argmax``)."""
    import torch as th

    return th.where(masks, q_values, th.full_like(q_values, -th.inf)).argmax(dim=1)


def random_valid(masks: np.ndarray) -> np.ndarray:
    """One uniform draw among each row's valid actions (numpy's global generator)."""
    counts = masks.sum(axis=1)
    pick = np.minimum((np.random.random(len(masks)) * counts).astype(np.int64), counts - 1)
    ranks = np.cumsum(masks, axis=1) - 1  # rank of each valid action within its row
    return np.argmax(masks & (ranks == pick[:, None]), axis=1)


def masked_td_target(next_q: Any, next_masks: Any, rewards: Any, dones: Any, gamma: Any) -> Any:
    """TD targets ``r + (1 - done) * gamma * max over the valid next actions of next_q`` (torch; ``next_q`` and
    ``next_masks`` ``[batch, actions]``, ``rewards``, ``dones`` and a tensor ``gamma`` (n-step: the discount of the
    bootstrap, per row) ``[batch, 1]``). A terminal row bootstraps nothing, whatever its mask (even an empty one:
    no ``-inf * 0``)."""
    import torch as th

    best = th.where(next_masks, next_q, th.full_like(next_q, -th.inf)).max(dim=1).values.reshape(-1, 1)
    best = th.where(dones > 0, th.zeros_like(best), best)
    return rewards + (1 - dones) * gamma * best


def env_masks(env: Any) -> np.ndarray:
    """The vector env's masks (bool ``[n_envs, actions]``); every row must allow an action."""
    from sb3_contrib.common.maskable.utils import get_action_masks

    masks = np.asarray(get_action_masks(env)).astype(np.bool_)
    empty = np.flatnonzero(~masks.any(axis=1))
    if len(empty):
        raise ConfigError(WHERE, "action_masks", f"env {int(empty[0])}: no valid action",
                          "at least one valid action at every pending decision")
    return masks


class MaskableDQN(DQN):
    """DQN acting, exploring and bootstrapping within the valid actions; see the module docstring. Takes DQN's
    arguments except :data:`FIXED`."""

    def __init__(self, policy: Any, env: Any, n_steps: int = 1, **kwargs: Any) -> None:
        for k in FIXED:
            if k in kwargs:
                raise ConfigError(WHERE, k, kwargs[k], "unset (MaskableDQN uses its masked replay buffer)")
        buffer_kwargs = {"n_steps": n_steps, "gamma": float(kwargs.get("gamma", 0.99))}  # checked by the buffer
        super().__init__(policy, env, replay_buffer_class=MaskedReplayBuffer, replay_buffer_kwargs=buffer_kwargs,
                         **kwargs)

    # ------------------------------------------------------------------ acting
    def _greedy(self, obs: np.ndarray, masks: np.ndarray) -> np.ndarray:
        import torch as th

        with th.no_grad():
            obs_t, _ = self.policy.obs_to_tensor(obs)
            q = self.q_net(obs_t)
            return masked_greedy(q, th.as_tensor(masks, device=q.device)).cpu().numpy()

    def _sample_action(self, learning_starts: int, action_noise: Any = None, n_envs: int = 1
                       ) -> tuple[np.ndarray, np.ndarray]:
        masks = env_masks(self.env)
        eps = 1.0 if self.num_timesteps < learning_starts else float(self.exploration_rate)
        explore = np.random.random(n_envs) < eps
        action = random_valid(masks)
        if not explore.all():
            action = np.where(explore, action, self._greedy(self._last_obs, masks))
        return action, action

    def predict(self, observation: Any, state: Any = None, episode_start: Any = None, deterministic: bool = False,
                action_masks: np.ndarray | None = None) -> tuple[np.ndarray, Any]:
        """Masked greedy action (``deterministic``), else epsilon-greedy within the valid actions;
        ``action_masks``: the valid actions (all when None), one row per observation (or one row for one)."""
        obs = np.asarray(observation)
        single = obs.ndim == 1
        batch = obs[None] if single else obs
        n_actions = int(self.action_space.n)
        masks = np.ones((len(batch), n_actions), dtype=np.bool_) if action_masks is None else \
            np.asarray(action_masks, dtype=np.bool_).reshape(len(batch), n_actions)
        action = self._greedy(batch, masks)
        if not deterministic:
            explore = np.random.random(len(batch)) < self.exploration_rate
            action = np.where(explore, random_valid(masks), action)
        return (action[0] if single else action), state

    # ------------------------------------------------------------------ storing
    def _store_transition(self, replay_buffer: Any, buffer_action: np.ndarray, new_obs: Any, reward: np.ndarray,
                          dones: np.ndarray, infos: list[dict[str, Any]]) -> None:
        masks = env_masks(self.env)  # the new states' masks (the next episode's first at a done)
        for i in np.flatnonzero(dones).tolist():
            if infos[i].get("TimeLimit.truncated", False):  # bootstraps from the final state: its own mask
                final = infos[i].get("terminal_action_mask", infos[i].get("action_mask"))  # native; DummyVecEnv
                if final is None:
                    raise ConfigError(WHERE, "vec_backend", "a vector env without the final state's mask",
                                      "native or dummy (their truncated episode ends report the final state's "
                                      "mask: terminal_action_mask, action_mask)")
                masks[i] = np.asarray(final).astype(np.bool_)
                if not masks[i].any():
                    raise ConfigError(WHERE, "terminal_action_mask", f"env {i}: no valid action",
                                      "at least one valid action at a truncated episode's final state")
        replay_buffer.next_masks[replay_buffer.pos] = masks
        super()._store_transition(replay_buffer, buffer_action, new_obs, reward, dones, infos)

    # ------------------------------------------------------------------ learning
    def train(self, gradient_steps: int, batch_size: int = 100) -> None:
        """SB3's DQN update with the target's max taken over the next state's valid actions."""
        import torch as th
        import torch.nn.functional as F

        self.policy.set_training_mode(True)
        self._update_learning_rate(self.policy.optimizer)
        losses = []
        for _ in range(gradient_steps):
            data = self.replay_buffer.sample(batch_size, env=self._vec_normalize_env)  # type: ignore[union-attr]
            with th.no_grad():
                target = masked_td_target(self.q_net_target(data.next_observations), data.next_action_masks,
                                          data.rewards, data.dones, data.discounts)
            current = th.gather(self.q_net(data.observations), dim=1, index=data.actions.long())
            loss = F.smooth_l1_loss(current, target)
            losses.append(loss.item())
            self.policy.optimizer.zero_grad()
            loss.backward()
            th.nn.utils.clip_grad_norm_(self.policy.parameters(), self.max_grad_norm)
            self.policy.optimizer.step()
        self._n_updates += gradient_steps
        self.logger.record("train/n_updates", self._n_updates, exclude="tensorboard")
        self.logger.record("train/loss", float(np.mean(losses)))
