"""The policy hook: what a policy sees at a routing decision and what it returns.

At every arrival the simulator builds a :class:`DecisionContext`: a read-only view of the cluster and
the options priced by the step-latency model. A policy returns a :class:`Decision`. The Gymnasium
environment and every baseline act through this one hook. Times in seconds, sizes in tokens.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple, Protocol

PREFILL = "prefill"
DEFLECT = "deflect"
LARGEST_SAFE = 0
"""``Decision.chunk`` value asking for a LargestSafe schedule instead of a fixed chunk size."""


class PrefillNodeView(NamedTuple):
    """A prefill node as a policy sees it."""

    queued_tokens: int  # prompt tokens waiting or in progress (not yet prefilled)
    queued_requests: int
    predicted_wait_s: float  # time to execute the queued tokens ahead of a new arrival
    utilization: float  # SM-utilization proxy over the recent window (0..1)


class DecodeNodeView(NamedTuple):
    """A decode node as a policy sees it."""

    batch_size: int  # requests decoding now
    total_context: int  # sum of their KV-cache lengths (tokens)
    pending_admissions: int  # KV arrived or arriving, not yet in the batch
    free_kv_fraction: float  # unreserved KV capacity / capacity
    free_kv_tokens: int
    deflection_in_flight: bool
    deflection_remaining_tokens: int  # prompt tokens of the deflected prefill still to build
    decode_step_s: float  # predicted decode-only step time now
    tbt_slo_s: float  # strictest TBT SLO among resident requests (the scenario's TBT SLO)
    utilization: float  # SM-utilization proxy over the recent window (0..1)
    can_deflect: bool  # a deflection to this node would be accepted


class RequestView(NamedTuple):
    """The arriving request. ``output_tokens`` is None unless the simulator runs with ``oracle=True``."""

    rid: int
    arrival_s: float
    prompt_tokens: int
    output_tokens: int | None


class DecisionContext(NamedTuple):
    """Everything priced for one decision.

    ``step_s[d][i]`` / ``ttft_deflect_s[d][i]``: predicted first-chunk step time and TTFT if the request is
    deflected to decode node ``d`` with ``chunk_menu[i]`` fixed chunks. ``largest_safe_*[d]``: the
    LargestSafe schedule on node ``d`` (budget beta x TBT SLO). ``ttft_prefill_s[p]``: predicted TTFT on
    the prefill path through prefill node ``p`` (queue wait + own prefill + KV transfer if TTFT includes
    it).
    """

    now_s: float
    request: RequestView
    prefill: tuple[PrefillNodeView, ...]
    decode: tuple[DecodeNodeView, ...]
    chunk_menu: tuple[int, ...]
    step_s: tuple[tuple[float, ...], ...]
    ttft_deflect_s: tuple[tuple[float, ...], ...]
    ttft_prefill_s: tuple[float, ...]
    largest_safe_feasible: tuple[bool, ...]
    largest_safe_ttft_s: tuple[float, ...]
    largest_safe_first_chunk: tuple[int, ...]
    ttft_slo_s: float
    tbt_slo_s: float
    beta: float


@dataclass(frozen=True)
class Decision:
    """A routing decision.

    ``path`` is ``"prefill"`` or ``"deflect"``. For the prefill path ``prefill_node`` may be None (join
    the shortest queue). For a deflection, ``decode_node`` is required and ``chunk`` is a size from the
    menu or :data:`LARGEST_SAFE`. Node indices and chunks are ints (numpy integers too).

    The simulator (``Simulator.apply``) refuses anything else (not a Decision, another path, a node index
    that does not exist, a chunk off the menu) with a :class:`~kairos_gym.errors.ConfigError` naming the
    value; a well-formed deflection that the node cannot take right now falls back to the prefill path.
    """

    path: str = PREFILL
    prefill_node: int | None = None
    decode_node: int | None = None
    chunk: int = LARGEST_SAFE

    @staticmethod
    def prefill_path(node: int | None = None) -> Decision:
        return Decision(PREFILL, prefill_node=node)

    @staticmethod
    def deflect(node: int, chunk: int = LARGEST_SAFE) -> Decision:
        return Decision(DEFLECT, decode_node=node, chunk=chunk)


class Policy(Protocol):
    """Anything that decides: baselines implement this; the env adapts actions to it."""

    def decide(self, ctx: DecisionContext) -> Decision: ...
