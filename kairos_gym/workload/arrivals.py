"""Arrival processes: their config sections (``arrival.kind``) and samplers. Times are seconds.

Synthetic processes start at t = 0; Poisson and Gamma are renewal processes whose first request
arrives one inter-arrival time after 0. All randomness comes from the ``rng`` argument.

Every sampler is prefix-stable: it draws sequentially (batch sizes never change which draw feeds which
request, and running sums carry over between batches exactly), so the first N times are the same for
``num_requests = N`` or any larger count, and the times < D are the same for ``duration_s = D`` or any
longer duration.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from kairos_gym.errors import ConfigError
from kairos_gym.workload import portable_random as pr
from kairos_gym.workload.rate_profile import MAX_WINDOWS
from kairos_gym.workload.rules import (
    MAX_RATE,
    MIN_RATE,
    OPTIONAL_NON_NEGATIVE,
    OPTIONAL_POSITIVE,
    PERIOD_S,
    POSITIVE,
    RATE,
    RATE_OR_ZERO,
    TEXT,
    Number,
    Section,
    Text,
    fmt_value,
)
from kairos_gym.workload.streams import child_generators
from kairos_gym.workload.traces import load_trace, resolve_trace_path
from kairos_gym.workload.workload import Workload

_WHERE = "workload.arrival"
MAX_MMPP_CYCLES = 10_000_000
"""Upper bound on the expected number of MMPP on/off cycles a run needs (guards against tiny sojourns and
sub-normal rates: checked by :meth:`MMPPArrival.check_cycles`, both when a scenario is loaded and when a sampler
built directly in Python is asked for arrivals)."""


class SyntheticArrival(Section):
    """Base of the synthetic processes: ``mean_rate`` and ``sample``."""

    WHERE: ClassVar[str] = _WHERE

    def mean_rate(self) -> float:
        """Long-run mean arrival rate in requests per second."""
        raise NotImplementedError

    def rate_overrides(self, factor: float) -> dict[str, float]:
        """The fields that multiply every arrival rate by ``factor`` (a ``with_overrides`` section): ``rate``."""
        return {"rate": self.rate * factor}  # type: ignore[attr-defined]

    def sample(self, rng: np.random.Generator, *, num_requests: int | None = None,
               duration_s: float | None = None) -> np.ndarray:
        """Arrival times (float64 seconds, non-decreasing, >= 0).

        Exactly ``num_requests`` times, or every arrival with time < ``duration_s``; give one.
        """
        raise NotImplementedError


@dataclass(frozen=True)
class PoissonArrival(SyntheticArrival):
    """Poisson process: exponential inter-arrival times with mean 1/rate.

    Attributes:
        rate: requests per second, finite and > 0.
    """

    kind: ClassVar[str] = "poisson"
    RULES: ClassVar[dict[str, Number | Text]] = {"rate": RATE}
    rate: float = 8.0

    def mean_rate(self) -> float:
        return self.rate

    def draw_fn(self, rng: np.random.Generator) -> Callable[[int], np.ndarray]:
        """The next ``m`` inter-arrival times (s) of the stream ``rng`` (sequential)."""
        return lambda m: pr.exponential(rng, 1.0 / self.rate, m)

    def sample(self, rng: np.random.Generator, *, num_requests: int | None = None,
               duration_s: float | None = None) -> np.ndarray:
        return _renewal(self.draw_fn(rng), self.rate, num_requests, duration_s)


@dataclass(frozen=True)
class GammaArrival(SyntheticArrival):
    """Gamma renewal process; CV > 1 gives bursts (CV = 1 is Poisson).

    Inter-arrival times are Gamma(shape = 1/cv^2, scale = 1/(rate*shape)): mean 1/rate, CV ``cv``.

    Attributes:
        rate: requests per second, finite and > 0.
        cv: coefficient of variation (std/mean) of the inter-arrival times, finite and > 0.
    """

    kind: ClassVar[str] = "gamma"
    RULES: ClassVar[dict[str, Number | Text]] = {"rate": RATE, "cv": POSITIVE}
    rate: float = 8.0
    cv: float = 4.0

    def mean_rate(self) -> float:
        return self.rate

    def draw_fn(self, rng: np.random.Generator) -> Callable[[int], np.ndarray]:
        """The next ``m`` inter-arrival times (s) of the stream ``rng`` (sequential)."""
        shape = 1.0 / (self.cv * self.cv)  # a product, not libm's pow
        scale = 1.0 / (self.rate * shape)
        return lambda m: pr.gamma(rng, shape, scale, m)

    def sample(self, rng: np.random.Generator, *, num_requests: int | None = None,
               duration_s: float | None = None) -> np.ndarray:
        return _renewal(self.draw_fn(rng), self.rate, num_requests, duration_s)


@dataclass(frozen=True)
class MMPPArrival(SyntheticArrival):
    """On/off Markov-modulated Poisson process (two states), starting in "on" at t = 0.

    Sojourns are exponential with means ``mean_on_s`` / ``mean_off_s``; arrivals are Poisson with
    ``rate_on`` while on and ``rate_off`` while off. Long-run rate:
    ``(rate_on*mean_on_s + rate_off*mean_off_s) / (mean_on_s + mean_off_s)``.

    Attributes:
        rate_on: requests per second in the on state, >= 0.
        rate_off: requests per second in the off state, >= 0 (not both 0).
        mean_on_s: mean on-period in seconds, > 0.
        mean_off_s: mean off-period in seconds, > 0.
    """

    kind: ClassVar[str] = "mmpp"
    RULES: ClassVar[dict[str, Number | Text]] = {
        "rate_on": RATE_OR_ZERO, "rate_off": RATE_OR_ZERO, "mean_on_s": PERIOD_S, "mean_off_s": PERIOD_S,
    }
    rate_on: float = 16.0
    rate_off: float = 0.0
    mean_on_s: float = 5.0
    mean_off_s: float = 5.0

    @classmethod
    def cross_check(cls, where: str, values: dict[str, Any]) -> None:
        if values["rate_on"] == 0 and values["rate_off"] == 0:
            raise ConfigError(where, "rate_on", values["rate_on"], "> 0 when rate_off is 0 too "
                              "(with rate_on = rate_off = 0 no request ever arrives)")
        for name in ("rate_on", "rate_off"):
            if 0 < values[name] < MIN_RATE:
                raise ConfigError(where, name, values[name], f"0 or a rate from {MIN_RATE:g} to {MAX_RATE:g} req/s")

    def rate_overrides(self, factor: float) -> dict[str, float]:
        """Both states' rates times ``factor`` (the sojourns unchanged)."""
        return {"rate_on": self.rate_on * factor, "rate_off": self.rate_off * factor}

    def p_on(self) -> float:
        """Long-run fraction of time in the on state."""
        return self.mean_on_s / (self.mean_on_s + self.mean_off_s)

    def mean_rate(self) -> float:
        p = self.p_on()
        return self.rate_on * p + self.rate_off * (1.0 - p)

    def sample(self, rng: np.random.Generator, *, num_requests: int | None = None,
               duration_s: float | None = None) -> np.ndarray:
        """Arrival times; see :meth:`SyntheticArrival.sample`.

        Three child streams of ``rng`` (:func:`child_generators`) draw the sojourn lengths, the
        per-sojourn Poisson counts and the uniform positions of the arrivals within a sojourn, each in
        sojourn order, so the times of sojourn k depend only on sojourns 0..k (prefix-stable).
        """
        return self._sample(rng, num_requests, duration_s, with_states=False)[0]

    # --- the state of each arrival (for ``lengths.kind: by_state``) ------------------------------------
    def sample_with_states(self, rng: np.random.Generator, *, num_requests: int | None = None,
                           duration_s: float | None = None) -> tuple[np.ndarray, np.ndarray]:
        """``(times, on)``: the arrival times :meth:`sample` draws from the same ``rng`` (bit-identical) and a
        bool array, True where the arrival came in an on sojourn, False in an off one.

        Each arrival's state is the state of the sojourn that drew it (an arrival exactly at a sojourn
        boundary belongs to the sojourn whose uniform position put it there): the times of a batch are
        ordered by a stable argsort, which gives the same times as ``np.sort`` and carries each
        arrival's sojourn along. Prefix-stable like the times.
        """
        times, on = self._sample(rng, num_requests, duration_s, with_states=True)
        assert on is not None
        return times, on

    def cycles_needed(self, num_requests: int | None, duration_s: float | None) -> float:
        """Expected on/off cycles a run of ``num_requests`` requests or ``duration_s`` seconds needs."""
        if num_requests is not None:
            return num_requests / self.per_cycle()
        assert duration_s is not None
        return duration_s / (self.mean_on_s + self.mean_off_s)

    def check_cycles(self, where: str, num_requests: int | None, duration_s: float | None) -> float:
        """:meth:`cycles_needed`, or a ConfigError when it exceeds :data:`MAX_MMPP_CYCLES` (a sub-normal rate or
        tiny sojourns would otherwise draw for hours)."""
        cycles = self.cycles_needed(num_requests, duration_s)
        if not cycles <= MAX_MMPP_CYCLES:
            raise ConfigError(where, "mean_on_s, mean_off_s", [self.mean_on_s, self.mean_off_s],
                              f"sojourns (and rates: {self.rate_on:g}, {self.rate_off:g} req/s) long enough that the "
                              f"run needs at most {MAX_MMPP_CYCLES} on/off cycles (now about {cycles:.3g})")
        return cycles

    def _sample(self, rng: np.random.Generator, num_requests: int | None, duration_s: float | None,
                with_states: bool) -> tuple[np.ndarray, np.ndarray | None]:
        """The sampler behind :meth:`sample` and :meth:`sample_with_states` (``on``: None unless asked)."""
        want_cycles = self.check_cycles(_WHERE, num_requests, duration_s)
        batch = int(min(max(1.1 * want_cycles + 16, 16), 1 << 20))  # on/off pairs per draw
        return _cut(self.batches(rng, batch, with_states=with_states), num_requests, duration_s)

    def per_cycle(self) -> float:
        """Mean arrivals of one on/off cycle (requests)."""
        return self.rate_on * self.mean_on_s + self.rate_off * self.mean_off_s

    def batches(self, rng: np.random.Generator, batch: int,
                with_states: bool = False) -> Iterator[tuple[np.ndarray, float, np.ndarray | None]]:
        """The arrival times of ``batch`` on/off pairs at a time, endlessly, with the end of the last sojourn (s)
        and (``with_states``) each arrival's state (True: on; else None): the sequence :meth:`sample` cuts (and
        the chunked workload, kairos_gym/workload/chunked.py). The times do not depend on ``batch`` (prefix-stable
        streams)."""
        rates = np.tile([self.rate_on, self.rate_off], batch)
        means = np.tile([self.mean_on_s, self.mean_off_s], batch)
        sojourn_rng, count_rng, position_rng = child_generators(rng, 3)
        t0 = 0.0
        while True:
            lengths = pr.exponential(sojourn_rng, means)  # alternating on, off, on, off, ... sojourns
            edges = np.cumsum(np.concatenate(([t0], lengths)))  # running sum carried over exactly
            starts = edges[:-1]
            counts = pr.poisson(count_rng, rates * lengths)
            seg = np.repeat(np.arange(lengths.size), counts)
            # sojourns are disjoint and in time order, so sorting the batch sorts each sojourn's arrivals
            raw = starts[seg] + position_rng.random(seg.size) * lengths[seg]
            on: np.ndarray | None = None
            if with_states:  # the same sorted times, and each one's sojourn (even index: on; batches are pairs)
                order = np.argsort(raw, kind="stable")
                times = raw[order]
                on = seg[order] % 2 == 0
            else:
                times = np.sort(raw)
            t0 = float(edges[-1])
            yield times, t0, on


