"""Kairos's decision rule on hand-built states (docs/DOMAIN.md section 2)."""

from __future__ import annotations

import math

import pytest
from kairos_gym.agents import Kairos

from kairos_gym.errors import ConfigError
from kairos_gym.sim.hook import DEFLECT, LARGEST_SAFE, PREFILL
from tests.agents.ctx_helpers import MENU, SCENARIO, decode_view, make_ctx

BIG_QUEUE = ((40000, 25), (40000, 25))  # ~1.7 s of prefill work ahead on both prefill nodes


def exact(**kw) -> Kairos:
    return Kairos(SCENARIO, **kw)  # the exact information track (the scenario's default)


def estimates(prompt: int, batch: int, tbt: float) -> tuple[float, float]:
    """(TTFT_P, TTFT_D) of Kairos (exact) for one empty prefill node and one decode node."""
    k = exact(alpha=1e9)
    k.decide(make_ctx(prompt=prompt, prefill=((0, 0),), decode=(decode_view(batch, tbt_slo=tbt),)))
    return k.last.ttft_p, k.last.ttft_deflect_s[0]


def find_state(lo: float, hi: float) -> tuple[int, int, float]:
    """A (prompt, batch, tbt_slo) whose TTFT_D / TTFT_P ratio (empty prefill queue) lies in (lo, hi)."""
    for prompt in (1024, 2048, 4096):
        for batch in (0, 8, 32, 64, 128, 200):
            for tbt in (0.1, 0.05, 0.035):
                tp, td = estimates(prompt, batch, tbt)
                if lo < td / tp < hi:
                    return prompt, batch, tbt
    raise AssertionError(f"no hand-built state with TTFT_D / TTFT_P in ({lo}, {hi})")


def greedy_schedule(k: Kairos, batch: int, context: int, prompt: int, budget: float) -> list[int]:
    """LargestSafe recomputed step by step with the pricer's single-step price (independent of largest_safe)."""
    sizes, done, i = [], 0, 0
    for _ in range(10_000):
        if done >= prompt:
            return sizes
        pairs = context + batch + i * batch
        fits = [c for c in sorted(MENU, reverse=True)
                if k.pricer.step(batch, pairs, min(c, prompt - done), done) <= budget]
        if not fits:
            return []
        c = min(fits[0], prompt - done)
        sizes.append(c)
        done += c
        i += 1
    raise AssertionError("schedule did not end")


def test_picks_largest_safe_chunk():
    k = exact()
    tbt = 0.06  # 2048-token chunks do not fit next to an 8-request batch, 1024 do
    ctx = make_ctx(prompt=4096, prefill=BIG_QUEUE, decode=(decode_view(8, tbt_slo=tbt),), tbt_slo=tbt)
    d = k.decide(ctx)
    assert d.path == DEFLECT and d.decode_node == 0 and d.chunk == LARGEST_SAFE
    sched = list(k.last.schedules[0])
    assert sched == greedy_schedule(k, 8, 8000, 4096, tbt)
    assert sched[0] == 1024 and sum(sched) == 4096
    assert k.pricer.step(8, 8008, 2048, 0) > tbt >= k.pricer.step(8, 8008, 1024, 0)
    # the whole-schedule TTFT is the sum of its (exact) step times
    total, k_done = 0.0, 0
    for i, c in enumerate(sched):
        total += k.pricer.step(8, 8008 + 8 * i, c, k_done)
        k_done += c
    assert k.last.ttft_deflect_s[0] == pytest.approx(total)


def test_refuses_when_no_chunk_fits():
    k = exact()
    tbt = 0.02  # even a 128-token chunk step exceeds 20 ms
    ctx = make_ctx(prompt=1024, prefill=BIG_QUEUE, decode=(decode_view(8, tbt_slo=tbt),) * 2, tbt_slo=tbt)
    d = k.decide(ctx)
    assert d.path == PREFILL
    assert k.last.ttft_deflect_s == (math.inf, math.inf) and k.last.best_decode is None


