"""A CleanRL-style single-file PPO in plain torch, on the Gymnasium vector API, with the action mask.

    OMP_NUM_THREADS=1 python examples/cleanrl_ppo.py            # 100,000 decisions, about 25 s on 2 cores
    OMP_NUM_THREADS=1 python examples/cleanrl_ppo.py --smoke    # one short update (what CI runs)

``OMP_NUM_THREADS=1`` matters for any trainer of your own on a small machine: torch starts one intra-op thread per
core, and on 2 cores they fight the env's stepping for the same cores (CleanRL's ppo.py went from 30-40 to ~375
steps/s with it; docs/env.md, "Performance"). This script sets it when you have not.

The mask: every decision offers ``1 + D x K`` actions (the prefill path, or a deflection to decode node ``d`` in
chunks of size ``k``), and a deflection is valid only when that node can take one now. ``infos["action_mask"]``
(``[num_envs, n_actions]``, 1 = valid) says which; the policy gives the others a logit of -1e8, so it never samples
one and its log-probabilities and entropy are over the valid actions only. Without the mask an invalid
action still runs (the request takes the prefill path) and ``info["n_invalid_actions"]`` counts it.
"""

from __future__ import annotations

import argparse
import os
import time
from dataclasses import dataclass

os.environ.setdefault("OMP_NUM_THREADS", "1")  # before torch is imported

import gymnasium as gym
import numpy as np
import torch
from torch import nn

import kairos_gym  # noqa: F401  (registers the kairos_gym/... ids)

ENV_ID = "kairos_gym/KairosSmall-v0"  # 200 requests per episode
EVAL_SEED = 100  # a workload seed the training episodes do not use
MASKED_LOGIT = -1e8  # the logit of an invalid action


@dataclass
class Args:
    """PPO's settings (CleanRL's names and defaults, smaller rollouts)."""

    total_timesteps: int = 100_000
    num_envs: int = 8
    num_steps: int = 128
    learning_rate: float = 2.5e-4
    gamma: float = 0.99
    gae_lambda: float = 0.95
    num_minibatches: int = 4
    update_epochs: int = 4
    clip_coef: float = 0.2
    ent_coef: float = 0.01
    vf_coef: float = 0.5
    max_grad_norm: float = 0.5
    seed: int = 0


def layer(n_in: int, n_out: int, std: float = np.sqrt(2)) -> nn.Linear:
    """A linear layer with CleanRL's orthogonal initialisation."""
    lin = nn.Linear(n_in, n_out)
    nn.init.orthogonal_(lin.weight, std)
    nn.init.constant_(lin.bias, 0.0)
    return lin


