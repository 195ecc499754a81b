"""Kairos: the model-based deflection rule of docs/DOMAIN.md section 2, on the information the environment serves.

Per arriving request (prompt ``L`` tokens):

1. ``TTFT_P`` = min over prefill nodes ``p`` of ``(wait_p + own(L) + xfer(L)) * (1 + e_p)``:
   ``wait_p`` is the predicted time to execute the ``queued_tokens`` of ``p`` in prefill steps of
   ``prefill_token_budget`` tokens (linear part per full/partial step, plus the attention of
   ``queued_requests`` prompts of equal length); ``own(L)`` the request's own prefill (chunked by the
   budget when longer); ``xfer(L) = setup_s + L * kv_bytes_per_token / bandwidth`` when the scenario's
   TTFT includes the KV transfer and transfers are enabled, else 0.
2. For each decode node ``d`` with no deflected prefill in flight that can take one: the greedy
   LargestSafe schedule (:meth:`ChunkPricer.largest_safe`, priced by its native twin ``_core.Pricer``)
   of the whole prompt over the node's batch (``batch_size`` requests, ``total_context + batch_size``
   decode pairs, growing by one token per request per step) with budget ``beta * tbt_slo``: each chunk
   the largest menu size whose predicted step fits. Infeasible (skipped) when even the smallest size
   does not fit. ``TTFT_D(d)`` = sum of its step times, times ``(1 + e_d)``.
3. Deflect to ``argmin_d TTFT_D`` iff ``TTFT_D <= alpha * TTFT_P`` and ``TTFT_D <= TTFT_SLO``; the
   decision carries ``chunk = LARGEST_SAFE``: the simulator re-applies LargestSafe chunk by chunk on the
   true state (with the scenario's menu and ``deflection.beta``), so the schedule Kairos priced is a
   prediction, not a commitment. Otherwise the prefill path, to the prefill node with the fewest
   queued tokens in the served view (join-shortest-queue as the dispatcher sees it).
4. At most one deflection in flight per decode node (nodes with one in flight are skipped).

Information: Kairos has no realism knobs of its own. Staleness and model error are properties of
the environment, the scenario's ``information`` track (docs/scenarios.md, docs/env.md), served by the simulator
to every policy alike:

- **exact** track: the node views are the true, fresh state and Kairos's predictions are its exact model's:
  the exact fresh rule above (what ``kairos-exact`` runs on any scenario; no random draws at all).
- **realistic** track: the node views Kairos reads are the dispatcher's stale copy the simulator serves
  (refreshed every ``information.staleness_s``, plus the dispatcher's own decisions since), and each node's
  predictions carry that node's served estimator error at this decision: Kairos multiplies its own prediction
  for node ``n`` by ``f_n`` = the served prediction over its own model's of one quantity both price (decode
  node: ``step_s[d][0]``, the first step with the menu's smallest chunk next to the served batch; prefill node:
  ``ttft_prefill_s - predicted_wait_s``, the arriving prompt's own prefill and transfer), so ``f_n`` is the
  simulator's ``1 + e_n`` (drawn from the run's generator) to rounding. As before, TTFT_P(p) is scaled by
  ``f_p`` and every step of node d's schedule by ``f_d`` (the budget test becomes ``step * f_d <= budget``).
  Kairos reads the track from its scenario (build it for the scenario it runs on, as the runner does).
  Admission is the simulator's: a deflection the served view offered but the node refuses at apply time falls
  back to the shortest (true) prefill queue (counted in ``n_invalid_actions`` and ``n_stale_refusals``); Kairos
  does not re-check it.

``Kairos(staleness_s=..., model_error=...)`` is a :class:`ConfigError` pointing to the scenario option.

Pull decisions (``deflection.decision_points: arrival+pull``, ``ctx.kind == "pull"``): Kairos is the paper's
arrival-only rule and answers every pull with the prefill path (stay), drawing nothing and leaving its view
untouched, so its run is bit for bit its arrival-only run. :class:`kairos_gym.agents.kairos_pull.KairosPull`
(``kairos-pull``) applies the same rule to the pull's candidate.

Re-entry decisions (faults, ``faults.reentry: policy``, ``ctx.kind == "reentry"``): a request a node failure sent
back is decided by the same rule as an arrival, on the prefill it now needs (``L`` = prompt + the
``ctx.emitted_tokens`` it already emitted), on the same served view (stale and noisy on the realistic track):
deflected when its model says so, else the shortest up prefill queue (held when none is up).

Decision cost: every ``decide`` is timed (``decision_times_us``, ``decision_us_p50``/``_p99``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from kairos_gym.agents.base import BasePolicy

from kairos_gym.errors import ConfigError
from kairos_gym.latency.model import StepLatencyModel
from kairos_gym.latency.pricing import ChunkPricer, core_pricer, table_sizes
from kairos_gym.scenario import ScenarioConfig, load_scenario
from kairos_gym.sim.hook import LARGEST_SAFE, PULL, Decision, DecisionContext
from kairos_gym.workload.rules import Number

MOVED_PARAMS = {"staleness_s": "information.staleness_s", "model_error": "information.model_error"}
"""Parameters of the scenario's information track, not of Kairos: passing one to Kairos is a ConfigError that names
its place in the scenario."""


@dataclass
class KairosEstimate:
    """What Kairos predicted at its last decision (for tests, debugging and plots). Seconds, tokens."""

    ttft_prefill_s: tuple[float, ...]  # per prefill node, perturbed
    ttft_deflect_s: tuple[float, ...]  # per decode node, perturbed; inf when skipped or infeasible
    schedules: tuple[tuple[int, ...], ...]  # per decode node: LargestSafe chunk sizes (empty when skipped)
    ttft_p: float
    best_decode: int | None
    factors: tuple[float, ...]  # the error factors Kairos applied: prefill nodes, then decode nodes (1.0 on exact)
    decision: Decision


def build_model(scenario: ScenarioConfig) -> StepLatencyModel:
    """The step-latency model of the scenario's preset (what Kairos and the Oracle price with)."""
    cl = scenario.cluster
    return StepLatencyModel.from_preset(cl.model, cl.gpu, cl.tp, dict(cl.calibration) or None)


