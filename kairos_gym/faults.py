"""The ``faults:`` scenario section: timed fault events and a random-failure generator, validated
into frozen dataclasses and compiled, at each reset, into the event list the core runs
(``src/core/faults.hpp``). Semantics: docs/reliability.md, "Faults"; fields and bounds: docs/scenarios.md.

Times in seconds from the run's start. A ``factor`` is a plain number: a straggler's step-time multiplier
(``*_slow``, 1 to :data:`MAX_SLOW_FACTOR`) or a link's bandwidth multiplier (``link_degraded``, in (0, 1)).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from kairos_gym.errors import ConfigError, check_keys
from kairos_gym.workload import portable_random as pr

FAULT_KINDS = ("prefill_down", "prefill_up", "decode_down", "decode_up", "prefill_slow", "prefill_normal",
               "decode_slow", "decode_normal", "link_degraded", "link_cut", "link_restored")
"""Fault kinds, in the core's ``FaultKind`` order (src/core/faults.hpp). ``node`` names a prefill node for the
``prefill_*`` kinds, a decode node for the ``decode_*`` kinds and a prefill node's P->D link for the ``link_*``
kinds (the cluster has one link per prefill node)."""

MAX_TIMED_EVENTS = 10_000
"""Most timed events in ``faults.events``."""
MAX_FAULT_EVENTS = 100_000
"""Most fault events one run holds, timed plus drawn (the core's ``MAX_FAULT_EVENTS``): a draw past it is a
:class:`ConfigError` at reset, never a silent truncation."""
MAX_EXPECTED_FAILURES = 10_000
"""Bound on the expected number of random failures (nodes x ``horizon_s`` / ``mtbf_s``, summed over the classes),
checked when the config is built."""
MAX_FAULT_TIME_S = 1.0e7
"""Latest fault time and longest ``horizon_s``, ``mtbf_s``, ``mttr_s`` (seconds; about 116 days)."""
MAX_SLOW_FACTOR = 100.0
"""Largest straggler factor (step times x 100)."""
REENTRY_MODES = ("policy", "prefill")
"""``faults.reentry``: what a request a node failure sends back does. ``policy``: it is offered to the policy as a
re-entry decision (``DecisionContext.kind == "reentry"``: the prefill path or a deflection, like an arrival);
``prefill``: it takes the shortest up prefill queue by rule (held while none is up), without a decision."""
REENTRY_DEFAULT = "policy"
"""The default ``faults.reentry``: the victims re-enter prefill or are deflected, by the policy's choice."""

_CLASS = {"prefill": "prefill", "decode": "decode", "link": "link"}
_STATE_PAIRS = {  # kind -> (state machine, state it needs, state it leaves)
    "prefill_down": ("down", "up", "down"), "prefill_up": ("down", "down", "up"),
    "decode_down": ("down", "up", "down"), "decode_up": ("down", "down", "up"),
    "prefill_slow": ("slow", "normal", "slow"), "prefill_normal": ("slow", "slow", "normal"),
    "decode_slow": ("slow", "normal", "slow"), "decode_normal": ("slow", "slow", "normal"),
    "link_degraded": ("link", "normal", "impaired"), "link_cut": ("link", "normal", "impaired"),
    "link_restored": ("link", "impaired", "normal"),
}
_INITIAL = {"down": "up", "slow": "normal", "link": "normal"}


def _number(where: str, name: str, v: Any, low: float, high: float, *, low_open: bool = False,
            high_open: bool = False) -> float:
    ok = isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(float(v))
    if ok:
        x = float(v)
        ok = (x > low if low_open else x >= low) and (x < high if high_open else x <= high)
    if not ok:
        lo, hi = ("(" if low_open else "["), (")" if high_open else "]")
        raise ConfigError(where, name, v, f"a number in {lo}{low:g}, {high:g}{hi}")
    return float(v)


@dataclass(frozen=True)
class FaultEvent:
    """One timed fault: at ``at_s`` seconds, ``kind`` (one of :data:`FAULT_KINDS`) on node (or link) ``node``,
    with ``factor`` for ``*_slow`` (step times x factor, 1 < factor <= 100) and ``link_degraded`` (bandwidth x
    factor, 0 < factor < 1); 1.0 for the other kinds."""

    at_s: float
    kind: str
    node: int
    factor: float = 1.0

    @classmethod
    def from_dict(cls, d: Any, where: str) -> FaultEvent:
        if not isinstance(d, dict):
            raise ConfigError(where, "(event)", d, "a mapping with keys at_s, kind, node (and factor)")
        check_keys(where, d, ("at_s", "kind", "node", "factor"))
        for k in ("at_s", "kind", "node"):
            if k not in d:
                raise ConfigError(where, k, None, "a value (required)")
        at = _number(where, "at_s", d["at_s"], 0.0, MAX_FAULT_TIME_S)
        kind = d["kind"]
        if not isinstance(kind, str) or kind not in FAULT_KINDS:
            raise ConfigError(where, "kind", kind, "one of " + ", ".join(FAULT_KINDS))
        node = d["node"]
        if isinstance(node, bool) or not isinstance(node, int) or node < 0:
            raise ConfigError(where, "node", node, "an integer >= 0 (a node or link index)")
        if kind.endswith("_slow"):
            if "factor" not in d:
                raise ConfigError(where, "factor", None, f"a step-time factor in (1, {MAX_SLOW_FACTOR:g}] for {kind}")
            factor = _number(where, "factor", d["factor"], 1.0, MAX_SLOW_FACTOR, low_open=True)
        elif kind == "link_degraded":
            if "factor" not in d:
                raise ConfigError(where, "factor", None, "a bandwidth factor in (0, 1) for link_degraded")
            factor = _number(where, "factor", d["factor"], 0.0, 1.0, low_open=True, high_open=True)
        else:
            if "factor" in d:
                raise ConfigError(where, "factor", d["factor"], f"no factor for {kind} (only *_slow, link_degraded)")
            factor = 1.0
        return cls(at, kind, node, factor)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"at_s": self.at_s, "kind": self.kind, "node": self.node}
        if self.kind.endswith("_slow") or self.kind == "link_degraded":
            out["factor"] = self.factor
        return out