@dataclass(frozen=True)
class TraceArrival(Section):
    """Replay of a trace file's arrival times (and, by default, its lengths).

    Attributes:
        path: packaged trace name (``azure2023_code``) or CSV path; must exist.
        rate_scale: arrival times are divided by this (> 0); 2 = twice the load, half the span.
        start_s: window start in original trace seconds (>= 0, or null = 0); times are shifted so
            the window starts at 0.
        end_s: window end in original trace seconds (> start_s, or null = end of trace), exclusive.
    """

    kind: ClassVar[str] = "trace"
    WHERE: ClassVar[str] = _WHERE
    RULES: ClassVar[dict[str, Number | Text]] = {
        "path": TEXT, "rate_scale": POSITIVE, "start_s": OPTIONAL_NON_NEGATIVE, "end_s": OPTIONAL_POSITIVE,
    }
    path: str
    rate_scale: float = 1.0
    start_s: float | None = None
    end_s: float | None = None

    @classmethod
    def cross_check(cls, where: str, values: dict[str, Any]) -> None:
        start, end = values["start_s"] or 0.0, values["end_s"]
        if end is not None and end <= start:
            raise ConfigError(where, "end_s", end, f"> start_s = {start:g} seconds, or null")
        resolve_trace_path(values["path"], where=where)

    def rate_overrides(self, factor: float) -> dict[str, float]:
        """The replay ``factor`` times as fast (``rate_scale`` times ``factor``)."""
        return {"rate_scale": self.rate_scale * factor}

    def describe(self) -> str:
        name = resolve_trace_path(self.path, where=self.WHERE).name if "/" not in self.path else self.path
        text = f"trace:{name} rate_scale={fmt_value(self.rate_scale)}"
        if self.start_s is not None or self.end_s is not None:
            end = math.inf if self.end_s is None else self.end_s
            text += f" window=[{fmt_value(self.start_s or 0.0)},{fmt_value(end)})"
        return text

    def replay(self, *, duration_s: float | None = None, max_requests: int | None = None) -> Workload:
        """The trace cut to the window, shifted to start at 0 and divided by ``rate_scale``; then
        only arrivals < ``duration_s`` (scaled seconds), then the first ``max_requests``.

        Raises :class:`ConfigError` if no request is left.
        """
        full = load_trace(self.path, where=f"{self.WHERE}.path")
        start = self.start_s or 0.0
        end = math.inf if self.end_s is None else self.end_s
        w = full.window(start, end) if (start or self.end_s is not None) else full
        t = w.arrival_s / self.rate_scale
        n = len(w)
        if duration_s is not None:
            n = int(np.searchsorted(t, duration_s, side="left"))
        if max_requests is not None:
            n = min(n, max_requests)
        if n == 0:
            cut = "" if duration_s is None else f" with time / rate_scale < duration_s = {duration_s:g}"
            raise ConfigError(self.WHERE, "start_s, end_s", [self.start_s, self.end_s],
                              f"a window of {self.path} that holds at least one request{cut}")
        return Workload(t[:n], w.prompt_tokens[:n], w.output_tokens[:n], self.describe())


