"""The cluster simulator core (no gymnasium import).

:class:`Simulator` is the native simulator (:class:`kairos_gym.sim.simulator.NativeSimulator`, the C++ core
``kairos_gym._core``), the only engine. The Python reference engine it was ported from was removed (issue 11) once
the golden datasets in ``tests/golden/`` held its results; ``Simulator(..., engine=...)`` is gone (a TypeError)
and a ``KAIROS_ENGINE`` environment variable other than ``native`` is refused with a
:class:`~kairos_gym.errors.ConfigError` at construction.
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
from kairos_gym.sim.simulator import NativeSimulator as Simulator

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