def test_respects_alpha_default():
    # TTFT_D slightly above TTFT_P but within 1.3x: deflect (accept a slower first token)
    prompt, batch, tbt = find_state(1.02, 1.28)
    ctx = make_ctx(prompt=prompt, prefill=((0, 0),), decode=(decode_view(batch, tbt_slo=tbt),), ttft_slo=10.0)
    k = exact()
    assert k.alpha == 1.3
    assert k.decide(ctx).path == DEFLECT
    assert k.last.ttft_p < k.last.ttft_deflect_s[0] <= 1.3 * k.last.ttft_p
    # beyond 1.3x: prefill path
    prompt, batch, tbt = find_state(1.32, 3.0)
    ctx = make_ctx(prompt=prompt, prefill=((0, 0),), decode=(decode_view(batch, tbt_slo=tbt),), ttft_slo=10.0)
    k = exact()
    assert k.decide(ctx).path == PREFILL
    assert k.last.ttft_deflect_s[0] > 1.3 * k.last.ttft_p


def test_alpha_is_the_threshold():
    prompt, batch, tbt = find_state(1.02, 3.0)
    tp, td = estimates(prompt, batch, tbt)
    ctx = make_ctx(prompt=prompt, prefill=((0, 0),), decode=(decode_view(batch, tbt_slo=tbt),), ttft_slo=10.0)
    assert exact(alpha=td / tp * 1.001).decide(ctx).path == DEFLECT
    assert exact(alpha=td / tp * 0.999).decide(ctx).path == PREFILL


def test_respects_ttft_slo():
    ctx_args = dict(prompt=4096, prefill=BIG_QUEUE, decode=(decode_view(8),))
    k = exact()
    assert k.decide(make_ctx(**ctx_args, ttft_slo=10.0)).path == DEFLECT
    td = k.last.ttft_deflect_s[0]
    assert td < k.last.ttft_p
    assert exact().decide(make_ctx(**ctx_args, ttft_slo=td * 1.01)).path == DEFLECT
    assert exact().decide(make_ctx(**ctx_args, ttft_slo=td * 0.99)).path == PREFILL


def test_never_deflects_to_node_with_deflection_in_flight():
    k = exact()
    busy_idle = decode_view(0, in_flight=True)  # the most attractive node, but busy
    ctx = make_ctx(prompt=2048, prefill=BIG_QUEUE, decode=(busy_idle, decode_view(64)))
    d = k.decide(ctx)
    assert d.path == DEFLECT and d.decode_node == 1
    assert k.last.ttft_deflect_s[0] == math.inf
    # even if the view (inconsistently) says it could take one
    ctx = make_ctx(prompt=2048, prefill=BIG_QUEUE, decode=(decode_view(0, in_flight=True, can=True),) * 2)
    assert exact().decide(ctx).path == PREFILL


def test_skips_nodes_that_cannot_take_a_deflection():
    ctx = make_ctx(prompt=2048, prefill=BIG_QUEUE, decode=(decode_view(0, can=False), decode_view(100)))
    d = exact().decide(ctx)
    assert d.path == DEFLECT and d.decode_node == 1


def test_argmin_over_decode_nodes():
    ctx = make_ctx(prompt=4096, prefill=BIG_QUEUE, decode=(decode_view(200), decode_view(4)))
    k = exact()
    d = k.decide(ctx)
    assert d.decode_node == 1 and k.last.ttft_deflect_s[1] < k.last.ttft_deflect_s[0]


def test_prefill_path_joins_shortest_queue_in_its_view():
    ctx = make_ctx(prompt=4096, prefill=((9000, 5), (3000, 2)), decode=(decode_view(8, can=False),))
    k = exact()
    d = k.decide(ctx)
    assert d.path == PREFILL and d.prefill_node == 1
    assert k.last.ttft_p == pytest.approx(min(k.last.ttft_prefill_s))
    assert k.last.ttft_prefill_s[1] < k.last.ttft_prefill_s[0]