@dataclass(frozen=True)
class FailureRate:
    """Random failures of one node class: up times ~ Exponential(mean ``mtbf_s``), repairs ~ Exponential(mean
    ``mttr_s``), both in seconds (each in (0, 1e7])."""

    mtbf_s: float
    mttr_s: float

    @classmethod
    def from_dict(cls, d: Any, where: str) -> FailureRate:
        if not isinstance(d, dict):
            raise ConfigError(where, "(rate)", d, "a mapping with keys mtbf_s, mttr_s")
        check_keys(where, d, ("mtbf_s", "mttr_s"))
        for k in ("mtbf_s", "mttr_s"):
            if k not in d:
                raise ConfigError(where, k, None, "a value (required)")
        return cls(_number(where, "mtbf_s", d["mtbf_s"], 0.0, MAX_FAULT_TIME_S, low_open=True),
                   _number(where, "mttr_s", d["mttr_s"], 0.0, MAX_FAULT_TIME_S, low_open=True))


RANDOM_CLASSES = ("prefill", "decode", "network")
"""The keys of ``faults.random`` that draw faults: node failures of each prefill / decode node, and outages of the
P->D network (every link cut at once)."""


@dataclass(frozen=True)
class RandomFailures:
    """The random-failure generator: faults start in [0, ``horizon_s``) (seconds); ``prefill`` / ``decode``:
    the failure rate of each node of that class; ``network``: the rate of P->D network outages, each of which cuts
    every prefill node's link at once (a switch between the two pools failing: transfers stall, prefill and decode
    go on) until it is repaired (None: that class never fails at random)."""

    horizon_s: float
    prefill: FailureRate | None = None
    decode: FailureRate | None = None
    network: FailureRate | None = None

    @classmethod
    def from_dict(cls, d: Any, where: str) -> RandomFailures:
        if not isinstance(d, dict):
            raise ConfigError(where, "random", d, "a mapping with keys horizon_s, " + ", ".join(RANDOM_CLASSES))
        check_keys(where, d, ("horizon_s", *RANDOM_CLASSES))
        if "horizon_s" not in d:
            raise ConfigError(where, "horizon_s", None, "a value (required)")
        h = _number(where, "horizon_s", d["horizon_s"], 0.0, MAX_FAULT_TIME_S, low_open=True)
        rates = [FailureRate.from_dict(d[k], f"{where}: {k}") if d.get(k) is not None else None
                 for k in RANDOM_CLASSES]
        if all(r is None for r in rates):
            raise ConfigError(where, "random", d, "at least one of " + ", ".join(RANDOM_CLASSES))
        return cls(h, *rates)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"horizon_s": self.horizon_s}
        for k in RANDOM_CLASSES:
            r = getattr(self, k)
            if r is not None:
                out[k] = {"mtbf_s": r.mtbf_s, "mttr_s": r.mttr_s}
        return out


