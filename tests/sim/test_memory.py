"""KV memory policies: `reserve` never preempts; `swap` preempts (swap_order fifo by default) and swaps back, conserving
requests, tokens and memory."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from kairos_gym.scenario import ScenarioConfig
from kairos_gym.sim import Simulator
from tests.sim.conftest import SMALL, DeflectAll, NoDeflect, tight_memory_sim


def _drive(sim: Simulator, policy) -> dict:
    """Run to the end, checking memory after every event (not only at decisions)."""
    ctx = sim.next_decision()
    while ctx is not None:
        sim.apply(policy.decide(ctx))
        for d in sim.dnodes:
            assert 0 <= d.kv_reserved <= d.kv_capacity
        ctx = sim.next_decision()
    assert not sim._events
    return sim.summary()


@pytest.mark.parametrize("policy", [NoDeflect(), DeflectAll(512)], ids=["no-deflect", "deflect"])
def test_swap_preempts_and_conserves(policy):
    sim = tight_memory_sim("swap")
    s = _drive(sim, policy)
    assert s["n_preemptions"] > 0 and s["swap_bytes"] > 0
    assert s["n_completed"] + s["n_rejected"] == sim.n
    assert all(d.kv_reserved == 0 and not d.swapped and d.swapping_in == 0 for d in sim.dnodes)
    out = np.asarray(sim.output)
    done = np.isfinite(np.asarray(sim.finish))
    assert s["tbt_gaps"] == int((out[done] - 1).sum())  # every token after the first is one gap
    ttft = np.nansum(sim.requests_table()["ttft_s"])
    assert math.isclose(sim.wait_area, ttft, rel_tol=1e-9)


def test_reserve_never_preempts_under_the_same_pressure():
    sim = tight_memory_sim("reserve")
    s = _drive(sim, NoDeflect())
    assert s["n_preemptions"] == 0 and s["swap_bytes"] == 0
    assert s["n_completed"] + s["n_rejected"] == sim.n


def test_swap_gaps_include_the_swap():
    sim = tight_memory_sim("swap", swap_bandwidth_bytes_per_s=1e8)  # a slow link: swapped requests see a long gap
    s = _drive(sim, NoDeflect())
    assert s["n_preemptions"] > 0
    t = sim.requests_table()
    assert np.nanmax(t["max_tbt_s"]) > 0.05


def test_swap_is_deterministic():
    a = _drive(tight_memory_sim("swap"), DeflectAll(256))
    b = _drive(tight_memory_sim("swap"), DeflectAll(256))
    a.pop("wall_time_s")
    b.pop("wall_time_s")
    assert json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def test_swap_with_ample_memory_never_preempts():
    # with the default (large) capacity nothing is preempted; results differ from `reserve` only through
    # decode-node choice (least reserved KV, which counts prompt blocks instead of prompt + output)
    s = Simulator(ScenarioConfig.from_dict({**SMALL, "cluster": {"memory_policy": "swap"}}), seed=1).run(NoDeflect())
    r = Simulator(ScenarioConfig.from_dict({**SMALL, "cluster": {"memory_policy": "reserve"}}), seed=1).run(NoDeflect())
    assert s["n_preemptions"] == 0 and s["n_completed"] == r["n_completed"] == 400
    assert abs(s["ttft_p95"] / r["ttft_p95"] - 1) < 0.05


def test_bad_memory_policy():
    from kairos_gym.errors import ConfigError

    with pytest.raises(ConfigError, match="memory_policy"):
        ScenarioConfig.from_dict({"cluster": {"memory_policy": "recompute"}})
