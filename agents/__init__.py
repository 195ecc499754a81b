"""Baseline policies of kairos-gym behind one interface (see docs/policies.md).

Every policy implements the simulator's hook ``decide(ctx: DecisionContext) -> Decision`` plus an
SB3-like ``predict``; build them by name with :func:`make_policy` and run them with :func:`run_policy`.
"""

from kairos_gym.agents.base import BasePolicy
from kairos_gym.agents.baselines import SL, SQ, AlwaysDeflect, NoDeflect, PendingSwitch, Random
from kairos_gym.agents.kairos import Kairos, KairosEstimate
from kairos_gym.agents.oracle import Oracle
from kairos_gym.agents.ppo import PPOAgent
from kairos_gym.agents.registry import POLICIES, make_policy, policy_params
from kairos_gym.agents.runner import run_policy

__all__ = [
    "POLICIES",
    "SL",
    "SQ",
    "AlwaysDeflect",
    "BasePolicy",
    "Kairos",
    "KairosEstimate",
    "NoDeflect",
    "Oracle",
    "PPOAgent",
    "PendingSwitch",
    "Random",
    "make_policy",
    "policy_params",
    "run_policy",
]
