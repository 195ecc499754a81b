"""Workloads for kairos-gym: arrival processes, length distributions, trace loading and validation.

Produces a :class:`Workload` (arrival times in seconds, prompt and output lengths in tokens, and a
provenance string) from a :class:`WorkloadConfig` and a ``numpy.random.Generator``::

    cfg = WorkloadConfig.from_dict({"arrival": {"kind": "gamma", "rate": 8, "cv": 4}})
    wl = generate(cfg, np.random.default_rng(0))

Pure numpy; configs arrive as already-parsed dicts. See ``docs/workloads.md``.
"""

from __future__ import annotations

from kairos_gym.workload.arrivals import (
    MAX_MMPP_CYCLES,
    ArrivalConfig,
    GammaArrival,
    MMPPArrival,
    PoissonArrival,
    TraceArrival,
)
from kairos_gym.workload.config import (
    DEFAULT_NUM_REQUESTS,
    MAX_REQUESTS,
    MAX_STREAMED_REQUESTS,
    WorkloadConfig,
)
from kairos_gym.workload.generator import arrival_states, generate, state_only
from kairos_gym.workload.lengths import (
    MIN_ACCEPTANCE,
    ByStateLengths,
    EmpiricalLengths,
    FixedLengths,
    LengthsConfig,
    LognormalLengths,
    ParetoLengths,
    TraceLengths,
)
from kairos_gym.workload.traces import PACKAGED_TRACES, TRACE_DIR, load_trace, resolve_trace_path
from kairos_gym.workload.workload import Workload

__all__ = [
    "DEFAULT_NUM_REQUESTS",
    "MAX_MMPP_CYCLES",
    "MAX_REQUESTS",
    "MAX_STREAMED_REQUESTS",
    "MIN_ACCEPTANCE",
    "PACKAGED_TRACES",
    "TRACE_DIR",
    "ArrivalConfig",
    "ByStateLengths",
    "EmpiricalLengths",
    "FixedLengths",
    "GammaArrival",
    "LengthsConfig",
    "LognormalLengths",
    "MMPPArrival",
    "ParetoLengths",
    "PoissonArrival",
    "TraceArrival",
    "TraceLengths",
    "Workload",
    "WorkloadConfig",
    "arrival_states",
    "generate",
    "load_trace",
    "resolve_trace_path",
    "state_only",
]
