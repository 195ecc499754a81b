"""Operations per second of the C++ core's components against their Python counterparts, in one process
(a measurement for docs/performance.md, not a test):

- link: ``FairShareLink`` (kairos_gym/latency/transfer.py) against ``_core.FairShareLink``, on an engine-like
  sequence of operations (an arrival: add + next_completion; a completion: next_completion + remove +
  next_completion) recorded from the Python class on a Poisson stream of KV transfers;
- events: a heapq of (t, seq, kind, a, b) tuples (a queue kept in Python) against
  ``_core.EventQueue``, on a push/pop sequence that keeps about ``--heap`` events queued.

Each C++ figure comes twice: called op by op from a Python loop (what a simulator loop in Python would pay: nanobind's
call overhead included) and as one ``replay_*`` call (the loop in C++: what the simulator pays). The
results of every variant are checked bit-identical to Python's before anything is timed.

Usage: ``kairos-gym perf-components [--ops N] [--repeats R] [--seed S] [--heap H]``.
"""

from __future__ import annotations

import heapq
import math
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from kairos_gym import compiled
from kairos_gym.latency.transfer import FairShareLink

MAX_OPS = 10_000_000
MAX_REPEATS = 100
MAX_HEAP = 1_000_000
ADVANCE, ADD, REMOVE, NEXT = 0, 1, 2, 3


def link_ops(n_ops: int, seed: int, bandwidth: float = 17.5e9) -> tuple[np.ndarray, ...]:
    """An engine-like sequence of about n_ops link operations (code, tid, nbytes, now), recorded from the
    Python class: transfers of lognormal sizes (median 0.5 GB, sigma 0.8) arriving at 15/s on a 17.5 GB/s link
    (load 0.59: 1.5 transfers already on the link on average when one is added)."""
    rng = np.random.default_rng(seed)
    link = FairShareLink(bandwidth)
    ops: list[tuple[int, int, float, float]] = []
    now, tid = 0.0, 0
    next_arrival = rng.exponential(1 / 15)
    while len(ops) < n_ops:
        nxt = link.next_completion()
        if nxt is not None and nxt[0] <= next_arrival:
            now = nxt[0]
            ops += [(NEXT, 0, 0.0, 0.0), (REMOVE, nxt[1], 0.0, now)]
            link.remove(nxt[1], now)
        else:
            now = next_arrival
            nbytes = float(int(rng.lognormal(math.log(5e8), 0.8)))
            ops.append((ADD, tid, nbytes, now))
            link.add(tid, nbytes, now)
            tid += 1
            next_arrival = now + rng.exponential(1 / 15)
        ops.append((NEXT, 0, 0.0, 0.0))
    return (np.array([o[0] for o in ops], np.int8), np.array([o[1] for o in ops], np.int64),
            np.array([o[2] for o in ops]), np.array([o[3] for o in ops]))


def run_link_ops(link, code, tid, nbytes, now) -> tuple[np.ndarray, np.ndarray]:
    """The ops through a link object's methods, one call each (either class)."""
    n = code.size
    out_t, out_tid = np.full(n, math.nan), np.full(n, -1, np.int64)
    c, ti, nb, no = code.tolist(), tid.tolist(), nbytes.tolist(), now.tolist()
    add, remove, advance, nxt = link.add, link.remove, link.advance, link.next_completion
    for i in range(n):
        k = c[i]
        if k == NEXT:
            r = nxt()
            if r is not None:
                out_t[i], out_tid[i] = r
        elif k == ADD:
            add(ti[i], nb[i], no[i])
        elif k == REMOVE:
            remove(ti[i], no[i])
        else:
            advance(no[i])
    return out_t, out_tid


