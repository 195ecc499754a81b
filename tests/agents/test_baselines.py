"""Static baselines (no-deflect, always-deflect, random, SQ, SL) and the shared BasePolicy interface."""

from __future__ import annotations

import numpy as np
import pytest
from kairos_gym.agents import SL, SQ, AlwaysDeflect, Kairos, NoDeflect, Random

from kairos_gym.errors import ConfigError
from kairos_gym.sim.hook import DEFLECT, LARGEST_SAFE, PREFILL, Decision
from tests.agents.ctx_helpers import MENU, SCENARIO, decode_view, make_ctx
from tests.fixtures import tiny_scenario


def test_no_deflect_is_jsq_prefill():
    ctx = make_ctx(prefill=((90000, 40), (0, 0)), decode=(decode_view(0), decode_view(0)))
    assert NoDeflect().decide(ctx) == Decision.prefill_path(None)


def test_always_deflect_least_loaded_free_node():
    p = AlwaysDeflect(SCENARIO)
    assert p.chunk == 512
    ctx = make_ctx(decode=(decode_view(30), decode_view(10)))
    assert p.decide(ctx) == Decision.deflect(1, 512)
    # ties on batch size go to the smaller total context
    ctx = make_ctx(decode=(decode_view(10, context=50000), decode_view(10, context=9000)))
    assert p.decide(ctx).decode_node == 1
    # the lightest node has a deflection in flight: the other one
    ctx = make_ctx(decode=(decode_view(30), decode_view(1, in_flight=True)))
    assert p.decide(ctx) == Decision.deflect(0, 512)
    # none can take one: prefill path
    ctx = make_ctx(decode=(decode_view(3, in_flight=True), decode_view(1, can=False)))
    assert p.decide(ctx).path == PREFILL
    assert AlwaysDeflect(SCENARIO, chunk=LARGEST_SAFE).decide(make_ctx()).chunk == LARGEST_SAFE


def test_sq_threshold_tokens():
    p = SQ(SCENARIO, queue_threshold=8192, chunk=256)
    below = make_ctx(prefill=((8192, 3), (20000, 9)))  # the shortest queue is at the threshold: not above
    above = make_ctx(prefill=((8193, 3), (20000, 9)), decode=(decode_view(40), decode_view(20)))
    assert p.decide(below).path == PREFILL
    assert p.decide(above) == Decision.deflect(1, 256)
    no_node = make_ctx(prefill=((50000, 20), (50000, 20)), decode=(decode_view(1, in_flight=True),))
    assert p.decide(no_node).path == PREFILL


def test_sq_threshold_requests():
    p = SQ(SCENARIO, unit="requests")
    assert p.queue_threshold == 4
    assert p.decide(make_ctx(prefill=((100000, 4), (100000, 9)))).path == PREFILL
    assert p.decide(make_ctx(prefill=((100, 5), (100, 9)))).path == DEFLECT
    assert SQ(SCENARIO).queue_threshold == 8192


def test_sl_threshold():
    p = SL(SCENARIO, length_threshold=2048, chunk=1024)
    assert p.decide(make_ctx(prompt=2047)) == Decision.deflect(0, 1024)
    assert p.decide(make_ctx(prompt=2048)).path == PREFILL
    busy = make_ctx(prompt=100, decode=(decode_view(0, in_flight=True), decode_view(0, can=False)))
    assert p.decide(busy).path == PREFILL


def test_random_only_valid_options_and_seeded():
    ctx = make_ctx(decode=(decode_view(5, in_flight=True), decode_view(7), decode_view(9, can=False)))

    def run(seed: int) -> list[Decision]:
        p = Random(SCENARIO, seed=seed)
        return [p.decide(ctx) for _ in range(300)]

    a, b, c = run(3), run(3), run(4)
    assert a == b and a != c
    for d in a:
        assert d.path == PREFILL or (d.decode_node == 1 and d.chunk in MENU)
    paths = [d.path for d in a]
    assert 100 < paths.count(DEFLECT) < 200  # uniform over {prefill, node 1}
    assert {d.chunk for d in a if d.path == DEFLECT} == set(MENU)
    # reset() replays the same sequence
    p = Random(SCENARIO, seed=3)
    first = [p.decide(ctx) for _ in range(20)]
    p.reset()
    assert [p.decide(ctx) for _ in range(20)] == first
    only = Random(SCENARIO, seed=0, chunks=[256])
    assert {d.chunk for d in (only.decide(ctx) for _ in range(50)) if d.path == DEFLECT} == {256}
    none = make_ctx(decode=(decode_view(5, in_flight=True),))
    assert all(Random(seed=s).decide(none).path == PREFILL for s in range(10))


