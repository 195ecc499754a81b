"""The demo's Oracle line runs on a true prefix: the first requests of the same seed's workload."""

from __future__ import annotations

import numpy as np
import pytest

from kairos_gym.cli.run import ORACLE_PREFIX, _oracle_prefix
from kairos_gym.scenario import load_scenario
from kairos_gym.sim import Simulator
from kairos_gym.workload import generate


@pytest.mark.parametrize("name", ["bursty", "azure-code", "small"])
def test_demo_oracle_workload_is_the_first_requests_of_the_seed_workload(name: str) -> None:
    seed = 1
    prefix, cap = _oracle_prefix(name, seed)
    full = generate(load_scenario(name).workload, np.random.default_rng(seed))
    part = generate(prefix.workload, np.random.default_rng(seed))
    assert cap == min(ORACLE_PREFIX, len(full)) == len(part)  # small has 200 requests: all of them
    assert np.array_equal(part.arrival_s, full.arrival_s[:cap])
    assert np.array_equal(part.prompt_tokens, full.prompt_tokens[:cap])
    assert np.array_equal(part.output_tokens, full.output_tokens[:cap])


def test_demo_oracle_prefix_is_what_the_simulator_runs() -> None:
    prefix, cap = _oracle_prefix("bursty", 0)
    full, part = Simulator("bursty", seed=0).workload, Simulator(prefix, seed=0).workload
    assert len(part) == cap == ORACLE_PREFIX
    assert np.array_equal(part.arrival_s, full.arrival_s[:cap])
    assert np.array_equal(part.output_tokens, full.output_tokens[:cap])
