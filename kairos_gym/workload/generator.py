"""``generate``: turn a :class:`WorkloadConfig` and a seeded generator into a :class:`Workload`."""

from __future__ import annotations

import numpy as np

from kairos_gym.errors import ConfigError
from kairos_gym.workload.arrivals import SyntheticArrival, TraceArrival
from kairos_gym.workload.config import WorkloadConfig
from kairos_gym.workload.lengths import SampledLengths
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
    lengths are drawn. A workload above :data:`~kairos_gym.workload.config.MAX_REQUESTS` is refused
    (:meth:`WorkloadConfig.check_whole_size`) before anything is drawn; a chunked
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
    assert isinstance(arrival, SyntheticArrival) and isinstance(lengths, SampledLengths)
    arrival_rng, lengths_rng = child_generators(rng, 2)
    times = arrival.sample(arrival_rng, num_requests=cfg.effective_num_requests, duration_s=cfg.duration_s)
    if cfg.max_requests is not None:
        times = times[: cfg.max_requests]
    prompt, output = lengths.sample(lengths_rng, times.size)
    return Workload(times, prompt, output, cfg.describe())
