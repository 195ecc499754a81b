"""Hand-built DecisionContext objects for policy unit tests (the frozen hook dataclasses, built directly)."""

from __future__ import annotations

from typing import Any

from kairos_gym.sim.hook import DecisionContext, DecodeNodeView, PrefillNodeView, RequestView

MENU = (128, 256, 512, 1024, 2048)
SCENARIO: dict[str, Any] = {"name": "unit"}  # default 2P2D DeepSeek-V2-Lite / A100 cluster


def decode_view(batch: int = 8, context: int | None = None, in_flight: bool = False, can: bool | None = None,
                tbt_slo: float = 0.1) -> DecodeNodeView:
    return DecodeNodeView(
        batch_size=batch, total_context=batch * 1000 if context is None else context, pending_admissions=0,
        free_kv_fraction=0.9, free_kv_tokens=1_000_000, deflection_in_flight=in_flight,
        deflection_remaining_tokens=512 if in_flight else 0, decode_step_s=0.02, tbt_slo_s=tbt_slo,
        utilization=0.1, can_deflect=(not in_flight) if can is None else can,
    )


def make_ctx(*, now: float = 0.0, prompt: int = 1024, rid: int = 0,
             prefill: tuple[tuple[int, int], ...] = ((0, 0), (0, 0)),
             decode: tuple[DecodeNodeView, ...] | None = None, menu: tuple[int, ...] = MENU,
             ttft_slo: float = 1.0, tbt_slo: float = 0.1) -> DecisionContext:
    """A context with prefill nodes given as (queued_tokens, queued_requests) and decode node views."""
    if decode is None:
        decode = (decode_view(tbt_slo=tbt_slo), decode_view(tbt_slo=tbt_slo))
    pviews = tuple(PrefillNodeView(queued_tokens=t, queued_requests=r, predicted_wait_s=t / 25000.0, utilization=0.5)
                   for t, r in prefill)
    nd = len(decode)
    return DecisionContext(
        now_s=now, request=RequestView(rid, now, prompt, None), prefill=pviews, decode=decode, chunk_menu=menu,
        step_s=tuple(tuple(0.03 for _ in menu) for _ in range(nd)),
        ttft_deflect_s=tuple(tuple(0.3 for _ in menu) for _ in range(nd)),
        ttft_prefill_s=tuple(0.1 + t / 25000.0 for t, _ in prefill),
        largest_safe_feasible=tuple(True for _ in range(nd)), largest_safe_ttft_s=tuple(0.3 for _ in range(nd)),
        largest_safe_first_chunk=tuple(menu[-1] for _ in range(nd)), ttft_slo_s=ttft_slo, tbt_slo_s=tbt_slo, beta=1.0,
    )
