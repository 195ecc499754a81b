"""Policy registry: one name per baseline, and ``make_policy`` to build any of them for a scenario.

Every factory takes ``(scenario, seed=..., **params)``; ``make_policy`` rejects unknown names and
unknown parameters with a :class:`ConfigError` listing what is valid.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from kairos_gym.agents.base import BasePolicy
from kairos_gym.agents.baselines import SL, SLLS, SQ, SQLS, AlwaysDeflect, AlwaysDeflectLS, NoDeflect, Random
from kairos_gym.agents.kairos import Kairos
from kairos_gym.agents.oracle import Oracle
from kairos_gym.agents.ppo import PPOAgent

from kairos_gym.config import load_scenario
from kairos_gym.errors import ConfigError


class KairosExact(Kairos):
    """Kairos with a fresh view of the cluster and an exact latency model: ``staleness_s = 0`` and
    ``model_error = 0`` (no parameter for them), i.e. the exact fresh rule of docs/policies.md; it draws no
    random numbers. Not an upper bound (it sees no future arrivals or output lengths); one of the rollout
    Oracle's base policies (:mod:`kairos_gym.agents.oracle`), which is the leaderboard's reference."""

    name = "kairos-exact"

    def __init__(self, scenario: Any = "bursty", seed: int | None = 0, alpha: float = 1.3, beta: float | None = None,
                 chunk_menu: Any = None, model: Any = None) -> None:
        super().__init__(scenario, seed, alpha=alpha, beta=beta, staleness_s=0.0, model_error=0.0,
                         chunk_menu=chunk_menu, model=model)


POLICIES: dict[str, Callable[..., BasePolicy]] = {
    "no-deflect": NoDeflect,
    "always-deflect": AlwaysDeflect,
    "always-deflect-ls": AlwaysDeflectLS,
    "random": Random,
    "sq": SQ,
    "sq-ls": SQLS,
    "sl": SL,
    "sl-ls": SLLS,
    "kairos": Kairos,
    "kairos-exact": KairosExact,
    "oracle": Oracle,
    "ppo": PPOAgent,
}


def policy_params(name: str) -> list[str]:
    """The keyword parameters of policy ``name`` (besides scenario and seed)."""
    factory = _factory(name)
    return [p for p in inspect.signature(factory).parameters if p not in ("self", "scenario", "seed")]


def _factory(name: Any) -> Callable[..., BasePolicy]:
    if not isinstance(name, str) or name not in POLICIES:
        raise ConfigError("policy", "name", name, "one of " + ", ".join(POLICIES))
    return POLICIES[name]


def make_policy(name: str, scenario: Any = "bursty", seed: int = 0, **kwargs: Any) -> BasePolicy:
    """Build policy ``name`` for ``scenario`` (a name, YAML path, dict or ScenarioConfig).

    ``kwargs`` are the policy's parameters (see ``policy_params(name)`` and docs/policies.md).
    """
    factory = _factory(name)
    allowed = policy_params(name)
    for key, value in kwargs.items():
        if key not in allowed:
            raise ConfigError(f"policy {name}", key, value, "one of the parameters " + ", ".join(allowed))
    return factory(load_scenario(scenario), seed=seed, **kwargs)
