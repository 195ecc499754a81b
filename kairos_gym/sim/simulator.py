"""The simulator: :class:`Simulator`, the C++ core ``kairos_gym._core.Simulator`` behind a small Python API
(``kairos_gym.sim.Simulator`` is this class). Its results are pinned bit for bit by the golden datasets
(``tests/golden/fingerprints.json``: per-request records and summaries, env trajectories;
``tests/golden/engine_traces.json``: event traces, decision contexts, node states, messages, ...).
``snapshot``/``restore`` copy the C++ state; pickling and copying replay the decision log in the core (see
docs/architecture.md).

The boundary is typed: the scenario crosses as a ``_core.CoreConfig`` (named, typed fields of the core's own
config struct, filled by :meth:`Simulator._core_config`); the per-request columns are the core's table
(``_core.REQUEST_COLUMNS``, src/core/request_columns.hpp), each an attribute of the same name, a read-only numpy
view of the core's array (float64 / int64), which :func:`~kairos_gym.sim.metrics.summarize` and
``tools/fingerprint.py`` read. The decision context is priced in C++ (``_core.Pricer`` over the tables
``ChunkPricer.compile`` exports) into flat buffers; a :class:`~kairos_gym.sim.hook.LazyDecisionContext` builds
each field (the NamedTuples of :mod:`kairos_gym.sim.hook`) on first read. The run's workload is drawn and checked
by :mod:`kairos_gym.sim.run_workload`. Times in seconds, sizes in tokens.
"""

from __future__ import annotations

import copy
import hashlib
import json
import time
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from kairos_gym import compiled
from kairos_gym.errors import ConfigError
from kairos_gym.latency.model import StepLatencyModel
from kairos_gym.latency.pricing import shared_pricer, table_sizes
from kairos_gym.latency.transfer import TransferConfig
from kairos_gym.scenario import MAX_METRICS_WINDOW, ScenarioConfig, load_scenario
from kairos_gym.sim.decision_check import check_decision
from kairos_gym.sim.hook import (
    ARRIVAL,
    PULL,
    REENTRY,
    Decision,
    DecisionContext,
    DecodeNodeView,
    LazyDecisionContext,
    Policy,
    PrefillNodeView,
    RequestView,
)
from kairos_gym.sim.metrics import RunStats, summarize
from kairos_gym.sim.run_workload import (
    FitCheck,
    check_seed,
    check_workload_arg,
    draw_workload,
    is_chunked,
    open_stream,
    stream_at,
)
from kairos_gym.workload import Workload

_LAZY_BUFFER = {"ttft_prefill_s": 2, "step_s": 6, "ttft_deflect_s": 7, "largest_safe_feasible": 8,
                "largest_safe_ttft_s": 9, "largest_safe_first_chunk": 10}
"""Context field -> index of its buffer in ``_core.Simulator.menu_buffers()``."""

_KINDS = (ARRIVAL, PULL, REENTRY)
"""``_core.Simulator.pending_kind`` codes (src/core/pull.hpp DECISION_*) as ``DecisionContext.kind`` values."""

_REFUSALS = (None, "deflection in flight", "batch full", "memory", "node down")
"""``_core.Simulator.node_refuses`` codes as reasons."""

MAX_KV_CAPACITY = 1 << 40
"""Largest KV capacity per decode node a caller may set (tokens)."""


def request_columns() -> tuple[str, ...]:
    """The per-request columns of the core (``_core.REQUEST_COLUMNS``, src/core/request_columns.hpp), each an
    attribute of a :class:`Simulator` of the same name (a read-only numpy view, float64 or int64): the workload's
    ``arrival`` (s), ``prompt``, ``output`` (tokens), then the run's records (``path``, ``first_token``, ...)."""
    return tuple(compiled.core().REQUEST_COLUMNS)


ROW_FLUSH = 4096
"""Streamed ``--requests-csv``: rows buffered in the core before they are written (bounded memory)."""

CHUNK_OVERRIDE: int | None = None
"""Test hook: requests per workload chunk of a chunked run (None: ``metrics.window // 2``, the default)."""

_NEEDS_WORKLOAD = 2
"""``_core.Simulator.advance()``: a chunked workload needs its next chunk (0: done, 1: a decision)."""

TraceEvent = tuple[float, int, int, int, float]
"""One popped event of ``Simulator(trace=True)``: (t s, kind, a, b, wait_area after it in request-seconds)."""


def first_divergence(a: list[TraceEvent], b: list[TraceEvent]) -> int | None:
    """Index of the first event where two event traces differ, bit for bit (floats by their repr, so -0.0 and
    0.0 differ), or where the shorter one ends; None when they are equal. For diffing two runs (say, before and
    after a core change)::

        a, b = Simulator(sc, trace=True), Simulator(sc, trace=True)
        ...run both...; i = first_divergence(a.trace, b.trace); a.trace[i], b.trace[i]
    """
    for i, (x, y) in enumerate(zip(a, b)):  # noqa: B905 (lengths compared below)
        if x != y or repr(x) != repr(y):
            return i
    return None if len(a) == len(b) else min(len(a), len(b))


class PrefillNodeState(NamedTuple):
    """A read-only copy of a prefill node's state (src/core/prefill_node.hpp): tokens, seconds.
    ``queue`` holds (rid, remaining, done) per prompt, ``step`` (rid, chunk, prefix) per chunk of the step in
    progress (None when idle)."""

    idx: int
    queue: tuple[tuple[int, int, int], ...]
    queued_tokens: int
    q_pairs: float
    q_kv: float
    busy_until: float
    step: tuple[tuple[int, int, int], ...] | None
    step_tokens: int
    step_pairs: float
    step_kv: float
    step_start: float
    busy_s: float
    compute_s: float
    flops: float
    util_ewma: float
    util_t: float


