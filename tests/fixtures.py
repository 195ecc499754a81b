"""What the tests share: the small scenarios (one builder, :func:`tiny_scenario`, and the named runs built with it)
and the digest of a finished run (:func:`run_digest`).

tests/golden records runs of :data:`SMALL` and :data:`TINY`: a change to them (or to the builder's
output for them) makes the recorded dataset stop matching, so the golden tests fail rather than move.
"""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np

from kairos_gym.benchmark.suite import Task, seeds, windows
from kairos_gym.sim.simulator import request_columns

LENGTHS: dict[str, Any] = {"kind": "lognormal", "prompt_median": 1500, "prompt_sigma": 0.8, "prompt_max": 8000,
                           "output_median": 150, "output_sigma": 0.8, "output_max": 1000}
"""Lognormal lengths (tokens) shorter than the default's: prompts of median 1,500 (at most 8,000), outputs of median
150 (at most 1,000)."""
SHORT_OUTPUT_LENGTHS: dict[str, Any] = {**LENGTHS, "output_median": 60, "output_sigma": 0.5, "output_max": 400}
""":data:`LENGTHS` with short outputs (median 60, at most 400 tokens): quick runs of the benchmark and evaluation."""


def tiny_scenario(num_requests: int, *, name: str = "tiny", rate: float = 22, cv: float | None = 3,
                  lengths: dict[str, Any] | None = None, **sections: Any) -> dict[str, Any]:
    """A scenario dict of ``num_requests`` requests on the default cluster: gamma arrivals of ``rate`` requests/s
    with coefficient of variation ``cv`` (``cv=None``: Poisson arrivals), lengths ``lengths`` (None: the
    workload's default lengths); ``sections`` adds top-level sections (``cluster``, ``slo``, ...)."""
    arrival = {"kind": "poisson", "rate": rate} if cv is None else {"kind": "gamma", "rate": rate, "cv": cv}
    workload: dict[str, Any] = {"arrival": arrival, "num_requests": num_requests}
    if lengths is not None:
        workload["lengths"] = dict(lengths)
    return {"name": name, "workload": workload, **sections}


SMALL = tiny_scenario(400, name="t", lengths=LENGTHS)
"""400 bursty requests (gamma, 22 requests/s, cv 3) of :data:`LENGTHS`: the simulator tests' run."""
TINY = tiny_scenario(120, rate=20, lengths=LENGTHS)
"""120 bursty requests (gamma, 20 requests/s, cv 3) of :data:`LENGTHS`: the environment tests' run."""
TINY_BENCH = tiny_scenario(120, lengths=SHORT_OUTPUT_LENGTHS)
"""120 bursty requests (gamma, 22 requests/s, cv 3) of :data:`SHORT_OUTPUT_LENGTHS`: the benchmark and evaluation
tests' run."""
TINY_TRACE = {"name": "tiny-trace", "workload": {"arrival": {"kind": "trace", "path": "azure2023_code",
                                                             "rate_scale": 6}}}
"""The azure2023_code trace at 6 times its rate (windows of it make quick trace runs)."""
TINY_SUITE = (
    Task("tiny", TINY_BENCH, seeds(0, 1, 2), seeds(100)),
    Task("tiny-trace", TINY_TRACE, windows([240, 300, 360, 420]), windows([0, 60]), windows=True),
)
"""A two-task benchmark suite: :data:`TINY_BENCH` (3 test seeds, train seed 100) and :data:`TINY_TRACE` (3 windows
of 60 s; train window [0, 60))."""


def run_digest(sim: Any) -> str:
    """sha256 (hex) of a finished run's per-request columns and decision log: equal digests, the same run."""
    h = hashlib.sha256()
    for k in request_columns():
        h.update(np.ascontiguousarray(getattr(sim, k)).tobytes())
    h.update(np.ascontiguousarray(sim.decision_log()).tobytes())
    return h.hexdigest()


def silent_logger() -> Any:
    """A Stable-Baselines3 logger that writes nothing and makes no folder (SB3's default makes an empty
    ``SB3-<date>`` folder in the temporary folder for every model that learns without one)."""
    from stable_baselines3.common.logger import Logger

    return Logger(folder=None, output_formats=[])


MISBEHAVING_POLICIES = '''
import sys, time
from kairos_gym.sim.hook import Decision, PREFILL


class Exits:
    def decide(self, ctx):
        sys.exit(3)


class Interrupts:
    def decide(self, ctx):
        raise KeyboardInterrupt


class Slow:
    def decide(self, ctx):
        time.sleep(0.3)
        return Decision(PREFILL)


class Loops:
    def decide(self, ctx):
        while True:
            pass


class SlowRun:
    def decide(self, ctx):
        time.sleep(0.02)
        return Decision(PREFILL)


class ExitsInInit:
    def __init__(self):
        sys.exit(4)

    def decide(self, ctx):
        return Decision(PREFILL)
'''
"""A policy file (Python source) whose classes misbehave: ``Exits`` and ``Interrupts`` try to end the process,
``Slow`` takes 0.3 s per decision, ``Loops`` never returns, ``SlowRun`` takes 0.02 s per decision, ``ExitsInInit``
exits while it is built."""
