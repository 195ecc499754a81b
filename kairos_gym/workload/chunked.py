"""Chunked generation of a synthetic workload: :class:`WorkloadStream` hands out the requests of
:func:`~kairos_gym.workload.generator.generate` a chunk at a time, so a long run never holds its whole workload
(streaming metrics, docs/reliability.md "Long runs").

The chunks, concatenated, are **bit for bit** the arrays ``generate(cfg, rng)`` returns for the same ``rng``
state: the samplers are prefix-stable (kairos_gym/workload/streams.py) and each stream below keeps the state a
whole draw carries from one batch to the next (the running sum of inter-arrival times, the MMPP sojourn
streams, the rejection sampler's accepted values not handed out yet; for ``lengths: {kind: by_state}`` the MMPP
state of every buffered arrival and one length stream per state), so batch sizes never change a value.
``rng`` is consumed exactly as ``generate`` consumes it (two 64-bit integers, at construction), so what the run
draws from it afterwards (the realistic track's noise seed, the faults) is unchanged too.

Only synthetic arrivals (poisson, gamma, mmpp, profile) stream; a trace replay is bounded by its file and stays whole.
Times in seconds, lengths in tokens, sizes in requests.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np

from kairos_gym.errors import ConfigError
from kairos_gym.workload.arrivals import GammaArrival, MMPPArrival, PoissonArrival, ProfileArrival
from kairos_gym.workload.config import WorkloadConfig
from kairos_gym.workload.lengths import (
    ByStateLengths,
    EmpiricalLengths,
    FixedLengths,
    TruncatedLengths,
    TruncatedStream,
)
from kairos_gym.workload.streams import child_generators
from kairos_gym.workload.traces import load_trace

MAX_CHUNK = 1 << 22
"""Largest chunk a :class:`WorkloadStream` hands out at once (requests)."""

_EMPTY_F = np.empty(0, dtype=np.float64)
_EMPTY_B = np.empty(0, dtype=bool)


class _LengthStream:
    """The (prompt, output) pairs of a ``SampledLengths`` config, in request order, a chunk at a time."""

    def __init__(self, lengths: object, rng: np.random.Generator) -> None:
        self._fixed: tuple[int, int] | None = None
        self._sides: list[TruncatedStream] = []
        self._pool = None
        self._rng = rng
        if isinstance(lengths, TruncatedLengths):
            self._sides = [TruncatedStream(d, c, a) for d, c, a in lengths.side_draws(rng)]
        elif isinstance(lengths, EmpiricalLengths):
            self._pool = load_trace(lengths.path, where=f"{lengths.WHERE}.path")
        elif isinstance(lengths, FixedLengths):
            self._fixed = (lengths.prompt_tokens, lengths.output_tokens)
        else:  # a config check refuses trace lengths with synthetic arrivals: unreachable
            raise ConfigError("workload.lengths", "kind", getattr(lengths, "kind", lengths),
                              "lognormal, pareto, empirical or fixed (a chunked workload draws its lengths)")

    def take(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        if self._sides:
            return self._sides[0].take(n), self._sides[1].take(n)
        if self._pool is not None:  # EmpiricalLengths.sample: one row index per request, drawn in order
            idx = self._rng.integers(0, len(self._pool), size=n)
            return self._pool.prompt_tokens[idx], self._pool.output_tokens[idx]
        assert self._fixed is not None
        return np.full(n, self._fixed[0], dtype=np.int64), np.full(n, self._fixed[1], dtype=np.int64)


class _ByStateLengthStream:
    """The (prompt, output) pairs of a ``by_state`` config, in request order, a chunk at a time: one
    :class:`_LengthStream` per MMPP state on the two child streams ``ByStateLengths.sample_by_state`` splits the
    lengths stream into (the k-th request arriving in state s takes the k-th pair of state s's stream)."""

    def __init__(self, lengths: ByStateLengths, rng: np.random.Generator) -> None:
        g_on, g_off = child_generators(rng, 2)
        self._on = _LengthStream(lengths.on, g_on)
        self._off = _LengthStream(lengths.off, g_off)

    def take(self, on: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The pairs of requests whose arrival states are ``on`` (bool: True = on)."""
        prompt = np.empty(on.size, dtype=np.int64)
        output = np.empty(on.size, dtype=np.int64)
        for stream, mask in ((self._on, on), (self._off, ~on)):
            idx = np.flatnonzero(mask)
            if idx.size:
                prompt[idx], output[idx] = stream.take(int(idx.size))
        return prompt, output


def _renewal_batches(draw: Callable[[int], np.ndarray], batch: int,
                     count: int | None) -> Iterator[tuple[np.ndarray, float]]:
    """Arrival times of a renewal process, ``batch`` at a time (``count``: stop after that many), with the last
    time: the running sum carries over from batch to batch exactly as in ``arrivals._renewal``."""
    t0 = 0.0
    left = count
    while left is None or left > 0:
        m = batch if left is None else min(batch, left)
        times = np.cumsum(np.concatenate(([t0], draw(m))))[1:]
        t0 = float(times[-1])
        if left is not None:
            left -= m
        yield times, t0


class WorkloadStream:
    """The workload ``generate(cfg, rng)`` would return, a chunk at a time (see the module docstring).

    Args:
        cfg: a workload config with synthetic arrivals (poisson, gamma, mmpp, profile).
        rng: the run's generator (consumed as ``generate`` consumes it).
        batch: requests the samplers draw at a time (any value gives the same requests; memory ~ batch).

    Attributes:
        source: provenance, ``cfg.describe()`` (what ``Workload.source`` would say).
        loaded: requests handed out so far.
        done: True once the last request has been handed out.
    """

    def __init__(self, cfg: WorkloadConfig, rng: np.random.Generator, batch: int = 1 << 15) -> None:
        arrival = cfg.arrival
        if not isinstance(arrival, (PoissonArrival, GammaArrival, MMPPArrival, ProfileArrival)):
            raise ConfigError("workload", "arrival.kind", getattr(arrival, "kind", arrival),
                              "poisson, gamma, mmpp or profile for a chunked workload (a trace replay is loaded "
                              "whole)")
        if isinstance(batch, bool) or not isinstance(batch, int) or not 1 <= batch <= MAX_CHUNK:
            raise ConfigError("WorkloadStream", "batch", batch, f"a whole number of requests from 1 to {MAX_CHUNK}")
        self.source = cfg.describe()
        arrival_rng, lengths_rng = child_generators(rng, 2)  # generate()'s two streams, in its order
        count = cfg.effective_num_requests
        self._duration = cfg.duration_s
        caps = [c for c in (count, cfg.max_requests) if c is not None]
        self._cap: int | None = min(caps) if caps else None  # most requests (None: until duration_s)
        lengths = cfg.effective_lengths
        self._by_state = isinstance(lengths, ByStateLengths)
        self._batches: Iterator[tuple[np.ndarray, float, np.ndarray | None]]
        if isinstance(arrival, MMPPArrival):
            pairs = int(min(max(1.1 * batch / arrival.per_cycle() + 16, 16), 1 << 20))  # on/off pairs per draw
            self._batches = arrival.batches(arrival_rng, pairs, with_states=self._by_state)
        elif isinstance(arrival, ProfileArrival):  # thinning: candidates per draw, about batch kept
            candidates = int(min(max(1.1 * batch * float(arrival.window_rates().max()) / arrival.rate + 16, 16),
                                 1 << 22))
            self._batches = arrival.batches(arrival_rng, candidates)
        else:  # a config check refuses by_state lengths without mmpp arrivals
            self._batches = ((t, end, None) for t, end in _renewal_batches(arrival.draw_fn(arrival_rng), batch,
                                                                           self._cap))
        self._lengths: _LengthStream | _ByStateLengthStream = (
            _ByStateLengthStream(lengths, lengths_rng) if isinstance(lengths, ByStateLengths)
            else _LengthStream(lengths, lengths_rng))
        self._buf = _EMPTY_F  # arrival times drawn, not handed out yet
        self._buf_on = _EMPTY_B  # by_state: the MMPP state (True: on) of each buffered arrival
        self._exhausted = False  # no time after the buffer's
        self._made = 0  # times put into the buffer so far
        self.loaded = 0
        self.done = False

    def _fill(self, k: int) -> None:
        """Draw until the buffer holds more than ``k`` times or no time is left."""
        parts = [self._buf]
        on_parts = [self._buf_on]
        have = self._buf.size
        while have <= k and not self._exhausted:
            times, end, on = next(self._batches)
            if self._duration is not None:
                if end >= self._duration:
                    times = times[times < self._duration]  # non-decreasing: a prefix
                    self._exhausted = True
            if self._cap is not None and self._made + times.size >= self._cap:
                times = times[: self._cap - self._made]
                self._exhausted = True
            self._made += times.size
            parts.append(times)
            if on is not None:
                on_parts.append(on[: times.size])  # the states of the times kept (a prefix)
            have += times.size
        if len(parts) > 1:
            self._buf = np.concatenate(parts)
            if self._by_state:
                self._buf_on = np.concatenate(on_parts)

    def take(self, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, bool]:
        """The next at most ``k`` requests (1 <= k <= :data:`MAX_CHUNK`): (float64 arrival s, int64 prompt tokens,
        int64 output tokens, last), fewer than ``k`` only in the last chunk; ``last``: no request follows (known one
        request ahead, so a chunk is empty only when the workload has no request at all)."""
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_CHUNK:
            raise ConfigError("WorkloadStream.take", "k", k, f"a whole number of requests from 1 to {MAX_CHUNK}")
        if self.done:
            raise ConfigError("WorkloadStream.take", "k", k, "no call after the last chunk (done is True)")
        self._fill(k)
        times, self._buf = self._buf[:k], self._buf[k:].copy()
        last = self._exhausted and self._buf.size == 0
        if isinstance(self._lengths, _ByStateLengthStream):
            on, self._buf_on = self._buf_on[:k], self._buf_on[k:].copy()
            prompt, output = self._lengths.take(on)
        else:
            prompt, output = self._lengths.take(times.size)
        self.loaded += times.size
        self.done = last
        return times, prompt, output, last
