"""Invariant: every baseline returns a valid decision on any state (deflect only to a node that can take one,
with a chunk from the menu or LARGEST_SAFE; Kairos only when its estimates satisfy the alpha / SLO rule)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from kairos_gym.agents import SL, SQ, AlwaysDeflect, Kairos, NoDeflect, Random

from kairos_gym.sim.hook import DEFLECT, LARGEST_SAFE, PREFILL
from tests.agents.ctx_helpers import MENU, SCENARIO, decode_view, make_ctx

POLICIES = [NoDeflect(), AlwaysDeflect(SCENARIO), Random(SCENARIO, seed=0), SQ(SCENARIO, queue_threshold=4096),
            SL(SCENARIO), Kairos(SCENARIO, seed=0)]

node = st.builds(decode_view, batch=st.integers(0, 256), context=st.integers(0, 2_000_000),
                 in_flight=st.booleans(), can=st.booleans(), tbt_slo=st.sampled_from([0.02, 0.05, 0.1, 0.2]))
prefill = st.tuples(st.integers(0, 200_000), st.integers(0, 100))


@settings(max_examples=100, deadline=None)
@given(prompt=st.integers(1, 16000), decode=st.lists(node, min_size=1, max_size=3),
       pre=st.lists(prefill, min_size=1, max_size=3), ttft_slo=st.sampled_from([0.2, 1.0, 5.0]))
def test_decisions_are_valid(prompt, decode, pre, ttft_slo):
    ctx = make_ctx(prompt=prompt, decode=tuple(decode), prefill=tuple(pre), ttft_slo=ttft_slo)
    for p in POLICIES:
        d = p.decide(ctx)
        assert d.path in (PREFILL, DEFLECT)
        if d.path == DEFLECT:
            v = ctx.decode[d.decode_node]
            assert v.can_deflect and not v.deflection_in_flight, p.name
            assert d.chunk == LARGEST_SAFE or d.chunk in MENU, p.name
        else:
            assert d.prefill_node is None or 0 <= d.prefill_node < len(ctx.prefill), p.name
    k = POLICIES[-1]
    if k.last.decision.path == DEFLECT:
        td = k.last.ttft_deflect_s[k.last.decision.decode_node]
        assert td <= k.alpha * k.last.ttft_p and td <= ttft_slo
