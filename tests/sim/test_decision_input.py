"""Bad input to the simulator's hook and runner: a malformed policy return value, a missing seed, an empty
workload, a snapshot of another scenario. Each is one ConfigError, raised before anything changes."""

from __future__ import annotations

import numpy as np
import pytest
from kairos_gym.agents.runner import run_policy, simulate

from kairos_gym.errors import ConfigError
from kairos_gym.scenario import ScenarioConfig
from kairos_gym.sim import Decision, Simulator
from kairos_gym.sim.hook import LARGEST_SAFE
from kairos_gym.workload import Workload

from .conftest import SMALL, NoDeflect

MENU = [128, 256, 512, 1024, 2048]


@pytest.mark.parametrize(("decision", "field"), [
    (None, "decision ="),
    ("prefill", "decision ="),
    (3, "decision ="),
    (("deflect", 0), "decision ="),
    (Decision("sideways"), "decision.path"),
    (Decision(None), "decision.path"),  # type: ignore[arg-type]
    (Decision(np.array(["deflect", "x"])), "decision.path"),  # type: ignore[arg-type]
    (Decision.deflect(99, 512), "decision.decode_node"),  # no such node: was silently routed to prefill
    (Decision.deflect(2, 512), "decision.decode_node"),
    (Decision.deflect(-1, 512), "decision.decode_node"),
    (Decision.deflect(None, 512), "decision.decode_node"),  # type: ignore[arg-type]
    (Decision.deflect(True, 512), "decision.decode_node"),  # type: ignore[arg-type]
    (Decision.deflect(1.0, 512), "decision.decode_node"),  # type: ignore[arg-type]
    (Decision.deflect(0, 300), "decision.chunk"),  # not on the menu
    (Decision.deflect(0, 512.0), "decision.chunk"),  # type: ignore[arg-type]
    (Decision.deflect(0, "512"), "decision.chunk"),  # type: ignore[arg-type]
    (Decision.deflect(0, -512), "decision.chunk"),
    (Decision.deflect(0, None), "decision.chunk"),  # type: ignore[arg-type]
    (Decision.prefill_path(2), "decision.prefill_node"),
    (Decision.prefill_path(-1), "decision.prefill_node"),
    (Decision.prefill_path(1.0), "decision.prefill_node"),  # type: ignore[arg-type]
])
def test_malformed_decision_is_one_config_error_and_changes_nothing(decision, field):
    sim = Simulator(SMALL, seed=0)
    ctx = sim.next_decision()
    rid = ctx.request.rid
    with pytest.raises(ConfigError) as e:
        sim.apply(decision)
    msg = str(e.value)
    assert msg.startswith(f"policy decision for request {rid}: {field}") and "allowed" in msg, msg
    # nothing happened: the same decision is pending, nothing counted, and a valid decision still works
    assert sim.next_decision() is ctx and sim.n_decisions == 0 and sim.n_invalid == 0
    assert sim.apply(Decision.deflect(1, 256)) is True and sim.path[rid] != 0


@pytest.mark.parametrize("decision", [
    Decision.prefill_path(), Decision.prefill_path(1), Decision.prefill_path(np.int64(0)),
    Decision.deflect(0, LARGEST_SAFE), Decision.deflect(np.int32(1), np.int64(512)), Decision.deflect(1, 2048),
])
def test_well_formed_decisions_are_accepted(decision):
    sim = Simulator(SMALL, seed=0)
    sim.next_decision()
    assert sim.apply(decision) is True and sim.n_invalid == 0


def test_error_names_the_policy_and_its_return_value():
    class Lazy:
        name = "lazy"

        def decide(self, ctx):
            return None if ctx.request.rid == 3 else Decision.prefill_path()

    for run in (lambda: run_policy(Lazy(), SMALL, seed=0), lambda: Simulator(SMALL, seed=0).run(Lazy())):
        with pytest.raises(ConfigError, match=r"^policy lazy decision for request 3: decision = None is not valid"):
            run()

    class Chunky:
        def decide(self, ctx):
            return Decision.deflect(0, 100)

    with pytest.raises(ConfigError, match=r"^policy Chunky decision for request 0: decision.chunk = "
                       r"Decision\(path='deflect'.*chunk=100\).*\[128, 256, 512, 1024, 2048\]"):
        run_policy(Chunky(), SMALL, seed=0)