class Agent(nn.Module):
    """Separate actor and critic MLPs (64, 64, tanh); the actor's logits masked by the action mask."""

    def __init__(self, n_obs: int, n_actions: int) -> None:
        super().__init__()
        self.critic = nn.Sequential(layer(n_obs, 64), nn.Tanh(), layer(64, 64), nn.Tanh(), layer(64, 1, 1.0))
        self.actor = nn.Sequential(layer(n_obs, 64), nn.Tanh(), layer(64, 64), nn.Tanh(), layer(64, n_actions, 0.01))

    def value(self, obs: torch.Tensor) -> torch.Tensor:
        """V(obs), shape [batch]."""
        return self.critic(obs).squeeze(-1)

    def act(self, obs: torch.Tensor, mask: torch.Tensor, action: torch.Tensor | None = None
            ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """(action, its log-probability, the entropy, V(obs)); the action is sampled unless given. ``mask``: bool,
        True = valid (the prefill path, action 0, always is)."""
        # a large negative logit, not -inf: the probability is 0 all the same, and no 0 * inf makes a NaN gradient
        logits = self.actor(obs).masked_fill(~mask, MASKED_LOGIT)
        dist = torch.distributions.Categorical(logits=logits)
        if action is None:
            action = dist.sample()
        p_log_p = torch.where(mask, dist.probs * dist.logits, torch.zeros_like(dist.probs))  # valid actions only
        return action, dist.log_prob(action), -p_log_p.sum(-1), self.value(obs)


def train(args: Args) -> Agent:
    """CleanRL's PPO loop: rollouts of ``num_steps`` x ``num_envs``, GAE, clipped surrogate, minibatch epochs."""
    torch.manual_seed(args.seed)
    # same_step autoreset: the step that ends an episode returns the next episode's first observation and mask, the
    # convention CleanRL's loop is written for (Gymnasium's default, next_step, would add a step without a decision)
    envs = gym.make_vec(ENV_ID, num_envs=args.num_envs, autoreset_mode="same_step")
    n_obs, n_actions = envs.single_observation_space.shape[0], int(envs.single_action_space.n)
    agent = Agent(n_obs, n_actions)
    optimizer = torch.optim.Adam(agent.parameters(), lr=args.learning_rate, eps=1e-5)

    shape = (args.num_steps, args.num_envs)
    obs_buf, mask_buf = torch.zeros((*shape, n_obs)), torch.zeros((*shape, n_actions), dtype=torch.bool)
    actions, logprobs, rewards, dones, values = (torch.zeros(shape) for _ in range(5))
    batch_size = args.num_envs * args.num_steps
    minibatch = batch_size // args.num_minibatches
    updates = max(1, args.total_timesteps // batch_size)

    obs_np, infos = envs.reset(seed=args.seed)
    next_obs, next_mask = torch.as_tensor(obs_np), torch.as_tensor(infos["action_mask"]).bool()
    next_done = torch.zeros(args.num_envs)
    episode_return, returns = np.zeros(args.num_envs), []
    start = time.perf_counter()
    for update in range(1, updates + 1):
        for step in range(args.num_steps):
            obs_buf[step], mask_buf[step], dones[step] = next_obs, next_mask, next_done
            with torch.no_grad():
                action, logprob, _, value = agent.act(next_obs, next_mask)
            actions[step], logprobs[step], values[step] = action, logprob, value
            obs_np, reward, terminated, truncated, infos = envs.step(action.numpy())
            done = np.logical_or(terminated, truncated)
            rewards[step] = torch.as_tensor(reward, dtype=torch.float32)
            next_obs, next_done = torch.as_tensor(obs_np), torch.as_tensor(done, dtype=torch.float32)
            next_mask = torch.as_tensor(infos["action_mask"]).bool()
            episode_return += reward
            returns.extend(episode_return[done])
            episode_return[done] = 0.0

        with torch.no_grad():  # generalised advantage estimation, backwards through the rollout
            next_value = agent.value(next_obs)
            advantages, last = torch.zeros(shape), torch.zeros(args.num_envs)
            for t in reversed(range(args.num_steps)):
                nonterminal = 1.0 - (next_done if t == args.num_steps - 1 else dones[t + 1])
                following = next_value if t == args.num_steps - 1 else values[t + 1]
                delta = rewards[t] + args.gamma * following * nonterminal - values[t]
                advantages[t] = last = delta + args.gamma * args.gae_lambda * nonterminal * last
            targets = advantages + values

        b_obs, b_mask = obs_buf.reshape(-1, n_obs), mask_buf.reshape(-1, n_actions)
        b_act, b_logp, b_adv, b_ret = (x.reshape(-1) for x in (actions, logprobs, advantages, targets))
        for _ in range(args.update_epochs):
            for idx in torch.randperm(batch_size).split(minibatch):
                _, logp, entropy, value = agent.act(b_obs[idx], b_mask[idx], b_act[idx].long())
                ratio = (logp - b_logp[idx]).exp()
                adv = (b_adv[idx] - b_adv[idx].mean()) / (b_adv[idx].std() + 1e-8)
                pg_loss = torch.max(-adv * ratio, -adv * ratio.clamp(1 - args.clip_coef, 1 + args.clip_coef)).mean()
                v_loss = 0.5 * ((value - b_ret[idx]) ** 2).mean()
                loss = pg_loss - args.ent_coef * entropy.mean() + args.vf_coef * v_loss
                optimizer.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(agent.parameters(), args.max_grad_norm)
                optimizer.step()
        recent = f"{np.mean(returns[-20:]):.1f}" if returns else "n/a (no episode ended yet)"
        print(f"update {update}/{updates}: {update * batch_size} decisions, mean episode return {recent}, "
              f"{update * batch_size / (time.perf_counter() - start):.0f} decisions/s")
    envs.close()
    return agent


def evaluate(agent: Agent, seed: int) -> dict:
    """One whole episode on workload ``seed`` with the most likely valid action; the run's summary."""
    env = gym.make(ENV_ID)
    obs, info = env.reset(seed=seed)
    while True:
        with torch.no_grad():
            mask = torch.as_tensor(info["action_mask"]).bool()
            logits = agent.actor(torch.as_tensor(obs)).masked_fill(~mask, MASKED_LOGIT)
        obs, _, terminated, truncated, info = env.step(int(logits.argmax()))
        if terminated or truncated:
            return info["summary"]


def main() -> None:
    """Train, then compare the agent with Kairos on a held-out workload."""
    from kairos_gym.agents import run_policy

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="one update of 4 envs x 64 steps")
    args = Args(total_timesteps=256, num_envs=4, num_steps=64) if parser.parse_args().smoke else Args()
    torch.set_num_threads(1)
    agent = train(args)
    mine, kairos = evaluate(agent, EVAL_SEED), run_policy("kairos", "small", EVAL_SEED)
    for key in ("slo_attainment", "ttft_p95", "n_invalid_actions"):
        print(f"{key}: agent {mine[key]:.3f} vs kairos {kairos[key]:.3f}")


if __name__ == "__main__":
    main()