class Kairos(BasePolicy):
    """Kairos deflection (see the module docstring for the exact rule)."""

    name = "kairos"
    MOVED_PARAMS = MOVED_PARAMS

    def __init__(
        self,
        scenario: Any = "bursty",
        seed: int | None = 0,
        alpha: float = 1.3,
        beta: float | None = None,
        chunk_menu: Any = None,
        model: StepLatencyModel | None = None,
        staleness_s: Any = None,
        model_error: Any = None,
    ) -> None:
        super().__init__(seed)
        where = f"policy {self.name}"
        for key, value in (("staleness_s", staleness_s), ("model_error", model_error)):
            if value is not None:
                raise ConfigError(where, key, value, f"nothing (not a policy parameter any more): set the scenario's "
                                  f"{MOVED_PARAMS[key]} (with information.track: realistic), docs/scenarios.md")
        sc = load_scenario(scenario)
        self.scenario = sc
        self.realistic = sc.information.realistic
        self.alpha = Number(low=0.0, low_open=True).check(where, "alpha", alpha)
        self.beta = sc.deflection.beta if beta is None else Number(low=0.0, low_open=True).check(where, "beta", beta)
        if chunk_menu is None:
            menu = tuple(sc.deflection.chunk_menu)
        else:
            allowed = "a non-empty list of distinct chunk sizes (whole numbers from 1 to 16384, tokens)"
            if isinstance(chunk_menu, (str, bytes)) or not hasattr(chunk_menu, "__iter__"):
                raise ConfigError(where, "chunk_menu", chunk_menu, allowed)
            # bounded like deflection.chunk_menu: the pricer tabulates one entry per token of a chunk step
            size = Number(integer=True, low=1, high=16384)
            menu = tuple(size.check(where, "chunk_menu", c) for c in chunk_menu)
            if not menu or len(set(menu)) != len(menu):
                raise ConfigError(where, "chunk_menu", chunk_menu, allowed)
        self.chunk_menu: tuple[int, ...] = tuple(sorted(menu))  # type: ignore[arg-type]
        self.menu_desc = tuple(sorted(menu, reverse=True))  # type: ignore[arg-type]
        self.model = model if model is not None else build_model(sc)
        cl = sc.cluster
        # the native twin of ChunkPricer (bit-identical prices), tables sized for this scenario and menu
        self.pricer = core_pricer(ChunkPricer(self.model, self.chunk_menu),
                                    *table_sizes(cl.decode_max_batch, cl.prefill_token_budget, self.chunk_menu))
        self.prefill_budget = cl.prefill_token_budget
        tr = sc.transfer
        if tr.enabled and cl.ttft_includes_transfer:
            self._xfer_setup = tr.setup_s
            self._xfer_per_token = self.model.kv_bytes_per_token / tr.bandwidth_bytes_per_s
        else:
            self._xfer_setup = 0.0
            self._xfer_per_token = 0.0
        self._attn0 = self.pricer.model_time(1.0, 1.0, 0.0, 0.0, 0.0)
        self._step_full = self.pricer.base(self.prefill_budget, 1)
        self._own_memo: dict[int, float] = {}
        self.last: KairosEstimate | None = None
        self._reset_state()

    # ------------------------------------------------------------------ state
    def _reset_state(self) -> None:
        self.last = None

    # ------------------------------------------------------------------ predictions (own model, exact)
    def own_prefill_s(self, prompt: int) -> float:
        """Predicted execution of the prompt alone on a prefill node, chunked by the token budget (memoised)."""
        t = self._own_memo.get(prompt)
        if t is None:
            t = self._own_memo[prompt] = self._own_prefill(prompt)
        return t

    def _own_prefill(self, prompt: int) -> float:
        step_time = self.pricer.model_time  # StepLatencyModel.step_time_fast, bit for bit
        budget = self.prefill_budget
        if prompt <= budget:
            return step_time(float(prompt), 1.0, 0.0, prompt * (prompt + 1) / 2.0, float(prompt))
        t = 0.0
        done = 0
        while done < prompt:
            c = min(budget, prompt - done)
            t += step_time(float(c), 1.0, 0.0, c * (done + (c + 1) / 2.0), float(done + c))
            done += c
        return t

    def queue_wait_s(self, queued_tokens: int, queued_requests: int) -> float:
        """Predicted time to execute ``queued_tokens`` pending prompt tokens (``queued_requests`` prompts,
        taken as equal length) in prefill steps of the token budget."""
        if queued_tokens <= 0:
            return 0.0
        full, last = divmod(int(queued_tokens), self.prefill_budget)
        wait = full * self._step_full + (self.pricer.base(last, 1) if last else 0.0)
        n = max(int(queued_requests), 1)
        mean_len = queued_tokens / n
        pairs = queued_tokens * (mean_len + 1.0) / 2.0
        wait += self.pricer.model_time(1.0, 1.0, 0.0, pairs, float(queued_tokens)) - self._attn0
        return wait

    def transfer_s(self, prompt: int) -> float:
        """KV transfer on the prefill path when it counts in TTFT (alone on the link), else 0."""
        if self._xfer_per_token == 0.0 and self._xfer_setup == 0.0:
            return 0.0
        return self._xfer_setup + prompt * self._xfer_per_token

    # ------------------------------------------------------------------ the rule
    def error_factors(self, ctx: DecisionContext) -> list[float]:
        """The served estimator error of each node at this decision (prefill nodes, then decode nodes): all 1.0
        on the exact track; on the realistic track the served prediction over Kairos's own of one quantity both
        price (see the module docstring)."""
        n_p, n_d = len(ctx.prefill), len(ctx.decode)
        if not self.realistic:
            return [1.0] * (n_p + n_d)
        prompt = ctx.request.prompt_tokens + ctx.emitted_tokens  # + gen at a re-entry (faults)
        alone = self.own_prefill_s(prompt) + self.transfer_s(prompt)
        out = [(t - p.predicted_wait_s) / alone for t, p in zip(ctx.ttft_prefill_s, ctx.prefill, strict=True)]
        out.extend(self.decode_factor(ctx, d) for d in range(n_d))
        return out

    def decode_factor(self, ctx: DecisionContext, d: int) -> float:
        """Decode node ``d``'s served estimator error at this decision: 1.0 on the exact track, else the served
        first step of the menu's smallest chunk over Kairos's own price of it (see the module docstring)."""
        if not self.realistic:
            return 1.0
        view = ctx.decode[d]
        chunk = min(ctx.chunk_menu[0], ctx.request.prompt_tokens + ctx.emitted_tokens)
        own = self.pricer.step(view.batch_size, float(view.total_context + view.batch_size), chunk, 0)
        return ctx.step_s[d][0] / own

    def _decide(self, ctx: DecisionContext) -> Decision:
        if ctx.kind == PULL:
            return self.decide_pull(ctx)
        prompt = ctx.request.prompt_tokens + ctx.emitted_tokens  # + gen at a re-entry (faults)
        prefill, decode = ctx.prefill, ctx.decode
        n_p = len(prefill)
        n_d = len(decode)
        factors = self.error_factors(ctx)
        # 1. prefill path
        base_p = self.own_prefill_s(prompt) + self.transfer_s(prompt)
        ttft_ps = tuple((self.queue_wait_s(prefill[p].queued_tokens, prefill[p].queued_requests) + base_p)
                        * factors[p] if prefill[p].up else math.inf for p in range(n_p))  # down (faults): no option
        ttft_p = min(ttft_ps)
        # 2. LargestSafe per decode node
        ttft_ds = [math.inf] * n_d
        scheds: list[tuple[int, ...]] = [()] * n_d
        best_d: int | None = None
        best_t = math.inf
        for d in range(n_d):
            view = decode[d]
            if view.deflection_in_flight or not view.can_deflect:
                continue
            f = factors[n_p + d]
            b = view.batch_size
            ok, total, sizes = self.pricer.largest_safe(b, view.total_context + b, prompt,
                                                        self.beta * view.tbt_slo_s / f, self.menu_desc)
            if not ok:
                continue
            t = total * f
            ttft_ds[d] = t
            scheds[d] = tuple(sizes)
            if t < best_t:
                best_t, best_d = t, d
        # 3. alpha / SLO rule
        if best_d is not None and best_t <= self.alpha * ttft_p and best_t <= ctx.ttft_slo_s:
            decision = Decision.deflect(best_d, LARGEST_SAFE)
        else:
            p = min(range(n_p), key=lambda i: (not prefill[i].up, prefill[i].queued_tokens, i))
            # no prefill node up (faults): the simulator holds the request until one comes up
            decision = Decision.prefill_path(p) if prefill[p].up else Decision.prefill_path()
        self.last = KairosEstimate(ttft_ps, tuple(ttft_ds), tuple(scheds), ttft_p, best_d, tuple(factors), decision)
        return decision

    def decide_pull(self, ctx: DecisionContext) -> Decision:
        """A pull decision (see the module docstring): the arrival-only rule leaves the candidate in its queue."""
        return Decision.prefill_path()

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "alpha": self.alpha, "beta": self.beta, "chunk_menu": list(self.chunk_menu),
                "information": self.scenario.information.track}
