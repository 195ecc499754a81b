"""Request-length distributions: their config sections (``lengths.kind``) and samplers (tokens).

Continuous draws (lognormal, Pareto) are rounded to the nearest integer (halves up:
``floor(x + 0.5)``) and truncated to ``[1, max]`` by rejection: a draw whose rounded value falls
outside the range (i.e. ``x`` outside ``[0.5, max + 0.5)``) is discarded and redrawn from the same
stream, so the result follows the distribution conditioned on the range.
Nothing is clipped, so no probability piles up at 1 or at the cap. A config whose range keeps less
than :data:`MIN_ACCEPTANCE` of the distribution is rejected when it is built.

Every sampler is prefix-stable: the first N of ``sample(rng, M)`` equal ``sample(rng, N)`` (same
``rng`` state) for any M > N. Prompt and output lengths of the continuous kinds come from two child
streams of ``rng`` (:func:`child_generators`), and the rejection loop keeps accepted values in draw
order, so neither the batch sizes nor the other side's rejections change which value request i gets.
``by_state`` (:class:`ByStateLengths`) picks one of two such sections per request by the MMPP state at
its arrival, each state's section drawing from a stream of its own.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from kairos_gym import portable_math as pm
from kairos_gym.errors import ConfigError, check_keys
from kairos_gym.workload import portable_random as pr
from kairos_gym.workload.rules import (
    NON_NEGATIVE,
    POSITIVE,
    POSITIVE_INT,
    TEXT,
    Number,
    Section,
    Text,
    build_section,
    require_mapping,
)
from kairos_gym.workload.streams import child_generators
from kairos_gym.workload.traces import load_trace, resolve_trace_path

MIN_ACCEPTANCE = 0.01
"""Smallest probability mass the truncation range [1, max] may keep (else :class:`ConfigError`)."""

_WHERE = "workload.lengths"
_MAX_DRAW = 1 << 22  # largest single batch of draws in the rejection loop


class SampledLengths(Section):
    """Base of the length sections that draw lengths themselves (every kind but ``trace``)."""

    WHERE: ClassVar[str] = _WHERE

    def sample(self, rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
        """``n`` (prompt_tokens, output_tokens) pairs as int64 arrays, every value >= 1.

        Prefix-stable: pair i depends only on ``rng``'s state and i, never on ``n``.
        """
        raise NotImplementedError


class TruncatedStream:
    """Truncated sampling by rejection, resumable: value i is the i-th draw of ``draw`` that rounds
    (``floor(x + 0.5)``) into ``[1, cap]``, whatever the sizes asked for (prefix-stable). ``draw(m)`` returns the
    next ``m`` i.i.d. draws of one sequential stream; ``acceptance`` (the probability that one is kept) sizes the
    batches. Accepted values of a batch not handed out yet are kept for the next :meth:`take` (the chunked
    workload, kairos_gym/workload/chunked.py, asks a chunk at a time; :func:`sample_truncated` asks once)."""

    def __init__(self, draw: Callable[[int], np.ndarray], cap: int, acceptance: float) -> None:
        self._draw, self._cap, self._acceptance = draw, cap, acceptance
        self._buf = np.empty(0, dtype=np.int64)

    def take(self, n: int) -> np.ndarray:
        """The next ``n`` values (int64 tokens). Raises ``RuntimeError`` if 1000 batches in a row accept nothing
        (``acceptance`` was wrong; config checks prevent this)."""
        parts = [self._buf]
        have = self._buf.size
        empty_rounds = 0
        while have < n:
            need = n - have
            m = int(min(math.ceil(need / max(self._acceptance, MIN_ACCEPTANCE) * 1.1) + 64, _MAX_DRAW))
            x = np.floor(self._draw(m) + 0.5)
            x = x[(x >= 1) & (x <= self._cap)].astype(np.int64)
            parts.append(x)
            have += x.size
            empty_rounds = 0 if x.size else empty_rounds + 1
            if empty_rounds >= 1000:
                raise RuntimeError(f"truncated sampling accepted nothing in 1000 batches "
                                   f"(expected {self._acceptance:.3%})")
        allv = np.concatenate(parts) if len(parts) > 1 else self._buf
        self._buf = allv[n:].copy()
        return allv[:n]


def sample_truncated(draw: Callable[[int], np.ndarray], n: int, cap: int, acceptance: float) -> np.ndarray:
    """``n`` int64 values ``floor(x + 0.5)`` of draws ``x`` that round into ``[1, cap]``, by rejection
    (:class:`TruncatedStream`, asked once). Accepted values keep their draw order, so the output is i.i.d. from the
    truncated distribution, fully determined by the stream behind ``draw``, and value i is the stream's i-th
    accepted draw whatever ``n`` is (prefix-stable)."""
    return TruncatedStream(draw, cap, acceptance).take(n)


def _check_mass(
    where: str, side: str, values: dict[str, Any], below: float, above: float, what: str
) -> float:
    """Raise if the range [1, max] keeps < MIN_ACCEPTANCE of the mass; return the kept mass."""
    kept = 1.0 - below - above
    if kept < MIN_ACCEPTANCE:
        field = f"{side}_max" if above >= below else next(k for k in values if k.startswith(side))
        raise ConfigError(
            where, field, values[field],
            f"a value for which the range [1, {side}_max] keeps at least {MIN_ACCEPTANCE:.0%} of {what} "
            f"(now {kept:.3%}: {below:.1%} rounds below 1, {above:.1%} above {side}_max); lengths are "
            "truncated by rejection, never clipped",
        )
    return kept


class TruncatedLengths(SampledLengths):
    """Base of the two-parameter continuous kinds: independent prompt and output draws, each truncated to
    [1, max] by rejection. A subclass names its two parameters in ``PARAMS`` (fields ``prompt_<p>`` and
    ``output_<p>``, plus ``prompt_max``/``output_max``) and gives the law's cdf, its text and its draws."""

    PARAMS: ClassVar[tuple[str, str]]

    @staticmethod
    def _cdf(x: float, a: float, b: float) -> float:
        """P(X < x) for parameters ``(a, b)``, in the portable arithmetic of :mod:`kairos_gym.portable_math` (the
        acceptance it gives sizes batches and guards configs)."""
        raise NotImplementedError

    @staticmethod
    def _law(a: float, b: float) -> str:
        """The untruncated law as text, for config errors."""
        raise NotImplementedError

    @staticmethod
    def _sampler(g: np.random.Generator, a: float, b: float) -> Callable[[int], np.ndarray]:
        """``draw(m)``: the next ``m`` untruncated draws (tokens, float64) of the stream ``g``."""
        raise NotImplementedError

    @classmethod
    def acceptance(cls, values: dict[str, Any], side: str, where: str = _WHERE) -> float:
        """Probability that one draw of ``side`` ("prompt" or "output") rounds into [1, max]."""
        a, b = (values[f"{side}_{p}"] for p in cls.PARAMS)
        below = cls._cdf(0.5, a, b)
        above = 1.0 - cls._cdf(values[f"{side}_max"] + 0.5, a, b)
        return _check_mass(where, side, values, below, above, cls._law(a, b))

    @classmethod
    def cross_check(cls, where: str, values: dict[str, Any]) -> None:
        cls.acceptance(values, "prompt", where)
        cls.acceptance(values, "output", where)

    def side_draws(self, rng: np.random.Generator) -> list[tuple[Callable[[int], np.ndarray], int, float]]:
        """(draw, cap, acceptance) of the prompt and the output side, each over its own child stream of ``rng``
        (what :func:`sample_truncated` and the chunked workload's :class:`TruncatedStream` read)."""
        values = self.to_dict()
        return [(self._sampler(side_rng, *(values[f"{side}_{p}"] for p in self.PARAMS)), values[f"{side}_max"],
                 self.acceptance(values, side))
                for side, side_rng in zip(("prompt", "output"), child_generators(rng, 2), strict=True)]

    def sample(self, rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
        (dp, cp, ap), (do, co, ao) = self.side_draws(rng)
        return sample_truncated(dp, n, cp, ap), sample_truncated(do, n, co, ao)


@dataclass(frozen=True)
class LognormalLengths(TruncatedLengths):
    """Independent lognormal prompt and output lengths, truncated to [1, max] by rejection.

    Attributes:
        prompt_median: median of the untruncated prompt distribution, tokens (> 0); exp(mu).
        prompt_sigma: standard deviation of log(prompt length) (>= 0; 0 = always the median).
        prompt_max: largest prompt, tokens (whole number >= 1).
        output_median, output_sigma, output_max: the same for output tokens.
    """

    kind: ClassVar[str] = "lognormal"
    PARAMS: ClassVar[tuple[str, str]] = ("median", "sigma")
    RULES: ClassVar[dict[str, Number | Text]] = {
        "prompt_median": POSITIVE, "prompt_sigma": NON_NEGATIVE, "prompt_max": POSITIVE_INT,
        "output_median": POSITIVE, "output_sigma": NON_NEGATIVE, "output_max": POSITIVE_INT,
    }
    prompt_median: float = 1024.0
    prompt_sigma: float = 1.0
    prompt_max: int = 16384
    output_median: float = 128.0
    output_sigma: float = 1.0
    output_max: int = 4096

    @staticmethod
    def _cdf(x: float, a: float, b: float) -> float:
        """P(X < x), median ``a``, sigma ``b`` (strict, which matters only for sigma = 0: then X is the median)."""
        if b == 0:
            return 1.0 if a < x else 0.0
        return 0.5 * pm.erfc(-(pm.log(x) - pm.log(a)) / (b * math.sqrt(2.0)))

    @staticmethod
    def _law(a: float, b: float) -> str:
        return f"lognormal(median={a:g}, sigma={b:g})"

    @staticmethod
    def _sampler(g: np.random.Generator, a: float, b: float) -> Callable[[int], np.ndarray]:
        mu = pm.log(a)
        return lambda m: pr.lognormal(g, mu, b, m)


@dataclass(frozen=True)
class ParetoLengths(TruncatedLengths):
    """Independent Pareto (type I) prompt and output lengths, truncated to [1, max] by rejection.

    P(X > x) = (min/x)^alpha for x >= min; heavy-tailed (infinite variance for alpha <= 2).

    Attributes:
        prompt_min: scale (smallest untruncated value), tokens (> 0).
        prompt_alpha: tail index (> 0).
        prompt_max: largest prompt, tokens (whole number >= 1).
        output_min, output_alpha, output_max: the same for output tokens.
    """

    kind: ClassVar[str] = "pareto"
    PARAMS: ClassVar[tuple[str, str]] = ("min", "alpha")
    RULES: ClassVar[dict[str, Number | Text]] = {
        "prompt_min": POSITIVE, "prompt_alpha": POSITIVE, "prompt_max": POSITIVE_INT,
        "output_min": POSITIVE, "output_alpha": POSITIVE, "output_max": POSITIVE_INT,
    }
    prompt_min: float = 256.0
    prompt_alpha: float = 1.5
    prompt_max: int = 16384
    output_min: float = 32.0
    output_alpha: float = 1.5
    output_max: int = 4096

    @staticmethod
    def _cdf(x: float, a: float, b: float) -> float:
        """P(X < x), scale ``a``, tail index ``b``."""
        return 0.0 if x < a else 1.0 - pm.pow(a / x, b)

    @staticmethod
    def _law(a: float, b: float) -> str:
        return f"pareto(min={a:g}, alpha={b:g})"

    @staticmethod
    def _sampler(g: np.random.Generator, a: float, b: float) -> Callable[[int], np.ndarray]:
        return lambda m: a * (pr.pareto(g, b, m) + 1.0)  # numpy's pareto is Lomax: shift by 1


@dataclass(frozen=True)
class EmpiricalLengths(SampledLengths):
    """(prompt, output) pairs drawn uniformly with replacement from the rows of a trace CSV.

    Attributes:
        path: packaged trace name (e.g. ``sharegpt8k_lengths_only``) or CSV path; any trace file.
    """

    kind: ClassVar[str] = "empirical"
    RULES: ClassVar[dict[str, Number | Text]] = {"path": TEXT}
    path: str

    @classmethod
    def cross_check(cls, where: str, values: dict[str, Any]) -> None:
        resolve_trace_path(values["path"], where=where)

    def sample(self, rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
        pool = load_trace(self.path, where=f"{self.WHERE}.path")
        idx = rng.integers(0, len(pool), size=n)  # one row per request, drawn in order: prefix-stable
        return pool.prompt_tokens[idx], pool.output_tokens[idx]


@dataclass(frozen=True)
class FixedLengths(SampledLengths):
    """Every request has the same lengths.

    Attributes:
        prompt_tokens: prompt length, tokens (whole number >= 1).
        output_tokens: generated tokens including the first (whole number >= 1).
    """

    kind: ClassVar[str] = "fixed"
    RULES: ClassVar[dict[str, Number | Text]] = {"prompt_tokens": POSITIVE_INT, "output_tokens": POSITIVE_INT}
    prompt_tokens: int = 1024
    output_tokens: int = 128

    def sample(self, rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
        return np.full(n, self.prompt_tokens, dtype=np.int64), np.full(n, self.output_tokens, dtype=np.int64)


@dataclass(frozen=True)
class TraceLengths(Section):
    """Lengths come from the arrival trace's own rows (needs ``arrival.kind: trace``). No fields."""

    kind: ClassVar[str] = "trace"
    WHERE: ClassVar[str] = _WHERE
    RULES: ClassVar[dict[str, Number | Text]] = {}


SAMPLED_KINDS: dict[str, type[Section]] = {
    c.kind: c for c in (LognormalLengths, ParetoLengths, EmpiricalLengths, FixedLengths)
}
"""The kinds that draw lengths themselves: what a ``by_state`` section may hold for each state."""


@dataclass(frozen=True)
class ByStateLengths(Section):
    """Lengths that depend on the arrival process's state at each request's arrival (``arrival.kind: mmpp``).

    A request that arrives in an on sojourn takes its (prompt, output) lengths from ``on``, one that arrives
    in an off sojourn from ``off``. Draw order (prefix-stable): the lengths stream is split into two child
    streams (:func:`child_generators`), the first for ``on``, the second for ``off``; the k-th request
    (in arrival order) that arrives in state s gets the k-th pair ``s.sample`` draws from its stream, so
    request i depends only on the states of requests 0..i and the first draws of each state's stream.

    Attributes:
        on: lengths of the requests arriving in the on state: a lognormal, pareto, empirical or fixed
            section (:data:`SAMPLED_KINDS`; required).
        off: the same for the off state (required).
    """

    kind: ClassVar[str] = "by_state"
    WHERE: ClassVar[str] = _WHERE
    RULES: ClassVar[dict[str, Number | Text]] = {}
    STATES: ClassVar[tuple[str, str]] = ("on", "off")
    on: SampledLengths
    off: SampledLengths

    def __post_init__(self) -> None:
        for state in self.STATES:
            value = getattr(self, state)
            if not isinstance(value, tuple(SAMPLED_KINDS.values())):
                raise ConfigError(self.WHERE, state, value, "a lengths config of kind "
                                  + ", ".join(SAMPLED_KINDS) + " (" + ", ".join(
                                      c.__name__ for c in SAMPLED_KINDS.values()) + ")")

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], where: str) -> ByStateLengths:
        """Build from ``{kind: by_state, on: {...}, off: {...}}``; each state's section is checked as a
        lengths section of its own (``where``.on, ``where``.off)."""
        check_keys(where, dict(d), {"kind", *cls.STATES})
        if d.get("kind", cls.kind) != cls.kind:
            raise ConfigError(where, "kind", d["kind"], repr(cls.kind))
        built: dict[str, Any] = {}
        for state in cls.STATES:
            raw = d.get(state, "<missing>")
            if raw is None or raw == "<missing>":
                raise ConfigError(where, state, raw, "a lengths section (a mapping with a kind: "
                                  + ", ".join(SAMPLED_KINDS) + f") for the requests that arrive in the {state} "
                                  "state (required)")
            require_mapping(where, state, raw)
            built[state] = build_section(where, state, raw, SAMPLED_KINDS, "lognormal")
        return cls(**built)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "on": self.on.to_dict(), "off": self.off.to_dict()}

    def describe(self) -> str:
        return f"by_state(on={self.on.describe()},off={self.off.describe()})"

    def sample_by_state(self, rng: np.random.Generator, on: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(prompt_tokens, output_tokens) int64 arrays for requests whose arrival states are ``on`` (a bool
        array: True = on state); see the class docstring for the draw order. Takes two 64-bit integers
        from ``rng`` whatever ``on`` holds."""
        on = np.asarray(on, dtype=bool)
        prompt = np.empty(on.size, dtype=np.int64)
        output = np.empty(on.size, dtype=np.int64)
        for section, mask, g in zip((self.on, self.off), (on, ~on), child_generators(rng, 2), strict=True):
            idx = np.flatnonzero(mask)
            p, o = section.sample(g, int(idx.size))
            prompt[idx] = p
            output[idx] = o
        return prompt, output


LENGTH_KINDS: dict[str, type[Section]] = {
    c.kind: c for c in (LognormalLengths, ParetoLengths, EmpiricalLengths, FixedLengths, TraceLengths,
                        ByStateLengths)
}
LengthsConfig = LognormalLengths | ParetoLengths | EmpiricalLengths | FixedLengths | TraceLengths | ByStateLengths
