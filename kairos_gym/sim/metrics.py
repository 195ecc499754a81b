"""Run statistics and the summary of a simulation (vLLM-bench names; times in seconds).

Token gaps (TBT) are recorded exactly, without histograms: a decode stretch of n steps whose
durations are ``t0 + j dt`` contributes the pair (duration, weight = tokens) per step, expanded only
when the summary is computed. Percentiles are weighted, with numpy's "inverted CDF" rule.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from kairos_gym.sim import Simulator

# request paths (``Simulator.path``)
PATH_PENDING = -2
PATH_REJECTED = -1
PATH_PREFILL = 0
PATH_DEFLECT = 1


class RunStats:
    """Append-only records of token gaps: stretches (t0, dt, n, weight) and single gaps."""

    __slots__ = ("gap_v", "gap_w", "s_dt", "s_n", "s_t0", "s_w")

    def __init__(self) -> None:
        self.s_t0: list[float] = []
        self.s_dt: list[float] = []
        self.s_n: list[int] = []
        self.s_w: list[int] = []
        self.gap_v: list[float] = []
        self.gap_w: list[int] = []

    def add_stretch(self, t0: float, dt: float, n: int, weight: int) -> None:
        """n steps of durations t0 + j dt (j = 0..n-1), each giving ``weight`` token gaps."""
        self.s_t0.append(t0)
        self.s_dt.append(dt)
        self.s_n.append(n)
        self.s_w.append(weight)

    def add_gap(self, value: float, weight: int = 1) -> None:
        """One gap of ``value`` seconds, ``weight`` times."""
        self.gap_v.append(value)
        self.gap_w.append(weight)

    def gaps(self) -> tuple[np.ndarray, np.ndarray]:
        """All gaps as (values, weights)."""
        n = np.asarray(self.s_n, dtype=np.int64)
        if n.size:
            idx = np.repeat(np.arange(n.size), n)
            offs = np.arange(idx.size) - np.repeat(np.cumsum(n) - n, n)
            vals = np.asarray(self.s_t0)[idx] + np.asarray(self.s_dt)[idx] * offs
            w = np.asarray(self.s_w, dtype=np.int64)[idx]
        else:
            vals = np.zeros(0)
            w = np.zeros(0, dtype=np.int64)
        return (np.concatenate([vals, np.asarray(self.gap_v, dtype=float)]),
                np.concatenate([w, np.asarray(self.gap_w, dtype=np.int64)]))


def weighted_percentiles(values: np.ndarray, weights: np.ndarray, qs: tuple[float, ...]) -> list[float]:
    """Percentiles (0..100) of values repeated by integer weights (inverted-CDF rule); NaN if empty."""
    if values.size == 0 or weights.sum() == 0:
        return [math.nan for _ in qs]
    order = np.argsort(values, kind="stable")
    v = values[order]
    cw = np.cumsum(weights[order])
    total = cw[-1]
    out = []
    for q in qs:
        k = math.ceil(q / 100.0 * total)
        k = min(max(k, 1), total)
        out.append(float(v[np.searchsorted(cw, k)]))
    return out


def sorted_percentile(s: np.ndarray, q: float) -> float:
    """``np.percentile(x, q, method="inverted_cdf")`` of ``s = np.sort(x)`` (NaN-free), bit for bit, without
    numpy's per-call overhead: sort once, then each percentile is an index (NaN if empty)."""
    n = s.size
    if n == 0:
        return math.nan
    idx = n * (q / 100.0) - 1.0
    prev = math.floor(idx)
    k = prev if idx - prev == 0 else prev + 1
    return float(s[k if k > 0 else 0])


