"""A run's workload, before the core gets it: drawn whole or opened as a stream of chunks from the run's seed, and
checked against the cluster (an explicit seed, at least one request, no request longer than a decode node can
ever hold). :class:`~kairos_gym.sim.simulator.Simulator` calls these at every reset; the checks raise
:class:`~kairos_gym.errors.ConfigError` before anything changes. Lengths in tokens."""

from __future__ import annotations

from typing import Any

import numpy as np

from kairos_gym.errors import ConfigError
from kairos_gym.scenario import ScenarioConfig
from kairos_gym.workload import Workload, generate
from kairos_gym.workload.arrivals import SyntheticArrival
from kairos_gym.workload.chunked import WorkloadStream

Chunk = tuple[np.ndarray, np.ndarray, np.ndarray, bool]
"""One chunk of a streamed workload: arrival s (float64), prompt and output tokens (int64), and ``last``."""


def check_seed(where: str, seed: Any) -> int:
    """``seed`` as an int: a whole number >= 0 (an int or a numpy integer; not None, a bool or a float), so
    every run names its seed explicitly and reproduces."""
    if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool) and seed >= 0:
        return int(seed)
    raise ConfigError(where, "seed", seed, "a whole number >= 0 (seeds are explicit: the same seed gives the "
                      "same workload and run)")


def check_workload_arg(workload: Any) -> Workload | None:
    """A ``workload=`` argument: None or a :class:`~kairos_gym.workload.Workload`."""
    if workload is not None and not isinstance(workload, Workload):
        raise ConfigError("Simulator.reset", "workload", workload, "None or a kairos_gym.workload.Workload")
    return workload


class FitCheck:
    """The ``cluster.overlong: error`` check: no request may need more than ``limit`` tokens (the model's context
    or a decode node's KV capacity, the smaller), counting whole KV blocks of ``block`` tokens under the swap
    policy (``block`` None: reserve policy, exact tokens)."""

    def __init__(self, scenario: ScenarioConfig, limit: int, block: int | None) -> None:
        self.scenario = scenario
        self.limit = limit
        self.block = block

    def __call__(self, source: str, prompt: np.ndarray, output: np.ndarray, first_rid: int | None = None) -> None:
        """Raise :class:`ConfigError` naming the first request too long to fit (with ``cluster.overlong: error``;
        ``reject`` rejects such requests at arrival instead). ``first_rid``: the arrays are one chunk of a streamed
        workload, starting at that request id (None: the whole workload)."""
        sc = self.scenario
        if sc.cluster.overlong != "error":
            return
        total = prompt.astype(np.int64) + output.astype(np.int64)
        if self.block is not None:
            b = self.block
            total = -(-total // b) * b
        bad = np.flatnonzero(total > self.limit)
        if bad.size:
            i = int(bad[0])
            raise ConfigError(
                f"workload {source}", f"request {(first_rid or 0) + i} prompt_tokens + output_tokens",
                int(total[i]), f"<= {self.limit} tokens (model context / KV capacity of {sc.cluster.model}); "
                f"{bad.size} such requests{'' if first_rid is None else ' in this chunk'}: set "
                "cluster.overlong: reject to reject them at arrival",
            )


def is_chunked(scenario: ScenarioConfig, fixed: Workload | None) -> bool:
    """Is a run's workload generated in chunks? Streaming metrics, no fixed workload and synthetic arrivals (a
    trace replay is bounded by its file: loaded whole)."""
    return (scenario.metrics.mode == "streaming" and fixed is None
            and isinstance(scenario.workload.arrival, SyntheticArrival))


def draw_workload(scenario: ScenarioConfig, seed: int, fixed: Workload | None,
                  fits: FitCheck) -> tuple[np.random.Generator, Workload]:
    """``(rng, workload)`` of a whole run: the run's generator seeded by ``seed`` and the fixed workload, else one
    drawn from the scenario with that generator. Raises :class:`ConfigError` for an empty workload or (``fits``)
    an overlong request."""
    rng = np.random.default_rng(seed)
    wl = fixed if fixed is not None else generate(scenario.workload, rng)
    if not len(wl):
        if fixed is not None:
            raise ConfigError("Simulator", "workload", wl, "a workload with at least one request")
        scenario.workload.require_requests(0, wl.source, seed)
    fits(wl.source, wl.prompt_tokens, wl.output_tokens)
    return rng, wl


def open_stream(scenario: ScenarioConfig, seed: int, chunk: int,
                fits: FitCheck) -> tuple[np.random.Generator, WorkloadStream, Chunk]:
    """``(rng, stream, first chunk)`` of a chunked run (:func:`is_chunked`): the run's generator seeded by
    ``seed``, the :class:`~kairos_gym.workload.chunked.WorkloadStream` drawing from it (as ``generate`` would) and
    its first chunk of at most ``chunk`` requests, checked as :func:`draw_workload` checks a whole workload."""
    rng = np.random.default_rng(seed)
    stream = WorkloadStream(scenario.workload, rng, batch=chunk)
    first = stream.take(chunk)
    if not first[0].size:
        scenario.workload.require_requests(0, stream.source, seed)
    fits(stream.source, first[1], first[2], 0)
    return rng, stream, first


def stream_at(scenario: ScenarioConfig, seed: int, chunk: int, loaded: int) -> WorkloadStream:
    """The workload stream of ``seed`` that has handed out its first ``loaded`` requests (drawn again chunk by
    chunk and dropped: O(loaded) time, O(chunk) memory); what a restore of a chunked run rebuilds."""
    stream = WorkloadStream(scenario.workload, np.random.default_rng(seed), batch=chunk)
    while stream.loaded < loaded:
        stream.take(min(chunk, loaded - stream.loaded))
    return stream