class DecodeNodeState(NamedTuple):
    """A read-only copy of a decode node's state (src/core/decode_node.hpp): ``batch`` in
    admission order, ``heap`` the (end_step, rid) entries in heap order, ``defl`` (rid, prompt, done, chunk) of
    the deflection in flight or None. Tokens, seconds."""

    idx: int
    kv_capacity: int
    kv_reserved: int
    batch: tuple[int, ...]
    steps: int
    heap: tuple[tuple[int, int], ...]
    fresh: tuple[int, ...]
    sum_ctx: int
    n_rec: int
    smax_idx: tuple[int, ...]
    smax_val: tuple[float, ...]
    pending: tuple[int, ...]
    incoming: int
    swapped: tuple[int, ...]
    swapping_in: int
    defl: tuple[int, int, int, int] | None
    mode: int
    start: float
    t0: float
    dt: float
    n: int
    chunk: int
    version: int
    busy_s: float
    compute_s: float
    flops: float
    util_ewma: float
    util_t: float


def _snapshot_checksum(state: dict[str, Any]) -> str:
    """sha256 (hex) of a snapshot's Python-side pieces and its core copy's clock and decision count: the fields
    :meth:`Simulator.restore` trusts. The pending context, the label and the wall-clock start are records only."""
    h = hashlib.sha256()
    core = state.get("core")
    rng = state.get("rng")
    head = {"kv": state.get("kv_capacity"), "seed": state.get("seed"), "noise": state.get("noise_seed"),
            "loaded": state.get("stream_loaded"), "faults": repr(state.get("faults")),
            "rng": getattr(getattr(rng, "bit_generator", None), "state", repr(rng)),
            "now": getattr(core, "now", None), "decisions": getattr(core, "n_decisions", None)}
    h.update(json.dumps(head, sort_keys=True, default=repr).encode())
    wl = state.get("workload")
    for name in ("arrival_s", "prompt_tokens", "output_tokens"):
        arr = getattr(wl, name, None)
        h.update(name.encode() + (np.ascontiguousarray(arr).tobytes() if arr is not None else b"-"))
    return h.hexdigest()


WINDOW_TOO_SMALL = "metrics.window too small"
"""The core's message when a request arrives while the request ``metrics.window`` before it is still in flight
(streaming metrics); :meth:`Simulator.run` turns it into a ConfigError naming the field."""