def requests_table(sim: Simulator) -> dict[str, np.ndarray]:
    """Per-request columns: times in seconds from the run's start, -1 for "none" in integer columns."""
    arr = np.asarray(sim.arrival)
    first = np.asarray(sim.first_token)
    fin = np.asarray(sim.finish)
    pstart = np.asarray(sim.prefill_start)
    xs = np.asarray(sim.xfer_start)
    xe = np.asarray(sim.xfer_end)
    exec_s = np.asarray(sim.exec_s)
    path = np.asarray(sim.path, dtype=np.int64)
    queue = np.where(np.isnan(pstart), np.nan, pstart - arr)
    transfer = np.where(np.isnan(xe), 0.0, xe - xs)
    ttft = first - arr
    decode_wait = np.where(path == 0, ttft - np.nan_to_num(queue) - exec_s - transfer, 0.0)
    if not sim.scenario.cluster.ttft_includes_transfer:
        transfer = np.zeros_like(transfer)
        decode_wait = np.zeros_like(decode_wait)
    return {
        "rid": np.arange(sim.n),
        "arrival_s": arr,
        "prompt_tokens": np.asarray(sim.prompt, dtype=np.int64),
        "output_tokens": np.asarray(sim.output, dtype=np.int64),
        "path": np.array(["rejected" if p == -1 else "deflect" if p == 1 else "prefill" if p == 0 else "pending"
                          for p in sim.path]),
        "prefill_node": np.asarray(sim.p_node, dtype=np.int64),
        "decode_node": np.asarray(sim.d_node, dtype=np.int64),
        "first_token_s": first,
        "finish_s": fin,
        "ttft_s": ttft,
        "ttft_queue_s": queue,
        "ttft_exec_s": exec_s,
        "ttft_transfer_s": transfer,
        "ttft_decode_wait_s": decode_wait,
        "e2e_s": fin - arr,
        "max_tbt_s": np.asarray(sim.max_gap),
        "chunks": np.array([" ".join(map(str, c)) if c else "" for c in sim.chunks]),
        "kv_bytes_transferred": np.asarray(sim.kv_moved, dtype=np.int64),
        **({"timed_out_s": np.asarray(sim.timed_out)} if sim.scenario.overload.enabled else {}),
    }


