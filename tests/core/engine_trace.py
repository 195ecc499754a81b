"""Helpers of the native component tests: bitwise float comparison, and runs of the trace scenario (the run
whose event trace, link results and token-gap records tests/golden/engine_traces.json holds, recorded
before the C++ core was the simulator: the reference every change is held to)."""

from __future__ import annotations

import math
import struct

from kairos_gym.scenario import ScenarioConfig
from kairos_gym.sim import Simulator
from tests.golden.engine_cases import TRACE_POLICIES, TRACE_SCENARIO

__all__ = ["TRACE_POLICIES", "TRACE_SCENARIO", "bits", "make_sim", "run_scenario", "same_float", "same_tuple"]


def bits(x: float) -> bytes:
    """The IEEE-754 bytes of a float (so 0.0 and -0.0 differ, and equal bits mean bit-identical)."""
    return struct.pack("<d", float(x))


def same_float(x: float, y: float) -> bool:
    """Bit-identical, or both NaN."""
    return (math.isnan(x) and math.isnan(y)) or bits(x) == bits(y)


def same_tuple(x: tuple, y: tuple) -> bool:
    """Element for element equal, floats bit for bit (a float on one side needs a float on the other)."""
    if len(x) != len(y):
        return False
    for a, b in zip(x, y, strict=True):
        if isinstance(a, float) or isinstance(b, float):
            if not (isinstance(a, float) and isinstance(b, float) and same_float(a, b)):
                return False
        elif a != b or type(a) is not type(b):
            return False
    return True


def make_sim(seed: int = 0) -> Simulator:
    """A fresh simulator of TRACE_SCENARIO (traced: every popped event is kept)."""
    return Simulator(ScenarioConfig.from_dict(TRACE_SCENARIO), seed=seed, trace=True)


def run_scenario(policy: str, seed: int = 0) -> Simulator:
    """A finished run of TRACE_SCENARIO under one of TRACE_POLICIES."""
    sim = make_sim(seed)
    sim.run(TRACE_POLICIES[policy]())
    return sim

