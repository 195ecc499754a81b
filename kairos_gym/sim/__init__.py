"""The cluster simulator core (no gymnasium import).

:class:`Simulator` (:mod:`kairos_gym.sim.simulator`) runs the C++ core ``kairos_gym._core``; the decision hook
(:class:`Policy`, :class:`DecisionContext`, :class:`Decision`) is :mod:`kairos_gym.sim.hook`.
"""

from __future__ import annotations

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
from kairos_gym.sim.simulator import Simulator

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
