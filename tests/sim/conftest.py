"""Shared helpers for simulator tests."""

from __future__ import annotations

import pytest

from kairos_gym.scenario import ScenarioConfig
from kairos_gym.sim import Decision, Simulator

SMALL = {
    "name": "t",
    "workload": {
        "arrival": {"kind": "gamma", "rate": 22, "cv": 3},
        "num_requests": 400,
        "lengths": {"kind": "lognormal", "prompt_median": 1500, "prompt_sigma": 0.8, "prompt_max": 8000,
                    "output_median": 150, "output_sigma": 0.8, "output_max": 1000},
    },
}


def tight_memory_sim(policy: str, capacity: int = 12_000, seed: int = 0, **cluster) -> Simulator:
    """SMALL under memory policy ``policy`` with every decode node's KV capacity cut to ``capacity`` tokens
    (overlong requests rejected): memory is the binding constraint and ``swap`` preempts."""
    sc = ScenarioConfig.from_dict({**SMALL, "cluster": {"memory_policy": policy, "overlong": "reject", **cluster}})
    return Simulator(sc, seed=seed, kv_capacity=capacity)


class NoDeflect:
    def decide(self, ctx):
        return Decision.prefill_path()


class DeflectAll:
    """Deflect to the first node that accepts, with a fixed chunk (or LargestSafe when chunk=0)."""

    def __init__(self, chunk: int = 512) -> None:
        self.chunk = chunk

    def decide(self, ctx):
        for i, d in enumerate(ctx.decode):
            if d.can_deflect:
                return Decision.deflect(i, self.chunk)
        return Decision.prefill_path()


@pytest.fixture
def small_scenario():
    return SMALL
