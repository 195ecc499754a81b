"""Static baselines (docs/DOMAIN.md section 2): no-deflect, always-deflect, random, SQ and SL, and the LargestSafe
variants of the deflecting ones (always-deflect-ls, sq-ls, sl-ls: the same rules with ``chunk = LARGEST_SAFE``); and
pending-switch, a rule that switches to deflecting while the decode nodes' admissions back up (a cut KV link).

None of them needs the latency model: they read the :class:`DecisionContext` node views only. A
deflection always goes to a decode node that can take one (``can_deflect``: no deflected prefill in
flight, room in its batch and KV memory); among those, the one with the smallest decode batch (then
the smallest total context, then the lowest index). The prefill path is always join-shortest-queue
(``prefill_node=None``: the simulator picks the prefill node with the fewest pending prompt tokens).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from kairos_gym.agents.base import (
    BasePolicy,
    check_chunk,
    check_chunk_in_menu,
    deflectable,
    least_loaded_deflectable,
    scenario_or_none,
)

from kairos_gym.errors import ConfigError
from kairos_gym.sim.hook import LARGEST_SAFE, Decision, DecisionContext
from kairos_gym.workload.rules import Number

DEFAULT_CHUNK = 512
"""Fixed chunk size of the static deflecting baselines (tokens): the largest size the seed reports as
adding at most ~30 ms to a decode step."""


def deflect_least_loaded(name: str, chunk: int, ctx: DecisionContext) -> Decision:
    """The static rules' deflection: ``chunk`` (tokens, or LARGEST_SAFE; checked against the scenario's menu) to
    the least-loaded decode node that can take a deflection, the prefill path (JSQ) when none can."""
    check_chunk_in_menu(f"policy {name}", chunk, ctx)
    d = least_loaded_deflectable(ctx)
    return Decision.prefill_path() if d is None else Decision.deflect(d, chunk)


class NoDeflect(BasePolicy):
    """Plain disaggregation: every prefill on a prefill node chosen by join-shortest-queue."""

    name = "no-deflect"

    def __init__(self, scenario: Any = None, seed: int | None = 0) -> None:
        super().__init__(seed)
        scenario_or_none(scenario)

    def _decide(self, ctx: DecisionContext) -> Decision:
        return Decision.prefill_path()


class AlwaysDeflect(BasePolicy):
    """Deflect whenever some decode node has no deflected prefill in flight (and can take one), to the
    least-loaded such node, with a fixed ``chunk`` (default 512; 0 = LARGEST_SAFE)."""

    name = "always-deflect"

    def __init__(self, scenario: Any = None, seed: int | None = 0, chunk: int = DEFAULT_CHUNK) -> None:
        super().__init__(seed)
        self.chunk = check_chunk(f"policy {self.name}", chunk, scenario_or_none(scenario))

    def _decide(self, ctx: DecisionContext) -> Decision:
        return deflect_least_loaded(self.name, self.chunk, ctx)

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "chunk": self.chunk}


class Random(BasePolicy):
    """Uniform over the valid routes: the prefill path (JSQ) or a deflection to each decode node that can
    take one; a deflection's chunk is drawn uniformly from ``chunks`` (default: the context's whole
    menu). Seeded: the same seed gives the same decisions on the same run."""

    name = "random"

    def __init__(self, scenario: Any = None, seed: int | None = 0, chunks: Any = None) -> None:
        super().__init__(seed)
        sc = scenario_or_none(scenario)
        where = f"policy {self.name}"
        if chunks is not None:
            if isinstance(chunks, (str, bytes)) or not hasattr(chunks, "__iter__"):
                raise ConfigError(where, "chunks", chunks, "a non-empty list of chunk sizes (0 = LARGEST_SAFE)")
            chunks = tuple(check_chunk(where, c, sc) for c in chunks)
            if not chunks:
                raise ConfigError(where, "chunks", chunks, "a non-empty list of chunk sizes (0 = LARGEST_SAFE)")
        self.chunks: tuple[int, ...] | None = chunks

    def _decide(self, ctx: DecisionContext) -> Decision:
        nodes = [i for i, v in enumerate(ctx.decode) if deflectable(v)]
        k = int(self.rng.integers(len(nodes) + 1))
        if k == 0:
            return Decision.prefill_path()
        chunks = self.chunks if self.chunks is not None else ctx.chunk_menu
        chunk = int(chunks[int(self.rng.integers(len(chunks)))])
        check_chunk_in_menu(f"policy {self.name}", chunk, ctx)
        return Decision.deflect(nodes[k - 1], chunk)

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "chunks": self.chunks}


QUEUE_UNITS = ("tokens", "requests")
DEFAULT_QUEUE_THRESHOLD = {"tokens": 8192, "requests": 4}


class SQ(BasePolicy):
    """Static queue threshold: deflect when the shortest prefill queue (pending prompt ``tokens``, or
    ``requests``) exceeds ``queue_threshold`` (default 8192 tokens / 4 requests), i.e. when the request
    would otherwise wait behind more than that; fixed ``chunk`` (default 512)."""

    name = "sq"

    def __init__(self, scenario: Any = None, seed: int | None = 0, queue_threshold: float | None = None,
                 unit: str = "tokens", chunk: int = DEFAULT_CHUNK) -> None:
        super().__init__(seed)
        where = f"policy {self.name}"
        if unit not in QUEUE_UNITS:
            raise ConfigError(where, "unit", unit, "one of " + ", ".join(QUEUE_UNITS))
        self.unit = unit
        if queue_threshold is None:
            queue_threshold = DEFAULT_QUEUE_THRESHOLD[unit]
        self.queue_threshold = Number(low=0.0).check(where, "queue_threshold", queue_threshold)
        self.chunk = check_chunk(where, chunk, scenario_or_none(scenario))

    def queue(self, ctx: DecisionContext) -> int:
        """The shortest prefill queue in the policy's unit."""
        if self.unit == "tokens":
            return min(p.queued_tokens for p in ctx.prefill)
        return min(p.queued_requests for p in ctx.prefill)

    def _decide(self, ctx: DecisionContext) -> Decision:
        if self.queue(ctx) > self.queue_threshold:
            return deflect_least_loaded(self.name, self.chunk, ctx)
        return Decision.prefill_path()

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "queue_threshold": self.queue_threshold, "unit": self.unit,
                "chunk": self.chunk}


