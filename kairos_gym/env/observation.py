"""The observation: a table of named features built from the cluster shape, and its encoder.

Every feature is one float32 in a finite documented range. Raw simulator quantities are never
clipped; unbounded ones are *squashed* by a monotone map into their range, so an observation always
lies inside the ``Box`` whatever the load. The transforms (``x`` raw, ``s`` the feature's scale):

``ratio``   ``x / (x + s)`` for ``x`` in [0, inf] -> [0, 1]; 0.5 at ``x = s``; ``inf`` -> 1.
``slack``   ``(1 - x/s) / (1 + x/s)`` for ``x`` in [0, inf] -> (-1, 1]; 1 idle, 0 at ``x = s``, -> -1 far over.
``log``     ``log1p(x) / log1p(s)`` for ``x`` in [0, s] -> [0, 1] (``s`` is a hard maximum of ``x``).
``linear``  ``x / s`` for ``x`` in [0, s] -> [0, 1] (``s`` is a hard maximum of ``x``).
``unit``    ``x`` itself: already a fraction or a flag in [0, 1].

The layout (flat order = the order of :attr:`ObservationLayout.features`) is grouped so that the
``dict`` observation mode is a set of reshaped slices of the flat vector: ``global`` (2), ``request``
(1, plus 1 with ``oracle``, plus 1 under ``deflection.decision_points: arrival+pull``), ``prefill``
(P x 5), ``decode`` (D x 12), ``deflect_step`` (D x K) and ``deflect_ttft`` (D x K), plus ``availability``
(P + D: 1 when the node is up; then ``decision_reentry``: 1 at a re-entry decision) only when the scenario has a
``faults:`` section (docs/reliability.md).
See ``docs/env.md`` for the full table.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from gymnasium import spaces

from kairos_gym.portable_math import log1p
from kairos_gym.scenario import ScenarioConfig
from kairos_gym.sim.hook import PULL, REENTRY, DecisionContext

# Fixed scales of the squashed token / request counts (documented in docs/env.md).
QUEUE_TOKENS_SCALE = 16384.0
"""Prefill queue tokens at which ``p*_queued_tokens`` reads 0.5 (8 full 2048-token prefill steps)."""
QUEUE_REQUESTS_SCALE = 8.0
"""Queued requests at which ``p*_queued_requests`` reads 0.5."""
BATCH_SCALE = 32.0
"""Decode batch size at which ``d*_batch_size`` reads 0.5."""
CONTEXT_SCALE = 131072.0
"""Total decode-batch context (tokens) at which ``d*_total_context`` reads 0.5."""
PENDING_SCALE = 8.0
"""Pending admissions at which ``d*_pending_admissions`` reads 0.5."""
REMAINING_SCALE = 4096.0
"""Remaining deflected-prompt tokens at which ``d*_deflection_remaining`` reads 0.5."""
TTFT_SLO_SCALE = 1.0
"""Seconds at which ``ttft_slo`` reads 0.5."""
TBT_SLO_SCALE = 0.1
"""Seconds at which ``tbt_slo`` reads 0.5."""

TRANSFORMS = ("ratio", "slack", "log", "linear", "unit")
_BOUNDS = {"ratio": (0.0, 1.0), "slack": (-1.0, 1.0), "log": (0.0, 1.0), "linear": (0.0, 1.0), "unit": (0.0, 1.0)}

PREFILL_FIELDS = ("queued_tokens", "queued_requests", "predicted_wait", "utilization", "ttft")
DECODE_FIELDS = ("batch_size", "total_context", "pending_admissions", "free_kv_fraction", "deflection_in_flight",
                 "deflection_remaining", "utilization", "tbt_slack", "can_deflect", "ls_feasible", "ls_ttft",
                 "ls_first_chunk")


@dataclass(frozen=True)
class Feature:
    """One observation entry: ``name``, bounds, meaning (with units of the raw value), transform, scale."""

    name: str
    low: float
    high: float
    description: str
    transform: str
    scale: float
    group: str


class ObservationLayout:
    """The feature table of one scenario (cluster shape, chunk menu, SLOs) and the encoder.

    ``encode(ctx, out)`` writes the features of a :class:`DecisionContext` into ``out`` (float32, length
    :attr:`size`). ``features`` is the table; ``rows()`` gives ``(name, low, high, description)``.
    """

    def __init__(self, scenario: ScenarioConfig, *, oracle: bool = False, max_context: int) -> None:
        cl = scenario.cluster
        self.P = cl.prefill_nodes
        self.D = cl.decode_nodes
        self.menu = tuple(scenario.deflection.chunk_menu)
        self.K = len(self.menu)
        self.oracle = oracle
        self.pull = scenario.deflection.decision_points == "arrival+pull"
        self.faults = scenario.faults.enabled  # the availability group (P + D features) exists only then
        ttft = scenario.slo.ttft_s
        tbt = scenario.slo.tbt_s
        budget = scenario.deflection.beta * tbt
        max_chunk = float(max(self.menu))
        self.max_context = int(max_context)
        feats: list[Feature] = []

        def add(name: str, transform: str, scale: float, desc: str, group: str) -> None:
            lo, hi = _BOUNDS[transform]
            feats.append(Feature(name, lo, hi, desc, transform, float(scale), group))

        add("ttft_slo", "ratio", TTFT_SLO_SCALE, "TTFT SLO of the scenario (s)", "global")
        add("tbt_slo", "ratio", TBT_SLO_SCALE, "TBT SLO of the scenario (s)", "global")
        add("prompt_tokens", "log", self.max_context, "prompt length of the arriving request (tokens)", "request")
        if oracle:
            add("output_tokens", "log", self.max_context,
                "output length of the arriving request (tokens; oracle mode only)", "request")
        if self.pull:
            add("decision_pull", "unit", 1.0, "1 at a pull decision (a freed deflection slot), 0 at an arrival "
                "(decision_points arrival+pull only)", "request")
        for p in range(self.P):
            add(f"p{p}_queued_tokens", "ratio", QUEUE_TOKENS_SCALE,
                "prompt tokens queued or in progress on prefill node p (tokens)", "prefill")
            add(f"p{p}_queued_requests", "ratio", QUEUE_REQUESTS_SCALE, "requests queued on prefill node p", "prefill")
            add(f"p{p}_predicted_wait", "ratio", ttft,
                "predicted wait before a new prompt starts on prefill node p (s; scale = TTFT SLO)", "prefill")
            add(f"p{p}_utilization", "unit", 1.0, "SM-utilization proxy of prefill node p, ~5 s EWMA (0..1)", "prefill")
            add(f"p{p}_ttft", "ratio", ttft,
                "predicted TTFT of this request on the prefill path via node p (s; scale = TTFT SLO)", "prefill")
        for d in range(self.D):
            add(f"d{d}_batch_size", "ratio", BATCH_SCALE, "requests decoding on decode node d", "decode")
            add(f"d{d}_total_context", "ratio", CONTEXT_SCALE, "sum of the KV lengths of node d's batch (tokens)",
                "decode")
            add(f"d{d}_pending_admissions", "ratio", PENDING_SCALE,
                "requests whose KV arrived or is arriving at node d, not yet decoding", "decode")
            add(f"d{d}_free_kv_fraction", "unit", 1.0, "unreserved KV capacity / capacity of node d (0..1)", "decode")
            add(f"d{d}_deflection_in_flight", "unit", 1.0, "1 if node d is building a deflected prefill", "decode")
            add(f"d{d}_deflection_remaining", "ratio", REMAINING_SCALE,
                "prompt tokens of node d's deflected prefill still to build (tokens)", "decode")
            add(f"d{d}_utilization", "unit", 1.0, "SM-utilization proxy of decode node d, ~5 s EWMA (0..1)", "decode")
            add(f"d{d}_tbt_slack", "slack", budget,
                "TBT slack of node d: predicted decode-only step time vs beta x TBT SLO (s; 1 idle, 0 at budget, <0 "
                "over)", "decode")
            add(f"d{d}_can_deflect", "unit", 1.0, "1 if a deflection to node d would be accepted (= action mask)",
                "decode")
            add(f"d{d}_ls_feasible", "unit", 1.0, "1 if a LargestSafe chunk schedule exists on node d", "decode")
            add(f"d{d}_ls_ttft", "ratio", ttft,
                "predicted TTFT with the LargestSafe schedule on node d (s; 1 when infeasible)", "decode")
            add(f"d{d}_ls_first_chunk", "linear", max_chunk,
                "first LargestSafe chunk on node d / largest menu chunk (0 when infeasible)", "decode")
        for d in range(self.D):
            for c in self.menu:
                add(f"d{d}_c{c}_step", "ratio", tbt,
                    f"predicted first step time if deflected to node d in {c}-token chunks (s; scale = TBT SLO)",
                    "deflect_step")
        for d in range(self.D):
            for c in self.menu:
                add(f"d{d}_c{c}_ttft", "ratio", ttft,
                    f"predicted TTFT if deflected to node d in {c}-token chunks (s; scale = TTFT SLO)",
                    "deflect_ttft")
        if self.faults:
            for p in range(self.P):
                add(f"p{p}_up", "unit", 1.0, "1 if prefill node p is up (faults: a down node takes no work)",
                    "availability")
            for d in range(self.D):
                add(f"d{d}_up", "unit", 1.0, "1 if decode node d is up (faults: a down node takes no work)",
                    "availability")
            add("decision_reentry", "unit", 1.0, "1 at a re-entry decision (a request a node failure sent back; "
                "faults.reentry: policy), 0 at an arrival or a pull", "availability")
        self.features: tuple[Feature, ...] = tuple(feats)
        self.size = len(feats)
        self.names = tuple(f.name for f in feats)
        self.low = np.array([f.low for f in feats], dtype=np.float32)
        self.high = np.array([f.high for f in feats], dtype=np.float32)
        self.ttft = float(ttft)
        """TTFT scale (s): the scenario's TTFT SLO."""
        self.tbt = float(tbt)
        """TBT scale (s): the scenario's TBT SLO."""
        self.budget = float(budget)
        """Slack scale (s): beta x TBT SLO."""
        self.inv_max_chunk = 1.0 / max_chunk
        """1 / the largest menu chunk (1/tokens)."""
        self.log_den = 1.0 / log1p(self.max_context)
        """1 / log1p(max_context): the ``log`` transform's denominator of the request lengths."""
        # group slices for the dict mode
        shapes = {"global": (2,), "request": (1 + int(oracle) + int(self.pull),),
                  "prefill": (self.P, len(PREFILL_FIELDS)),
                  "decode": (self.D, len(DECODE_FIELDS)), "deflect_step": (self.D, self.K),
                  "deflect_ttft": (self.D, self.K)}
        if self.faults:
            shapes["availability"] = (self.P + self.D + 1,)
        self.groups: dict[str, tuple[slice, tuple[int, ...]]] = {}
        off = 0
        for g, shape in shapes.items():
            n = int(np.prod(shape))
            assert all(f.group == g for f in feats[off:off + n])
            self.groups[g] = (slice(off, off + n), shape)
            off += n
        assert off == self.size

    # ------------------------------------------------------------------ spaces
    def flat_space(self) -> spaces.Box:
        return spaces.Box(low=self.low.copy(), high=self.high.copy(), dtype=np.float32)

    def dict_space(self) -> spaces.Dict:
        out = {}
        for g, (sl, shape) in self.groups.items():
            out[g] = spaces.Box(low=self.low[sl].reshape(shape).copy(), high=self.high[sl].reshape(shape).copy(),
                                dtype=np.float32)
        return spaces.Dict(out)

    def to_dict(self, flat: np.ndarray) -> dict[str, np.ndarray]:
        """The dict observation (copies) from a flat one."""
        return {g: flat[sl].reshape(shape).copy() for g, (sl, shape) in self.groups.items()}

    def rows(self) -> list[tuple[str, float, float, str]]:
        """The table as ``(name, low, high, description)``."""
        return [(f.name, f.low, f.high, f.description) for f in self.features]

    # ------------------------------------------------------------------ encoding
    def values(self, ctx: DecisionContext) -> list[float]:
        """The transformed features of ``ctx`` as a list, in layout order (pure Python: faster than numpy
        at this size). Must agree with the table: ``tests/env`` checks it against :meth:`reference`."""
        ttft = self.ttft
        tbt = self.tbt
        budget = self.budget
        ld = self.log_den
        req = ctx.request
        ttft_slo, tbt_slo = ctx.ttft_slo_s, ctx.tbt_slo_s
        v: list[float] = [ttft_slo / (ttft_slo + TTFT_SLO_SCALE), tbt_slo / (tbt_slo + TBT_SLO_SCALE),
                          log1p(req.prompt_tokens) * ld]
        if self.oracle:
            out = req.output_tokens
            v.append(log1p(out) * ld if out is not None else 0.0)
        if self.pull:
            v.append(1.0 if ctx.kind == PULL else 0.0)
        for pv, t in zip(ctx.prefill, ctx.ttft_prefill_s, strict=True):
            qt, qr, w = pv.queued_tokens, pv.queued_requests, pv.predicted_wait_s
            # t is inf at a pull for the prefill nodes other than the candidate's: the ratio's limit, 1
            v += (qt / (qt + QUEUE_TOKENS_SCALE), qr / (qr + QUEUE_REQUESTS_SCALE), w / (w + ttft), pv.utilization,
                  t / (t + ttft) if t != math.inf else 1.0)
        ls_ok, ls_t, ls_c = ctx.largest_safe_feasible, ctx.largest_safe_ttft_s, ctx.largest_safe_first_chunk
        inv_chunk = self.inv_max_chunk
        for j, dv in enumerate(ctx.decode):
            b, c, pa, rem = dv.batch_size, dv.total_context, dv.pending_admissions, dv.deflection_remaining_tokens
            r = dv.decode_step_s / budget
            if ls_ok[j]:
                lt = ls_t[j]
                ls = (1.0, lt / (lt + ttft), ls_c[j] * inv_chunk)
            else:
                ls = (0.0, 1.0, 0.0)
            v += (b / (b + BATCH_SCALE), c / (c + CONTEXT_SCALE), pa / (pa + PENDING_SCALE), dv.free_kv_fraction,
                  1.0 if dv.deflection_in_flight else 0.0, rem / (rem + REMAINING_SCALE), dv.utilization,
                  (1.0 - r) / (1.0 + r), 1.0 if dv.can_deflect else 0.0, *ls)
        for row in ctx.step_s:
            v += [x / (x + tbt) for x in row]
        for row in ctx.ttft_deflect_s:
            v += [x / (x + ttft) for x in row]
        if self.faults:
            v += [1.0 if pv.up else 0.0 for pv in ctx.prefill]
            v += [1.0 if dv.up else 0.0 for dv in ctx.decode]
            v.append(1.0 if ctx.kind == REENTRY else 0.0)
        return v

    def encode(self, ctx: DecisionContext, out: np.ndarray) -> np.ndarray:
        """Write the features of ``ctx`` into ``out`` (float32, length :attr:`size`) and return it."""
        out[:] = self.values(ctx)
        return out

    def reference(self, raw: dict[str, float]) -> np.ndarray:
        """The table's transforms applied to raw values by name (seconds, tokens, counts; ``inf`` allowed):
        the slow, obviously-correct definition that :meth:`values` implements fast."""
        out = np.zeros(self.size, dtype=np.float64)
        for i, f in enumerate(self.features):
            x = float(raw[f.name])
            if f.transform == "ratio":
                out[i] = 1.0 if math.isinf(x) else x / (x + f.scale)
            elif f.transform == "slack":
                r = x / f.scale
                out[i] = -1.0 if math.isinf(r) else (1.0 - r) / (1.0 + r)
            elif f.transform == "log":
                out[i] = log1p(x) / log1p(f.scale)
            elif f.transform == "linear":
                out[i] = x / f.scale
            else:
                out[i] = x
        return out.astype(np.float32)