def queue_ops(n_ops: int, seed: int, heap: int) -> tuple[np.ndarray, ...]:
    """About n_ops pushes and pops (code 0 push, 1 pop) keeping ~heap events queued, times rising."""
    rng = np.random.default_rng(seed)
    n_push = n_ops // 2 + heap
    code = np.concatenate([np.zeros(heap, np.int8), np.tile(np.array([0, 1], np.int8), n_ops // 2)])
    t = np.zeros(code.size)
    pushes = code == 0
    t[pushes] = np.cumsum(rng.exponential(1e-3, n_push)) + rng.exponential(heap * 1e-3, n_push)
    kind = np.where(pushes, rng.integers(0, 6, code.size), 0).astype(np.int8)
    a = np.where(pushes, rng.integers(0, 1000, code.size), 0).astype(np.int32)
    b = np.where(pushes, rng.integers(0, 1000, code.size), 0).astype(np.int64)
    return code, t, kind, a, b


def run_heapq(code, t, kind, a, b) -> list[tuple]:
    """An event queue kept in Python: a heapq of (t, seq, kind, a, b) tuples, pushed and popped per event."""
    events: list[tuple] = []
    popped = []
    seq = 0
    push, pop = heapq.heappush, heapq.heappop
    c, tl, kl, al, bl = code.tolist(), t.tolist(), kind.tolist(), a.tolist(), b.tolist()
    for i in range(len(c)):
        if c[i] == 0:
            seq += 1
            push(events, (tl[i], seq, kl[i], al[i], bl[i]))
        else:
            popped.append(pop(events))
    return popped


def run_native_queue_calls(q, code, t, kind, a, b) -> list[tuple]:
    popped = []
    push, pop = q.push, q.pop
    c, tl, kl, al, bl = code.tolist(), t.tolist(), kind.tolist(), a.tolist(), b.tolist()
    for i in range(len(c)):
        if c[i] == 0:
            push(tl[i], kl[i], al[i], bl[i])
        else:
            popped.append(pop())
    return popped


def best_rate(n_ops: int, repeats: int, fn: Callable[[], object]) -> float:
    """Operations per second of the fastest of `repeats` runs."""
    best = math.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return n_ops / best


def report(n_ops: int = 200_000, repeats: int = 5, seed: int = 0, heap: int = 64,
           rates: dict[str, Any] | None = None) -> int:
    """Check every variant bit-identical to Python's, then print the operations per second of each: ``n_ops``
    operations per sequence, the fastest of ``repeats`` timed runs, ``heap`` events kept queued. Exit status 1
    (and one error line) when a native variant differs. ``rates``: a dict filled with ``{"link": {...},
    "events": {...}}``, each the sequence's ``ops`` and the ops/s of ``python``, ``calls`` and ``replay``."""
    core = compiled.core()

    ops = link_ops(n_ops, seed)
    n = ops[0].size
    bw = 17.5e9
    want = run_link_ops(FairShareLink(bw), *ops)
    for got in (run_link_ops(core.FairShareLink(bw), *ops), core.replay_link(core.FairShareLink(bw), *ops)):
        if not (np.array_equal(got[0].view(np.int64), want[0].view(np.int64)) and np.array_equal(got[1], want[1])):
            print("kairos-gym perf-components: error: the native link differs from the Python one", file=sys.stderr)
            return 1
    py = best_rate(n, repeats, lambda: run_link_ops(FairShareLink(bw), *ops))
    calls = best_rate(n, repeats, lambda: run_link_ops(core.FairShareLink(bw), *ops))
    replay = best_rate(n, repeats, lambda: core.replay_link(core.FairShareLink(bw), *ops))
    print(f"link    {n:,} ops (add/remove/next_completion, ~1.5 transfers already on the link at an add)")
    print(f"  python FairShareLink       {py / 1e6:8.2f} M ops/s")
    print(f"  native, a call per op      {calls / 1e6:8.2f} M ops/s  ({calls / py:.1f}x)")
    print(f"  native, replay_link        {replay / 1e6:8.2f} M ops/s  ({replay / py:.1f}x)")
    if rates is not None:
        rates["link"] = {"ops": int(n), "python": py, "calls": calls, "replay": replay}

    qops = queue_ops(n_ops, seed, heap)
    m = qops[0].size
    want_q = run_heapq(*qops)
    pt, ps, pk, pa, pb = core.replay_event_queue(core.EventQueue(), *qops)
    got_q = list(zip(pt.tolist(), ps.tolist(), pk.tolist(), pa.tolist(), pb.tolist(), strict=True))
    want_t = np.array([e[0] for e in want_q])
    calls_t = np.array([e[0] for e in run_native_queue_calls(core.EventQueue(), *qops)])
    if (got_q != want_q or not np.array_equal(pt.view(np.int64), want_t.view(np.int64))
            or not np.array_equal(calls_t.view(np.int64), want_t.view(np.int64))
            or run_native_queue_calls(core.EventQueue(), *qops) != want_q):
        print("kairos-gym perf-components: error: the native event queue differs from heapq", file=sys.stderr)
        return 1
    py = best_rate(m, repeats, lambda: run_heapq(*qops))
    calls = best_rate(m, repeats, lambda: run_native_queue_calls(core.EventQueue(), *qops))
    replay = best_rate(m, repeats, lambda: core.replay_event_queue(core.EventQueue(), *qops))
    print(f"events  {m:,} ops (push/pop, ~{heap} events queued)")
    print(f"  python heapq of tuples     {py / 1e6:8.2f} M ops/s")
    print(f"  native, a call per op      {calls / 1e6:8.2f} M ops/s  ({calls / py:.1f}x)")
    print(f"  native, replay_event_queue {replay / 1e6:8.2f} M ops/s  ({replay / py:.1f}x)")
    if rates is not None:
        rates["events"] = {"ops": int(m), "python": py, "calls": calls, "replay": replay, "heap": heap}
    return 0
