"""Policy registry: one name per baseline, and ``make_policy`` to build any of them for a scenario.

Every factory takes ``(scenario, seed=..., **params)``; ``make_policy`` rejects unknown names and
unknown parameters with a :class:`ConfigError` listing what is valid.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from kairos_gym.agents.base import BasePolicy
from kairos_gym.agents.baselines import (
    SL,
    SLLS,
    SQ,
    SQLS,
    AlwaysDeflect,
    AlwaysDeflectLS,
    NoDeflect,
    PendingSwitch,
    Random,
)
from kairos_gym.agents.kairos import Kairos
from kairos_gym.agents.kairos_pull import KairosPull
from kairos_gym.agents.oracle import Oracle
from kairos_gym.agents.ppo import DistilledOracle, PPOAgent
from kairos_gym.agents.slo_guard import SLOGuard

from kairos_gym.errors import ConfigError
from kairos_gym.scenario import load_scenario


class KairosExact(Kairos):
    """Kairos on the exact information track: the same policy as ``kairos`` (no parameter of its own), for a
    scenario whose ``information.track`` is ``exact`` (the default); for a realistic-track scenario it is a
    :class:`ConfigError` (tracks belong to the environment: run ``kairos`` there). Kept so that results and
    commands naming ``kairos-exact`` (the fresh rule with an exact latency model) keep their meaning. It is one of
    the rollout Oracle's base policies (:mod:`kairos_gym.agents.oracle`), which is the leaderboard's reference."""

    name = "kairos-exact"

    def __init__(self, scenario: Any = "bursty", seed: int | None = 0, alpha: float = 1.3, beta: float | None = None,
                 chunk_menu: Any = None, model: Any = None, staleness_s: Any = None, model_error: Any = None) -> None:
        sc = load_scenario(scenario)
        if sc.information.realistic:
            raise ConfigError(f"policy {self.name}", "scenario information.track", sc.information.track,
                              "exact (kairos-exact is Kairos on the exact track; on the realistic track run kairos)")
        super().__init__(sc, seed, alpha=alpha, beta=beta, chunk_menu=chunk_menu, model=model,
                         staleness_s=staleness_s, model_error=model_error)


POLICIES: dict[str, Callable[..., BasePolicy]] = {
    "no-deflect": NoDeflect,
    "always-deflect": AlwaysDeflect,
    "always-deflect-ls": AlwaysDeflectLS,
    "random": Random,
    "sq": SQ,
    "sq-ls": SQLS,
    "sl": SL,
    "sl-ls": SLLS,
    "pending-switch": PendingSwitch,
    "slo-guard": SLOGuard,
    "kairos": Kairos,
    "kairos-exact": KairosExact,
    "kairos-pull": KairosPull,
    "oracle": Oracle,
    "ppo": PPOAgent,
    "distilled-oracle": DistilledOracle,
}


DESCRIPTIONS: dict[str, str] = {
    "no-deflect": "plain disaggregation: every prefill on a prefill node (join-shortest-queue)",
    "always-deflect": "deflect whenever a decode node can take one, in fixed chunks (chunk, default 512 tokens)",
    "always-deflect-ls": "always-deflect with LargestSafe chunks",
    "random": "uniform over the valid routes (prefill path or a decode node that can take one); seeded",
    "sq": "static queue threshold: deflect when the shortest prefill queue exceeds queue_threshold",
    "sq-ls": "sq with LargestSafe chunks",
    "sl": "static length threshold: deflect prompts shorter than length_threshold tokens",
    "sl-ls": "sl with LargestSafe chunks",
    "pending-switch": "deflect while the decode nodes' pending admissions reach k (a stalled P->D link)",
    "slo-guard": "predictive rule: prefill while the prefill path's predicted TTFT is within fraction x the TTFT SLO, "
                 "else deflect (LargestSafe) where the first token is predicted earliest",
    "kairos": "Kairos: deflect (LargestSafe) when its own latency model prices the first token at most alpha x "
              "the prefill path's and within the TTFT SLO",
    "kairos-exact": "Kairos on the exact information track (refuses a realistic-track scenario)",
    "kairos-pull": "Kairos that also answers pull decisions (deflection.decision_points: arrival+pull)",
    "oracle": "clairvoyant rollout Oracle: every action rolled out to the end under base policies (slow)",
    "ppo": "the shipped PPO agent (agents/checkpoints/ppo-kairos-v0); path= for another safe checkpoint",
    "distilled-oracle": "the general agent distilled from the Oracle (agents/checkpoints/distilled-oracle)",
}
"""One line per registry name: what the policy does (``kairos-gym list policies``; docs/policies.md in full)."""


def policy_params(name: str) -> list[str]:
    """The keyword parameters of policy ``name`` (besides scenario and seed)."""
    factory = _factory(name)
    moved = getattr(factory, "MOVED_PARAMS", {})
    skip = ("self", "scenario", "seed", *moved)
    return [p for p in inspect.signature(factory).parameters if p not in skip]


RENAMED: dict[str, str] = {"ppo-general": "distilled-oracle"}
"""Former registry names and their names now: refused with the new name (never silently mapped)."""


def _factory(name: Any) -> Callable[..., BasePolicy]:
    if isinstance(name, str) and name in RENAMED:
        raise ConfigError("policy", "name", name, f"{RENAMED[name]!r} (renamed: it is a supervised student of "
                          "the Oracle, not an RL agent)")
    if not isinstance(name, str) or name not in POLICIES:
        raise ConfigError("policy", "name", name, "one of " + ", ".join(POLICIES))
    return POLICIES[name]


def make_policy(name: str, scenario: Any = "bursty", seed: int = 0, **kwargs: Any) -> BasePolicy:
    """Build policy ``name`` for ``scenario`` (a name, YAML path, dict or ScenarioConfig).

    ``kwargs`` are the policy's parameters (see ``policy_params(name)`` and docs/policies.md).
    """
    factory = _factory(name)
    allowed = policy_params(name)
    moved = getattr(factory, "MOVED_PARAMS", {})  # parameters that live elsewhere: the factory names their place
    for key, value in kwargs.items():
        if key not in allowed and key not in moved:
            raise ConfigError(f"policy {name}", key, value, "one of the parameters " + ", ".join(allowed))
    return factory(load_scenario(scenario), seed=seed, **kwargs)
