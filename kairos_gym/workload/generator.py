"""``generate``: turn a :class:`WorkloadConfig` and a seeded generator into a :class:`Workload`."""

from __future__ import annotations

import numpy as np

from kairos_gym.errors import ConfigError
from kairos_gym.workload.arrivals import MMPPArrival, SyntheticArrival, TraceArrival
from kairos_gym.workload.config import WorkloadConfig
from kairos_gym.workload.lengths import ByStateLengths, SampledLengths
from kairos_gym.workload.streams import child_generators
from kairos_gym.workload.workload import Workload


def generate(cfg: WorkloadConfig, rng: np.random.Generator) -> Workload:
    """Draw a workload. All randomness comes from ``rng``: the same seed gives identical arrays.

    The workload is prefix-stable: its first N requests (every field) do not depend on how many
    requests it has (``num_requests``, ``duration_s``, ``max_requests``). ``rng`` seeds two
    independent child streams (:func:`~kairos_gym.workload.streams.child_generators`; it gives
    exactly two 64-bit integers, whatever the workload): one for arrival times, one for lengths
    (which :meth:`SampledLengths.sample` splits into a prompt and an output stream). A trace with its
    own lengths draws nothing from ``rng``. Synthetic arrivals are cut to ``max_requests`` before
    lengths are drawn. ``lengths.kind: by_state`` (MMPP arrivals) takes each arrival's state from the
    same arrival draw (:meth:`MMPPArrival.sample_with_states`) and splits the lengths stream into one
    stream per state (:class:`ByStateLengths`). A workload above
    :data:`~kairos_gym.workload.config.MAX_REQUESTS` is refused (:meth:`WorkloadConfig.check_whole_size`)
    before anything is drawn; a chunked
    :class:`~kairos_gym.workload.chunked.WorkloadStream` gives bigger ones.
    """
    if not isinstance(cfg, WorkloadConfig):
        raise ConfigError("generate", "cfg", cfg, "a WorkloadConfig (WorkloadConfig.from_dict(d))")
    if not isinstance(rng, np.random.Generator):
        raise ConfigError("generate", "rng", rng, "a numpy.random.Generator (np.random.default_rng(seed))")
    cfg.check_whole_size("generate: workload")  # whole: MAX_REQUESTS (chunked.py streams bigger ones)
    arrival, lengths = cfg.arrival, cfg.effective_lengths
    if isinstance(arrival, TraceArrival):
        replay = arrival.replay(duration_s=cfg.duration_s, max_requests=cfg.max_requests)
        if not isinstance(lengths, SampledLengths):
            return Workload(replay.arrival_s, replay.prompt_tokens, replay.output_tokens, cfg.describe())
        _, lengths_rng = child_generators(rng, 2)
        prompt, output = lengths.sample(lengths_rng, len(replay))
        return Workload(replay.arrival_s, prompt, output, cfg.describe())
    arrival_rng, lengths_rng = child_generators(rng, 2)
    if isinstance(lengths, ByStateLengths):  # lengths by the MMPP state at each arrival (config checks: mmpp)
        assert isinstance(arrival, MMPPArrival)
        times, on = arrival.sample_with_states(arrival_rng, num_requests=cfg.effective_num_requests,
                                               duration_s=cfg.duration_s)
        if cfg.max_requests is not None:
            times, on = times[: cfg.max_requests], on[: cfg.max_requests]
        prompt, output = lengths.sample_by_state(lengths_rng, on)
        return Workload(times, prompt, output, cfg.describe())
    assert isinstance(arrival, SyntheticArrival) and isinstance(lengths, SampledLengths)
    times = arrival.sample(arrival_rng, num_requests=cfg.effective_num_requests, duration_s=cfg.duration_s)
    if cfg.max_requests is not None:
        times = times[: cfg.max_requests]
    prompt, output = lengths.sample(lengths_rng, times.size)
    return Workload(times, prompt, output, cfg.describe())


def arrival_states(cfg: WorkloadConfig, rng: np.random.Generator) -> np.ndarray:
    """The MMPP state at each arrival of the workload ``generate(cfg, rng)`` draws from a generator in the same
    state: a bool array, True = on (for analysis: e.g. SLO attainment per state). The arrival times are drawn
    again from the same stream, so the states line up with the requests one for one. Raises
    :class:`ConfigError` unless ``cfg.arrival`` is an MMPP (the only arrival process with a state)."""
    if not isinstance(cfg, WorkloadConfig):
        raise ConfigError("arrival_states", "cfg", cfg, "a WorkloadConfig (WorkloadConfig.from_dict(d))")
    if not isinstance(rng, np.random.Generator):
        raise ConfigError("arrival_states", "rng", rng, "a numpy.random.Generator (np.random.default_rng(seed))")
    if not isinstance(cfg.arrival, MMPPArrival):
        raise ConfigError("arrival_states", "arrival.kind", cfg.arrival.kind, "'mmpp' (the only arrival process "
                          "with a state)")
    arrival_rng, _ = child_generators(rng, 2)
    _, on = cfg.arrival.sample_with_states(arrival_rng, num_requests=cfg.effective_num_requests,
                                           duration_s=cfg.duration_s)
    return on if cfg.max_requests is None else on[: cfg.max_requests]


def state_only(cfg: WorkloadConfig, state: str) -> WorkloadConfig:
    """``cfg`` with one MMPP state only (for analysis: each state of a regime-shift workload alone): Poisson
    arrivals at that state's rate and that state's lengths (``lengths: {kind: by_state}``), the count or duration
    unchanged. ``state``: ``"on"`` or ``"off"``. Raises :class:`ConfigError` unless ``cfg`` has MMPP arrivals and
    by-state lengths."""
    if state not in ByStateLengths.STATES:
        raise ConfigError("state_only", "state", state, "on or off")
    if not isinstance(cfg.arrival, MMPPArrival):
        raise ConfigError("state_only", "workload.arrival.kind", cfg.arrival.kind, "'mmpp' (two states)")
    lengths = cfg.effective_lengths
    if not isinstance(lengths, ByStateLengths):
        raise ConfigError("state_only", "workload.lengths.kind", getattr(lengths, "kind", None),
                          "'by_state' (one length section per MMPP state)")
    d = cfg.to_dict()
    d["arrival"] = {"kind": "poisson", "rate": cfg.arrival.rate_on if state == "on" else cfg.arrival.rate_off}
    d["lengths"] = getattr(lengths, state).to_dict()
    return WorkloadConfig.from_dict(d)
