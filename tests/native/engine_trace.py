"""Helpers of the native component tests: bitwise float comparison, and small engine runs whose component
calls are recorded, so a native component can be replayed on the Python engine's own sequence of operations."""

from __future__ import annotations

import math
import struct

from kairos_gym.config import ScenarioConfig
from kairos_gym.sim import Simulator
from tests.sim.conftest import SMALL, DeflectAll, NoDeflect

# SMALL with a slow link (transfers overlap: up to 4 at once on a link) and a tight TBT SLO (violations happen)
TRACE_SCENARIO = {**SMALL, "transfer": {"bandwidth_bytes_per_s": 2e9}, "slo": {"tbt_s": 0.03}}
TRACE_POLICIES = {"nodeflect": NoDeflect, "deflect512": lambda: DeflectAll(512), "largest_safe": lambda: DeflectAll(0)}


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
    """A fresh Python-engine simulator of TRACE_SCENARIO (the component tests instrument that engine's code,
    whatever ``KAIROS_ENGINE`` or ``pytest --engine`` says)."""
    return Simulator(ScenarioConfig.from_dict(TRACE_SCENARIO), seed=seed, engine="python")


def run_scenario(policy: str, seed: int = 0) -> Simulator:
    """A finished run of TRACE_SCENARIO under one of TRACE_POLICIES."""
    sim = make_sim(seed)
    sim.run(TRACE_POLICIES[policy]())
    return sim