class SL(BasePolicy):
    """Static length threshold: deflect requests whose prompt is shorter than ``length_threshold`` tokens
    (default 2048), whatever the load; fixed ``chunk`` (default 512)."""

    name = "sl"

    def __init__(self, scenario: Any = None, seed: int | None = 0, length_threshold: int = 2048,
                 chunk: int = DEFAULT_CHUNK) -> None:
        super().__init__(seed)
        where = f"policy {self.name}"
        self.length_threshold = Number(low=0.0).check(where, "length_threshold", length_threshold)
        self.chunk = check_chunk(where, chunk, scenario_or_none(scenario))

    def _decide(self, ctx: DecisionContext) -> Decision:
        if ctx.request.prompt_tokens + ctx.emitted_tokens < self.length_threshold:  # + gen at a re-entry
            return deflect_least_loaded(self.name, self.chunk, ctx)
        return Decision.prefill_path()

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "length_threshold": self.length_threshold, "chunk": self.chunk}


MAX_PENDING = 1_000_000
"""Largest :class:`PendingSwitch` threshold ``k`` (requests)."""


class PendingSwitch(BasePolicy):
    """Switch on the decode nodes' backlog: deflect (to the least-loaded decode node that can take one, with
    ``chunk``: default LARGEST_SAFE) when the decode nodes' ``pending_admissions`` (requests whose KV arrived or is
    arriving, not yet in a batch: transfers stalled on a cut P->D link count) sum to at least ``k`` requests
    (default 1), the prefill path (JSQ) otherwise, and when no node can take a deflection. Made for
    ``fault-shift`` (cut KV links): while a cut lasts the transfers pile up as pending admissions and the rule
    deflects, so the prefills skip the cut link. It decides the same way at every decision kind (arrival, pull,
    re-entry), like SQ and SL. Markov in the simulator state (no memory): a native twin exists for the rollout
    Oracle (src/core/base_policies.cpp, ``BASE_PENDING_SWITCH``)."""

    name = "pending-switch"

    def __init__(self, scenario: Any = None, seed: int | None = 0, k: int = 1, chunk: int = LARGEST_SAFE) -> None:
        super().__init__(seed)
        where = f"policy {self.name}"
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= k <= MAX_PENDING:
            raise ConfigError(where, "k", k, f"a whole number of requests from 1 to {MAX_PENDING:,}")
        self.k = int(k)
        self.chunk = check_chunk(where, chunk, scenario_or_none(scenario))

    def pending(self, ctx: DecisionContext) -> int:
        """The decode nodes' pending admissions (requests)."""
        return sum(d.pending_admissions for d in ctx.decode)

    def _decide(self, ctx: DecisionContext) -> Decision:
        if self.pending(ctx) >= self.k:
            return deflect_least_loaded(self.name, self.chunk, ctx)
        return Decision.prefill_path()

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "k": self.k, "chunk": self.chunk}


class AlwaysDeflectLS(AlwaysDeflect):
    """:class:`AlwaysDeflect` with LargestSafe chunks (``chunk = LARGEST_SAFE``, no chunk parameter): the
    simulator re-applies LargestSafe chunk by chunk on the true state (the largest menu size whose step fits in
    ``deflection.beta * tbt_slo``)."""

    name = "always-deflect-ls"

    def __init__(self, scenario: Any = None, seed: int | None = 0) -> None:
        super().__init__(scenario, seed, chunk=LARGEST_SAFE)


class SQLS(SQ):
    """:class:`SQ` with LargestSafe chunks (``chunk = LARGEST_SAFE``, no chunk parameter)."""

    name = "sq-ls"

    def __init__(self, scenario: Any = None, seed: int | None = 0, queue_threshold: float | None = None,
                 unit: str = "tokens") -> None:
        super().__init__(scenario, seed, queue_threshold=queue_threshold, unit=unit, chunk=LARGEST_SAFE)


class SLLS(SL):
    """:class:`SL` with LargestSafe chunks (``chunk = LARGEST_SAFE``, no chunk parameter)."""

    name = "sl-ls"

    def __init__(self, scenario: Any = None, seed: int | None = 0, length_threshold: int = 2048) -> None:
        super().__init__(scenario, seed, length_threshold=length_threshold, chunk=LARGEST_SAFE)


__all__ = ["DEFAULT_CHUNK", "LARGEST_SAFE", "MAX_PENDING", "SL", "SLLS", "SQ", "SQLS", "AlwaysDeflect",
           "AlwaysDeflectLS", "NoDeflect", "PendingSwitch", "Random"]
