"""Shared helpers for simulator tests."""

from __future__ import annotations

import pytest

from kairos_gym.scenario import ScenarioConfig
from kairos_gym.sim import Decision, Simulator
from tests.fixtures import SMALL


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