MAX_PEAK_RATIO = 50.0
"""Largest ratio of a rate profile's peak window rate to its mean (the thinning sampler draws peak / mean
candidates per request; :class:`ProfileArrival`)."""


@dataclass(frozen=True)
class ProfileArrival(SyntheticArrival):
    """Non-homogeneous Poisson process whose rate follows a rate profile (piecewise constant per window).

    The profile (kairos_gym/workload/rate_profile.py: a model's per-window aggregate rates, e.g. ServeGen's
    10-minute windows over 14 days) is cut to windows ``first_window .. first_window + num_windows - 1``,
    scaled so its mean is ``rate`` and compressed so that one window lasts ``window_s`` simulated seconds; it
    repeats after its last window. Window ``j`` (simulated ``[j * window_s, (j + 1) * window_s)``, modulo the
    profile's length) has rate ``rate * r_j / mean(r)``.

    Sampling (prefix-stable) is thinning: candidates from a Poisson process at the peak rate (running sums of
    exponential gaps, one child stream), each kept with probability ``rate_j / peak`` by a uniform of a second
    child stream drawn in candidate order, so request ``i`` depends only on the first candidates.

    Attributes:
        path: packaged profile name (``servegen_rate_profiles``) or CSV path.
        model: the profile's ``model`` column value (``m-large``, ``m-mid``, ``m-small``, ``deepseek-r1``,
            ``mm-image`` in the packaged file).
        rate: mean arrival rate over the windows used (requests per second), > 0.
        window_s: simulated seconds per profile window, > 0 (600: real time for ServeGen's windows).
        first_window: the first window used (0-based), >= 0.
        num_windows: windows used (null: every window from ``first_window`` to the end), 1 to ``MAX_WINDOWS``.
    """

    kind: ClassVar[str] = "profile"
    RULES: ClassVar[dict[str, Number | Text]] = {
        "path": TEXT, "model": TEXT, "rate": RATE, "window_s": PERIOD_S,
        "first_window": Number(integer=True, low=0, high=MAX_WINDOWS),
        "num_windows": Number(integer=True, low=1, optional=True, high=MAX_WINDOWS),
    }
    path: str = "servegen_rate_profiles"
    model: str = "m-large"
    rate: float = 15.0
    window_s: float = 6.0
    first_window: int = 0
    num_windows: int | None = None

    @classmethod
    def cross_check(cls, where: str, values: dict[str, Any]) -> None:
        _profile_rates(where, values["path"], values["model"], values["rate"], values["first_window"],
                       values["num_windows"])

    def window_rates(self) -> np.ndarray:
        """The rate of each window used (requests per second, read-only), mean ``rate``."""
        return _profile_rates(self.WHERE, self.path, self.model, self.rate, self.first_window, self.num_windows)

    def mean_rate(self) -> float:
        return self.rate

    def batches(self, rng: np.random.Generator, batch: int) -> Iterator[tuple[np.ndarray, float, None]]:
        """The kept arrival times among ``batch`` candidates at a time, endlessly, with the last candidate's time
        (s): the sequence :meth:`sample` cuts (and the chunked workload). The times do not depend on ``batch``."""
        rates = self.window_rates()
        peak = float(rates.max())
        candidate_rng, keep_rng = child_generators(rng, 2)
        n = rates.size
        t0 = 0.0
        while True:
            times = np.cumsum(np.concatenate(([t0], pr.exponential(candidate_rng, 1.0 / peak, batch))))[1:]
            t0 = float(times[-1])
            window = np.floor(times / self.window_s).astype(np.int64) % n
            keep = keep_rng.random(batch) * peak < rates[window]
            yield times[keep], t0, None

    def sample(self, rng: np.random.Generator, *, num_requests: int | None = None,
               duration_s: float | None = None) -> np.ndarray:
        """Arrival times; see :meth:`SyntheticArrival.sample` and the class docstring."""
        rates = self.window_rates()
        ratio = float(rates.max()) / self.rate  # candidates per request
        want = num_requests * ratio if num_requests is not None else float(rates.max()) * duration_s
        batch = int(min(max(1.1 * want + 16, 16), 1 << 22))
        return _cut(self.batches(rng, batch), num_requests, duration_s)[0]


