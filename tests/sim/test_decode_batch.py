"""The decode batch's bookkeeping (node step counter, end-step heap, suffix-max worst gaps) against
brute force."""

from __future__ import annotations

import numpy as np
import pytest

from kairos_gym.scenario import ScenarioConfig
from kairos_gym.sim import Simulator
from tests.sim.conftest import SMALL, DeflectAll, tight_memory_sim


@pytest.mark.parametrize("prune", [4, 1024])
def test_worst_gap_is_max_over_records_since_join(prune):
    """Through the simulator's debug API (debug_join/leave/record/worst_gap on decode node 0)."""
    sim = Simulator(ScenarioConfig.from_dict(SMALL), seed=0)
    sim.debug_set_stack_prune(prune)
    rng = np.random.default_rng(7)
    history: list[float] = []
    members: dict[int, tuple[int, float]] = {}  # rid -> (first record index, own gap)
    rid = 0
    for i in range(400):
        if rng.random() < 0.3 or not members:  # a request joins
            own = float(rng.random() * 0.05)
            sim.debug_join(0, rid, 100, 1000, own)
            members[rid] = (sim.dnodes[0].n_rec, own)
            rid += 1
        if members and rng.random() < 0.28:  # one leaves
            r = int(rng.choice(list(members)))
            start, own = members.pop(r)
            assert sim.debug_worst_gap(0, r) == max([own, *history[start:]])
            sim.debug_leave(0, r)
        # a falling trend (a long stack, worth pruning) with noise and ties
        v = float(rng.choice([0.1 - 2e-4 * i + rng.random() * 0.004, 0.02, 0.05]))
        sim.debug_record(0, v)
        history.append(v)
        for r, (start, own) in members.items():
            assert sim.debug_worst_gap(0, r) == max([own, *history[start:]])
    # records that are a strict suffix maximum: what the stack would hold without pruning
    unpruned = sum(1 for i, v in enumerate(history) if all(v > w for w in history[i + 1:]))
    d = sim.dnodes[0]
    assert d.n_rec == len(history)
    if prune == 4:
        assert len(d.smax_idx) < unpruned  # pruned, and every query above still answered correctly
    else:
        assert len(d.smax_idx) == unpruned


@pytest.mark.parametrize("variant", ["reserve", "swap-tight", "ttft-without-transfer", "largest-safe"])
def test_batch_state_matches_brute_force_throughout_a_run(variant):
    """At every decision: sum of contexts, batch size and next finish agree with per-request recomputation,
    and each prefill node's cached wait terms with a fresh computation."""
    if variant == "swap-tight":  # memory so tight that requests get preempted and swapped back
        sim = tight_memory_sim("swap", seed=2)
    else:
        cluster = {"ttft_includes_transfer": False} if variant == "ttft-without-transfer" else {}
        sim = Simulator(ScenarioConfig.from_dict({**SMALL, "cluster": cluster}), seed=2)
    pol = DeflectAll(0 if variant == "largest-safe" else 256)
    ctx = sim.next_decision()
    checked = 0
    while ctx is not None:
        for d in sim.dnodes:
            ctxs = [sim.ctx_base[r] + d.steps for r in d.batch]
            rems = [sim.end_step[r] - d.steps for r in d.batch]
            assert d.sum_ctx == sum(ctxs)
            assert all(c >= sim.prompt[r] for c, r in zip(ctxs, d.batch, strict=True))
            assert all(x >= 0 for x in rems)
            assert sorted(d.heap) == sorted((sim.end_step[r], r) for r in d.batch)
            checked += len(d.batch)
        for p in range(len(sim.pnodes)):  # the running queue terms give the context's predicted wait
            assert sim.debug_prefill_wait(p) == ctx.prefill[p].predicted_wait_s
        sim.apply(pol.decide(ctx))
        ctx = sim.next_decision()
    assert checked > 0
    assert all(not d.batch and not d.heap for d in sim.dnodes)
    if variant == "swap-tight":
        assert sim.n_preemptions > 0


def test_context_views_have_every_field():
    """The context is built with tuple.__new__ (no arity check): every view must be complete and typed."""
    from kairos_gym.sim.hook import DecisionContext, DecodeNodeView, PrefillNodeView, RequestView

    sim = Simulator(ScenarioConfig.from_dict(SMALL), seed=1)
    pol = DeflectAll(512)
    ctx = sim.next_decision()
    for _ in range(50):
        # the simulator's LazyDecisionContext is a DecisionContext (a subclass reading the core's buffers)
        assert isinstance(ctx, DecisionContext) and len(ctx) == len(DecisionContext._fields)
        assert type(ctx.request) is RequestView and len(ctx.request) == len(RequestView._fields)
        assert all(type(v) is PrefillNodeView and len(v) == len(PrefillNodeView._fields) for v in ctx.prefill)
        assert all(type(v) is DecodeNodeView and len(v) == len(DecodeNodeView._fields) for v in ctx.decode)
        assert all(isinstance(v.can_deflect, bool) and isinstance(v.batch_size, int) for v in ctx.decode)
        assert isinstance(ctx.beta, float) and ctx.chunk_menu == sim.menu
        sim.apply(pol.decide(ctx))
        ctx = sim.next_decision()
