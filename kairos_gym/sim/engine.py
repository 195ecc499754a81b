"""The discrete-event simulator of a disaggregated (P/D) serving cluster with prefill deflection.

Events happen only where a batch changes: an arrival, a prefill step completing, a KV transfer's setup
or completion, a deflected chunk completing, and the end of a decode *stretch* (a run of decode-only
steps with a fixed batch, ended by the first request to finish or by an admission). Within a stretch
the step time grows exactly linearly with the step index (decode attention is the only term that
depends on the contexts, and it is linear in them), so a stretch of any length costs O(1) Python work:
``S(n) = n * t0 + dt * n (n - 1) / 2``. The batch itself is bookkept without per-request arrays (see
:class:`_DecodeNode`): a stretch or chunk step costs O(1) plus O(log B) per request that finishes.

Event ties are broken by (time, sequence number). All randomness comes from one seeded
``numpy.random.Generator`` (the workload). No gymnasium import here.
"""

from __future__ import annotations

import copy
import heapq
import math
import time
from bisect import bisect_left
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from kairos_gym.config import ScenarioConfig
from kairos_gym.errors import ConfigError
from kairos_gym.latency.transfer import FairShareLink
from kairos_gym.sim.decision_check import check_decision
from kairos_gym.sim.hook import (
    LARGEST_SAFE,
    Decision,
    DecisionContext,
    DecodeNodeView,
    Policy,
    PrefillNodeView,
    RequestView,
)
from kairos_gym.sim.metrics import PATH_DEFLECT, PATH_PENDING, PATH_PREFILL, PATH_REJECTED, RunStats, summarize
from kairos_gym.sim.reset_workload import init_common, reset_workload
from kairos_gym.workload import Workload

# event kinds
_ARRIVAL = 0
_PREFILL_DONE = 1
_SETUP_DONE = 2
_XFER_DONE = 3
_DECODE_BOUNDARY = 4
_SWAP_IN_DONE = 5


_STACK_PRUNE = 1024
"""Size past which a decode node's worst-step stack drops records no batch member can query."""

UTIL_WINDOW_S = 5.0
"""Window of the per-node utilization shown to policies (exponentially weighted, seconds)."""


@dataclass
class _PrefillNode:
    idx: int
    queue: deque  # of [rid, remaining_tokens, done_tokens]
    queued_tokens: int = 0
    q_pairs: float = 0.0  # sum over queued prompts of rem * (done + (rem + 1) / 2): attention work left
    q_kv: float = 0.0  # sum over queued prompts of their full length (KV read by that attention)
    wait_cache: tuple[float, float] | None = None  # prefill_wait's queue terms; None after any queue change
    busy_until: float = -1.0  # end of the step in progress, -1 when idle
    step: list | None = None  # [(rid, chunk, prefix)] of the step in progress
    step_tokens: int = 0  # tokens of the step in progress
    step_pairs: float = 0.0  # attention token pairs of the step in progress
    step_kv: float = 0.0  # KV tokens its attention reads
    step_start: float = 0.0
    busy_s: float = 0.0
    compute_s: float = 0.0
    flops: float = 0.0
    util_ewma: float = 0.0
    util_t: float = 0.0


@dataclass
class _DecodeNode:
    """A decode node. Its batch is kept without per-request arrays: every batch member gains one token per
    step, so a request's context and remaining tokens follow from the node's step counter ``steps``
    (``ctx = ctx_base[rid] + steps``, ``remaining = end_step[rid] - steps``), the next finish is the top of a
    heap of end steps, and a request's worst token gap is a suffix maximum over the node's recorded
    stretches. A stretch or chunk step then costs O(1) Python work plus O(log B) per finishing request.
    """

    idx: int
    kv_capacity: int
    kv_reserved: int = 0
    batch: dict = None  # type: ignore[assignment]  # rid -> None, in admission order (LIFO preemption)
    steps: int = 0  # decode steps this node's batch has taken (each gives every member one token)
    heap: list = None  # type: ignore[assignment]  # (end_step, rid) of the batch members
    fresh: list = None  # type: ignore[assignment]  # rids admitted at this stretch's start (first decode step)
    sum_ctx: int = 0
    n_rec: int = 0  # stretches recorded so far (their worst step feeds the members' worst gaps)
    smax_idx: list = None  # type: ignore[assignment]  # monotonic stack: record index ...
    smax_val: list = None  # type: ignore[assignment]  # ... and its worst step (s), decreasing: suffix maxima
    pending: deque = None  # type: ignore[assignment]  # rids whose KV arrived, waiting for a step boundary
    incoming: int = 0  # transfers in flight to this node
    swapped: deque = None  # type: ignore[assignment]  # swap policy: rids whose KV is in host memory (LIFO)
    swapping_in: int = 0  # swap-ins in flight to this node
    # deflection in flight: [rid, prompt, done, chunk (0 = largest safe)]
    defl: list | None = None
    # current activity
    mode: int = 0  # 0 idle, 1 stretch, 2 chunk step
    start: float = 0.0
    t0: float = 0.0
    dt: float = 0.0
    n: int = 0
    chunk: int = 0  # chunk tokens of the chunk step in progress
    version: int = 0
    busy_s: float = 0.0
    compute_s: float = 0.0
    flops: float = 0.0
    util_ewma: float = 0.0
    util_t: float = 0.0


def _check_seed(where: str, seed: Any) -> int:
    """``seed`` as an int: a whole number >= 0 (an int or a numpy integer; not None, a bool or a float), so
    every run names its seed explicitly and reproduces."""
    if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool) and seed >= 0:
        return int(seed)
    raise ConfigError(where, "seed", seed, "a whole number >= 0 (seeds are explicit: the same seed gives the "
                      "same workload and run)")


MAX_KV_CAPACITY = 1 << 40
"""Largest KV capacity per decode node a caller may set (tokens)."""


def _check_kv_capacity(v: Any) -> int:
    """``kv_capacity`` given to the simulator: a whole number of tokens in [1, MAX_KV_CAPACITY]."""
    if isinstance(v, (int, np.integer)) and not isinstance(v, bool) and 1 <= v <= MAX_KV_CAPACITY:
        return int(v)
    raise ConfigError("Simulator", "kv_capacity", v, f"None or a whole number of tokens in [1, {MAX_KV_CAPACITY}]")