def summarize(sim: Simulator, wall_time_s: float) -> dict[str, Any]:
    """The summary JSON of a run (keys documented in docs/metrics.md). Computed from the simulator's
    per-request lists directly (the same quantities as :func:`requests_table`, without its string columns).

    A partial run (``sim.done`` False: a truncated episode, or a summary taken mid-run) also reports
    ``n_pending`` (requests not yet arrived) and ``n_in_flight`` (arrived, neither finished nor rejected,
    counting one waiting for its routing decision), and its ``slo_attainment`` is taken over the requests
    whose outcome is known (completed plus rejected, rejected counting as misses) instead of all
    ``n_requests``. The summary of a finished run has neither key.
    """
    sc = sim.scenario
    f64 = np.float64
    arr = np.array(sim.arrival, dtype=f64)
    first = np.array(sim.first_token, dtype=f64)
    fin = np.array(sim.finish, dtype=f64)
    path = np.array(sim.path, dtype=np.int64)
    outp_all = np.array(sim.output, dtype=np.int64)
    max_gap = np.array(sim.max_gap, dtype=f64)
    done = ~np.isnan(fin)
    any_done = bool(done.any())
    ttft_all = first - arr
    ttft = np.sort(ttft_all[done])
    e2e = np.sort((fin - arr)[done])
    outp = outp_all[done]
    tpot = np.where(outp > 1, (fin[done] - first[done]) / np.maximum(outp - 1, 1), np.nan)
    tpot = tpot[~np.isnan(tpot)]
    gv, gw = sim.stats.gaps()
    tbt50, tbt95, tbt99 = weighted_percentiles(gv, gw, (50, 95, 99))
    n_gaps = int(gw.sum())
    burn_in = sc.slo.burn_in_requests  # a warm start: requests [0, burn_in) are simulated, not scored
    ok = (ttft_all <= sc.slo.ttft_s) & (max_gap <= sc.slo.tbt_s) & done
    n_ok = int(ok[burn_in:].sum())
    n_scored = sim.n - burn_in
    n_done = int(done.sum())
    n_tbt_ok = int(((max_gap <= sc.slo.tbt_s) & done).sum())  # requests, not gaps (a 1-token request has none)
    makespan = float(np.nanmax(fin)) if any_done else 0.0
    span = makespan if makespan > 0 else 1.0
    n_deflect = int((path == PATH_DEFLECT).sum())
    n_routed = n_deflect + int((path == PATH_PREFILL).sum())
    hist: dict[int, int] = {}
    for cs in sim.chunks:
        if cs:
            for c in cs:
                hist[c] = hist.get(c, 0) + 1
    peak = sim.model.gpu.peak_flops * sim.model.tp
    p_sm = [n.compute_s / span for n in sim.pnodes]
    d_sm = [n.compute_s / span for n in sim.dnodes]
    sel_p = done & (path == PATH_PREFILL)
    any_p = bool(sel_p.any())
    if any_p:
        pstart = np.array(sim.prefill_start, dtype=f64)[sel_p]
        exec_s = np.array(sim.exec_s, dtype=f64)[sel_p]
        queue = pstart - arr[sel_p]  # NaN where the prefill never started (not for finished requests)
        if sc.cluster.ttft_includes_transfer:
            xs = np.array(sim.xfer_start, dtype=f64)[sel_p]
            xe = np.array(sim.xfer_end, dtype=f64)[sel_p]
            transfer = np.where(np.isnan(xe), 0.0, xe - xs)
            decode_wait = ttft_all[sel_p] - np.nan_to_num(queue) - exec_s - transfer
        else:
            transfer = decode_wait = np.zeros(int(sel_p.sum()))
        q95 = sorted_percentile(np.sort(ttft_all[sel_p]), 95)
        exec_share = float(np.nanmean(exec_s) / q95) if q95 > 0 else math.nan
        breakdown_p95 = {"queue": sorted_percentile(np.sort(queue[~np.isnan(queue)]), 95),
                         "execution": sorted_percentile(np.sort(exec_s), 95),
                         "transfer": sorted_percentile(np.sort(transfer), 95)}
    else:
        exec_share = math.nan
        breakdown_p95 = {"queue": math.nan, "execution": math.nan, "transfer": math.nan}
    out: dict[str, Any] = {
        "scenario": sc.name,
        "source": sim.workload.source,
        "policy": getattr(sim, "policy_name", "custom"),
        "seed": sim.seed,
        "n_requests": sim.n,
        "n_completed": n_done,
        "n_rejected": sim.n_rejected,
        "n_invalid_actions": sim.n_invalid,
        "ttft_p50": sorted_percentile(ttft, 50), "ttft_p90": sorted_percentile(ttft, 90),
        "ttft_p95": sorted_percentile(ttft, 95), "ttft_p99": sorted_percentile(ttft, 99),
        "ttft_mean": float(ttft_all[done].mean()) if ttft.size else math.nan,
        "tbt_p50": tbt50, "tbt_p95": tbt95, "tbt_p99": tbt99,
        "tbt_violation_rate": sim.tbt_violations / n_gaps if n_gaps else 0.0,
        "tbt_request_attainment": n_tbt_ok / n_done if n_done else math.nan,
        "tpot_mean": float(tpot.mean()) if tpot.size else math.nan,
        "e2e_p50": sorted_percentile(e2e, 50), "e2e_p95": sorted_percentile(e2e, 95),
        "slo_ttft_s": sc.slo.ttft_s, "slo_tbt_s": sc.slo.tbt_s,
        "slo_attainment": float(n_ok / n_scored) if n_scored else math.nan,  # a partial run: replaced below
        "goodput_rps": float(n_ok / span),
        "throughput_rps": float(n_done / span),
        "output_tokens_per_s": float(int(outp.sum()) / span),
        "deflection_rate": n_deflect / n_routed if n_routed else 0.0,
        "chunk_histogram": {str(c): hist[c] for c in sorted(hist)},
        "kv_bytes_transferred": int(sum(sim.kv_moved)),
        "memory_policy": sc.cluster.memory_policy,
        "n_preemptions": sim.n_preemptions,
        "swap_bytes": sim.swap_bytes,
        "prefill_utilization": float(np.mean(p_sm)),
        "decode_utilization": float(np.mean(d_sm)),
        "prefill_sm_util_per_node": [round(x, 6) for x in p_sm],
        "decode_sm_util_per_node": [round(x, 6) for x in d_sm],
        "prefill_busy_fraction": float(np.mean([n.busy_s / span for n in sim.pnodes])),
        "decode_busy_fraction": float(np.mean([n.busy_s / span for n in sim.dnodes])),
        "prefill_mfu": float(np.mean([n.flops * sim.model.tp / (peak * span) for n in sim.pnodes])),
        "decode_mfu": float(np.mean([n.flops * sim.model.tp / (peak * span) for n in sim.dnodes])),
        "ttft_breakdown_mean": {
            "queue": float(np.nanmean(queue)) if any_p else math.nan,
            "execution": float(np.mean(exec_s)) if any_p else math.nan,
            "transfer": float(np.mean(transfer)) if any_p else math.nan,
            "decode_wait": float(np.mean(decode_wait)) if any_p else math.nan,
        },
        "ttft_breakdown_p95": {k: (None if math.isnan(v) else v) for k, v in breakdown_p95.items()},
        "prefill_exec_share_of_p95_ttft": exec_share,
        "tbt_gaps": n_gaps,
        "sim_time_s": makespan,
        "wall_time_s": wall_time_s,
    }
    if burn_in:  # a warm start: the score above is over the n_scored requests after the burn-in
        out["burn_in_requests"] = burn_in
        out["n_scored"] = n_scored
    if sc.information.realistic:  # the realistic information track (docs/env.md): served-view counters
        out["information_track"] = "realistic"
        out["n_view_refreshes"] = sim.n_view_refreshes
        out["n_stale_refusals"] = sim.n_stale_refusals
    if sc.deflection.decision_points != "arrival":  # pull decisions: their counts
        out["n_pull_decisions"] = sim.n_pull_decisions
        out["n_pulled"] = sim.n_pulled
    if sc.overload.enabled:  # overload control: the accounting of every arrival
        out.update(_overload_counts(sim, n_done))
    if sc.faults.enabled:  # fault injection (docs/reliability.md): what the faults did; no request is lost to them
        out["faults"] = sim.fault_counters()
    if not sim.done:
        out.update(_partial_counts(sim, path, n_ok, n_done, burn_in))
    return {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in out.items()}


