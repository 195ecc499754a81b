"""Input layouts of a trained policy: what follows the environment's observation.

A safe checkpoint's ``policy.json`` may name its input layout (``inputs``, :data:`~kairos_gym.agents.checkpoint.
INPUTS`); without the key it is ``observation``, the environment's observation alone. ``observation+kairos``
appends a one-hot (``ActionLayout.n`` float32 values) of the env action that :class:`~kairos_gym.agents.kairos.Kairos`
takes at the same decision: Kairos built for the scenario the policy runs on (so on its information track: on the
realistic track Kairos reads the same stale, noisy view the policy does), deciding on the same
:class:`~kairos_gym.sim.hook.DecisionContext`. Kairos is only a feature extractor here: its decision is never
applied, and the policy's own action still goes through the mask. Kairos's prefill path (any named node: it picks
the shortest queue of the served view) is action 0; its deflections (always the LargestSafe schedule) are the
layout's LargestSafe action of that decode node, so the layout must offer that action
(``deflection.largest_safe_action``; every ``distilled-oracle`` checkpoint has it).

Kairos draws nothing and keeps no state between decisions (its last estimate only), so the feature is a pure
function of the context: :class:`KairosFeature` on a context equals a standalone Kairos deciding on it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from kairos_gym.agents.checkpoint import INPUTS

from kairos_gym.errors import ConfigError
from kairos_gym.sim.hook import DEFLECT, Decision, DecisionContext

__all__ = ["INPUTS", "KairosFeature", "extra_size", "kairos_action", "one_hot"]


def extra_size(inputs: str, action_count: int) -> int:
    """Features an input layout appends to the observation (0 for ``observation``)."""
    if inputs == "observation":
        return 0
    if inputs == "observation+kairos":
        return int(action_count)
    raise ConfigError("inputs", "inputs", inputs, "one of " + ", ".join(INPUTS))


def one_hot(action: int, n: int) -> np.ndarray:
    """float32 ``(n,)`` with a 1 at ``action``: how an action index is fed to a policy as an input."""
    out = np.zeros(n, dtype=np.float32)
    out[int(action)] = 1.0
    return out


def kairos_action(layout: Any, decision: Decision) -> int:
    """The env action (index into ``layout``, an :class:`~kairos_gym.env.actions.ActionLayout`) of a Kairos
    decision: any prefill path is action 0 (the env's prefill action joins the shortest queue, as Kairos does on
    its view); a deflection is the layout action with the same decode node and chunk. ConfigError when the layout
    has no such action (a layout without the LargestSafe action)."""
    if decision.path != DEFLECT:
        return 0
    target = Decision.deflect(int(decision.decode_node), int(decision.chunk))  # type: ignore[arg-type]
    for a, d in enumerate(layout.decisions):
        if d == target:
            return a
    raise ConfigError("inputs observation+kairos", "decision", decision,
                      "a decision of the env's action table (deflection.largest_safe_action: true)")


class KairosFeature:
    """The ``observation+kairos`` extra features: Kairos on ``scenario`` (its track), one-hot over ``layout``."""

    def __init__(self, scenario: Any, layout: Any) -> None:
        from kairos_gym.agents.kairos import Kairos

        if not layout.largest_safe:
            raise ConfigError("inputs observation+kairos", "action layout", f"{layout.n} actions",
                              "a layout with the LargestSafe deflection (deflection.largest_safe_action: true), the "
                              "action Kairos takes")
        self.layout = layout
        self.kairos = Kairos(scenario)
        self.kairos.record_times = False
        self.size = int(layout.n)

    def action(self, ctx: DecisionContext) -> int:
        """Kairos's env action at ``ctx``."""
        return kairos_action(self.layout, self.kairos.decide(ctx))

    def encode(self, ctx: DecisionContext) -> np.ndarray:
        """The one-hot (float32, ``layout.n``) of :meth:`action`."""
        return one_hot(self.action(ctx), self.size)