def _cut(batches: Iterator[tuple[np.ndarray, float, np.ndarray | None]], num_requests: int | None,
         duration_s: float | None) -> tuple[np.ndarray, np.ndarray | None]:
    """The first ``num_requests`` arrival times of a stream of batches ``(times, end of the batch (s), states or
    None)``, or those < ``duration_s``, with their states (None when the batches carry none)."""
    chunks: list[np.ndarray] = []
    on_chunks: list[np.ndarray] = []
    count = 0
    for times, t0, on in batches:
        chunks.append(times)
        if on is not None:
            on_chunks.append(on)
        count += times.size
        if (num_requests is not None and count >= num_requests) or (duration_s is not None and t0 >= duration_s):
            break
    out = np.concatenate(chunks)
    keep = num_requests if num_requests is not None else int(np.searchsorted(out, duration_s, side="left"))
    return out[:keep], (np.concatenate(on_chunks)[:keep] if on_chunks else None)


def _profile_rates(where: str, path: str, model: str, rate: float, first: int, count: int | None) -> np.ndarray:
    """The windows ``first .. first + count - 1`` of ``model``'s profile scaled to mean ``rate`` (read-only)."""
    from kairos_gym.workload.rate_profile import load_profile

    prof = load_profile(path, model, where=where)
    total = prof.rates.size
    if first >= total:
        raise ConfigError(where, "first_window", first, f"a window of {model}'s profile: 0 to {total - 1}")
    end = total if count is None else first + count
    if end > total:
        raise ConfigError(where, "num_windows", count, f"at most {total - first} ({model}'s profile has {total} "
                          f"windows; first_window is {first}), or null")
    raw = prof.rates[first:end]
    mean = float(raw.mean())
    if not mean > 0:
        raise ConfigError(where, "model", model, f"a profile whose windows {first}..{end - 1} have a rate > 0 "
                          "somewhere (all are 0)")
    if raw.max() / mean > MAX_PEAK_RATIO:
        raise ConfigError(where, "num_windows", count, f"windows whose peak rate is at most {MAX_PEAK_RATIO:g}x "
                          f"their mean (now {raw.max() / mean:.3g}x: the thinning sampler would draw that many "
                          "candidates per request)")
    out = raw * (rate / mean)
    out.setflags(write=False)
    return out