def test_ttft_p_includes_transfer_when_the_scenario_says_so():
    prompt = 2048
    with_x = Kairos(SCENARIO)
    without = Kairos({"name": "u", "transfer": {"enabled": False}})
    ctx = make_ctx(prompt=prompt, prefill=((0, 0),), decode=(decode_view(8, can=False),))
    with_x.decide(ctx)
    without.decide(ctx)
    kv = with_x.model.kv_bytes_per_token
    assert with_x.last.ttft_p - without.last.ttft_p == pytest.approx(0.005 + prompt * kv / 17.5e9)
    assert without.last.ttft_p == pytest.approx(without.own_prefill_s(prompt))


def test_exact_track_is_deterministic_and_draws_nothing():
    ctx = make_ctx(prompt=3000, prefill=((20000, 10), (15000, 9)), decode=(decode_view(16), decode_view(40)))
    a, b = exact(seed=1), exact(seed=2)
    state = a.rng.bit_generator.state
    da, db = a.decide(ctx), b.decide(ctx)
    assert da == db
    assert a.last.ttft_prefill_s == b.last.ttft_prefill_s and a.last.ttft_deflect_s == b.last.ttft_deflect_s
    assert a.rng.bit_generator.state == state and a.last.factors == (1.0,) * 4


@pytest.mark.parametrize("field", ["staleness_s", "model_error"])
@pytest.mark.parametrize("value", [0.0, 0.1])
def test_realism_knobs_point_to_the_scenario_option(field, value):
    """Staleness and model error belong to the environment: passing one to Kairos (even 0) is refused, naming the
    scenario's information option."""
    with pytest.raises(ConfigError) as e:
        Kairos(SCENARIO, **{field: value})
    assert e.value.field == field and f"information.{field}" in str(e.value)


def test_realistic_track_reads_each_nodes_error_from_the_served_predictions():
    """On the realistic track Kairos scales its own predictions for node n by the served/own ratio of one quantity
    both price: a context whose served smallest-chunk step is 1.2x Kairos's own (and whose TTFT_P minus wait is 0.9x
    its own prefill + transfer) gives factors 1.2 and 0.9, and TTFT_P scaled by 0.9."""
    real = Kairos({**SCENARIO, "information": {"track": "realistic"}})
    base = exact()
    prompt = 3000
    ctx = make_ctx(prompt=prompt, prefill=((0, 0),), decode=(decode_view(16, can=False),))
    own_step = real.pricer.step(16, float(ctx.decode[0].total_context + 16), ctx.chunk_menu[0], 0)
    alone = real.own_prefill_s(prompt) + real.transfer_s(prompt)
    served = ctx._replace(step_s=((1.2 * own_step, *ctx.step_s[0][1:]),),
                          prefill=(ctx.prefill[0]._replace(predicted_wait_s=0.0),), ttft_prefill_s=(0.9 * alone,))
    real.decide(served)
    base.decide(served)
    assert real.last.factors == pytest.approx((0.9, 1.2), rel=1e-12)
    assert real.last.ttft_p == pytest.approx(0.9 * base.last.ttft_p, rel=1e-12)
    assert base.last.factors == (1.0, 1.0)


def test_decision_times_recorded():
    k = Kairos(SCENARIO)
    for i in range(20):
        k.decide(make_ctx(now=0.01 * i, prompt=1000 + i))
    assert len(k.decision_times_us) == 20 and all(t > 0 for t in k.decision_times_us)
    assert k.decision_us_p50 is not None and k.decision_us_p99 >= k.decision_us_p50
    k.reset()
    assert k.decision_times_us == [] and k.decision_us_p50 is None and k.last is None


@pytest.mark.parametrize(("field", "value"), [("alpha", 0), ("alpha", "x"), ("beta", -1.0), ("staleness_s", -0.1),
                                              ("model_error", -0.5), ("chunk_menu", []), ("chunk_menu", [0, 128]),
                                              ("chunk_menu", "512")])
def test_bad_parameters(field, value):
    with pytest.raises(ConfigError) as e:
        Kairos(SCENARIO, **{field: value})
    assert e.value.field == field
