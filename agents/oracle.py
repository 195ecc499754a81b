"""Oracle: per-request lookahead with true latencies and the true future, through simulator snapshots.

At each decision the Oracle tries every valid option on the real simulator:

- the prefill path (join-shortest-queue), and
- a deflection with ``chunk = LARGEST_SAFE`` to each decode node that can take one (``can_deflect``);
  with ``prune_infeasible`` (default) only nodes whose true LargestSafe schedule is feasible
  (``ctx.largest_safe_feasible``): an infeasible deflection runs 128-token chunks over budget, i.e. it
  violates TBT by construction.

For each option it takes a snapshot, applies the option, and rolls the simulation forward with a
continuation policy (default: :class:`Kairos` with its exact model and no staleness) until the first
decision whose arrival is at or after ``now + horizon_s`` (default 20 s), after ``horizon_decisions``
decisions if set, or to the end of the workload. Arrival times are fixed by the workload, so every
option's rollout stops at the same simulated time. The score is

``score = delta(sim.wait_area) + tbt_penalty_s * delta(sim.tbt_violations)``

where ``wait_area`` is the integral of the number of requests still waiting for their first token
(request-seconds: the sum of the TTFT accrued in the window) and ``tbt_violations`` counts token gaps
above the TBT SLO (default penalty 10 request-seconds per gap: violations are all but forbidden). The
lowest score wins, ties to the prefill path; the simulator is then restored and the decision returned.

Cost: one snapshot plus one restore and one rollout per option (a deep copy of the simulator state,
tens of ms on a few thousand requests, and ~horizon_s x arrival rate decisions of the continuation per
rollout): of the order of a second per decision at 20 req/s with the default horizon. When only the
prefill path is valid no rollout is made. The Oracle must be attached to the simulator it decides for
(``attach(sim)``; :func:`kairos_gym.agents.runner.run_policy` does it).
"""

from __future__ import annotations

import math
from typing import Any

from kairos_gym.agents.base import BasePolicy
from kairos_gym.agents.kairos import Kairos

from kairos_gym.errors import ConfigError
from kairos_gym.sim import Simulator
from kairos_gym.sim.hook import LARGEST_SAFE, Decision, DecisionContext, Policy
from kairos_gym.workload.rules import Number


class Oracle(BasePolicy):
    """Lookahead over the true simulator (see the module docstring)."""

    name = "oracle"

    def __init__(
        self,
        scenario: Any = "bursty",
        seed: int | None = 0,
        horizon_s: float = 20.0,
        horizon_decisions: int | None = None,
        tbt_penalty_s: float = 10.0,
        prune_infeasible: bool = True,
        continuation: Policy | None = None,
    ) -> None:
        super().__init__(seed)
        where = f"policy {self.name}"
        self.horizon_s = Number(low=0.0, low_open=True).check(where, "horizon_s", horizon_s)
        self.horizon_decisions = Number(integer=True, low=0, optional=True).check(
            where, "horizon_decisions", horizon_decisions)
        self.tbt_penalty_s = Number(low=0.0).check(where, "tbt_penalty_s", tbt_penalty_s)
        if not isinstance(prune_infeasible, bool):
            raise ConfigError(where, "prune_infeasible", prune_infeasible, "true or false")
        self.prune_infeasible = prune_infeasible
        if continuation is None:
            cont = Kairos(scenario, seed=seed)
            cont.record_times = False
            continuation = cont
        elif not callable(getattr(continuation, "decide", None)):
            raise ConfigError(where, "continuation", continuation, "a policy with decide(ctx) -> Decision")
        self.continuation = continuation
        self.sim: Simulator | None = None
        self.n_rollouts = 0
        self.last_scores: list[tuple[Decision, float]] = []

    def attach(self, sim: Simulator) -> None:
        """Decide for this simulator (it is snapshotted, rolled forward and restored at every decision)."""
        self.sim = sim

    def _reset_state(self) -> None:
        self.n_rollouts = 0
        self.last_scores = []
        reset = getattr(self.continuation, "reset", None)
        if callable(reset):
            reset()

    def options(self, ctx: DecisionContext) -> list[Decision]:
        """The options tried: the prefill path first, then each admissible deflection (LARGEST_SAFE)."""
        opts = [Decision.prefill_path()]
        for d, v in enumerate(ctx.decode):
            if v.can_deflect and not v.deflection_in_flight \
                    and (ctx.largest_safe_feasible[d] or not self.prune_infeasible):
                opts.append(Decision.deflect(d, LARGEST_SAFE))
        return opts

    def _decide(self, ctx: DecisionContext) -> Decision:
        sim = self.sim
        if sim is None:
            raise RuntimeError("Oracle needs the simulator it decides for: call oracle.attach(sim) first, or run it "
                               "with kairos_gym.agents.runner.run_policy(oracle, scenario, seed)")
        current = sim.next_decision()  # the pending context (no events run while a decision is pending)
        if current is None or current.request.rid != ctx.request.rid:
            raise RuntimeError("Oracle.decide(ctx): ctx is not the attached simulator's pending decision")
        opts = self.options(ctx)
        self.last_scores = []
        if len(opts) == 1:
            return opts[0]
        snap = sim.snapshot()
        best = opts[0]
        best_score = math.inf
        for opt in opts:
            score = self._rollout(sim, opt, ctx.now_s)
            sim.restore(snap)
            self.last_scores.append((opt, score))
            if score < best_score:
                best, best_score = opt, score
        return best

    def _rollout(self, sim: Simulator, first: Decision, now: float) -> float:
        self.n_rollouts += 1
        w0 = sim.wait_area
        v0 = sim.tbt_violations
        sim.apply(first)
        t_end = now + self.horizon_s
        limit = self.horizon_decisions
        cont = self.continuation
        n = 0
        ctx = sim.next_decision()
        while ctx is not None and ctx.now_s < t_end and (limit is None or n < limit):
            sim.apply(cont.decide(ctx))
            n += 1
            ctx = sim.next_decision()
        return (sim.wait_area - w0) + self.tbt_penalty_s * (sim.tbt_violations - v0)

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "horizon_s": self.horizon_s, "horizon_decisions": self.horizon_decisions,
                "tbt_penalty_s": self.tbt_penalty_s, "prune_infeasible": self.prune_infeasible}