def retired_row_columns(scenario: Any) -> list[str]:
    """The columns of a streamed ``--requests-csv`` (those of :func:`requests_table`)."""
    cols = ["rid", "arrival_s", "prompt_tokens", "output_tokens", "path", "prefill_node", "decode_node",
            "first_token_s", "finish_s", "ttft_s", "ttft_queue_s", "ttft_exec_s", "ttft_transfer_s",
            "ttft_decode_wait_s", "e2e_s", "max_tbt_s", "chunks", "kv_bytes_transferred"]
    return cols + (["timed_out_s"] if scenario.overload.enabled else [])


_PATH_NAMES = {-1: "rejected", 0: "prefill", 1: "deflect"}


def retired_row(r: tuple[Any, ...], scenario: Any) -> list[Any]:
    """One row of a streamed ``--requests-csv`` from a core row (``_core.Simulator.take_rows``), with the values
    :func:`requests_table` gives that request (the same float64 operations)."""
    rid, arr, prompt, output, path, pn, dn, first, fin, pstart, exec_s, xs, xe, gap, kv, tout, chunks = r
    f = np.float64
    arr, first, fin, pstart, exec_s, xs, xe = f(arr), f(first), f(fin), f(pstart), f(exec_s), f(xs), f(xe)
    queue = f(np.nan) if np.isnan(pstart) else pstart - arr
    transfer = f(0.0) if np.isnan(xe) else xe - xs
    ttft = first - arr
    decode_wait = (ttft - np.nan_to_num(queue) - exec_s - transfer) if path == 0 else f(0.0)
    if not scenario.cluster.ttft_includes_transfer:
        transfer = decode_wait = f(0.0)
    row = [rid, arr, prompt, output, _PATH_NAMES.get(path, "pending"), pn, dn, first, fin, ttft, queue, exec_s,
           transfer, decode_wait, fin - arr, f(gap), " ".join(map(str, chunks)) if chunks else "", kv]
    return row + ([f(tout)] if scenario.overload.enabled else [])


