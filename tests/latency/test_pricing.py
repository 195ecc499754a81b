"""ChunkPricer: memoised additive terms equal the full model; schedules equal step-by-step sums."""

from __future__ import annotations

import math

import pytest

from kairos_gym.latency import StepLatencyModel
from kairos_gym.latency.pricing import ChunkPricer

M = StepLatencyModel.from_preset()
P = ChunkPricer(M)


@pytest.mark.parametrize("b,ctx,c,k", [(0, 0, 128, 0), (10, 1000, 512, 2048), (64, 4000, 2048, 8192), (3, 10, 77, 5)])
def test_step_equals_model(b, ctx, c, k):
    want = M.step_time([ctx] * b, [(c, k)])
    assert math.isclose(P.step(b, b * (ctx + 1), c, k), want, rel_tol=1e-12)


@pytest.mark.parametrize("prompt,c,done", [(3000, 512, 0), (5000, 128, 0), (2048, 2048, 0), (999, 1024, 0),
                                           (1000, 256, 512), (1000, 512, 300)])
def test_fixed_schedule_equals_loop(prompt, c, done):
    nd, pairs = 7, 7 * 1500.0
    first, total, n = P.fixed_schedule(nd, pairs, prompt, c, done)
    t, k, i, f = 0.0, done, 0, None
    while k < prompt:
        cc = min(c, prompt - k)
        s = M.step_time_fast(nd + cc, nd + 1, pairs + i * nd, cc * (k + (cc + 1) / 2), k + cc)
        f = s if f is None else f
        t += s
        k += cc
        i += 1
    assert n == i and math.isclose(first, f, rel_tol=1e-12) and math.isclose(total, t, rel_tol=1e-12)


def test_largest_safe_picks_largest_fitting_and_refuses():
    menu = (2048, 1024, 512, 256, 128)
    ok, _, sizes = P.largest_safe(8, 8 * 1001.0, 3000, 0.2, menu)
    assert ok and sum(sizes) == 3000 and sizes[0] == 2048
    ok, _, sizes = P.largest_safe(8, 8 * 1001.0, 3000, 0.045, menu)
    assert ok and max(sizes) <= 512
    for i, c in enumerate(sizes[:-1]):
        assert P.step(8, 8 * 1001.0 + i * 8, c, sum(sizes[:i])) <= 0.045
    ok, _, _ = P.largest_safe(64, 64 * 4001.0, 3000, 0.02, menu)
    assert not ok


@pytest.mark.parametrize("prompt", [1, 100, 128, 1000, 2048, 3000, 8191])
def test_menu_schedules_equal_fixed_schedule(prompt):
    menu = (128, 256, 512, 1024, 2048)
    firsts, totals = P.menu_schedules(9, 9 * 700.0, prompt, menu)
    for c, f, t in zip(menu, firsts, totals, strict=True):
        f2, t2, _ = P.fixed_schedule(9, 9 * 700.0, prompt, c)
        assert math.isclose(f, f2, rel_tol=1e-12) and math.isclose(t, t2, rel_tol=1e-12)


def test_tables_grow_on_demand_with_the_same_numbers():
    """A fresh pricer (tables sized for small batches) prices a batch far past them exactly as one whose
    tables were grown first: menu rows, LargestSafe and plain steps (a fresh pricer for each)."""
    menu = (128, 256, 512, 1024, 2048)
    desc = tuple(sorted(menu, reverse=True))
    grown = ChunkPricer(M, menu)
    grown._grow(20_000, 9_000)
    b, pairs = 8_500, 8_500 * 900.0
    terms = grown.menu_terms(3000, menu)
    calls = (lambda p: p.menu_rows(b, pairs, terms, 0.25), lambda p: p.largest_safe(b, pairs, 3000, 5.0, desc),
             lambda p: p.step(b, pairs, 512, 0))
    for call in calls:
        fresh = ChunkPricer(M, menu)
        assert b + max(menu) >= len(fresh._g)  # the fresh tables really are too short
        assert call(fresh) == call(grown)