@pytest.mark.parametrize("seed", [None, -1, 1.5, True, "0"])
def test_seed_must_be_explicit(seed):
    with pytest.raises(ConfigError, match="run_policy: seed = "):
        run_policy("no-deflect", SMALL, seed=seed)
    with pytest.raises(ConfigError, match="run_policy: seed = "):
        simulate(NoDeflect(), SMALL, seed)
    with pytest.raises(ConfigError, match="Simulator: seed = "):
        Simulator(SMALL, seed=seed)


def test_reset_with_a_bad_seed_leaves_the_simulator_as_it_was():
    sim = Simulator(SMALL, seed=4)
    with pytest.raises(ConfigError, match=r"Simulator\.reset: seed = -3"):
        sim.reset(-3)
    assert sim.seed == 4
    assert sim.run(NoDeflect())["n_requests"] == 400
    assert Simulator(SMALL, seed=np.int64(4)).seed == 4


def test_empty_synthetic_window_is_refused_before_the_run():
    sc = {"workload": {"arrival": {"kind": "poisson", "rate": 8}, "duration_s": 1e-9}}
    with pytest.raises(ConfigError, match=r"duration_s = 1e-09 is not valid; allowed: a window holding at least one "
                       r"request \(seed 0 drew no request; expected count .* = 8e-09\)"):
        Simulator(sc, seed=0)


def test_empty_trace_window_is_refused(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text("arrival_time_s,prompt_tokens,output_tokens\n5.0,100,10\n6.0,200,10\n")
    sc = {"workload": {"arrival": {"kind": "trace", "path": str(p)}, "duration_s": 1.0}}  # nothing before 1 s
    with pytest.raises(ConfigError, match="at least one request"):
        Simulator(sc, seed=0)


def test_empty_fixed_workload_is_refused_and_reset_changes_nothing():
    empty = Workload(np.zeros(0), np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), "empty")
    with pytest.raises(ConfigError, match="at least one request"):
        Simulator(SMALL, workload=empty)
    sim = Simulator(SMALL, seed=0)
    with pytest.raises(ConfigError, match="at least one request"):
        sim.reset(0, workload=empty)
    with pytest.raises(ConfigError, match="Workload"):
        sim.reset(0, workload={"arrival_s": [0.0]})  # type: ignore[arg-type]
    assert len(sim.workload) == 400 and sim.run(NoDeflect())["n_requests"] == 400


def test_restore_refuses_a_snapshot_of_another_scenario():
    a = Simulator(SMALL, seed=0)
    a.next_decision()
    a.apply(Decision.prefill_path())
    snap = a.snapshot()
    other = Simulator({**SMALL, "cluster": {"prefill_nodes": 1, "decode_nodes": 4}}, seed=0)
    with pytest.raises(ConfigError, match=r"2P2D.*allowed: a snapshot of this simulator's scenario 't' \(1P4D"):
        other.restore(snap)
    assert len(other.pnodes) == 1 and len(other.dnodes) == 4  # unchanged
    with pytest.raises(ConfigError, match="other settings differ"):
        Simulator({**SMALL, "slo": {"tbt_s": 0.05}}, seed=0).restore(snap)
    with pytest.raises(ConfigError, match="oracle True"):
        Simulator(SMALL, seed=0, oracle=True).restore(snap)
    with pytest.raises(ConfigError, match=r"Simulator\.snapshot"):
        other.restore({"now": 1.0})
    same = Simulator(ScenarioConfig.from_dict(SMALL), seed=9)  # an equal scenario built separately: fine
    same.restore(snap)
    assert same.seed == 0 and same.n_decisions == 1
    s1, s2 = a.run(NoDeflect()), same.run(NoDeflect())
    s1.pop("wall_time_s")
    s2.pop("wall_time_s")
    assert s1 == s2
