"""``slo-guard``: the predictive threshold rule, the strongest simple baseline of benchmark v2 (docs/benchmark.md).

It reads the :class:`~kairos_gym.sim.hook.DecisionContext`'s predictions, not only its queues: the request takes the
prefill path while that path's predicted TTFT (the best prefill node's ``ttft_prefill_s``: queue wait, own prefill,
KV transfer) is within ``fraction`` x the TTFT SLO. Past that, it is deflected with LargestSafe chunks to the decode
node whose LargestSafe schedule predicts the earliest first token, when one is feasible and predicts an earlier
first token than the prefill path; otherwise it still takes the prefill path (join-shortest-queue). ``fraction`` is
the one parameter (> 0; default 0.5): small deflects early, large only once the prefill path is about to miss.

Kairos (agents/kairos.py) differs in what it compares: it deflects when its own latency model prices the
deflection at most ``alpha`` x the prefill path and within the SLO; slo-guard keeps the prefill path while it has
slack against the SLO, whatever the deflection costs.
"""

from __future__ import annotations

import math
from typing import Any

from kairos_gym.agents.base import BasePolicy, deflectable, scenario_or_none

from kairos_gym.sim.hook import LARGEST_SAFE, Decision, DecisionContext
from kairos_gym.workload.rules import Number

MAX_FRACTION = 100.0
"""Largest ``fraction`` (a multiple of the TTFT SLO)."""


class SLOGuard(BasePolicy):
    """Prefill while the prefill path's predicted TTFT <= ``fraction`` x the TTFT SLO, else deflect (LargestSafe)
    to the decode node predicting the earliest first token if it beats the prefill path."""

    name = "slo-guard"

    def __init__(self, scenario: Any = None, seed: int | None = 0, fraction: float = 0.5) -> None:
        super().__init__(seed)
        scenario_or_none(scenario)
        self.fraction = Number(low=0.0, low_open=True, high=MAX_FRACTION).check(f"policy {self.name}", "fraction",
                                                                                fraction)

    def _decide(self, ctx: DecisionContext) -> Decision:
        prefill = min(ctx.ttft_prefill_s)
        if prefill <= self.fraction * ctx.ttft_slo_s:
            return Decision.prefill_path()
        best, best_ttft = None, math.inf
        for d, view in enumerate(ctx.decode):
            if deflectable(view) and ctx.largest_safe_feasible[d] and ctx.largest_safe_ttft_s[d] < best_ttft:
                best, best_ttft = d, ctx.largest_safe_ttft_s[d]
        if best is None or best_ttft >= prefill:
            return Decision.prefill_path()
        return Decision.deflect(best, LARGEST_SAFE)

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "fraction": self.fraction}