class Simulator:
    """A P/D cluster serving one workload, step by step (one decision at a time) or all at once (the C++ core;
    see the module docstring). Typical use::

        sim = Simulator("bursty", seed=0)
        summary = sim.run(policy)             # every decision through policy.decide(ctx)

    or, decision by decision (what the Gymnasium env does)::

        ctx = sim.next_decision()
        while ctx is not None:
            sim.apply(decision)
            ctx = sim.next_decision()

    ``scenario``: a scenario name, a :class:`~kairos_gym.scenario.ScenarioConfig` or its dict; ``seed``: the
    workload's seed (a whole number >= 0); ``workload``: a fixed workload instead of the scenario's; ``oracle``:
    show output lengths to policies; ``kv_capacity``: KV tokens per decode node (None: from the latency model);
    ``trace``: keep every popped event. Bad arguments raise :class:`ConfigError` before anything is built.
    Per-request columns (:func:`request_columns`) are attributes of the same names.
    """

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
    ) -> None:
        seed = check_seed("Simulator", seed)
        if not isinstance(oracle, bool):
            raise ConfigError("Simulator", "oracle", oracle, "True or False")
        if not isinstance(trace, bool):
            raise ConfigError("Simulator", "trace", trace, "True or False")
        self.scenario = sc = load_scenario(scenario)
        cl = sc.cluster
        self.model = StepLatencyModel.from_preset(cl.model, cl.gpu, cl.tp, dict(cl.calibration) or None)
        self.menu = sc.deflection.chunk_menu
        # one pricer (tables and memos) per distinct latency model and menu in the process: a pure function of them
        model_key = (cl.model, cl.gpu, cl.tp, tuple(sorted(dict(cl.calibration).items())))
        n_tok, n_seq = table_sizes(cl.decode_max_batch, cl.prefill_token_budget, self.menu)
        self.pricer, core_price = shared_pricer(model_key, self.model, self.menu, n_tok, n_seq)
        self.kv_capacity = _check_kv_capacity(kv_capacity) if kv_capacity is not None \
            else self.model.kv_capacity_tokens(cl.kv_reserve_frac)
        t = sc.transfer
        self.transfer = TransferConfig(t.bandwidth_bytes_per_s, t.setup_s, t.enabled)
        self.oracle = oracle
        self.record_timeline = bool(record_timeline)
        self._fits = FitCheck(sc, min(self.model.model.max_context, self.kv_capacity),
                              cl.kv_block_tokens if cl.memory_policy == "swap" else None)
        self._fixed_workload: Workload | None = None
        self._menu_set = frozenset(self.menu)  # chunk sizes a Decision may name (LARGEST_SAFE aside)
        self._policy_label = "policy"  # names the deciding policy in a bad-decision error (set by run())
        self._kv_capacity_arg = kv_capacity
        self._core = compiled.core().Simulator(self._core_config(), core_price, oracle)
        self._core.trace_on = trace
        self._core.record_timeline = self.record_timeline
        self._menu = self._core.menu_buffers()
        self._menu_up = self._core.menu_up()  # availability rows (faults): all true without faults
        self._trace = trace
        self._row_writer: Callable[[list[Any]], Any] | None = None
        self.reset(seed, workload)

    # ------------------------------------------------------------------ set-up
    def _core_config(self) -> Any:
        """The core's constants (a ``_core.CoreConfig``, src/core/simulator.hpp) from the scenario, the latency
        model and the KV capacity: seconds, tokens, bytes, bytes/s; -1 switches an overload bound off."""
        sc = self.scenario
        cl = sc.cluster
        m = self.model
        ov = sc.overload
        c = compiled.core().CoreConfig()
        c.n_prefill = cl.prefill_nodes
        c.n_decode = cl.decode_nodes
        c.decode_max_batch = cl.decode_max_batch
        c.prefill_token_budget = cl.prefill_token_budget
        c.ttft_includes_transfer = cl.ttft_includes_transfer
        c.tbt_s = sc.slo.tbt_s
        c.ls_budget_s = sc.deflection.beta * sc.slo.tbt_s  # LargestSafe step budget
        c.menu = list(self.menu)
        c.menu_desc = sorted(self.menu, reverse=True)
        c.max_deflections_per_node = cl.max_deflections_per_node
        c.kv.swap = cl.memory_policy == "swap"
        c.kv.block = cl.kv_block_tokens
        c.kv.fifo = cl.swap_order == "fifo"
        c.swap_bandwidth = float(cl.swap_bandwidth_bytes_per_s)
        c.transfer_bandwidth = float(self.transfer.bandwidth_bytes_per_s)
        c.transfer_setup_s = float(self.transfer.setup_s)
        c.transfer_enabled = bool(self.transfer.enabled)
        c.kv_capacity = self.kv_capacity
        c.max_context = m.model.max_context
        c.kv_bytes_per_token = int(m.kv_bytes_per_token)
        c.kv_bytes_per_token_per_gpu = float(m.kv_bytes_per_token_per_gpu)
        c.info.realistic = sc.information.realistic
        c.info.staleness_s = float(sc.information.staleness_s)
        c.info.model_error = float(sc.information.model_error)
        c.pull = sc.deflection.decision_points == "arrival+pull"
        c.admit_max_waiting = -1 if ov.admission_max_waiting is None else int(ov.admission_max_waiting)
        c.admit_max_ttft_s = -1.0 if ov.admission_max_ttft_s is None else float(ov.admission_max_ttft_s)
        c.timeout_s = -1.0 if ov.timeout_s is None else float(ov.timeout_s)
        c.reentry_policy = sc.faults.enabled and sc.faults.reentry == "policy"
        c.ttft_slo_s = float(sc.slo.ttft_s)
        c.score_from = int(sc.slo.burn_in_requests)
        c.stream_slots = sc.metrics.window if sc.metrics.mode == "streaming" else -1
        c.sketch_alpha = float(sc.metrics.relative_accuracy)
        return c

    def reset(self, seed: int | None = None, workload: Workload | None = None) -> None:
        """Start over: regenerate the workload from ``seed`` (None: the current seed) unless a fixed workload
        (given here or at construction) is in force (checks: :mod:`kairos_gym.sim.run_workload`; a bad argument
        or workload raises :class:`ConfigError` and leaves the simulator as it was)."""
        seed = self.seed if seed is None else check_seed("Simulator.reset", seed)
        sc = self.scenario
        fixed = check_workload_arg(workload)
        if fixed is None:
            fixed = self._fixed_workload
        if is_chunked(sc, fixed):  # streaming, synthetic: generated chunk by chunk as the run needs it
            rng, stream, (arrival, prompt, output, last) = open_stream(sc, seed, self._chunk_size(), self._fits)
            self.seed = seed
            self.rng = rng
            self._stream = stream
            self._workload = None
            self._core.reset_chunked(arrival, prompt, output, 2 * sc.metrics.window, last)
            self.n = self._core.n
        else:
            rng, wl = draw_workload(sc, seed, fixed, self._fits)
            if sc.slo.burn_in_requests >= len(wl) > 0:  # a trace window or a duration: its size is known now
                raise ConfigError(f"scenario {sc.name!r}: slo", "burn_in_requests", sc.slo.burn_in_requests,
                                  f"fewer than the workload's {len(wl)} requests (at least one must be scored)")
            self.seed = seed
            self.rng = rng
            self._fixed_workload = fixed
            self._stream = None
            self.workload = wl
            self.n = len(wl)
            arrival = np.ascontiguousarray(wl.arrival_s, dtype=np.float64)
            prompt = np.ascontiguousarray(wl.prompt_tokens, dtype=np.int64)
            output = np.ascontiguousarray(wl.output_tokens, dtype=np.int64)
            self._core.reset(arrival, prompt, output)
        self._noise_seed: int | None = None
        if sc.information.realistic:  # the noise stream of the served view: one 64-bit draw after the workload's
            self._noise_seed = int(rng.integers(0, 2**64, dtype=np.uint64))
            self._core.seed_noise(self._noise_seed)
        self._faults: tuple[list[float], list[int], list[int], list[float]] | None = None
        if sc.faults.enabled:  # the run's fault events: timed + drawn from a child stream (kairos_gym/faults.py)
            cl = sc.cluster
            self._faults = sc.faults.compile(rng, cl.prefill_nodes, cl.decode_nodes, f"scenario {sc.name!r}: faults")
            self._core.set_faults(*self._faults)
        self._read_columns()
        self._ctx: DecisionContext | None = None
        self._invalidate_contexts()
        self._ctx_base = {"chunk_menu": self.menu, "ttft_slo_s": sc.slo.ttft_s, "tbt_slo_s": sc.slo.tbt_s,
                          "beta": sc.deflection.beta}  # the lazy context's eager fields
        self._timeline: list[tuple[str, int, float, float, str]] = []
        self._wall_start = time.perf_counter()

    # ------------------------------------------------------------------ the workload (whole or in chunks)
    @property
    def chunked(self) -> bool:
        """Is this run's workload generated in chunks (``metrics.mode: streaming`` with synthetic arrivals and no
        fixed workload; docs/reliability.md "Long runs")? Then :attr:`workload` is refused and :attr:`n` counts the
        requests loaded so far (the total once :attr:`workload_complete`)."""
        return self._stream is not None

    @property
    def workload(self) -> Workload:
        """The run's :class:`~kairos_gym.workload.Workload`; a chunked run never holds it whole (:class:`ConfigError`
        naming the reason: read :attr:`workload_source` and :attr:`n`, or run in ``metrics.mode: exact``)."""
        if self._stream is not None:
            raise ConfigError("Simulator.workload", "metrics.mode", "streaming",
                              "exact, or a fixed workload, for a whole Workload (this run's synthetic workload is "
                              "generated in chunks and never held whole; workload_source names it, n counts the "
                              "requests loaded so far)")
        assert self._workload is not None
        return self._workload

    @workload.setter
    def workload(self, wl: Workload) -> None:
        self._workload = wl

    @property
    def workload_source(self) -> str:
        """The workload's provenance (``Workload.source``; a chunked run's: its config's description)."""
        return self._stream.source if self._stream is not None else self.workload.source

    @property
    def workload_complete(self) -> bool:
        """Has every request of the workload been loaded (always True for a whole workload)?"""
        return bool(self._core.workload_complete)

    def _chunk_size(self) -> int:
        """Requests per workload chunk of a chunked run: ``metrics.window // 2`` (or :data:`CHUNK_OVERRIDE`). The
        core's workload ring holds 2 x window requests, so a chunk never reaches a request still in flight (one
        arriving while the request ``window`` before it is in flight is an error, raise metrics.window)."""
        return CHUNK_OVERRIDE if CHUNK_OVERRIDE is not None else self.scenario.metrics.window // 2

    def _load_chunk(self) -> None:
        """Hand the core the next chunk of a chunked workload (when ``advance()`` asked for it)."""
        stream = self._stream
        first = stream.loaded
        arrival, prompt, output, last = stream.take(self._chunk_size())
        self._fits(stream.source, prompt, output, first)
        self._core.append_workload(arrival, prompt, output, last)
        self.n = self._core.n

    def advance_to_decision(self) -> bool:
        """Run events to the next decision (True) or the end (False) without building a decision context, loading
        workload chunks as needed (what :meth:`next_decision` does before building the context)."""
        core = self._core
        if self._stream is None:
            return core.next_decision()
        while True:
            s = core.advance()
            if s != _NEEDS_WORKLOAD:
                return s == 1
            self._load_chunk()

    # ------------------------------------------------------------------ counters (read from the core)
    @property
    def now(self) -> float:
        return self._core.now

    @property
    def waiting(self) -> int:
        return self._core.waiting

    @property
    def wait_area(self) -> float:
        return self._core.wait_area

    @property
    def tbt_violations(self) -> int:
        return self._core.tbt_violations

    @property
    def tokens_out(self) -> int:
        return self._core.tokens_out

    @property
    def n_decisions(self) -> int:
        return self._core.n_decisions

    @property
    def n_invalid(self) -> int:
        return self._core.n_invalid

    @property
    def n_view_refreshes(self) -> int:
        """Realistic information track: refreshes of the dispatcher's view this run (0 on the exact track)."""
        return self._core.n_refreshes

    @property
    def n_stale_refusals(self) -> int:
        """Realistic information track: deflections the served view offered (``can_deflect`` true) that the node
        refused at apply time (each also counts in ``n_invalid``; 0 on the exact track)."""
        return self._core.n_stale_refusals

    @property
    def view_refreshed_at(self) -> float:
        """Realistic information track: simulated time of the served view's last refresh (s); NaN on exact."""
        return self._core.info_refreshed_at

    def noise_factors(self) -> list[float]:
        """Realistic information track: the pending decision's error factors ``1 + e`` (prefill nodes, then decode
        nodes; all 1.0 with ``model_error: 0``); empty on the exact track."""
        return self._core.noise_factors()

    @property
    def fault_events(self) -> list[tuple[float, str, int, float]]:
        """The run's fault events (time s, kind, node or link, factor) in the order the core runs them (timed and
        drawn; empty without a ``faults:`` section)."""
        from kairos_gym.faults import FAULT_KINDS

        if self._faults is None:
            return []
        t, k, nd, f = self._faults
        return [(a, FAULT_KINDS[b], c, d) for a, b, c, d in zip(t, k, nd, f, strict=True)]

    def fault_counters(self) -> dict[str, int]:
        """What the faults did so far (src/core/faults.hpp FaultCounters): ``events`` applied, re-entries by cause
        (``requeued``: queued or prefilling on a failed prefill node; ``transfers_lost``: KV lost with a prefill node;
        ``decode_reentries``: resident on a failed decode node; ``rerouted``: in transfer to one), ``refused_down``
        (decisions naming a down node), ``held`` (held for want of an up prefill node), ``held_now``,
        ``reentry_decisions`` (re-entries offered to the policy, ``faults.reentry: policy``), ``reentry_deflected``
        (of them, deflections accepted) and ``dropped_timed_out`` (victims that had already timed out: removed by the
        failure, not re-entered)."""
        return dict(self._core.fault_counters())

    def node_up(self, kind: str, node: int) -> bool:
        """Is ``"prefill"`` / ``"decode"`` node ``node`` up now?"""
        if kind not in ("prefill", "decode"):
            raise ConfigError("Simulator.node_up", "kind", kind, "prefill or decode")
        return bool(self._core.node_up(kind == "decode", int(node)))

    @property
    def n_finished(self) -> int:
        return self._core.n_finished

    @property
    def n_rejected(self) -> int:
        return self._core.n_rejected

    @property
    def n_rejected_overlong(self) -> int:
        """Requests rejected at arrival because they could never fit (``cluster.overlong: reject``)."""
        return self._core.n_rejected_overlong

    @property
    def n_rejected_admission(self) -> int:
        """Requests rejected at arrival by admission control (``overload.admission_*``)."""
        return self._core.n_rejected_admission

    @property
    def n_timed_out(self) -> int:
        """Requests that timed out (``overload.timeout_s``) before their first token."""
        return self._core.n_timed_out

    @property
    def n_arrived(self) -> int:
        """Arrivals handled so far (admitted or rejected)."""
        return self._core.n_arrived

    @property
    def n_preemptions(self) -> int:
        return self._core.n_preemptions

    @property
    def swap_bytes(self) -> int:
        return self._core.swap_bytes

    @property
    def _pending_rid(self) -> int | None:
        r = self._core.pending_rid
        return None if r < 0 else r

    @property
    def pending_kind(self) -> str | None:
        """The pending decision's kind: ``"arrival"``, ``"pull"`` (``decision_points: arrival+pull``), ``"reentry"``
        (a request a node failure sent back; ``faults.reentry: policy``) or None."""
        core = self._core
        return None if core.pending_rid < 0 else _KINDS[core.pending_kind]

    @property
    def n_pull_decisions(self) -> int:
        """Pull decisions raised so far (each also counts in ``n_decisions``)."""
        return self._core.n_pull_decisions

    @property
    def n_pulled(self) -> int:
        """Pull decisions that deflected their candidate (pulled it off its prefill queue)."""
        return self._core.n_pulled

    @property
    def _seq(self) -> int:
        """Events pushed so far (the event queue's sequence counter)."""
        return self._core.events_pushed

    @property
    def _events(self) -> list[tuple[float, int, int, int, int]]:
        """A copy of the pending events (t, seq, kind, a, b) in heap order (heapq's layout)."""
        return self._core.events()

    @property
    def done(self) -> bool:
        """True when every request has finished or been rejected."""
        return self._core.done

    @property
    def trace(self) -> list[tuple[float, int, int, int, float]] | None:
        """With ``trace=True``: every popped event as (t, kind, a, b, wait_area after it), else None."""
        return self._core.trace() if self._trace else None

    @property
    def chunks(self) -> list[list[int] | None]:
        """Per request: None, or the chunk sizes (tokens) of its deflected prefill (a new list at each access)."""
        return self._core.chunks()

    @property
    def stats(self) -> RunStats:
        """The token-gap records (a :class:`RunStats` over copies of the core's arrays)."""
        st = RunStats()
        st.s_t0, st.s_dt, st.s_n, st.s_w, st.gap_v, st.gap_w = self._core.stats()
        return st

    @property
    def pnodes(self) -> list[PrefillNodeState]:
        """Copies of the prefill nodes' states (read-only; taken at each access)."""
        make = PrefillNodeState._make
        return [make(self._core.prefill_state(i)) for i in range(self.scenario.cluster.prefill_nodes)]

    @property
    def dnodes(self) -> list[DecodeNodeState]:
        """Copies of the decode nodes' states (read-only; taken at each access)."""
        make = DecodeNodeState._make
        return [make(self._core.decode_state(i)) for i in range(self.scenario.cluster.decode_nodes)]

    @property
    def timeline(self) -> list[tuple[str, int, float, float, str]]:
        """With ``record_timeline=True``: every node activity so far as (``"P"``/``"D"``, node, start s, end s,
        ``"prefill"``/``"decode"``/``"chunk<c>"``); else empty."""
        tl = self._timeline
        if self.record_timeline:
            tl.extend(self._core.timeline(len(tl)))
        return tl

    # ------------------------------------------------------------------ decisions
    def next_decision(self) -> DecisionContext | None:
        """Run events until a request needs a routing decision; None when every request is done."""
        core = self._core
        if core.pending_rid >= 0:
            ctx = self._ctx  # None, this decision's, or an earlier one's when an env step moved the core
            return ctx if ctx is not None and ctx._gen == self._ctx_gen else self._lazy_context()
        if self.advance_to_decision():
            return self._lazy_context()
        return None

    def run(self, policy: Policy, progress: Callable[[], Any] | None = None) -> dict[str, Any]:
        """Run to the end, asking ``policy`` at every decision (calling ``progress()`` after each);
        returns the summary."""
        self._policy_label = f"policy {getattr(policy, 'name', type(policy).__name__)}"
        try:
            self._run_loop(policy.decide, progress)
        except ValueError as e:
            if WINDOW_TOO_SMALL not in str(e):
                raise
            window = self.scenario.metrics.window
            raise ConfigError(f"scenario {self.scenario.name}: metrics", "window", window,
                              f"a window larger than the requests this run holds in flight at once ({e}); try "
                              f"{min(2 * window, MAX_METRICS_WINDOW)}") from None
        return self.summary()

    def apply(self, decision: Decision) -> bool:
        """Apply the pending decision (checked first: :func:`~kairos_gym.sim.decision_check.check_decision`
        raises :class:`ConfigError` and leaves it pending). Returns False when a well-formed deflection is refused
        now (it then takes the prefill path, counted in ``n_invalid``), else True."""
        core = self._core
        rid = core.pending_rid
        if rid < 0:
            raise RuntimeError("apply() called with no pending decision; call next_decision() first")
        deflect = check_decision(decision, self._policy_label, rid, self.scenario.cluster.prefill_nodes,
                                 self.scenario.cluster.decode_nodes, self.menu, self._menu_set)
        if core.pending_kind == 1 and not deflect and decision.prefill_node is not None \
                and int(decision.prefill_node) != int(self.p_node[rid]):
            raise ConfigError(f"{self._policy_label} decision for request {rid}", "decision.prefill_node", decision,
                              f"None or {int(self.p_node[rid])} at a pull decision (the prefill path means: stay in "
                              "its queue; a queued request cannot move to another prefill node)")
        self._ctx = None
        if deflect:
            return core.apply_deflect(int(decision.decode_node), int(decision.chunk))
        pn = decision.prefill_node
        core.apply_prefill(-1 if pn is None else int(pn))
        return True

    def deflect_allowed(self, rid: int, d: int) -> bool:
        """Would a deflection of request ``rid`` to decode node ``d`` be accepted now?"""
        if not isinstance(d, (int, np.integer)) or not 0 <= d < self.scenario.cluster.decode_nodes:
            return False
        return self._core.node_refuses(int(d), self._core.kv_need(int(rid))) == 0

    # ------------------------------------------------------------------ the decision context and the run loop
    # (a lazy context over the core's menu buffers)
    def _lazy_context(self) -> DecisionContext:
        """The pending decision's context: a :class:`~kairos_gym.sim.hook.LazyDecisionContext` over the core's
        menu buffers (priced in C++, decision_menu.cpp). The scalars are set now; the node views and price
        rows are built on first read (see :meth:`_ctx_field`), with the values the eager NamedTuple had."""
        now, rid, arrival, prompt, output, kind, pull_node, gen = self._core.menu_request()
        eager = self._ctx_base
        eager["now_s"] = now
        eager["request"] = tuple.__new__(RequestView, (rid, arrival, prompt, output if self.oracle else None))
        eager["kind"], eager["pull_node"] = _KINDS[kind], (pull_node if kind == 1 else None)
        eager["emitted_tokens"] = gen
        ctx = self._ctx = LazyDecisionContext(self, self._ctx_gen, eager)
        return ctx

    def _invalidate_contexts(self) -> None:
        """Make every earlier lazy context stale (fields not read yet raise): call whenever the core's state is
        replaced other than by running forward (reset, restore)."""
        self._episode = getattr(self, "_episode", 0) + 1
        self._ctx = None

    @property
    def _ctx_gen(self) -> tuple[int, int]:
        """Which menu the core's buffers hold: (episode, menus built in it). The buffers change only when the
        core reaches the next decision, so a context stays readable after ``apply`` until then."""
        core = self._core
        return self._episode, core.n_decisions + (core.pending_rid >= 0)

    def _ctx_field(self, name: str) -> Any:
        """One field of the pending decision's context from the menu buffers (Python scalars via ``tolist``,
        NamedTuples via ``tuple.__new__``)."""
        new = tuple.__new__
        m = self._menu  # prefill_i, prefill_f, ttft_p, decode_i, decode_f, decode_b, step_s, ttft_d, ls_ok, ls_t,
        # ls_first
        if name == "prefill":
            return tuple([new(PrefillNodeView, (a[0], a[1], b[0], b[1], u))
                          for a, b, u in zip(m[0].tolist(), m[1].tolist(), self._menu_up[0].tolist(), strict=True)])
        if name == "decode":
            return tuple([new(DecodeNodeView, (i[0], i[1], i[2], f[0], i[3], b[0], i[4], f[1], f[2], f[3], b[1], u))
                          for i, f, b, u in zip(m[3].tolist(), m[4].tolist(), m[5].tolist(),
                                                self._menu_up[1].tolist(), strict=True)])
        k = _LAZY_BUFFER[name]
        if k in (6, 7):
            return tuple(map(tuple, m[k].tolist()))
        return tuple(m[k].tolist())

    def _run_loop(self, decide: Callable[[DecisionContext], Decision], progress: Callable[[], Any] | None) -> None:
        """The run loop: one lazy context and one ``decide`` call per decision (a tight Python loop: the events
        between decisions run in C++)."""
        core = self._core
        if self._row_writer is not None or self._stream is not None:  # streamed rows or a chunked workload
            self._run_loop_streaming_rows(decide, progress)
            return
        apply = self.apply
        if core.pending_rid >= 0:
            apply(decide(self.next_decision()))  # type: ignore[arg-type]
            if progress is not None:
                progress()
        nd = core.next_decision
        ctx_of = self._lazy_context
        while nd():
            apply(decide(ctx_of()))
            if progress is not None:
                progress()

    def _run_loop_streaming_rows(self, decide: Callable[[DecisionContext], Decision],
                                 progress: Callable[[], Any] | None) -> None:
        """:meth:`_run_loop` writing the retired rows whenever :data:`ROW_FLUSH` have gathered (and at the end), and
        loading a chunked workload's chunks as the core asks for them."""
        core = self._core
        if core.pending_rid >= 0:
            self.apply(decide(self.next_decision()))  # type: ignore[arg-type]
            if progress is not None:
                progress()
        rows = self._row_writer is not None
        step = self.advance_to_decision
        while step():
            self.apply(decide(self._lazy_context()))
            if rows and core.n_rows >= ROW_FLUSH:
                self.flush_rows()
            if progress is not None:
                progress()
        self.flush_rows()

    # ------------------------------------------------------------------ results
    @property
    def streaming(self) -> bool:
        """``metrics.mode: streaming``: no per-request records, a folded summary (docs/reliability.md)."""
        return self.scenario.metrics.mode == "streaming"

    def summary(self) -> dict[str, Any]:
        """The run's summary (see :func:`kairos_gym.sim.metrics.summarize`; streaming mode:
        :func:`kairos_gym.sim.metrics.summarize_streaming`)."""
        if self.streaming:
            from kairos_gym.sim.metrics import summarize_streaming

            return summarize_streaming(self, wall_time_s=time.perf_counter() - self._wall_start)
        return summarize(self, wall_time_s=time.perf_counter() - self._wall_start)  # type: ignore[arg-type]

    def requests_table(self) -> dict[str, np.ndarray]:
        """Per-request record as columns (see docs/metrics.md). Not in streaming mode (no records are kept:
        see :meth:`stream_requests_csv`)."""
        from kairos_gym.sim.metrics import requests_table

        if self.streaming:
            raise ConfigError("Simulator.requests_table", "metrics.mode", "streaming",
                              "metrics.mode exact (streaming keeps no per-request records; stream them to a CSV "
                              "file with Simulator.stream_requests_csv / --requests-csv)")
        return requests_table(self)  # type: ignore[arg-type]

    def stream_requests_csv(self, write_row: Callable[[list[Any]], Any]) -> list[str]:
        """Streaming mode: from now on hand every settled request's row (the :meth:`requests_table` columns, in
        the order requests settle) to ``write_row`` during :meth:`run` (every :data:`ROW_FLUSH` rows and at the
        end; :meth:`flush_rows` forces it). Returns the column names (write them first)."""
        if not self.streaming:
            raise ConfigError("Simulator.stream_requests_csv", "metrics.mode", self.scenario.metrics.mode,
                              "metrics.mode streaming (in exact mode write requests_table() after the run)")
        from kairos_gym.sim.metrics import retired_row_columns

        self._row_writer = write_row
        self._core.stream_rows = True
        return retired_row_columns(self.scenario)

    def flush_rows(self) -> None:
        """Hand the rows retired so far to the ``stream_requests_csv`` writer."""
        from kairos_gym.sim.metrics import retired_row

        if self._row_writer is None:
            return
        sc = self.scenario
        for r in self._core.take_rows():
            self._row_writer(retired_row(r, sc))

    # ------------------------------------------------------------------ debug API (tests)
    def debug_join(self, d: int, rid: int, ctx: int, rem: int, gap: float) -> None:
        """Add request ``rid`` to decode node ``d``'s batch (context and remaining tokens, own gap s): unit tests
        of the batch bookkeeping."""
        self._core.debug_join(d, rid, ctx, rem, gap)

    def debug_leave(self, d: int, rid: int) -> None:
        """Remove request ``rid`` from decode node ``d``'s batch."""
        self._core.debug_leave(d, rid)

    def debug_record(self, d: int, worst: float) -> None:
        """Record one stretch of decode node ``d`` whose worst step took ``worst`` s."""
        self._core.debug_record(d, worst)

    def debug_worst_gap(self, d: int, rid: int) -> float:
        """Worst token gap (s) of batch member ``rid`` of decode node ``d`` since it joined."""
        return self._core.debug_worst_gap(d, rid)

    def debug_set_stack_prune(self, n: int) -> None:
        """Set the size past which a decode node's worst-step stack is pruned (default 1024)."""
        self._core.debug_set_stack_prune(n)

    def debug_push_event(self, t: float, kind: int, a: int, b: int) -> None:
        """Push an event (t s, kind, a, b) onto the queue (tests of the clock guard)."""
        self._core.debug_push(t, kind, a, b)

    def debug_prefill_wait(self, p: int) -> float:
        """Predicted wait (s) of prefill node ``p`` before a new prompt starts (its queue terms computed afresh)."""
        return self._core.debug_prefill_wait(p)

    # ------------------------------------------------------------------ snapshot/restore, pickling
    _CHECKSUM = "checksum"
    _SNAPSHOT_OF = "snapshot_of"
    """Key of a snapshot naming what it was taken from: (scenario, oracle), compared by :meth:`restore`."""

    def snapshot(self) -> dict[str, Any]:
        """The whole mutable state (a C++ copy,
        ``_core.SimSnapshot``: nodes, events, links, per-request arrays, counters, decision log; the workload and
        cost tables shared) plus the Python-side pieces (seed, rng, workload, pending context), sealed with a
        checksum of those pieces that :meth:`restore` verifies."""
        state = {
            self._SNAPSHOT_OF: (self.scenario, self.oracle),
            "core": self._core.snapshot(),
            "kv_capacity": self.kv_capacity,
            "seed": self.seed,
            "noise_seed": self._noise_seed,
            "faults": self._faults,  # the run's fault events (the core's copy is in "core")
            "rng": copy.deepcopy(self.rng),
            "workload": self._workload,
            # a chunked workload: rebuilt on restore from the seed, at the request it had reached (its samplers
            # are prefix-stable; their generators sit in closures a deepcopy would share)
            "stream_loaded": None if self._stream is None else self._stream.loaded,
            # a plain NamedTuple: a lazy context reads the menu buffers, which a restore replaces
            "ctx": self._ctx.materialize() if isinstance(self._ctx, LazyDecisionContext)
            and self._ctx._gen == self._ctx_gen else None,
            "policy_label": self._policy_label,
            "wall_start": self._wall_start,
        }
        state[self._CHECKSUM] = _snapshot_checksum(state)
        return state

    def restore(self, state: dict[str, Any]) -> None:
        """Return to a state taken by :meth:`snapshot` (which stays reusable); a snapshot of another scenario, oracle
        setting or KV capacity (or anything not a snapshot) is a
        :class:`ConfigError` before anything changes. Per-request columns are new arrays afterwards (views read
        before keep the values they had)."""
        of = state.get(self._SNAPSHOT_OF) if isinstance(state, dict) else None
        if not (isinstance(of, tuple) and len(of) == 2) or not isinstance(state.get("core"),
                                                                          compiled.core().SimSnapshot):
            raise ConfigError("Simulator.restore", "state", type(state).__name__,
                              "a dict from Simulator.snapshot()")
        sc, oracle = of
        if (sc is not self.scenario and sc != self.scenario) or oracle != self.oracle:
            raise ConfigError("Simulator.restore", "state", f"a snapshot of {_describe(sc, oracle)}",
                              f"a snapshot of this simulator's {_describe(self.scenario, self.oracle)}"
                              + (" (same name and shape; other settings differ)"
                                 if _describe(sc, oracle) == _describe(self.scenario, self.oracle) else ""))
        if state.get(self._CHECKSUM) != _snapshot_checksum(state):
            raise ConfigError("Simulator.restore", "state", "a snapshot whose values changed after it was taken",
                              "a snapshot as Simulator.snapshot() returned it (its checksum covers the seed, the "
                              "generator state, the workload, the faults and the core copy's clock and decisions)")
        if state.get("kv_capacity") != self.kv_capacity:  # the core's arrival check reads its own capacity
            raise ConfigError("Simulator.restore", "state",
                              f"a snapshot of a simulator with KV capacity {state.get('kv_capacity')} tokens",
                              f"a snapshot of this simulator's (KV capacity {self.kv_capacity} tokens per decode node)")
        self._core.restore(state["core"])
        self._invalidate_contexts()  # contexts of the abandoned branch must not read the restored buffers
        self.seed = state["seed"]
        self._noise_seed = state.get("noise_seed")
        self._faults = state.get("faults")
        self.rng = copy.deepcopy(state["rng"])
        loaded = state.get("stream_loaded")
        if loaded is None:
            wl = state["workload"]
            self._stream = None
            self.workload = wl
            self.n = len(wl)
        else:
            self._stream = stream_at(self.scenario, self.seed, self._chunk_size(), loaded)
            self._workload = None
            self.n = self._core.n
        # the pending decision's context is rebuilt from the restored menu buffers (the same values as the
        # snapshot's): state["ctx"] is kept only as a plain record of it
        self._ctx = None
        self._policy_label = state["policy_label"]
        self._wall_start = state["wall_start"]
        self._timeline = []
        self._read_columns()

    def _read_columns(self) -> None:
        """Bind every per-request column of the core (:func:`request_columns`) as the attribute of its name
        (after a reset or a restore: the core's arrays are new)."""
        column = self._core.column
        for k in request_columns():
            setattr(self, k, column(k))

    def decision_log(self) -> np.ndarray:
        """Every decision applied since the reset, as an int64 array [n, 4] of (rid, kind 0 prefill / 1 deflect at
        an arrival, 2 stay / 3 deflect at a pull, 4 prefill / 5 deflect at a re-entry, node asked for or -1, chunk
        or 0 for LargestSafe): a copy."""
        return self._core.decision_log().reshape(-1, 4)

    def __reduce_ex__(self, protocol: Any) -> Any:
        """Pickling (and ``copy``/``deepcopy``) by re-simulation: the constructor's arguments, the workload, the
        rng state and the decision log; unpickling replays the logged decisions in the core (no policy is
        called), then checks the clock, counters and events against the pickled ones. O(run so far). Not in
        streaming mode (it keeps no decision log)."""
        core = self._core
        if self.streaming:
            raise ConfigError("Simulator pickling", "metrics.mode", "streaming",
                              "metrics.mode exact (a streaming run keeps no decision log to replay; use "
                              "snapshot/restore)")
        return (_unpickle, ({
            "version": 1, "scenario": self.scenario, "oracle": self.oracle, "record_timeline": self.record_timeline,
            "kv_capacity": self._kv_capacity_arg, "trace": self._trace, "seed": self.seed,
            "fixed_workload": self._fixed_workload, "workload": self.workload,
            "rng_state": self.rng.bit_generator.state, "log": self.decision_log(), "noise_seed": self._noise_seed,
            "pending": core.pending_rid >= 0, "policy_label": self._policy_label,
            "check": (core.now, core.n_decisions, core.events_pushed, core.wait_area, core.tokens_out),
        },))