@dataclass(frozen=True)
class FaultsConfig:
    """The ``faults:`` section: ``events`` (timed, see :class:`FaultEvent`), ``random`` (see
    :class:`RandomFailures`) and ``reentry`` (one of :data:`REENTRY_MODES`, default :data:`REENTRY_DEFAULT`). No
    event and no generator (the default): no fault, the run is the fault-free one bit for bit."""

    events: tuple[FaultEvent, ...] = ()
    random: RandomFailures | None = None
    reentry: str = REENTRY_DEFAULT

    @property
    def enabled(self) -> bool:
        """True when the section holds any event or a random generator."""
        return bool(self.events) or self.random is not None

    @classmethod
    def from_dict(cls, d: Any, where: str) -> FaultsConfig:
        if d is None:
            return cls()
        if not isinstance(d, dict):
            raise ConfigError(where, "faults", d, "a mapping with keys events, random, reentry")
        check_keys(where, d, ("events", "random", "reentry"))
        raw = d.get("events") or []
        if not isinstance(raw, list):
            raise ConfigError(where, "events", raw, "a list of events")
        if len(raw) > MAX_TIMED_EVENTS:
            raise ConfigError(where, "events", f"{len(raw)} events", f"at most {MAX_TIMED_EVENTS} events")
        events = tuple(FaultEvent.from_dict(e, f"{where}: events[{i}]") for i, e in enumerate(raw))
        rnd = RandomFailures.from_dict(d["random"], f"{where}: random") if d.get("random") is not None else None
        reentry = d.get("reentry", REENTRY_DEFAULT)
        if not isinstance(reentry, str) or reentry not in REENTRY_MODES:
            raise ConfigError(where, "reentry", reentry, " or ".join(REENTRY_MODES))
        return cls(events, rnd, reentry)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"events": [e.to_dict() for e in self.events]}
        if self.random is not None:
            out["random"] = self.random.to_dict()
        out["reentry"] = self.reentry
        return out

    def ordered(self) -> list[FaultEvent]:
        """The timed events by time (ties: in their listed order)."""
        return sorted(self.events, key=lambda e: e.at_s)

    def cross_check(self, where: str, n_prefill: int, n_decode: int) -> None:
        """Node indices within the cluster, and per node (or link) a consistent sequence in time order: down/up
        alternate from up, slow/normal from normal, a link's degraded or cut and restored from normal; and every
        outage, slowdown and impairment ends (the last event of each is up / normal / restored), so every request
        can finish."""
        state: dict[tuple[str, str, int], str] = {}
        for e in self.ordered():
            cls_ = e.kind.split("_")[0]
            n = n_decode if cls_ == "decode" else n_prefill
            if e.node >= n:
                what = "decode node" if cls_ == "decode" else ("link (prefill node)" if cls_ == "link" else
                                                              "prefill node")
                raise ConfigError(f"{where}: events", "node", e.node, f"a {what} index in 0..{n - 1} (kind {e.kind})")
            machine, need, leave = _STATE_PAIRS[e.kind]
            key = (machine, cls_, e.node)
            cur = state.get(key, _INITIAL[machine])
            if cur != need:
                raise ConfigError(f"{where}: events", "kind", f"{e.kind} of node {e.node} at {e.at_s:g} s",
                                  f"an event that fits the node's state ({cls_} {e.node} is {cur} then)")
            state[key] = leave
        for (machine, cls_, node), cur in sorted(state.items()):
            if cur != _INITIAL[machine]:
                end = {"down": "up", "slow": "normal", "link": "restored"}[machine]
                raise ConfigError(f"{where}: events", "events", f"{cls_} {node} left {cur}",
                                  f"every outage ended by a later {cls_}_{end} event (requests must be able to finish)")
        if self.random is not None:
            r = self.random
            if r.network is not None:
                timed = next((e for e in self.ordered() if e.kind.startswith("link_")), None)
                if timed is not None:
                    raise ConfigError(f"{where}: events", "kind", f"{timed.kind} of link {timed.node} at "
                                      f"{timed.at_s:g} s", "no timed link event beside random.network (a drawn "
                                      "outage and a timed impairment of the same link would not nest)")
            expected = sum(k * r.horizon_s / rate.mtbf_s for k, rate in ((n_prefill, r.prefill), (n_decode, r.decode),
                                                                         (1, r.network)) if rate is not None)
            if expected > MAX_EXPECTED_FAILURES:
                raise ConfigError(f"{where}: random", "horizon_s", r.horizon_s,
                                  f"an expected failure count (nodes x horizon_s / mtbf_s) <= {MAX_EXPECTED_FAILURES}"
                                  f" (this one: {expected:.0f})")

    def compile(self, rng: np.random.Generator, n_prefill: int, n_decode: int,
                where: str = "faults") -> tuple[list[float], list[int], list[int], list[float]]:
        """The run's fault events as the core's four lists (times s, kind codes, nodes, factors), sorted by time
        (ties: timed events first, in their order, then the draws in draw order).

        Random failures are drawn from ``rng.spawn(1)[0]``, a child stream of the run's generator: the workload's
        draws (and the information track's noise seed) are not perturbed, and the same seed gives the same
        failures. Draw order: prefill nodes 0..P-1, then decode nodes 0..D-1, then the network; per node (or for the
        network), alternately an up time (``mtbf_s`` x standard exponential) and a repair time (``mttr_s`` x standard
        exponential) until a failure would start at or after ``horizon_s`` (a repair may end after it). A network
        outage is a ``link_cut`` of every link 0..P-1 at its start and a ``link_restored`` of each at its end."""
        evs: list[tuple[float, int, int, float]] = [
            (e.at_s, FAULT_KINDS.index(e.kind), e.node, e.factor) for e in self.ordered()]
        if self.random is not None:
            child = rng.spawn(1)[0]
            r = self.random
            for cls_, n, rate in (("prefill", n_prefill, r.prefill), ("decode", n_decode, r.decode)):
                if rate is None:
                    continue
                down, up = FAULT_KINDS.index(f"{cls_}_down"), FAULT_KINDS.index(f"{cls_}_up")
                for node in range(n):
                    t = 0.0
                    while True:
                        t += rate.mtbf_s * pr.standard_exponential(child)
                        if t >= r.horizon_s:
                            break
                        rep = rate.mttr_s * pr.standard_exponential(child)
                        evs.append((t, down, node, 1.0))
                        evs.append((t + rep, up, node, 1.0))
                        t += rep
                        if len(evs) > MAX_FAULT_EVENTS:
                            raise ConfigError(f"{where}: random", "horizon_s", r.horizon_s,
                                              f"a generator drawing at most {MAX_FAULT_EVENTS} events per run")
            if r.network is not None:
                cut, restored = FAULT_KINDS.index("link_cut"), FAULT_KINDS.index("link_restored")
                t = 0.0
                while True:
                    t += r.network.mtbf_s * pr.standard_exponential(child)
                    if t >= r.horizon_s:
                        break
                    rep = r.network.mttr_s * pr.standard_exponential(child)
                    evs.extend((t, cut, link, 1.0) for link in range(n_prefill))
                    evs.extend((t + rep, restored, link, 1.0) for link in range(n_prefill))
                    t += rep
                    if len(evs) > MAX_FAULT_EVENTS:
                        raise ConfigError(f"{where}: random", "horizon_s", r.horizon_s,
                                          f"a generator drawing at most {MAX_FAULT_EVENTS} events per run")
        evs.sort(key=lambda e: e[0])  # stable: ties keep timed-then-drawn order
        return [e[0] for e in evs], [e[1] for e in evs], [e[2] for e in evs], [e[3] for e in evs]