APPROXIMATE_KEYS = ("ttft_p50", "ttft_p90", "ttft_p95", "ttft_p99", "tbt_p50", "tbt_p95", "tbt_p99", "e2e_p50",
                    "e2e_p95", "ttft_breakdown_p95", "prefill_exec_share_of_p95_ttft")
"""Summary keys a streaming run reports from sketches (relative error <= metrics.relative_accuracy)."""


def summarize_streaming(sim: Any, wall_time_s: float) -> dict[str, Any]:
    """The summary of a ``metrics.mode: streaming`` run: the keys of :func:`summarize`, from the
    core's folded accumulators (streaming_metrics.hpp) instead of per-request records. Counts, token sums and
    rates are exact, means compensated sums (equal to the exact mode's up to float rounding), the
    :data:`APPROXIMATE_KEYS` within relative error ``metrics.relative_accuracy`` (named in the summary's
    ``approximate`` key). A partial run counts the requests settled so far."""
    sc = sim.scenario
    core = sim._core
    st = core.stream_summary()
    n_done = st["n_done"]
    makespan = st["makespan"] if n_done else 0.0
    span = makespan if makespan > 0 else 1.0
    nan = math.nan
    ttft = st["ttft"]["p"] if n_done else [nan] * 4
    e2e = st["e2e"]["p"] if n_done else [nan] * 2
    tbt = st["tbt"]["p"]
    n_gaps = sim.tokens_out  # every recorded gap is one output token after a request's first
    n_p = st["n_prefill_done"]
    q95 = st["ttft_prefill"]["p"][0] if n_p else nan
    exec_mean = st["exec_sum"] / n_p if n_p else nan
    peak = sim.model.gpu.peak_flops * sim.model.tp
    p_sm = [n.compute_s / span for n in sim.pnodes]
    d_sm = [n.compute_s / span for n in sim.dnodes]
    hist = st["chunk_hist"]
    out: dict[str, Any] = {
        "scenario": sc.name, "source": sim.workload_source, "policy": getattr(sim, "policy_name", "custom"),
        "seed": sim.seed, "n_requests": sim.n, "n_completed": n_done, "n_rejected": sim.n_rejected,
        "n_invalid_actions": sim.n_invalid,
        "ttft_p50": ttft[0], "ttft_p90": ttft[1], "ttft_p95": ttft[2], "ttft_p99": ttft[3],
        "ttft_mean": st["ttft_sum"] / n_done if n_done else nan,
        "tbt_p50": tbt[0], "tbt_p95": tbt[1], "tbt_p99": tbt[2],
        "tbt_violation_rate": sim.tbt_violations / n_gaps if n_gaps else 0.0,
        "tbt_request_attainment": st["n_tbt_ok"] / n_done if n_done else nan,
        "tpot_mean": st["tpot_sum"] / st["n_tpot"] if st["n_tpot"] else nan,
        "e2e_p50": e2e[0], "e2e_p95": e2e[1],
        "slo_ttft_s": sc.slo.ttft_s, "slo_tbt_s": sc.slo.tbt_s,
        "slo_attainment": float(st["n_ok"] / sim.n) if sim.n else nan,
        "goodput_rps": float(st["n_ok"] / span), "throughput_rps": float(n_done / span),
        "output_tokens_per_s": float(st["output_tokens"] / span),
        "deflection_rate": st["n_deflect"] / st["n_routed"] if st["n_routed"] else 0.0,
        "chunk_histogram": {str(c): hist[c] for c in sorted(hist)},
        "kv_bytes_transferred": st["kv_moved"],
        "memory_policy": sc.cluster.memory_policy, "n_preemptions": sim.n_preemptions, "swap_bytes": sim.swap_bytes,
        "prefill_utilization": float(np.mean(p_sm)), "decode_utilization": float(np.mean(d_sm)),
        "prefill_sm_util_per_node": [round(x, 6) for x in p_sm], "decode_sm_util_per_node": [round(x, 6) for x in d_sm],
        "prefill_busy_fraction": float(np.mean([n.busy_s / span for n in sim.pnodes])),
        "decode_busy_fraction": float(np.mean([n.busy_s / span for n in sim.dnodes])),
        "prefill_mfu": float(np.mean([n.flops * sim.model.tp / (peak * span) for n in sim.pnodes])),
        "decode_mfu": float(np.mean([n.flops * sim.model.tp / (peak * span) for n in sim.dnodes])),
        "ttft_breakdown_mean": {
            "queue": st["queue_sum"] / st["queue"]["n"] if st["queue"]["n"] else nan,
            "execution": exec_mean, "transfer": st["transfer_sum"] / n_p if n_p else nan,
            "decode_wait": st["decode_wait_sum"] / n_p if n_p else nan},
        "ttft_breakdown_p95": {k: (st[s]["p"][0] if st[s]["n"] else None)
                               for k, s in (("queue", "queue"), ("execution", "exec"), ("transfer", "transfer"))},
        "prefill_exec_share_of_p95_ttft": float(exec_mean / q95) if n_p and q95 > 0 else nan,
        "tbt_gaps": n_gaps, "sim_time_s": makespan, "wall_time_s": wall_time_s,
        "metrics_mode": "streaming",
        "approximate": {"keys": list(APPROXIMATE_KEYS), "relative_accuracy": sc.metrics.relative_accuracy},
    }
    if sc.overload.enabled:
        out.update(_overload_counts(sim, n_done))
    if sc.faults.enabled:  # as in the exact summary: what the faults did
        out["faults"] = sim.fault_counters()
    if not sim.done:
        n_pending = sim.n - sim.n_arrived
        settled = n_done + sim.n_rejected + sim.n_timed_out
        out.update({"slo_attainment": float(st["n_ok"] / settled) if settled else nan, "n_pending": n_pending,
                    "n_in_flight": sim.n - n_pending - settled})
    return {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in out.items()}


