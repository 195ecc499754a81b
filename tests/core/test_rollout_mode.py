"""Rollout mode (Simulator::set_rollout_mode, src/core/simulator.hpp), the rollout Oracle's scratch-simulator
setting: a run decided by a native base policy gives the same decisions, per-request records and score with the
lean menu and no utilization tracking as without them, on the exact track, with faults and re-entries too."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from kairos_gym.agents.oracle import native_spec
from kairos_gym.agents.registry import make_policy

from kairos_gym.compiled import core
from kairos_gym.scenario import load_scenario
from kairos_gym.sim import Simulator
from tests.fixtures import run_digest

CASES: list[tuple[str, dict[str, Any]]] = [
    ("bursty", {"workload": {"num_requests": 300}}),
    ("kv-pressure", {"workload": {"num_requests": 250}}),
    ("regime-shift", {"workload": {"num_requests": 250}, "slo": {"tbt_s": 0.05}}),
    ("fault-shift", {"workload": {"num_requests": 300}}),
    ("bursty-prefill-failure", {"workload": {"num_requests": 300}}),
]
POLICIES: list[tuple[str, dict[str, Any]]] = [
    ("no-deflect", {}), ("kairos-exact", {}), ("always-deflect-ls", {}), ("always-deflect", {"chunk": 256}),
    ("sq-ls", {}), ("sl-ls", {}), ("pending-switch", {"k": 2}),
]


def _native_run(sc: Any, seed: int, pol: Any, rollout_mode: bool) -> tuple[int, Simulator]:
    sim = Simulator(sc, seed=seed)
    sim._core.set_rollout_mode(rollout_mode)
    assert sim._core.rollout_mode is rollout_mode
    n = core().BasePolicy(sim._core, native_spec(pol)).run(sim._core)
    sim._read_columns()
    return n, sim


@pytest.mark.parametrize(("name", "overrides"), CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("seed", [0, 3])
def test_rollout_mode_changes_no_decision_record_or_score(name: str, overrides: dict[str, Any], seed: int) -> None:
    sc = load_scenario(name).with_overrides(overrides)
    deflected = 0
    for pname, params in POLICIES:
        pol = make_policy(pname, sc, seed, **params)
        n0, normal = _native_run(sc, seed, pol, False)
        n1, lean = _native_run(sc, seed, pol, True)
        what = (name, seed, pname, params)
        assert n0 == n1 == normal.n_decisions == lean.n_decisions, what
        assert (lean._core.decision_log() == normal._core.decision_log()).all(), what
        assert run_digest(lean) == run_digest(normal), what
        timing = ("wall_time_s",)  # the machine's, not a result
        sl, sn = ({k: v for k, v in s.summary().items() if k not in timing} for s in (lean, normal))
        assert sl == sn, what
        deflected += int((np.asarray(normal.path) == 1).sum())
    assert deflected > 0  # the comparison covers the deflection path


def test_rollout_mode_leaves_the_menu_fields_the_bases_read() -> None:
    """At every decision of a run the lean menu's base-read fields equal the full menu's."""
    sc = load_scenario("bursty").with_overrides({"workload": {"num_requests": 200}})
    full, lean = Simulator(sc, seed=1), Simulator(sc, seed=1)
    lean._core.set_rollout_mode(True)
    steps = 0
    while full._core.next_decision():
        assert lean._core.next_decision()
        bf, bl = full._core.menu_buffers(), lean._core.menu_buffers()
        assert full._core.menu_request() == lean._core.menu_request(), steps
        assert (bf[0] == bl[0]).all(), steps  # prefill_i
        assert (bf[3][:, :3] == bl[3][:, :3]).all(), steps  # decode_i: batch, context, pending admissions
        assert (bf[4][:, 2] == bl[4][:, 2]).all(), steps  # decode_f: the TBT SLO
        assert (bf[5] == bl[5]).all(), steps  # decode_b
        action = steps % 3  # prefill, deflect to node 0 with LargestSafe, deflect to node 1 with LargestSafe
        for s in (full, lean):
            if action == 0:
                s._core.apply_prefill(-1)
            else:
                s._core.apply_deflect(action - 1, 0)
        steps += 1
    assert not lean._core.next_decision()
    assert steps == 200
