"""``slo-guard`` (agents/slo_guard.py): the prefill path while its predicted TTFT has slack against the SLO, else the
decode node predicting the earliest first token when it beats the prefill path; its one parameter checked."""

from __future__ import annotations

from typing import Any

import pytest
from kairos_gym.agents import run_policy
from kairos_gym.agents.registry import make_policy
from kairos_gym.agents.slo_guard import SLOGuard

from kairos_gym.errors import ConfigError
from kairos_gym.sim.hook import LARGEST_SAFE
from tests.agents.ctx_helpers import SCENARIO, decode_view, make_ctx


def _guard(fraction: float = 0.5) -> SLOGuard:
    return SLOGuard(SCENARIO, fraction=fraction)


def test_prefills_while_the_prefill_path_has_slack() -> None:
    ctx = make_ctx(prefill=((5000, 2), (2500, 1)))  # predicted TTFT 0.1 + 2500 / 25000 = 0.2 s <= 0.5 x 1 s
    d = _guard().decide(ctx)
    assert d.path == "prefill"


def test_deflects_to_the_earliest_predicted_first_token_past_the_slack() -> None:
    ctx = make_ctx(prefill=((50_000, 9), (25_000, 5)))  # 1.1 s > 0.5 s
    ctx = ctx._replace(largest_safe_ttft_s=(0.4, 0.3))
    d = _guard().decide(ctx)
    assert d.path == "deflect" and d.decode_node == 1 and d.chunk == LARGEST_SAFE


def test_keeps_the_prefill_path_when_no_deflection_beats_it() -> None:
    ctx = make_ctx(prefill=((25_000, 5), (25_000, 5)))  # 1.1 s
    assert not _guard().decide(ctx._replace(largest_safe_ttft_s=(1.5, 2.0))).path == "deflect"  # slower than prefilling
    assert not _guard().decide(ctx._replace(largest_safe_feasible=(False, False))).path == "deflect"
    busy = make_ctx(prefill=((25_000, 5), (25_000, 5)), decode=(decode_view(in_flight=True),
                                                                 decode_view(in_flight=True)))
    assert _guard().decide(busy).path == "prefill"


@pytest.mark.parametrize("fraction", [0, -1, 101, "a", None])
def test_a_bad_fraction_is_refused(fraction: Any) -> None:
    with pytest.raises(ConfigError, match="fraction"):
        make_policy("slo-guard", "bursty", fraction=fraction)


def test_it_runs_and_a_larger_fraction_deflects_less() -> None:
    sc: dict[str, Any] = {"name": "g", "workload": {"arrival": {"kind": "gamma", "rate": 24, "cv": 3},
                                                    "num_requests": 300}}
    low = run_policy("slo-guard", sc, 1, fraction=0.2)
    high = run_policy("slo-guard", sc, 1, fraction=2.0)
    assert low["n_completed"] + low["n_rejected"] == 300
    assert low["deflection_rate"] > high["deflection_rate"]
