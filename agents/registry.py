"""Policy registry: one name per baseline, and ``make_policy`` to build any of them for a scenario.

Every factory takes ``(scenario, seed=..., **params)``; ``make_policy`` rejects unknown names and
unknown parameters with a :class:`ConfigError` listing what is valid.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from kairos_gym.agents.base import BasePolicy
from kairos_gym.agents.baselines import SL, SQ, AlwaysDeflect, NoDeflect, Random
from kairos_gym.agents.kairos import Kairos
from kairos_gym.agents.oracle import Oracle
from kairos_gym.agents.ppo import PPOAgent

from kairos_gym.config import load_scenario
from kairos_gym.errors import ConfigError

POLICIES: dict[str, Callable[..., BasePolicy]] = {
    "no-deflect": NoDeflect,
    "always-deflect": AlwaysDeflect,
    "random": Random,
    "sq": SQ,
    "sl": SL,
    "kairos": Kairos,
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