def _overload_counts(sim: Simulator, n_done: int) -> dict[str, Any]:
    """``n_arrived`` = ``n_completed`` + ``n_rejected`` + ``n_timed_out`` (+ ``n_in_flight`` in a partial run), and
    ``n_rejected`` split into ``n_rejected_overlong`` and ``n_rejected_admission`` (the core counts each)."""
    return {"n_arrived": sim.n_arrived, "n_timed_out": sim.n_timed_out,  # type: ignore[attr-defined]
            "n_rejected_overlong": sim.n_rejected_overlong,  # type: ignore[attr-defined]
            "n_rejected_admission": sim.n_rejected_admission}  # type: ignore[attr-defined]


def _partial_counts(sim: Simulator, path: np.ndarray, n_ok: int, n_done: int, burn_in: int = 0) -> dict[str, Any]:
    """``n_pending``, ``n_in_flight`` and ``slo_attainment`` over the settled requests of a partial run (with a
    burn-in: over the settled requests after it)."""
    # PATH_PENDING marks requests not routed yet: every request not yet arrived, plus the one (if any)
    # that arrived and waits for its decision (decisions are taken in arrival order)
    # (a pending pull or re-entry decision is about a request already routed: it does not count)
    awaiting_decision = 1 if sim._pending_rid is not None and getattr(sim, "pending_kind", None) not in (
        "pull", "reentry") else 0
    n_pending = int((path == PATH_PENDING).sum()) - awaiting_decision
    settled = n_done + sim.n_rejected + getattr(sim, "n_timed_out", 0)
    scored_settled = settled
    if burn_in:  # settled = finished, rejected or timed out (no first token by the time-out)
        fin = np.array(sim.finish, dtype=np.float64)[burn_in:]
        lost = (path[burn_in:] == PATH_REJECTED)
        if sim.scenario.overload.enabled:
            lost |= ~np.isnan(np.array(sim.timed_out, dtype=np.float64)[burn_in:]) & np.isnan(fin)
        scored_settled = int((~np.isnan(fin)).sum() + lost.sum())
    return {
        "slo_attainment": float(n_ok / scored_settled) if scored_settled else math.nan,
        "n_pending": n_pending,
        "n_in_flight": sim.n - n_pending - settled,
    }
