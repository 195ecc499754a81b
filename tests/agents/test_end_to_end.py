"""Every baseline on a small bursty run: all requests complete; Kairos beats no-deflect on P95 TTFT."""

from __future__ import annotations

import pytest
from kairos_gym.agents import POLICIES, run_policy

from tests.fixtures import LENGTHS, tiny_scenario

BURSTY_300 = tiny_scenario(300, name="t", rate=20, lengths=LENGTHS)
KWARGS: dict[str, dict[str, object]] = {}


@pytest.fixture(scope="module")
def summaries():
    return {name: run_policy(name, BURSTY_300, seed=0, **KWARGS.get(name, {})) for name in POLICIES if name != "ppo"}


def test_all_requests_complete(summaries):
    for name, s in summaries.items():
        assert s["policy"] == name
        assert s["n_completed"] == s["n_requests"] - s["n_rejected"] == 300, name
        assert s["n_invalid_actions"] == 0, name
        assert s["decision_us_p50"] is not None


def test_kairos_beats_no_deflect(summaries):
    k, nd = summaries["kairos"], summaries["no-deflect"]
    assert k["ttft_p95"] < nd["ttft_p95"]
    assert k["slo_attainment"] > nd["slo_attainment"]
    assert k["tbt_violation_rate"] <= 0.01
    assert 0.0 < k["deflection_rate"] < 1.0 and nd["deflection_rate"] == 0.0
    assert summaries["always-deflect"]["deflection_rate"] > 0.0
