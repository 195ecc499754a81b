"""Kairos-pull: Kairos (:mod:`kairos_gym.agents.kairos`) extended to pull decisions (issue 12 item 2).

At an arrival it is Kairos, unchanged. At a pull decision (``deflection.decision_points: arrival+pull``, a decode
node ``d = ctx.pull_node`` just freed its deflection slot; ``ctx.request`` is the candidate the simulator
nominated: a queued request whose prefill has not started) it applies the same rule to the candidate:

1. The freed node signals its slot free with its state: Kairos's view of node ``d`` only is updated from the
   context (``batch_size``, ``total_context``, ``tbt_slo_s``, ``can_deflect``; no deflection in flight). Nothing
   else is refreshed (the other nodes' ``can_deflect`` are masked at a pull), and no staleness refresh happens.
2. ``TTFT_P`` = the candidate's remaining predicted TTFT on its own queue (``ctx.ttft_prefill_s`` at its prefill
   node, the one finite entry: the dispatcher knows where it queued the request, the simulator prices the work
   still ahead of it), times ``1 + e_p``.
3. ``TTFT_D`` = Kairos's own LargestSafe schedule of the prompt on node ``d`` (its view, budget
   ``beta * tbt_slo``), times ``1 + e_d``. Two model-error draws per pull (``e_p``, ``e_d``; none when
   ``model_error = 0``), from the policy's generator.
4. Pull (deflect to ``d`` with ``LARGEST_SAFE``) iff the schedule is feasible, ``TTFT_D <= alpha * TTFT_P``
   (the arrival test on what remains from now: the time already waited is sunk) and ``waited + TTFT_D <=
   TTFT_SLO`` with ``waited = now - arrival`` (the arrival SLO test on the request's whole TTFT; at an arrival
   ``waited = 0`` and both tests are Kairos's), and the node's fresh ``can_deflect``. Otherwise stay (prefill
   path, no node named). A pull removes the prompt from that prefill node's queue in Kairos's view.
"""

from __future__ import annotations

import math

from kairos_gym.agents.kairos import MIN_ERROR_FACTOR, Kairos, KairosEstimate

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
        if self._last_refresh is None or len(self._d_batch) != len(ctx.decode) \
                or len(self._p_tokens) != len(ctx.prefill):
            self.refresh(ctx)  # the first decision of a run (a pull cannot be; kept for safety)
        dv = ctx.decode[d]
        self._d_batch[d], self._d_ctx[d], self._d_tbt[d] = dv.batch_size, dv.total_context, dv.tbt_slo_s
        self._d_busy[d] = False
        self._d_can[d] = dv.can_deflect
        finite = [p for p, t in enumerate(ctx.ttft_prefill_s) if t != math.inf]
        if len(finite) != 1:
            raise RuntimeError(f"policy {self.name}: a pull decision prices {len(finite)} prefill nodes, not 1")
        p = finite[0]
        if self.sigma > 0.0:
            e_p, e_d = self.rng.normal(0.0, self.sigma, 2)
            f_p, f_d = max(MIN_ERROR_FACTOR, 1.0 + float(e_p)), max(MIN_ERROR_FACTOR, 1.0 + float(e_d))
        else:
            f_p = f_d = 1.0
        ttft_p = ctx.ttft_prefill_s[p] * f_p
        prompt = ctx.request.prompt_tokens
        b = self._d_batch[d]
        ok, total, sizes = self.pricer.largest_safe(b, self._d_ctx[d] + b, prompt, self.beta * self._d_tbt[d] / f_d,
                                                    self.menu_desc)
        ttft_d = total * f_d if ok else math.inf
        waited = ctx.now_s - ctx.request.arrival_s
        decision = Decision.prefill_path()
        if ok and ttft_d <= self.alpha * ttft_p and waited + ttft_d <= ctx.ttft_slo_s and dv.can_deflect:
            decision = Decision.deflect(d, LARGEST_SAFE)
            self._d_busy[d] = True
            self._p_tokens[p] = max(0, self._p_tokens[p] - prompt)
            self._p_reqs[p] = max(0, self._p_reqs[p] - 1)
            self.n_pulls_taken += 1
        ttft_ds = tuple(ttft_d if j == d else math.inf for j in range(len(ctx.decode)))
        scheds = tuple(tuple(sizes) if (j == d and ok) else () for j in range(len(ctx.decode)))
        ttft_ps = tuple(ttft_p if i == p else math.inf for i in range(len(ctx.prefill)))
        self.last = KairosEstimate(ttft_ps, ttft_ds, scheds, ttft_p, d if ok else None, False, decision)
        return decision