def _check_kv_capacity(v: Any) -> int:
    """``kv_capacity`` given to the simulator: a whole number of tokens in [1, MAX_KV_CAPACITY]."""
    if isinstance(v, (int, np.integer)) and not isinstance(v, bool) and 1 <= v <= MAX_KV_CAPACITY:
        return int(v)
    raise ConfigError("Simulator", "kv_capacity", v, f"None or a whole number of tokens in [1, {MAX_KV_CAPACITY}]")


def _describe(sc: Any, oracle: Any) -> str:
    """``scenario 'small' (2P2D, chunk menu [128, ...], oracle False)`` for restore errors."""
    if not isinstance(sc, ScenarioConfig):
        return f"an unknown scenario ({type(sc).__name__})"
    cl = sc.cluster
    return (f"scenario {sc.name!r} ({cl.prefill_nodes}P{cl.decode_nodes}D, chunk menu "
            f"{list(sc.deflection.chunk_menu)}, oracle {oracle})")


def _unpickle(state: dict[str, Any]) -> Simulator:
    """Rebuild a pickled :class:`Simulator`: construct it, then replay its decision log in the core
    (``_core.Simulator.replay``; no policy is called) and check the clock and counters against the pickled ones
    (see ``__reduce_ex__``)."""
    if not isinstance(state, dict) or state.get("version") != 1:
        raise ConfigError("Simulator unpickle", "state", type(state).__name__,
                          "the state a Simulator of this version pickled")
    sim = Simulator(state["scenario"], seed=state["seed"], workload=state["workload"], oracle=state["oracle"],
                    record_timeline=state["record_timeline"], kv_capacity=state["kv_capacity"], trace=state["trace"])
    sim._fixed_workload = state["fixed_workload"]
    c = sim._core
    if state.get("noise_seed") is not None:  # the run's own stream (the workload may have been drawn, not given)
        sim._noise_seed = state["noise_seed"]
        c.seed_noise(sim._noise_seed)
    c.replay(np.ascontiguousarray(state["log"], dtype=np.int64).reshape(-1, 4))
    if state["pending"]:
        sim.next_decision()
    got = (c.now, c.n_decisions, c.events_pushed, c.wait_area, c.tokens_out)
    if repr(got) != repr(tuple(state["check"])):
        raise RuntimeError(f"Simulator unpickle: the replay ended at {got}, not at {state['check']}")
    sim.rng.bit_generator.state = state["rng_state"]
    sim._policy_label = state["policy_label"]
    return sim
