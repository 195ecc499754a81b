"""The policy hook: what a policy sees at a routing decision and what it returns.

At every arrival the simulator builds a :class:`DecisionContext`: a read-only view of the cluster and
the options priced by the step-latency model. A policy returns a :class:`Decision`. The Gymnasium
environment and every baseline act through this one hook. Times in seconds, sizes in tokens.

With ``deflection.decision_points: arrival+pull`` the simulator also asks at *pull* decisions (``ctx.kind ==
"pull"``): a decode node's deflection slot just freed (``ctx.pull_node``) and ``ctx.request`` is a request still
queued, not started, on a prefill node. The same menu is priced for it; the prefill path means "stay where it
is", a deflection to ``pull_node`` pulls it off its queue (docs/scenarios.md, "Decision points").

With a ``faults:`` section (``faults.reentry: policy``, the default) a request a node failure sends back is a
*re-entry* decision (``ctx.kind == "reentry"``): the same menu as at an arrival, priced for the prefill it now needs
(``request.prompt_tokens + ctx.emitted_tokens`` tokens), answered like an arrival (docs/reliability.md, "Faults").
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

PREFILL = "prefill"
DEFLECT = "deflect"
LARGEST_SAFE = 0
ARRIVAL = "arrival"
"""``DecisionContext.kind`` of a decision about an arriving request."""
PULL = "pull"
"""``DecisionContext.kind`` of a pull decision (a freed deflection slot; ``decision_points: arrival+pull``)."""
REENTRY = "reentry"
"""``DecisionContext.kind`` of a re-entry decision (a request a node failure sent back; ``faults.reentry: policy``)."""
"""``Decision.chunk`` value asking for a LargestSafe schedule instead of a fixed chunk size."""


class PrefillNodeView(NamedTuple):
    """A prefill node as a policy sees it."""

    queued_tokens: int  # prompt tokens waiting or in progress (not yet prefilled)
    queued_requests: int
    predicted_wait_s: float  # time to execute the queued tokens ahead of a new arrival
    utilization: float  # SM-utilization proxy over the recent window (0..1)
    up: bool = True  # the node is up (faults: a down node takes no work; its ttft_prefill_s entry is inf)


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
    up: bool = True  # the node is up (faults: a down node takes no work, can_deflect is False)


class RequestView(NamedTuple):
    """The request decided about (the arriving one; at a pull, the candidate, with its own arrival time).
    ``output_tokens`` is None unless the simulator runs with ``oracle=True``."""

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
    it). Every predicted TTFT counts from ``now_s``.

    ``kind`` is ``"arrival"`` (default) or ``"pull"``. At a pull, ``ttft_prefill_s`` is the candidate's remaining
    predicted TTFT on its own queue (the wait for the work ahead of it + its own prefill + transfer) at its node
    and ``inf`` at every other prefill node (no option: it cannot move), ``pull_node`` names the freed decode node
    and ``decode[d].can_deflect`` is False for every other node. Its time already waited is
    ``now_s - request.arrival_s``.

    ``kind == "reentry"`` (faults): ``request`` was sent back by a node failure (it keeps its arrival time, and its
    first token if it had one); it already emitted ``emitted_tokens`` tokens, so its prefill builds
    ``request.prompt_tokens + emitted_tokens`` tokens and every prefill and deflection price (``ttft_prefill_s``,
    ``step_s``, ``ttft_deflect_s``, ``largest_safe_*``) and ``can_deflect`` are for that size. It is answered like an
    arrival (the prefill path: a named up node or the shortest up queue, held while none is up; or a deflection).
    ``emitted_tokens`` is 0 at arrival and pull decisions.
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
    kind: str = ARRIVAL
    pull_node: int | None = None
    emitted_tokens: int = 0


class StaleContextError(RuntimeError):
    """A field of a :class:`LazyDecisionContext` read for the first time after the simulator moved past its
    decision (its buffers now hold another decision). Call ``ctx.materialize()`` to keep a context."""


class _LazyField:
    """A non-data descriptor: the first read builds the field and caches it in the instance ``__dict__``, which
    then shadows the descriptor (later reads are plain attribute reads)."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __get__(self, obj: Any, cls: Any = None) -> Any:
        if obj is None:
            return self
        return obj._build(self.name)


