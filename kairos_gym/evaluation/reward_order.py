"""Does an env reward order policies as the benchmark's score does? (``kairos-gym reward-order``; docs/env.md,
"Rewards").

Each policy runs whole episodes of :class:`~kairos_gym.env.core.KairosEnv` (the policy decides on the env's
:attr:`~kairos_gym.env.core.KairosEnv.decision_context`, its decision mapped to the env's action) once per reward
kind on the same seeds; an episode gives its return (the sum of the step rewards) and its SLO attainment (the
episode summary's). Two policies on one seed form a pair; the pair is **discordant** for a reward when the order
of their returns is not the order of their SLO attainments (one strictly above the other on one measure and not
strictly on the other the same way; a tie on both is concordant). A reward that can guide learning towards the
score has few discordant pairs: the issue's bar is at most 5% on the shipped policies.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

from kairos_gym.errors import ConfigError

DEFAULT_POLICIES = ("no-deflect", "always-deflect", "always-deflect-ls", "sq", "sq-ls", "sl", "sl-ls", "kairos",
                    "kairos-exact", "ppo", "distilled-oracle")
"""The shipped policies the check runs by default (the rules, Kairos on both tracks' settings, the shipped agents)."""
MAX_EPISODE_REQUESTS = 20_000
"""Largest episode of the check (requests): each policy runs one whole episode per seed and reward."""


def episode(policy: str, scenario: Any, seed: int, reward: str) -> tuple[float, float]:
    """(return, SLO attainment) of one whole episode of ``policy`` (a registry name) on ``scenario`` at workload
    seed ``seed`` with ``reward``. The env offers the LargestSafe action (the ``-ls`` rules take it) unless the
    policy cannot be built for that action table (a trained agent made for the table without it); the action
    table never changes the physics."""
    from kairos_gym.agents.registry import make_policy
    from kairos_gym.env.core import KairosEnv

    env = KairosEnv(scenario, reward=reward, deflection={"largest_safe_action": True})  # the -ls rules' action
    try:
        pol = make_policy(policy, env.scenario, seed)
    except ConfigError:  # a trained agent made for the table without LargestSafe (the shipped ppo: 11 actions)
        env = KairosEnv(scenario, reward=reward, deflection={"largest_safe_action": False})
        pol = make_policy(policy, env.scenario, seed)
    if hasattr(pol, "reset"):
        pol.reset()
    env.reset(seed=seed)
    total = 0.0
    while True:
        ctx = env.decision_context
        a = env.action_layout.action_of(pol.decide(ctx), ctx)
        _, r, terminated, truncated, info = env.step(a)
        total += r
        if terminated or truncated:
            return total, float(info["summary"]["slo_attainment"])


def _sign(x: float) -> int:
    return (x > 0) - (x < 0)


def discordant_pairs(rows: Sequence[tuple[str, int, float, float]]) -> tuple[int, int, list[tuple[Any, ...]]]:
    """``rows``: (policy, seed, return, SLO attainment). Returns (discordant pairs, pairs, the discordant ones as
    (seed, policy a, policy b, return a, return b, SLO a, SLO b)); pairs are formed within a seed only."""
    by_seed: dict[int, list[tuple[str, float, float]]] = {}
    for p, s, ret, slo in rows:
        by_seed.setdefault(s, []).append((p, ret, slo))
    n = bad = 0
    which: list[tuple[Any, ...]] = []
    for s, items in sorted(by_seed.items()):
        for (pa, ra, sa), (pb, rb, sb) in itertools.combinations(items, 2):
            n += 1
            if _sign(ra - rb) != _sign(sa - sb):
                bad += 1
                which.append((s, pa, pb, ra, rb, sa, sb))
    return bad, n, which


def reward_order(policies: Sequence[str], scenario: Any, seeds: Sequence[int], rewards: Sequence[str]
                 ) -> dict[str, Any]:
    """Every policy x seed x reward episode, and per reward its discordant pairs (:func:`discordant_pairs`).
    The SLO attainment of a (policy, seed) is the same under every reward (the reward never changes the run):
    checked (RuntimeError otherwise)."""
    from kairos_gym.agents.registry import POLICIES
    from kairos_gym.env.reward import REWARD_KINDS

    for p in policies:
        if p not in POLICIES:
            raise ConfigError("reward-order", "--policies", p, "registry names: " + ", ".join(sorted(POLICIES)))
    for r in rewards:
        if r not in REWARD_KINDS:
            raise ConfigError("reward-order", "--rewards", r, ", ".join(REWARD_KINDS))
    if len(set(policies)) < 2:
        raise ConfigError("reward-order", "--policies", list(policies), "at least two distinct policies")
    runs: dict[str, list[tuple[str, int, float, float]]] = {r: [] for r in rewards}
    slo: dict[tuple[str, int], float] = {}
    for p in policies:
        for s in seeds:
            for r in rewards:
                ret, att = episode(p, scenario, s, r)
                if slo.setdefault((p, s), att) != att:
                    raise RuntimeError(f"reward-order: {p} on seed {s} scored {att} with reward {r}, "
                                       f"{slo[(p, s)]} with another")
                runs[r].append((p, s, ret, att))
    out: dict[str, Any] = {"policies": list(policies), "seeds": list(seeds), "rewards": {}}
    for r in rewards:
        bad, n, which = discordant_pairs(runs[r])
        out["rewards"][r] = {"discordant": bad, "pairs": n, "share": bad / n if n else 0.0,
                             "episodes": [list(x) for x in runs[r]], "discordant_pairs": [list(x) for x in which]}
    return out


__all__ = ["DEFAULT_POLICIES", "MAX_EPISODE_REQUESTS", "discordant_pairs", "episode", "reward_order"]