ARRIVAL_KINDS: dict[str, type[Section]] = {
    c.kind: c for c in (PoissonArrival, GammaArrival, MMPPArrival, ProfileArrival, TraceArrival)
}
ArrivalConfig = PoissonArrival | GammaArrival | MMPPArrival | ProfileArrival | TraceArrival


def _renewal(draw: Callable[[int], np.ndarray], rate: float, num_requests: int | None,
             duration_s: float | None) -> np.ndarray:
    """Cumulative sums of i.i.d. inter-arrival times from ``draw(m)`` (m values per call).

    ``draw`` must be sequential (its values, concatenated over calls, do not depend on the ``m``s);
    each batch's running sum starts from the previous batch's last time, so the result is exactly
    ``np.cumsum`` of the whole sequence of draws, whatever the batch sizes.
    """
    if num_requests is not None:
        return np.cumsum(draw(num_requests))
    assert duration_s is not None
    chunk = int(min(rate * duration_s * 1.05 + 1024, 1 << 22))
    chunks: list[np.ndarray] = []
    t0 = 0.0
    while t0 < duration_s:
        times = np.cumsum(np.concatenate(([t0], draw(chunk))))[1:]
        chunks.append(times)
        t0 = float(times[-1])
    out = np.concatenate(chunks)
    return out[out < duration_s]