class LazyDecisionContext(DecisionContext):
    """A :class:`DecisionContext` whose fields are built on first read from a simulator's decision buffers
    (the C++ core's), then cached. It is a ``DecisionContext`` for ``isinstance``, has the same field names
    and ``_fields``, and indexes, iterates, compares and hashes like the NamedTuple (``materialize()`` returns
    that NamedTuple; pickling and copying give it too).

    Staleness rule: a field already read keeps its value (the one of this decision) for good; so does every
    field until the simulator reaches its next decision (``apply`` does not touch the buffers); a field read
    for the first time after that raises :class:`StaleContextError` (the buffers hold another decision).
    Policies that keep contexts past the next decision call ``materialize()``.

    ``source`` provides ``_ctx_gen`` (a value that changes whenever the buffers are rewritten) and
    ``_ctx_field(name)`` (builds one field from the current buffers). ``eager`` holds the fields built up front.
    (A tuple subclass cannot have non-empty ``__slots__``, so the cache is the instance ``__dict__``.)
    """

    def __new__(cls, source: Any, gen: int, eager: dict[str, Any]) -> LazyDecisionContext:
        self = tuple.__new__(cls, ())
        d = self.__dict__
        d.update(eager)
        d["_src"] = source
        d["_gen"] = gen
        return self

    def __init__(self, *args: Any, **kwargs: Any) -> None:  # tuple.__new__ did it all
        pass

    def _build(self, name: str) -> Any:
        d = self.__dict__
        src = d["_src"]
        if src._ctx_gen != d["_gen"]:
            raise StaleContextError(f"DecisionContext.{name} read for the first time after the simulator moved "
                                    "past this decision; call ctx.materialize() to keep a context")
        v = d[name] = src._ctx_field(name)
        return v

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"DecisionContext is read-only (cannot set {name!r})")

    def materialize(self) -> DecisionContext:
        """The plain :class:`DecisionContext` NamedTuple of this decision (every field built now)."""
        return tuple.__new__(DecisionContext, [getattr(self, f) for f in DecisionContext._fields])

    def __len__(self) -> int:
        return len(DecisionContext._fields)

    def __iter__(self) -> Iterator[Any]:
        return iter([getattr(self, f) for f in DecisionContext._fields])

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, int):
            return getattr(self, DecisionContext._fields[i])
        return self.materialize()[i]

    def __contains__(self, x: object) -> bool:
        return x in self.materialize()

    def __eq__(self, other: object) -> bool:
        return self.materialize() == other

    def __ne__(self, other: object) -> bool:
        return self.materialize() != other

    def __lt__(self, other: Any) -> bool:
        return self.materialize() < other

    def __le__(self, other: Any) -> bool:
        return self.materialize() <= other

    def __gt__(self, other: Any) -> bool:
        return self.materialize() > other

    def __ge__(self, other: Any) -> bool:
        return self.materialize() >= other

    def __hash__(self) -> int:
        return hash(self.materialize())

    def __repr__(self) -> str:
        return repr(self.materialize())

    def __reduce__(self) -> Any:
        return tuple.__new__, (DecisionContext, tuple(self.materialize()))

    def __copy__(self) -> DecisionContext:
        return self.materialize()

    def __deepcopy__(self, memo: Any) -> DecisionContext:
        return self.materialize()

    def __getnewargs__(self) -> tuple[Any, ...]:
        return tuple(self.materialize())

    def _asdict(self) -> dict[str, Any]:
        return self.materialize()._asdict()

    def _replace(self, **kwargs: Any) -> DecisionContext:
        return self.materialize()._replace(**kwargs)

    def count(self, x: Any) -> int:
        return self.materialize().count(x)

    def index(self, x: Any, *args: Any) -> int:
        return self.materialize().index(x, *args)


for _f in DecisionContext._fields:
    setattr(LazyDecisionContext, _f, _LazyField(_f))
del _f


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
