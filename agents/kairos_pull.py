"""Kairos-pull: Kairos (:mod:`kairos_gym.agents.kairos`) extended to pull decisions.

At an arrival it is Kairos, unchanged. At a pull decision (``deflection.decision_points: arrival+pull``, a decode
node ``d = ctx.pull_node`` just freed its deflection slot; ``ctx.request`` is the candidate the simulator
nominated: a queued request whose prefill has not started) it applies the same rule to the candidate, on the
context as served (the information track's view and predictions, like every policy):

1. ``TTFT_P`` = the candidate's remaining predicted TTFT on its own queue (``ctx.ttft_prefill_s`` at its prefill
   node, the one finite entry: the dispatcher knows where it queued the request, the simulator prices the work
   still ahead of it; on the realistic track that prediction carries the node's served error).
2. ``TTFT_D`` = Kairos's own LargestSafe schedule of the prompt on node ``d`` (the served view of ``d``, budget
   ``beta * tbt_slo``), with node ``d``'s served error factor ``f_d`` (:meth:`Kairos.decode_factor`; 1.0 on the
   exact track) applied as at an arrival: every step scaled by ``f_d`` in the budget test and in the total.
3. Pull (deflect to ``d`` with ``LARGEST_SAFE``) iff the schedule is feasible, ``TTFT_D <= alpha * TTFT_P``
   (the arrival test on what remains from now: the time already waited is sunk), ``waited + TTFT_D <=
   TTFT_SLO`` with ``waited = now - arrival`` (the arrival SLO test on the request's whole TTFT; at an arrival
   ``waited = 0`` and both tests are Kairos's) and ``can_deflect`` of node ``d``. Otherwise stay (prefill path,
   no node named).
"""

from __future__ import annotations

import math

from kairos_gym.agents.kairos import Kairos, KairosEstimate

from kairos_gym.sim.hook import LARGEST_SAFE, Decision, DecisionContext


class KairosPull(Kairos):
    """Kairos that also answers pull decisions (see the module docstring for the rule)."""

    name = "kairos-pull"

    def _reset_state(self) -> None:
        super()._reset_state()
        self.n_pulls_seen = 0
        self.n_pulls_taken = 0

    def decide_pull(self, ctx: DecisionContext) -> Decision:
        d = ctx.pull_node
        if d is None or not 0 <= d < len(ctx.decode):
            raise RuntimeError(f"policy {self.name}: a pull decision without a valid pull_node ({d!r})")
        self.n_pulls_seen += 1
        finite = [p for p, t in enumerate(ctx.ttft_prefill_s) if t != math.inf]
        if len(finite) != 1:
            raise RuntimeError(f"policy {self.name}: a pull decision prices {len(finite)} prefill nodes, not 1")
        p = finite[0]
        dv = ctx.decode[d]
        prompt = ctx.request.prompt_tokens
        f_d = self.decode_factor(ctx, d)
        ttft_p = ctx.ttft_prefill_s[p]
        b = dv.batch_size
        ok, total, sizes = self.pricer.largest_safe(b, dv.total_context + b, prompt, self.beta * dv.tbt_slo_s / f_d,
                                                    self.menu_desc)
        ttft_d = total * f_d if ok else math.inf
        waited = ctx.now_s - ctx.request.arrival_s
        decision = Decision.prefill_path()
        if ok and ttft_d <= self.alpha * ttft_p and waited + ttft_d <= ctx.ttft_slo_s and dv.can_deflect:
            decision = Decision.deflect(d, LARGEST_SAFE)
            self.n_pulls_taken += 1
        n_p, n_d = len(ctx.prefill), len(ctx.decode)
        ttft_ds = tuple(ttft_d if j == d else math.inf for j in range(n_d))
        scheds = tuple(tuple(sizes) if (j == d and ok) else () for j in range(n_d))
        ttft_ps = tuple(ttft_p if i == p else math.inf for i in range(n_p))
        factors = tuple(f_d if j == n_p + d else 1.0 for j in range(n_p + n_d))
        self.last = KairosEstimate(ttft_ps, ttft_ds, scheds, ttft_p, d if ok else None, factors, decision)
        return decision
