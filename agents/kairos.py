"""Kairos: the model-based deflection rule of DOMAIN.md section 2, with its realism knobs.

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
   queued tokens in Kairos's view (join-shortest-queue as the dispatcher sees it).
4. At most one deflection in flight per decode node (nodes with one in flight are skipped).

Realism knobs (the paper's own limitations):

- **Staleness** ``staleness_s`` (default 0.1 s): Kairos keeps its own copy of the node views (prefill
  ``queued_tokens``/``queued_requests``; decode ``batch_size``, ``total_context``,
  ``deflection_in_flight``, ``can_deflect``, ``tbt_slo_s``) and refreshes it from the context only when
  ``now - last_refresh >= staleness_s`` (always at the first decision of a run). Between refreshes it
  still knows what it did itself, as a dispatcher does: a deflection marks that decode node busy, and a
  request sent down the prefill path adds its prompt to that prefill node's queue in the copy. It does
  not extrapolate anything else (queues draining, contexts growing, deflections finishing). The
  admission check itself is fresh: if the chosen node answers ``can_deflect = False`` now (a refusal),
  the request takes the prefill path and the copy records the refusal.
- **Model error** ``model_error`` (default 0.10 = MAPE): Kairos prices with its own
  :class:`StepLatencyModel` built from the scenario's preset, and every *prediction* is multiplied by
  ``1 + e`` with ``e ~ Normal(0, model_error * sqrt(pi / 2))`` so that ``E|e| = model_error``. One
  prediction = one node's estimate at one decision: ``e`` is drawn per decision and per node (one for
  each prefill node's TTFT_P, one for each decode node's schedule, applied to every step of that
  schedule: the budget test becomes ``step * (1 + e) <= budget``). The factor is floored at 0.05. Draws
  come from the policy's seeded generator.

``staleness_s = 0`` and ``model_error = 0`` give the exact fresh rule (no random draws at all).

Pull decisions (``deflection.decision_points: arrival+pull``, ``ctx.kind == "pull"``): Kairos is the paper's
arrival-only rule and answers every pull with the prefill path (stay), drawing nothing and leaving its view
untouched, so its run is bit for bit its arrival-only run. :class:`kairos_gym.agents.kairos_pull.KairosPull`
(``kairos-pull``) applies the same rule to the pull's candidate.

Decision cost: every ``decide`` is timed (``decision_times_us``, ``decision_us_p50``/``_p99``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from kairos_gym.agents.base import BasePolicy

from kairos_gym.config import ScenarioConfig, load_scenario
from kairos_gym.errors import ConfigError
from kairos_gym.latency.model import StepLatencyModel
from kairos_gym.latency.pricing import ChunkPricer, native_pricer, table_sizes
from kairos_gym.sim.hook import LARGEST_SAFE, PULL, Decision, DecisionContext
from kairos_gym.workload.rules import Number

MIN_ERROR_FACTOR = 0.05
"""Floor of the model-error factor ``1 + e`` (only reachable with model_error well above 0.5)."""


@dataclass
class KairosEstimate:
    """What Kairos predicted at its last decision (for tests, debugging and plots). Seconds, tokens."""

    ttft_prefill_s: tuple[float, ...]  # per prefill node, perturbed
    ttft_deflect_s: tuple[float, ...]  # per decode node, perturbed; inf when skipped or infeasible
    schedules: tuple[tuple[int, ...], ...]  # per decode node: LargestSafe chunk sizes (empty when skipped)
    ttft_p: float
    best_decode: int | None
    refreshed: bool
    decision: Decision


def build_model(scenario: ScenarioConfig) -> StepLatencyModel:
    """The step-latency model of the scenario's preset (what Kairos and the Oracle price with)."""
    cl = scenario.cluster
    return StepLatencyModel.from_preset(cl.model, cl.gpu, cl.tp, dict(cl.calibration) or None)


