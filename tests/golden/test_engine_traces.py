"""The engine reference dataset (``engine_traces.json``, cases in ``engine_cases.py``, recorded by
``tools/record_engine_traces.py``), recomputed here bit for bit: decision contexts, per-request columns, event
traces, token-gap records, counters, node states and pending events, error messages, env trajectories (both obs
modes, every reward), snapshots and pickles, the Oracle's decisions."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kairos_gym.env.core import KairosEnv
from kairos_gym.sim.simulator import Simulator
from tests.golden.engine_cases import RUNNERS, cases, dataset

DATA = dataset()
CASES: dict[str, Any] = DATA["cases"]


def make_sim(scenario: Any, **kw: Any) -> Simulator:
    return Simulator(scenario, **kw)


def make_env(**kw: Any) -> KairosEnv:
    env = KairosEnv(**kw)
    assert isinstance(env.sim, Simulator) and env._native is not None  # the native env step runs
    return env


@pytest.mark.parametrize("key", sorted(CASES))
def test_the_simulator_reproduces_the_recorded_reference(key):
    case = CASES[key]
    got = RUNNERS[key](case["params"], make_sim, make_env)
    want = case["out"]
    assert sorted(got) == sorted(want)
    changed = {k: (want[k], got[k]) for k in want if got[k] != want[k]}
    assert not changed, f"{key}: recorded != computed: {changed}"


def test_dataset_holds_every_case_and_the_drawn_params():
    """Every case of engine_cases.py is recorded (and nothing else), with the params the generator draws."""
    drawn = {key: params for key, params, _ in cases()}
    assert sorted(CASES) == sorted(drawn)
    assert all(CASES[k]["params"] == json.loads(json.dumps(drawn[k])) for k in drawn)


def test_dataset_exercises_every_path():
    """The random scenarios cover swap preemption, rejections, refused deflections and several nodes; the
    trace scenario shares the link and violates the TBT SLO."""
    rnd = [CASES[k]["out"]["counters"] for k in CASES if k.startswith("random/")]
    assert sum(int(c["n_preemptions"]) > 0 for c in rnd) >= 3
    assert sum(int(c["n_rejected"]) > 0 for c in rnd) >= 3
    assert sum(int(c["n_invalid"]) > 0 for c in rnd) >= 10
    assert sum(int(c["tbt_violations"]) > 0 for c in rnd) >= 10
    shapes = {(CASES[k]["params"]["scenario"]["cluster"]["prefill_nodes"],
               CASES[k]["params"]["scenario"]["cluster"]["decode_nodes"]) for k in CASES if k.startswith("random/")}
    assert len(shapes) >= 7
    for name in ("deflect512", "largest_safe"):
        assert int(CASES[f"trace-scenario/{name}"]["out"]["counters"]["tbt_violations"]) > 0