def _steps_within(t0: float, dt: float, x: float) -> int:
    """Largest j >= 0 with S(j) = j t0 + dt j (j-1)/2 <= x (steps of a stretch finished within x s)."""
    if x <= 0:
        return 0
    if dt <= 0:
        j = int(x / t0)
    else:
        a = dt / 2.0
        b = t0 - a
        j = int((-b + math.sqrt(b * b + 4 * a * x)) / (2 * a))
    # guard float error
    while j > 0 and j * t0 + dt * j * (j - 1) / 2.0 > x:
        j -= 1
    while (j + 1) * t0 + dt * (j + 1) * j / 2.0 <= x:
        j += 1
    return j


class Simulator:
    """A P/D cluster serving one workload, step by step (one decision at a time) or all at once.

    Typical use::

        sim = Simulator("bursty", seed=0)
        summary = sim.run(policy)             # every decision through policy.decide(ctx)

    or, decision by decision (what the Gymnasium env does)::

        ctx = sim.next_decision()
        while ctx is not None:
            sim.apply(decision)
            ctx = sim.next_decision()
    """

    def __new__(cls, *args: Any, engine: str | None = None, **kwargs: Any) -> Any:
        """``engine`` picks the implementation: ``"python"`` (this class, the reference) or ``"native"``
        (:class:`kairos_gym.sim.native_engine.NativeSimulator`, the C++ core); None: the ``KAIROS_ENGINE``
        environment variable, else ``"python"`` (see :func:`kairos_gym.sim.engine_name`)."""
        from kairos_gym.sim import engine_name

        if cls is Simulator and engine_name(engine) == "native":
            from kairos_gym.sim.native_engine import NativeSimulator

            return NativeSimulator(*args, **kwargs)
        return super().__new__(cls)

    def __getnewargs_ex__(self) -> tuple[tuple[()], dict[str, str]]:
        """Unpickling and copying make a Python-engine simulator again, whatever ``KAIROS_ENGINE`` says."""
        return (), {"engine": "python"}

    def __init__(
        self,
        scenario: str | ScenarioConfig | dict[str, Any] = "bursty",
        *,
        seed: int = 0,
        workload: Workload | None = None,
        oracle: bool = False,
        record_timeline: bool = False,
        kv_capacity: int | None = None,
        trace: bool = False,
        engine: str | None = None,
    ) -> None:
        seed = init_common(self, scenario, seed, oracle, record_timeline, kv_capacity, trace)
        for name, value in self.scenario.native_only():  # issue 14: features of the native engine only
            raise ConfigError("Simulator", name, value, "the native engine (the Python reference engine is being "
                              "removed)")
        self._kcost = self.pricer.decode_pair_cost  # (s, FLOPs, compute s) per decode pair
        # debug: every popped event as (t, kind, a, b, wait_area after it), to diff against the native engine;
        # off by default at no cost per event (next_decision picks the pop function once per call)
        self.trace: list[tuple[float, int, int, int, float]] | None = [] if trace else None
        self.reset(seed, workload)

    # ------------------------------------------------------------------ set-up
    def reset(self, seed: int | None = None, workload: Workload | None = None) -> None:
        """Start over: regenerate the workload from ``seed`` (None: the current seed) unless a fixed workload
        was given (here or at construction). Bad input (a seed that is not a whole number >= 0, a workload
        that is not a :class:`Workload`, an empty workload, an over-long request with ``overlong: error``)
        raises :class:`ConfigError` and leaves the simulator as it was."""
        seed = self.seed if seed is None else _check_seed("Simulator.reset", seed)
        rng, fixed, wl = reset_workload(self, seed, workload)
        n = len(wl)
        sc = self.scenario
        self.seed = seed
        self.rng = rng
        self._fixed_workload = fixed
        self.workload = wl
        self.n = n
        self.arrival = wl.arrival_s.astype(float).tolist()
        self.prompt = wl.prompt_tokens.astype(np.int64).tolist()
        self.output = wl.output_tokens.astype(np.int64).tolist()
        self.path = [PATH_PENDING] * n
        self.first_token = [math.nan] * n
        self.finish = [math.nan] * n
        self.prefill_start = [math.nan] * n
        self.prefill_end = [math.nan] * n
        self.exec_s = [0.0] * n
        self.xfer_start = [math.nan] * n
        self.xfer_end = [math.nan] * n
        self.p_node = [-1] * n
        self.d_node = [-1] * n
        self.max_gap = [0.0] * n
        self.last_tok = [math.nan] * n  # time of the last token before a request (re)entered a batch
        # decode-batch membership (see _DecodeNode): context = ctx_base + node steps, remaining tokens =
        # end_step - node steps, worst gap = max(gap_own, the node's worst step since record from_rec)
        self.ctx_base = [0] * n
        self.end_step = [0] * n
        self.gap_own = [0.0] * n
        self.from_rec = [0] * n
        self.swap_state: dict[int, tuple[int, int, float]] = {}  # rid -> (cached tokens, tokens left, worst gap)
        self.n_preemptions = 0
        self.swap_bytes = 0
        self.chunks: list[list[int] | None] = [None] * n
        self.kv_moved = [0] * n
        self.now = 0.0
        self._seq = 0
        self._events: list[tuple[float, int, int, int, int]] = []
        cl = sc.cluster
        self.pnodes = [_PrefillNode(i, deque()) for i in range(cl.prefill_nodes)]
        self.dnodes = []
        for i in range(cl.decode_nodes):
            d = _DecodeNode(i, self.kv_capacity)
            d.batch = {}
            d.heap = []
            d.fresh = []
            d.smax_idx = []
            d.smax_val = []
            d.pending = deque()
            d.swapped = deque()
            self.dnodes.append(d)
        self._nodes = [*self.pnodes, *self.dnodes]  # prefill nodes first (the context's utilization list)
        self.links = [FairShareLink(sc.transfer.bandwidth_bytes_per_s) for _ in self.pnodes]
        self.awaiting_memory: deque[int] = deque()
        # statistics
        self.stats = RunStats()
        self.waiting = 0  # requests arrived without a first token
        self.wait_area = 0.0  # integral of `waiting` over time (request-seconds)
        self._area_t = 0.0
        self.tbt_violations = 0  # token gaps above the TBT SLO
        self.tokens_out = 0
        self.n_decisions = 0
        self.n_invalid = 0
        self.n_finished = 0
        self.n_rejected = 0
        self.timeline: list[tuple[str, int, float, float, str]] = []
        self._next_arrival = 0
        self._pending_rid: int | None = None
        self._ctx: DecisionContext | None = None
        self._wall_start = time.perf_counter()
        if self.trace is not None:
            self.trace = []
        self._push(self.arrival[0], _ARRIVAL, 0, 0)

    # ------------------------------------------------------------------ events
    def _push(self, t: float, kind: int, a: int, b: int) -> None:
        self._seq += 1
        heapq.heappush(self._events, (t, self._seq, kind, a, b))


    def _traced_pop(self, ev: list[tuple[float, int, int, int, int]]) -> tuple[float, int, int, int, int]:
        """``heapq.heappop`` that records the event and the wait area it leaves (``trace=True`` only)."""
        e = heapq.heappop(ev)
        t = e[0]
        self.trace.append((t, e[2], e[3], e[4], self.wait_area + self.waiting * (t - self._area_t)))  # type: ignore[union-attr]
        return e

    def next_decision(self) -> DecisionContext | None:
        """Run events until a request needs a routing decision; None when every request is done."""
        if self._pending_rid is not None:
            return self._ctx
        ev = self._events
        pop = heapq.heappop if self.trace is None else self._traced_pop
        while ev:
            t, _, kind, a, b = pop(ev)
            if t < self.now:  # the only place the clock moves
                raise RuntimeError(f"clock went backwards: {t} < {self.now}")  # invariant: monotone clock
            self.wait_area += self.waiting * (t - self._area_t)
            self._area_t = t
            self.now = t
            if kind == _DECODE_BOUNDARY:
                d = self.dnodes[a]
                if b == d.version:
                    self._on_decode_boundary(d)
            elif kind == _ARRIVAL:
                if self._on_arrival(a):
                    return self._ctx
            elif kind == _PREFILL_DONE:
                self._on_prefill_done(self.pnodes[a])
            elif kind == _SWAP_IN_DONE:
                d = self.dnodes[b]
                d.swapping_in -= 1
                d.pending.appendleft(a)  # swapped-in requests go before new admissions
                self._wake_decode(d)
            elif kind == _SETUP_DONE:
                self.links[self.p_node[a]].add(a, self.kv_moved[a], t)
                self._schedule_link(self.p_node[a])
            elif kind == _XFER_DONE:
                link = self.links[a]
                if b == link.version:
                    nxt = link.next_completion()
                    if nxt is not None:
                        link.remove(nxt[1], t)
                        self._on_transfer_done(nxt[1])
                        self._schedule_link(a)
        return None

    @property
    def done(self) -> bool:
        """True when every request has finished or been rejected."""
        return self._pending_rid is None and not self._events

    def run(self, policy: Policy, progress: Callable[[], Any] | None = None) -> dict[str, Any]:
        """Run to the end, asking ``policy`` at every decision (calling ``progress()`` after each);
        returns the summary."""
        self._policy_label = f"policy {getattr(policy, 'name', type(policy).__name__)}"
        ctx = self.next_decision()
        while ctx is not None:
            self.apply(policy.decide(ctx))
            if progress is not None:
                progress()
            ctx = self.next_decision()
        return self.summary()

    # ------------------------------------------------------------------ arrivals and decisions
    def _on_arrival(self, rid: int) -> bool:
        nxt = rid + 1
        if nxt < self.n:
            self._push(self.arrival[nxt], _ARRIVAL, nxt, 0)
        p, o = self.prompt[rid], self.output[rid]
        max_ctx = self.model.model.max_context
        if p + o > max_ctx or self._kv_total(p + o) > self.kv_capacity:
            # explicit admission rule: a request that can never fit is rejected at arrival
            self.path[rid] = PATH_REJECTED
            self.n_rejected += 1
            return False
        self.waiting += 1
        self._pending_rid = rid
        self._ctx = self._build_context(rid)
        return True

    def apply(self, decision: Decision) -> bool:
        """Apply the decision for the pending request.

        ``decision`` must be a well-formed :class:`Decision` for this cluster: path ``"prefill"`` with
        ``prefill_node`` None or an index of a prefill node, or path ``"deflect"`` with ``decode_node`` an
        index of a decode node and ``chunk`` a size of the chunk menu or ``LARGEST_SAFE``. Anything else (None,
        a string, a node that does not exist, a chunk off the menu) raises :class:`ConfigError` naming the
        policy's return value; the pending decision then stays pending. A well-formed deflection that the
        node refuses now (a deflection in flight, its batch full, the KV does not fit) falls back to the
        prefill path: it is counted in ``n_invalid`` and ``apply`` returns False."""
        rid = self._pending_rid
        if rid is None:
            raise RuntimeError("apply() called with no pending decision; call next_decision() first")
        deflect = check_decision(decision, self._policy_label, rid, len(self.pnodes), len(self.dnodes), self.menu,
                                 self._menu_set)
        self._pending_rid = None
        self._ctx = None
        self.n_decisions += 1
        if deflect:
            node = self.dnodes[decision.decode_node]
            if self._node_refuses(node, self._kv_need(rid)) is None:
                self._start_deflection(rid, node, decision.chunk)
                return True
            self.n_invalid += 1
            pn = None
        else:
            pn = decision.prefill_node
        if pn is None:  # join the shortest queue (fewest queued tokens; ties: lowest index)
            first = self.pnodes[0]
            pn, fewest = first.idx, first.queued_tokens
            for pnode in self.pnodes:
                if pnode.queued_tokens < fewest:
                    pn, fewest = pnode.idx, pnode.queued_tokens
            self._enqueue_prefill(rid, self.pnodes[pn])
            return not deflect  # False: a refused deflection fell back here
        self._enqueue_prefill(rid, self.pnodes[pn])
        return True

    def deflect_allowed(self, rid: int, d: int) -> bool:
        """Would a deflection of request ``rid`` to decode node ``d`` be accepted now?"""
        return self._deflect_invalid(rid, d, LARGEST_SAFE) is None

    def _deflect_invalid(self, rid: int, d: Any, chunk: Any) -> str | None:
        if not isinstance(d, (int, np.integer)) or not 0 <= d < len(self.dnodes):
            return "decode_node"
        if chunk != LARGEST_SAFE and chunk not in self.menu:
            return "chunk"
        return self._node_refuses(self.dnodes[d], self._kv_need(rid))

    def _node_refuses(self, node: _DecodeNode, need: int) -> str | None:
        """Why decode node ``node`` cannot take a deflection reserving ``need`` KV tokens now (None: it can)."""
        cl = self.scenario.cluster
        if cl.max_deflections_per_node < 1 or node.defl is not None:
            return "deflection in flight"
        if len(node.batch) + len(node.pending) + node.incoming + len(node.swapped) + node.swapping_in \
                >= cl.decode_max_batch:
            return "batch full"
        if node.kv_reserved + need > node.kv_capacity:
            return "memory"
        return None

    # ------------------------------------------------------------------ prefill path
    def _enqueue_prefill(self, rid: int, node: _PrefillNode) -> None:
        self.path[rid] = PATH_PREFILL
        self.p_node[rid] = node.idx
        p = self.prompt[rid]
        node.queue.append([rid, p, 0])
        node.queued_tokens += p
        node.q_pairs += p * (p + 1) / 2.0
        node.q_kv += p
        node.wait_cache = None
        if node.busy_until < 0:
            self._start_prefill_step(node)

    def _start_prefill_step(self, node: _PrefillNode) -> None:
        budget = self._p_budget
        step = []
        n_tok = 0
        pairs = 0.0
        kv = 0.0
        for item in node.queue:
            if n_tok >= budget:
                break
            rid, rem, done = item
            c = min(rem, budget - n_tok)
            step.append((rid, c, done))
            if done == 0 and math.isnan(self.prefill_start[rid]):
                self.prefill_start[rid] = self.now
            n_tok += c
            pairs += c * (done + (c + 1) / 2.0)
            kv += done + c
        if not step:
            node.busy_until = -1.0
            node.step = None
            node.wait_cache = None
            return
        b = self.pricer.base_cost(n_tok, len(step))
        a = self.pricer.attn_cost(pairs, kv)
        dur = b[0] + a[0]
        node.busy_s += dur
        node.compute_s += b[2] + a[2]
        node.flops += b[1] + a[1]
        self._util_update(node, dur, (b[2] + a[2]) / dur)
        node.step = step
        node.wait_cache = None
        node.step_tokens = n_tok
        node.step_pairs = pairs
        node.step_kv = kv
        node.step_start = self.now
        node.busy_until = self.now + dur
        if self.record_timeline:
            self.timeline.append(("P", node.idx, self.now, self.now + dur, "prefill"))
        self._push(node.busy_until, _PREFILL_DONE, node.idx, 0)

    def _on_prefill_done(self, node: _PrefillNode) -> None:
        now = self.now
        dur = now - node.step_start
        q = node.queue
        for rid, c, _done in node.step:  # type: ignore[union-attr]
            self.exec_s[rid] += dur
            item = q[0] if q[0][0] == rid else next(x for x in q if x[0] == rid)
            rem, dn = item[1], item[2]
            node.q_pairs -= rem * (dn + (rem + 1) / 2.0)
            rem -= c
            dn += c
            item[1], item[2] = rem, dn
            node.queued_tokens -= c
            if rem == 0:
                node.q_kv -= dn
                q.remove(item)
                self._prefill_complete(rid, node)
            else:
                node.q_pairs += rem * (dn + (rem + 1) / 2.0)
        node.step = None
        node.wait_cache = None
        node.busy_until = -1.0
        self._start_prefill_step(node)

    def _prefill_complete(self, rid: int, node: _PrefillNode) -> None:
        now = self.now
        self.prefill_end[rid] = now
        includes = self.scenario.cluster.ttft_includes_transfer
        if self.output[rid] <= 1:
            # the only token comes out of the prefill step: no decode phase, no KV transfer
            self._first_token(rid, now)
            self._finish(rid, now)
            return
        if not includes:
            self._first_token(rid, now)
        self._route_to_decode(rid)

    def _kv_total(self, tokens: int) -> int:
        """KV tokens that ``tokens`` cached tokens occupy (whole blocks under ``swap``)."""
        if self.swap_policy:
            b = self.block
            return -(-tokens // b) * b
        return tokens

    def _kv_need(self, rid: int) -> int:
        """KV tokens a request reserves when it is routed or deflected to a decode node: prompt + output
        (``reserve``) or its prompt rounded up to whole blocks (``swap``: the rest grows block by block)."""
        if self.swap_policy:
            b = self.block
            return -(-self.prompt[rid] // b) * b
        return self.prompt[rid] + self.output[rid]

    def _route_to_decode(self, rid: int) -> None:
        need = self._kv_need(rid)
        best = None
        for d in self.dnodes:
            if d.kv_reserved + need <= d.kv_capacity:
                key = (d.kv_reserved, d.idx)
                if best is None or key < best[0]:
                    best = (key, d)
        if best is None:
            self.awaiting_memory.append(rid)
            return
        d = best[1]
        d.kv_reserved += need
        self.d_node[rid] = d.idx
        nbytes = self.prompt[rid] * self.model.kv_bytes_per_token
        self.kv_moved[rid] = nbytes
        self.xfer_start[rid] = self.now
        d.incoming += 1
        tr = self.transfer
        if not tr.enabled:
            self._on_transfer_done(rid)
        elif tr.setup_s > 0:
            self._push(self.now + tr.setup_s, _SETUP_DONE, rid, 0)
        else:
            pi = self.p_node[rid]
            self.links[pi].add(rid, nbytes, self.now)
            self._schedule_link(pi)

    def _schedule_link(self, pi: int) -> None:
        link = self.links[pi]
        nxt = link.next_completion()
        if nxt is not None:
            self._push(max(nxt[0], self.now), _XFER_DONE, pi, link.version)

    def _on_transfer_done(self, rid: int) -> None:
        self.xfer_end[rid] = self.now
        d = self.dnodes[self.d_node[rid]]
        d.incoming -= 1
        d.pending.append(rid)
        self._wake_decode(d)

    # ------------------------------------------------------------------ decode nodes
    def _wake_decode(self, d: _DecodeNode) -> None:
        """Something waits for node d's next step boundary: plan now if idle, or cut the stretch."""
        if d.mode == 0:
            self._plan_decode(d)
        elif d.mode == 1:
            elapsed = self.now - d.start
            j = _steps_within(d.t0, d.dt, elapsed)
            # the step in progress completes; a boundary exactly now counts as completed
            new_n = j if j * d.t0 + d.dt * j * (j - 1) / 2.0 >= elapsed else j + 1
            new_n = max(new_n, 1)
            if new_n < d.n:
                d.n = new_n
                d.version += 1
                end = d.start + new_n * d.t0 + d.dt * new_n * (new_n - 1) / 2.0
                self._push(max(end, self.now), _DECODE_BOUNDARY, d.idx, d.version)
        # mode 2 (chunk step): the boundary event already exists

    def _start_deflection(self, rid: int, d: _DecodeNode, chunk: int) -> None:
        self.path[rid] = PATH_DEFLECT
        self.d_node[rid] = d.idx
        self.chunks[rid] = []
        d.kv_reserved += self._kv_need(rid)
        d.defl = [rid, self.prompt[rid], 0, chunk]
        self.prefill_start[rid] = math.nan
        self._wake_decode(d)

    def _plan_decode(self, d: _DecodeNode) -> None:
        """At a step boundary (time now): admit, then start a chunk step, a stretch, or go idle."""
        now = self.now
        if d.swapped:
            self._try_swap_in(d)
        room = self._cap - len(d.batch) - (1 if d.defl is not None else 0)  # keep a slot for the deflection in flight
        if d.pending and room > 0:
            k = min(len(d.pending), room)
            drop1 = 0 if self._includes else 1
            fresh = []
            for _ in range(k):
                r = d.pending.popleft()
                st = self.swap_state.pop(r, None) if self.swap_state else None
                if st is None:
                    self._join(d, r, self.prompt[r], self.output[r] - drop1, 0.0)
                else:
                    self._join(d, r, st[0], st[1], st[2])
                fresh.append(r)
            d.fresh = fresh
        if self.swap_policy and d.batch:
            self._preempt_until_fits(d)
            if not d.batch and d.swapped:
                self._try_swap_in(d)  # memory just freed: nothing else may wake this node
        B = len(d.batch)
        pr = self.pricer
        kt, kf, kc = self._kcost
        pairs = d.sum_ctx + B
        defl = d.defl
        if defl is not None:
            rid, prompt, done, chunk = defl
            if chunk == LARGEST_SAFE:
                budget = self._ls_budget
                c = self.menu_desc[-1]
                for size in self.menu_desc:
                    cc = min(size, prompt - done)
                    if pr.step(B, pairs, cc, done) <= budget:
                        c = size
                        break
            else:
                c = chunk
            if c > prompt - done:
                c = prompt - done
            if done == 0 and math.isnan(self.prefill_start[rid]):
                self.prefill_start[rid] = now
            bt, bf, bc = pr.base_cost(B + c, B + 1)
            at = pr.attn(c, done)
            dur = bt + kt * pairs + at
            comp = bc + kc * pairs + at  # attention compute time ~ its time (compute-bound prefill)
            if comp > dur:
                comp = dur
            d.mode = 2
            d.chunk = c
            d.start = now
            d.t0 = dur
            d.dt = 0.0
            d.n = 1
            d.busy_s += dur
            d.compute_s += comp
            d.flops += bf + kf * pairs
            self._util_update(d, dur, comp / dur)
            d.version += 1
            if self.record_timeline:
                self.timeline.append(("D", d.idx, now, now + dur, f"chunk{c}"))
            self._push(now + dur, _DECODE_BOUNDARY, d.idx, d.version)
            return
        if B == 0:
            d.mode = 0
            return
        n = d.heap[0][0] - d.steps  # steps to the first finish
        if self.swap_policy:
            n = min(n, self._steps_that_fit(d, n))
        bt, bf, bc = pr.base_cost(B, B)
        t0 = bt + kt * pairs
        dt = kt * B
        d.mode = 1
        d.start, d.t0, d.dt, d.n, d.chunk = now, t0, dt, n, 0
        d.version += 1
        end = now + n * t0 + dt * n * (n - 1) / 2.0
        self._push(end, _DECODE_BOUNDARY, d.idx, d.version)

    def _on_decode_boundary(self, d: _DecodeNode) -> None:
        """The stretch or chunk step of node d ended now: materialise its steps, then plan again."""
        n, t0, dt = d.n, d.t0, d.dt
        B = len(d.batch)
        if d.mode == 1:
            span = n * t0 + dt * n * (n - 1) / 2.0
            _, bf, bc = self.pricer.base_cost(B, B)
            _, kf, kc = self._kcost
            pairs0 = d.sum_ctx + B
            # sums over steps j of (c0 + j * B * kc): closed form
            sum_pairs = n * pairs0 + B * n * (n - 1) / 2.0
            comp = n * bc + kc * sum_pairs
            d.busy_s += span
            d.compute_s += comp
            d.flops += n * bf + kf * sum_pairs
            self._util_update(d, span, comp / span if span > 0 else 0.0)
            if self.record_timeline:
                self.timeline.append(("D", d.idx, d.start, self.now, "decode"))
            if B:
                self._emit_tokens(d, n, t0, dt)
        elif d.mode == 2:  # a chunk step of the deflection in flight
            if B:
                self._emit_tokens(d, n, t0, dt)
            self._advance_deflection(d)
        d.mode = 0
        self._plan_decode(d)

    # ------------------------------------------------------------------ swap policy
    def _blocks_tokens(self, ctx: np.ndarray, extra: int = 0) -> int:
        """KV tokens held in whole blocks by caches of ``ctx + extra`` tokens."""
        b = self.block
        return int((-(-(ctx + extra) // b)).sum()) * b

    def _ctx_array(self, d: _DecodeNode) -> np.ndarray:
        """Current KV-cache lengths (tokens) of node d's batch (swap policy only: built on demand)."""
        cb = self.ctx_base
        return np.fromiter((cb[r] for r in d.batch), dtype=np.int64, count=len(d.batch)) + d.steps

    def _steps_that_fit(self, d: _DecodeNode, n_max: int) -> int:
        """Largest n <= n_max such that n more decode steps of the batch fit in KV memory."""
        ctx = self._ctx_array(d)
        held = self._blocks_tokens(ctx)
        other = d.kv_reserved - held
        room = d.kv_capacity - other
        lo, hi = 0, n_max  # invariant: lo fits
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self._blocks_tokens(ctx, mid) <= room:
                lo = mid
            else:
                hi = mid - 1
        return lo

    def _preempt_until_fits(self, d: _DecodeNode) -> None:
        """Swap out the most recently admitted requests until one more step fits (LIFO, as vLLM)."""
        while d.batch and self._steps_that_fit(d, 1) < 1:
            r = next(reversed(d.batch))
            c, rem, g = self.ctx_base[r] + d.steps, self.end_step[r] - d.steps, self._worst_gap(d, r)
            self._leave(d, r)
            d.heap.remove((self.end_step[r], r))
            heapq.heapify(d.heap)
            b = self.block
            d.kv_reserved -= -(-c // b) * b
            if d.fresh:
                d.fresh.pop()  # a fresh slot keeps its pending first token / gap (last_tok unchanged)
            elif not math.isnan(self.first_token[r]):
                self.last_tok[r] = self.now
            self.swap_state[r] = (c, rem, g)
            d.swapped.append(r)
            self.n_preemptions += 1
            self.swap_bytes += c * int(self.model.kv_bytes_per_token_per_gpu)

    def _try_swap_in(self, d: _DecodeNode) -> None:
        """Bring swapped requests back (most recently swapped first) while memory leaves room for the
        batch to grow by one block per request."""
        b = self.block
        while d.swapped:
            r = d.swapped[-1]
            c = self.swap_state[r][0]
            need = -(-c // b) * b
            # room for its next token and one more block for every other request that will decode here
            step_need = -(-(c + 1) // b) * b
            headroom = b * (len(d.batch) + len(d.pending) + d.swapping_in)
            if d.kv_reserved + step_need + headroom > d.kv_capacity:
                return
            d.swapped.pop()
            d.kv_reserved += need
            d.swapping_in += 1
            nbytes = c * self.model.kv_bytes_per_token_per_gpu
            self.swap_bytes += int(nbytes)
            self._push(self.now + nbytes / self.scenario.cluster.swap_bandwidth_bytes_per_s, _SWAP_IN_DONE, r, d.idx)

    # ------------------------------------------------------------------ decode batch membership
    def _join(self, d: _DecodeNode, rid: int, ctx: int, rem: int, gap: float) -> None:
        """Request ``rid`` joins node d's batch with ``ctx`` cached tokens, ``rem`` tokens to decode and a
        worst gap of ``gap`` seconds so far."""
        d.batch[rid] = None
        self.ctx_base[rid] = ctx - d.steps
        e = d.steps + rem
        self.end_step[rid] = e
        heapq.heappush(d.heap, (e, rid))
        self.gap_own[rid] = gap
        self.from_rec[rid] = d.n_rec
        d.sum_ctx += ctx

    def _leave(self, d: _DecodeNode, rid: int) -> None:
        del d.batch[rid]
        d.sum_ctx -= self.ctx_base[rid] + d.steps

    def _worst_gap(self, d: _DecodeNode, rid: int) -> float:
        """Worst token gap (s) of batch member ``rid`` so far: its own gaps and the node's worst step since
        it joined (a suffix maximum of the recorded stretches: a binary search in a monotonic stack)."""
        own = self.gap_own[rid]
        ids = d.smax_idx
        k = bisect_left(ids, self.from_rec[rid])
        if k < len(ids):
            v = d.smax_val[k]
            return v if v > own else own
        return own

    def _record(self, d: _DecodeNode, worst: float) -> None:
        """Record a stretch whose longest step took ``worst`` seconds (every batch member saw that gap)."""
        ids, vals = d.smax_idx, d.smax_val
        while vals and vals[-1] <= worst:
            vals.pop()
            ids.pop()
        ids.append(d.n_rec)
        vals.append(worst)
        d.n_rec += 1
        prune = self._stack_prune
        if len(ids) >= prune and d.n_rec % prune == 0 and d.batch:
            # records older than every member's join are never queried again: drop them
            fr = self.from_rec
            k = bisect_left(ids, min(fr[r] for r in d.batch))
            del ids[:k], vals[:k]

    def _emit_tokens(self, d: _DecodeNode, n: int, t0: float, dt: float) -> None:
        """n steps of durations t0 + j dt each gave one token to every request of the batch."""
        slo = self._tbt
        st = self.stats
        fresh = d.fresh  # admitted at this stretch's start: their first step's gap is their own
        n_fresh = len(fresh)
        B = len(d.batch)
        last = t0 + dt * (n - 1)
        if n_fresh:
            d.fresh = []
            t1 = d.start + t0
            ft = self.first_token
            lt = self.last_tok
            own = self.gap_own
            fr = self.from_rec
            nxt = d.n_rec + 1  # from the next record on; this stretch's steps 1.. are added here
            for r in fresh:
                fr[r] = nxt
                if n > 1 and last > own[r]:
                    own[r] = last
                if math.isnan(ft[r]):  # TTFT includes transfer: the decode node produces the first token
                    self._first_token(r, t1)
                    continue
                # the gap since its last token: from the prefill node's first token, or from a swap-out
                ref = lt[r] if not math.isnan(lt[r]) else ft[r]
                lt[r] = math.nan
                g = t1 - ref
                st.add_gap(g, 1)
                self.tokens_out += 1
                if g > own[r]:
                    own[r] = g
                if g > slo:
                    self.tbt_violations += 1
        # step 0 gives a gap of t0 to every request that already had a token
        w0 = B - n_fresh
        if w0 > 0:
            st.add_gap(t0, w0)
            self.tokens_out += w0
            if t0 > slo:
                self.tbt_violations += w0
        if n > 1:
            st.add_stretch(t0 + dt, dt, n - 1, B)
            self.tokens_out += B * (n - 1)
            if last > slo:  # count steps j in 1..n-1 with t0 + j dt > slo
                if dt > 0:
                    jmin = max(1, math.floor((slo - t0) / dt) + 1)
                    while jmin > 1 and t0 + (jmin - 1) * dt > slo:
                        jmin -= 1
                    while t0 + jmin * dt <= slo:
                        jmin += 1
                    self.tbt_violations += B * (n - jmin)
                else:
                    self.tbt_violations += B * (n - 1)
        # durations grow along a stretch, so its last step is its longest
        self._record(d, last)
        if self.swap_policy:
            ctx = self._ctx_array(d)
            d.kv_reserved += self._blocks_tokens(ctx, n) - self._blocks_tokens(ctx)
        d.steps += n
        d.sum_ctx += B * n
        heap = d.heap
        if heap and heap[0][0] <= d.steps:  # the stretch ran to its first finish (or a chunk step ended one)
            steps = d.steps
            now = self.now
            swap = self.swap_policy
            b = self.block
            while heap and heap[0][0] <= steps:
                r = heapq.heappop(heap)[1]
                c = self.ctx_base[r] + steps
                self.max_gap[r] = self._worst_gap(d, r)
                self._leave(d, r)
                self._finish(r, now)
                d.kv_reserved -= -(-c // b) * b if swap else self.prompt[r] + self.output[r]
            self._retry_memory()

    def _advance_deflection(self, d: _DecodeNode) -> None:
        rid, prompt, done, chunk = d.defl  # type: ignore[misc]
        c = d.chunk
        self.exec_s[rid] += d.t0
        self.chunks[rid].append(c)  # type: ignore[union-attr]
        done += c
        if done < prompt:
            d.defl = [rid, prompt, done, chunk]
            return
        d.defl = None
        self.prefill_end[rid] = self.now
        self._first_token(rid, self.now)
        if self.output[rid] <= 1:
            self._finish(rid, self.now)
            d.kv_reserved -= self._kv_need(rid)
            self._retry_memory()
            return
        # joins the batch with its KV in place: no transfer
        self._join(d, rid, prompt, self.output[rid] - 1, 0.0)

    def _retry_memory(self) -> None:
        while self.awaiting_memory:
            rid = self.awaiting_memory[0]
            need = self._kv_need(rid)
            if not any(d.kv_reserved + need <= d.kv_capacity for d in self.dnodes):
                return
            self.awaiting_memory.popleft()
            self._route_to_decode(rid)

    # ------------------------------------------------------------------ request milestones
    def _first_token(self, rid: int, t: float) -> None:
        if math.isnan(self.first_token[rid]):
            self.first_token[rid] = t
            self.waiting -= 1
            # the waiting area was integrated up to now; a first token at t < now stopped waiting at t
            self.wait_area -= self.now - t

    def _finish(self, rid: int, t: float) -> None:
        self.finish[rid] = t
        self.n_finished += 1

    # ------------------------------------------------------------------ utilization shown to policies
    def _util_update(self, node: Any, dur: float, util: float) -> None:
        """Exponentially weighted SM-utilization proxy over ~UTIL_WINDOW_S, updated per step/stretch."""
        now = self.now
        gap = now - node.util_t
        ewma = node.util_ewma * math.exp(-(gap if gap > 0.0 else 0.0) / UTIL_WINDOW_S)  # idle time counts as 0
        w = 1.0 - math.exp(-dur / UTIL_WINDOW_S)
        node.util_ewma = ewma * (1.0 - w) + util * w
        node.util_t = now + dur

    # ------------------------------------------------------------------ views and pricing
    def prefill_wait(self, node: _PrefillNode) -> float:
        """Predicted seconds until a new arrival's prompt starts on this prefill node: the rest of the
        step in progress, then the queued tokens not in that step (full steps of the budget) and their
        attention (token pairs are additive, so the running chunks' pairs are simply left out)."""
        wait = max(0.0, node.busy_until - self.now) if node.busy_until >= 0 else 0.0
        cache = node.wait_cache
        if cache is None:  # the queue terms change only with the queue: computed once per change
            in_step = node.step_tokens if node.step else 0
            rest = node.queued_tokens - in_step
            if rest > 0:
                budget = self._p_budget
                full, last = divmod(rest, budget)
                steps_s = full * self.pricer.base(budget, 1) + (self.pricer.base(last, 1) if last else 0.0)
                if node.step:
                    attn_s = self.pricer.attn_time(node.q_pairs - node.step_pairs, node.q_kv - node.step_kv)
                else:
                    attn_s = self.pricer.attn_time(node.q_pairs, node.q_kv)
                cache = (steps_s, attn_s)
            else:
                cache = (0.0, 0.0)
            node.wait_cache = cache
        return wait + cache[0] + cache[1]


    def _build_context(self, rid: int) -> DecisionContext:
        """The decision context of request ``rid`` now (views built with ``tuple.__new__``, the NamedTuples'
        own constructor minus its Python-level call: this runs at every decision)."""
        new = tuple.__new__
        sc = self.scenario
        now = self.now
        prompt = self.prompt[rid]
        pr = self.pricer
        tr = self.transfer
        own = pr.prefill_alone(prompt, self._p_budget)
        xfer = tr.time_alone(prompt * self.model.kv_bytes_per_token) if (tr.enabled and self._includes) else 0.0
        # utilization proxy of every node now: the EWMA decayed over the idle time since its last step
        exp = math.exp
        util = [n.util_ewma if now <= n.util_t else n.util_ewma * exp(-(now - n.util_t) / UTIL_WINDOW_S)
                for n in self._nodes]
        pviews = []
        ttft_p = []
        for i, node in enumerate(self.pnodes):
            w = self.prefill_wait(node)
            pviews.append(new(PrefillNodeView, (node.queued_tokens, len(node.queue), w, util[i])))
            ttft_p.append(w + own + xfer)
        tbt = self._tbt
        budget = self._ls_budget
        menu_desc = self.menu_desc
        terms = pr.menu_terms(prompt, self.menu)
        need = self._kv_need(rid)
        dviews = []
        step_s = []
        ttft_d = []
        ls_ok = []
        ls_t = []
        ls_first = []
        P = len(self.pnodes)
        for d in self.dnodes:
            # progress of node d now, mid-stretch included: batch size, sum of contexts, seconds to the
            # next step boundary (0 when idle)
            B = len(d.batch)
            mode = d.mode
            if mode == 0:
                sctx, wait_boundary = d.sum_ctx, 0.0
            else:
                elapsed = now - d.start
                t0, dt = d.t0, d.dt
                j = _steps_within(t0, dt, elapsed) if mode == 1 else 0
                wait_boundary = max(0.0, (j + 1) * t0 + dt * (j + 1) * j / 2.0 - elapsed)
                sctx = d.sum_ctx + B * min(j, d.n)
            pairs = sctx + B
            row_s, row_t = pr.menu_rows(B, pairs, terms, wait_boundary)
            ok, total, sizes = pr.largest_safe(B, pairs, prompt, budget, menu_desc)
            step_s.append(tuple(row_s))
            ttft_d.append(tuple(row_t))
            ls_ok.append(ok)
            ls_t.append(wait_boundary + total if ok else math.inf)
            ls_first.append(sizes[0] if ok and sizes else 0)
            defl = d.defl
            dviews.append(new(DecodeNodeView, (
                B, sctx, len(d.pending) + d.incoming, 1.0 - d.kv_reserved / d.kv_capacity,
                d.kv_capacity - d.kv_reserved, defl is not None, (defl[1] - defl[2]) if defl is not None else 0,
                pr.step(B, pairs, 0, 0), tbt, util[P + d.idx], self._node_refuses(d, need) is None,
            )))
        req = new(RequestView, (rid, self.arrival[rid], prompt, self.output[rid] if self.oracle else None))
        return new(DecisionContext, (
            now, req, tuple(pviews), tuple(dviews), self.menu, tuple(step_s), tuple(ttft_d), tuple(ttft_p),
            tuple(ls_ok), tuple(ls_t), tuple(ls_first), sc.slo.ttft_s, tbt, sc.deflection.beta,
        ))

    # ------------------------------------------------------------------ results
    def summary(self) -> dict[str, Any]:
        """The run's summary (see :func:`kairos_gym.sim.metrics.summarize`)."""
        return summarize(self, wall_time_s=time.perf_counter() - self._wall_start)

    def requests_table(self) -> dict[str, np.ndarray]:
        """Per-request record as columns (see docs/metrics.md)."""
        from kairos_gym.sim.metrics import requests_table

        return requests_table(self)

    # ------------------------------------------------------------------ debug API (tests; both engines)
    _stack_prune = _STACK_PRUNE
    """Worst-step stack size past which unreachable records are dropped (``debug_set_stack_prune`` lowers it)."""

    def debug_join(self, d: int, rid: int, ctx: int, rem: int, gap: float) -> None:
        """Request ``rid`` joins decode node ``d``'s batch (``ctx`` cached tokens, ``rem`` to decode, worst gap
        ``gap`` s so far), bypassing the event loop: for unit tests of the batch bookkeeping."""
        self._join(self.dnodes[d], rid, ctx, rem, gap)

    def debug_leave(self, d: int, rid: int) -> None:
        """Request ``rid`` leaves decode node ``d``'s batch (its end-step heap entry stays)."""
        self._leave(self.dnodes[d], rid)

    def debug_record(self, d: int, worst: float) -> None:
        """Decode node ``d`` records a stretch whose longest step took ``worst`` s."""
        self._record(self.dnodes[d], worst)

    def debug_worst_gap(self, d: int, rid: int) -> float:
        """Worst token gap (s) so far of request ``rid``, a member of decode node ``d``'s batch."""
        return self._worst_gap(self.dnodes[d], rid)

    def debug_set_stack_prune(self, n: int) -> None:
        """Set this simulator's worst-step stack prune threshold (default 1024 records; kept across resets)."""
        self._stack_prune = n

    def debug_push_event(self, t: float, kind: int, a: int, b: int) -> None:
        """Push a raw event (t s, kind, a, b) into the event queue."""
        self._push(t, kind, a, b)

    def debug_prefill_wait(self, p: int) -> tuple[float, float]:
        """Prefill node ``p``'s predicted wait (s) for an arrival now: (as the engine computes it, with its
        cached queue terms; recomputed from the queue alone). The state is left as it was."""
        node = self.pnodes[p]
        cached = self.prefill_wait(node)
        keep, node.wait_cache = node.wait_cache, None
        fresh = self.prefill_wait(node)
        node.wait_cache = keep
        return cached, fresh

    # ------------------------------------------------------------------ snapshots
    _SHARED = ("scenario", "model", "pricer", "workload", "_fixed_workload", "menu", "menu_desc", "transfer")

    _SNAPSHOT_OF = "snapshot_of"
    """Key of a snapshot naming what it was taken from: (scenario, oracle), compared by :meth:`restore`."""

    def snapshot(self) -> dict[str, Any]:
        """A deep copy of the whole mutable state (immutable physics and workload are shared), plus the
        scenario and oracle flag it belongs to (checked by :meth:`restore`)."""
        memo = {id(getattr(self, k)): getattr(self, k) for k in self._SHARED}
        state = {k: v for k, v in self.__dict__.items() if k not in self._SHARED}
        out = copy.deepcopy(state, memo)
        out[self._SNAPSHOT_OF] = (self.scenario, self.oracle)
        return out

    def restore(self, state: dict[str, Any]) -> None:
        """Return to a state taken by :meth:`snapshot` (the snapshot stays reusable). A snapshot of another
        scenario (another cluster shape, menu, SLO, ...) or oracle setting raises :class:`ConfigError`: its
        nodes and views would not match this simulator's."""
        of = state.get(self._SNAPSHOT_OF) if isinstance(state, dict) else None
        if not (isinstance(of, tuple) and len(of) == 2):
            raise ConfigError("Simulator.restore", "state", type(state).__name__, "a dict from Simulator.snapshot()")
        sc, oracle = of
        if (sc is not self.scenario and sc != self.scenario) or oracle != self.oracle:
            raise ConfigError("Simulator.restore", "state", f"a snapshot of {_describe_sim(sc, oracle)}",
                              f"a snapshot of this simulator's {_describe_sim(self.scenario, self.oracle)}"
                              + (" (same name and shape; other settings differ)"
                                 if _describe_sim(sc, oracle) == _describe_sim(self.scenario, self.oracle) else ""))
        memo = {id(getattr(self, k)): getattr(self, k) for k in self._SHARED}
        body = {k: v for k, v in state.items() if k != self._SNAPSHOT_OF}
        self.__dict__.update(copy.deepcopy(body, memo))


def _describe_sim(sc: Any, oracle: Any) -> str:
    """``scenario 'small' (2P2D, chunk menu [128, ...], oracle False)`` for restore errors."""
    if not isinstance(sc, ScenarioConfig):
        return f"an unknown scenario ({type(sc).__name__})"
    cl = sc.cluster
    return (f"scenario {sc.name!r} ({cl.prefill_nodes}P{cl.decode_nodes}D, chunk menu "
            f"{list(sc.deflection.chunk_menu)}, oracle {oracle})")