class Kairos(BasePolicy):
    """Kairos deflection (see the module docstring for the exact rule)."""

    name = "kairos"

    def __init__(
        self,
        scenario: Any = "bursty",
        seed: int | None = 0,
        alpha: float = 1.3,
        beta: float | None = None,
        staleness_s: float = 0.1,
        model_error: float = 0.10,
        chunk_menu: Any = None,
        model: StepLatencyModel | None = None,
    ) -> None:
        super().__init__(seed)
        where = f"policy {self.name}"
        sc = load_scenario(scenario)
        self.scenario = sc
        self.alpha = Number(low=0.0, low_open=True).check(where, "alpha", alpha)
        self.beta = sc.deflection.beta if beta is None else Number(low=0.0, low_open=True).check(where, "beta", beta)
        self.staleness_s = Number(low=0.0).check(where, "staleness_s", staleness_s)
        self.model_error = Number(low=0.0).check(where, "model_error", model_error)
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
        self.pricer = native_pricer(ChunkPricer(self.model, self.chunk_menu),
                                    *table_sizes(cl.decode_max_batch, cl.prefill_token_budget, self.chunk_menu))
        self.sigma = self.model_error * math.sqrt(math.pi / 2.0)
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
        self._last_refresh: float | None = None
        self._p_tokens: list[int] = []
        self._p_reqs: list[int] = []
        self._d_batch: list[int] = []
        self._d_ctx: list[int] = []
        self._d_busy: list[bool] = []
        self._d_can: list[bool] = []
        self._d_tbt: list[float] = []
        self.n_refreshes = 0
        self.n_refused = 0
        self.last = None

    def refresh(self, ctx: DecisionContext) -> None:
        """Copy the context's node views into Kairos's own (possibly stale) view."""
        self._p_tokens = [p.queued_tokens for p in ctx.prefill]
        self._p_reqs = [p.queued_requests for p in ctx.prefill]
        self._d_batch = [d.batch_size for d in ctx.decode]
        self._d_ctx = [d.total_context for d in ctx.decode]
        self._d_busy = [d.deflection_in_flight for d in ctx.decode]
        self._d_can = [d.can_deflect for d in ctx.decode]
        self._d_tbt = [d.tbt_slo_s for d in ctx.decode]
        self._last_refresh = ctx.now_s
        self.n_refreshes += 1

    def view(self) -> dict[str, Any]:
        """Kairos's current (possibly stale) view of the cluster, as lists per node."""
        return {
            "refreshed_at_s": self._last_refresh,
            "prefill_queued_tokens": list(self._p_tokens),
            "prefill_queued_requests": list(self._p_reqs),
            "decode_batch_size": list(self._d_batch),
            "decode_total_context": list(self._d_ctx),
            "decode_deflection_in_flight": list(self._d_busy),
            "decode_can_deflect": list(self._d_can),
        }

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
    def _decide(self, ctx: DecisionContext) -> Decision:
        if ctx.kind == PULL:
            return self.decide_pull(ctx)
        refreshed = False
        if self._last_refresh is None or ctx.now_s - self._last_refresh >= self.staleness_s \
                or len(self._p_tokens) != len(ctx.prefill) or len(self._d_batch) != len(ctx.decode):
            self.refresh(ctx)
            refreshed = True
        prompt = ctx.request.prompt_tokens
        n_p = len(self._p_tokens)
        n_d = len(self._d_batch)
        if self.sigma > 0.0:
            draws = self.rng.normal(0.0, self.sigma, n_p + n_d)
            factors = [max(MIN_ERROR_FACTOR, 1.0 + float(e)) for e in draws]
        else:
            factors = [1.0] * (n_p + n_d)
        # 1. prefill path
        base_p = self.own_prefill_s(prompt) + self.transfer_s(prompt)
        ttft_ps = tuple((self.queue_wait_s(self._p_tokens[p], self._p_reqs[p]) + base_p) * factors[p]
                        for p in range(n_p))
        ttft_p = min(ttft_ps)
        # 2. LargestSafe per decode node
        ttft_ds = [math.inf] * n_d
        scheds: list[tuple[int, ...]] = [()] * n_d
        best_d: int | None = None
        best_t = math.inf
        for d in range(n_d):
            if self._d_busy[d] or not self._d_can[d]:
                continue
            f = factors[n_p + d]
            b = self._d_batch[d]
            ok, total, sizes = self.pricer.largest_safe(b, self._d_ctx[d] + b, prompt,
                                                        self.beta * self._d_tbt[d] / f, self.menu_desc)
            if not ok:
                continue
            t = total * f
            ttft_ds[d] = t
            scheds[d] = tuple(sizes)
            if t < best_t:
                best_t, best_d = t, d
        # 3. alpha / SLO rule
        decision: Decision | None = None
        if best_d is not None and best_t <= self.alpha * ttft_p and best_t <= ctx.ttft_slo_s:
            if ctx.decode[best_d].can_deflect:  # the node's own (fresh) admission answer
                decision = Decision.deflect(best_d, LARGEST_SAFE)
                self._d_busy[best_d] = True
            else:
                self.n_refused += 1
                self._d_can[best_d] = False
        if decision is None:
            p = min(range(n_p), key=lambda i: (self._p_tokens[i], i))
            decision = Decision.prefill_path(p)
            self._p_tokens[p] += prompt
            self._p_reqs[p] += 1
        self.last = KairosEstimate(ttft_ps, tuple(ttft_ds), tuple(scheds), ttft_p, best_d, refreshed, decision)
        return decision

    def decide_pull(self, ctx: DecisionContext) -> Decision:
        """A pull decision (see the module docstring): the arrival-only rule leaves the candidate in its queue."""
        return Decision.prefill_path()

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "alpha": self.alpha, "beta": self.beta, "staleness_s": self.staleness_s,
                "model_error": self.model_error, "chunk_menu": list(self.chunk_menu)}