@pytest.mark.parametrize(("factory", "kwargs", "field"), [
    (AlwaysDeflect, {"chunk": 300}, "chunk"),
    (AlwaysDeflect, {"chunk": -1}, "chunk"),
    (SQ, {"unit": "bytes"}, "unit"),
    (SQ, {"queue_threshold": -5}, "queue_threshold"),
    (SQ, {"chunk": 4096}, "chunk"),
    (SL, {"length_threshold": "long"}, "length_threshold"),
    (Random, {"chunks": []}, "chunks"),
    (Random, {"chunks": [100]}, "chunks"),
    (NoDeflect, {"seed": -1}, "seed"),
])
def test_bad_parameters(factory, kwargs, field):
    with pytest.raises(ConfigError) as e:
        factory(SCENARIO, **kwargs)
    assert e.value.field in (field, "chunk")


def test_fixed_chunk_off_the_context_menu_is_refused_at_decision():
    p = AlwaysDeflect(chunk=1024)  # no scenario: checked against the context's menu
    with pytest.raises(ConfigError):
        p.decide(make_ctx(menu=(128, 256, 512)))


def test_predict_sb3_shape():
    ctx = make_ctx(prefill=((50000, 20), (50000, 20)))
    for p in (NoDeflect(), SQ(SCENARIO), Kairos(SCENARIO)):
        action, state = p.predict(ctx, state="s")
        assert isinstance(action, Decision) and state == "s"
        with pytest.raises(TypeError, match="decide"):
            p.predict(np.zeros(10, dtype=np.float32))


def test_every_policy_times_its_decisions():
    p = SL(SCENARIO)
    for _ in range(5):
        p.decide(make_ctx())
    assert len(p.decision_times_us) == 5 and p.decision_us_p99 >= p.decision_us_p50 > 0


# ---------------------------------------------------------------------------- LargestSafe variants
LS_VARIANTS = [("always-deflect-ls", "always-deflect", {}), ("sq-ls", "sq", {"queue_threshold": 2048}),
               ("sl-ls", "sl", {"length_threshold": 4096})]


@pytest.mark.parametrize("ls_name,base,params", LS_VARIANTS)
def test_largest_safe_variants_deflect_with_largest_safe_only(ls_name, base, params):
    from kairos_gym.agents import make_policy, policy_params, run_policy

    class Recorder:
        """Records every decision of the wrapped policy."""

        def __init__(self, policy):
            self.policy, self.name, self.decisions = policy, policy.name, []

        def decide(self, ctx):
            d = self.policy.decide(ctx)
            self.decisions.append(d)
            return d

    assert "chunk" not in policy_params(ls_name)  # no way to turn it back into a fixed-chunk rule
    rec = Recorder(make_policy(ls_name, "bursty", seed=0, **params))
    tiny = tiny_scenario(200, name="ls")
    summary = run_policy(rec, tiny, seed=0)
    deflections = [d for d in rec.decisions if d.path == DEFLECT]
    assert deflections and summary["deflection_rate"] > 0
    assert all(d.chunk == LARGEST_SAFE for d in deflections)
    # the same decisions, and results, as the fixed-chunk rule given chunk=0
    same = run_policy(make_policy(base, "bursty", seed=0, chunk=LARGEST_SAFE, **params), tiny, seed=0)
    for key in ("ttft_p95", "slo_attainment", "deflection_rate", "tbt_violation_rate"):
        assert summary[key] == same[key], key
    # and not the default 512-token rule's
    fixed = run_policy(make_policy(base, "bursty", seed=0, **params), tiny, seed=0)
    assert fixed["ttft_p95"] != summary["ttft_p95"]


def test_largest_safe_variant_ctx_decisions():
    from kairos_gym.agents.baselines import SLLS, SQLS, AlwaysDeflectLS

    ctx = make_ctx(prompt=100, prefill=((9000, 3), (20000, 9)), decode=(decode_view(30), decode_view(10)))
    for p in (AlwaysDeflectLS(SCENARIO), SQLS(SCENARIO, queue_threshold=100), SLLS(SCENARIO)):
        assert p.decide(ctx) == Decision.deflect(1, LARGEST_SAFE), p.name
        assert p.describe()["chunk"] == LARGEST_SAFE
    with pytest.raises(TypeError):
        SQLS(SCENARIO, chunk=512)
