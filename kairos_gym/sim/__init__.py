"""The cluster simulator core (no gymnasium import)."""

from kairos_gym.sim.engine import Simulator
from kairos_gym.sim.hook import (
    DEFLECT,
    LARGEST_SAFE,
    PREFILL,
    Decision,
    DecisionContext,
    DecodeNodeView,
    Policy,
    PrefillNodeView,
    RequestView,
)

__all__ = [
    "DEFLECT",
    "LARGEST_SAFE",
    "PREFILL",
    "Decision",
    "DecisionContext",
    "DecodeNodeView",
    "Policy",
    "PrefillNodeView",
    "RequestView",
    "Simulator",
]
