"""Kairos's recommendation as a student input: ``inputs: observation+kairos``, ``hard_label:
kairos-if-best``, the checkpoint's ``inputs`` layout, and PPOAgent computing the feature at decision time."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from kairos_gym.agents.checkpoint import load_policy, write_policy
from kairos_gym.agents.inputs import KairosFeature, kairos_action
from kairos_gym.agents.kairos import Kairos
from kairos_gym.agents.oracle import Oracle
from kairos_gym.agents.policy_file_loader import policy_from_checkpoint
from kairos_gym.agents.ppo import GENERAL_CHECKPOINT, DistilledOracle, PPOAgent
from kairos_gym.agents.runner import run_policy
from kairos_gym.train import distill as D
from kairos_gym.train.domain import run_actor, task_base

from kairos_gym.benchmark.suite import on_track
from kairos_gym.env.actions import ActionLayout
from kairos_gym.errors import ConfigError
from kairos_gym.scenario import load_scenario
from kairos_gym.sim import Simulator
from kairos_gym.sim.hook import DEFLECT, LARGEST_SAFE, Decision

SC = task_base("bursty", "default", "exact", True)  # 2 decode nodes, menu of 5, LargestSafe: 13 actions
W = 6  # actions per decode node (5 fixed chunks + LargestSafe)


def _small(n: int = 80, track: str = "exact") -> object:
    return on_track(SC, track).with_overrides({"workload": {"num_requests": n}})


def _expected_index(dec: Decision) -> int:
    """The env action of a Kairos decision, from the layout's documented formula (not kairos_action)."""
    if dec.path != DEFLECT:
        return 0
    assert dec.chunk == LARGEST_SAFE
    return 1 + int(dec.decode_node) * W + (W - 1)


def _student(data: dict[str, np.ndarray], folder: Path, inputs: str = "observation+kairos", **kw: object) -> Path:
    cfg = D.DistillConfig.from_mapping({"families": ["bursty"], "tiers": ["default"], "hidden": [16], "epochs": 3,
                                        "eval_every": 3, "inputs": inputs, **kw})
    res = D.train_student(data, cfg, 0)
    write_policy(folder, res.actor, res.stats, {"trainer": "test"})
    return folder


@pytest.fixture(scope="module")
def data() -> dict[str, np.ndarray]:
    return D.collect_instance(_small(80), 10_001)


# ---------------------------------------------------------------------------------------------- the feature
def test_kairos_action_maps_prefill_and_largest_safe() -> None:
    lay = ActionLayout(SC)
    assert kairos_action(lay, Decision.prefill_path()) == kairos_action(lay, Decision.prefill_path(1)) == 0
    for d in range(2):
        a = kairos_action(lay, Decision.deflect(d, LARGEST_SAFE))
        assert a == _expected_index(Decision.deflect(d)) and lay.decisions[a] == Decision.deflect(d, LARGEST_SAFE)
    no_ls = ActionLayout(on_track(task_base("bursty", "default", "exact", False), "exact"))
    with pytest.raises(ConfigError, match="decision"):
        kairos_action(no_ls, Decision.deflect(0, LARGEST_SAFE))
    with pytest.raises(ConfigError, match="LargestSafe"):
        KairosFeature(SC, no_ls)


def test_collected_kairos_actions_are_standalone_kairos_on_each_twin(data: dict[str, np.ndarray]) -> None:
    """Replay the labelled run (the Oracle's decisions on lockstep twins): every kept row's ``kairos`` is what a
    standalone Kairos built for that view's track decides on that view's context."""
    sc = _small(80)
    sc_r = on_track(sc, "realistic")
    sim_e, sim_r = Simulator(sc, seed=10_001), Simulator(sc_r, seed=10_001)
    oracle = Oracle(sc)
    oracle.reset()
    oracle.attach(sim_e)
    k_e, k_r = Kairos(sc), Kairos(sc_r)
    lay = ActionLayout(sc)
    want: list[tuple[int, int]] = []  # (view, action)
    differ = 0
    while (ce := sim_e.next_decision()) is not None:
        cr = sim_r.next_decision()
        dec = oracle.decide(ce)
        a_e, a_r = _expected_index(k_e.decide(ce)), _expected_index(k_r.decide(cr))
        differ += a_e != a_r
        for vi, (ctx, a) in enumerate(((ce, a_e), (cr, a_r))):
            if lay.mask(ctx).sum() > 1:
                want.append((vi, a))
        sim_e.apply(dec)
        sim_r.apply(dec)
    assert [(int(v), int(a)) for v, a in zip(data["view"], data["kairos"], strict=True)] == want
    assert differ > 0  # the realistic twin's Kairos reads the stale, noisy view: not the exact one's decisions
    assert data["mask"][np.arange(len(want)), data["kairos"]].all()  # Kairos's action is offered by the view's mask


@pytest.mark.parametrize("track", ["exact", "realistic"])
def test_ppo_agent_feature_is_standalone_kairos_on_the_same_context(data: dict[str, np.ndarray], tmp_path: Path,
                                                                     track: str) -> None:
    folder = _student(data, tmp_path / "ck")
    sc = _small(120, track)
    agent = PPOAgent(sc, path=folder)
    assert agent.kairos_feature is not None and agent.kairos_feature.kairos.scenario.information.track == track
    standalone = Kairos(sc)
    seen: list[bool] = []
    inner = agent.obs_builder

    def spy(ctx: object) -> np.ndarray:
        x = inner(ctx)
        hot = np.zeros(13, dtype=np.float32)
        hot[_expected_index(standalone.decide(ctx))] = 1.0
        seen.append(x.shape == (70,) and np.array_equal(x[57:], hot))
        return x

    agent.obs_builder = spy
    out = run_policy(agent, sc, 3)
    assert out["n_completed"] == 120 and len(seen) >= 120 and all(seen)


def test_validation_run_equals_the_agent_run(data: dict[str, np.ndarray], tmp_path: Path) -> None:
    folder = _student(data, tmp_path / "ck")
    actor = load_policy(folder)
    for track in ("exact", "realistic"):
        sc = _small(100, track)
        case = SimpleNamespace(scenario=lambda sc=sc: sc, instance=SimpleNamespace(seed=7))
        got = D.run_student(actor, case)
        ref = run_policy(PPOAgent(sc, path=folder), sc, 7)
        assert got["slo_attainment"] == ref["slo_attainment"] and got["ttft_p95"] == ref["ttft_p95"]
        assert got["deflection_rate"] == ref["deflection_rate"]
    old = load_policy(_student(data, tmp_path / "old", "observation"))
    case = SimpleNamespace(scenario=lambda: _small(60), instance=SimpleNamespace(seed=5))
    assert D.run_student(old, case) == run_actor(old, case)  # the old layout: run_actor itself


def test_fault_scenario_keeps_the_fault_free_observation(data: dict[str, np.ndarray], tmp_path: Path) -> None:
    folder = _student(data, tmp_path / "ck")
    sc = load_scenario("bursty-prefill-failure").with_overrides({"workload": {"num_requests": 150}})
    agent = PPOAgent(sc, path=folder)
    assert agent.kairos_feature is not None and agent.kairos_feature.kairos.scenario.faults.enabled
    out = run_policy(agent, sc, 0)
    assert out["n_completed"] + out.get("n_dropped", 0) >= 1 and 0.0 <= out["slo_attainment"] <= 1.0


# ---------------------------------------------------------------------------------------------- checkpoint layout
def test_layout_recorded_and_enforced_on_load(data: dict[str, np.ndarray], tmp_path: Path) -> None:
    folder = _student(data, tmp_path / "ck")
    spec = json.loads((folder / "policy.json").read_text())
    assert spec["inputs"] == "observation+kairos" and spec["observation_size"] == 70
    assert load_policy(folder).inputs == "observation+kairos"
    old = _student(data, tmp_path / "old", "observation")
    assert "inputs" not in json.loads((old / "policy.json").read_text())  # the old layout writes the old file
    assert load_policy(old).inputs == "observation" and PPOAgent(_small(), path=old).kairos_feature is None
    # without its layout key the 70-feature network is not this scenario's observation: refused, not truncated
    del spec["inputs"]
    (folder / "policy.json").write_text(json.dumps(spec))
    with pytest.raises(ConfigError, match="57 features"):
        PPOAgent(_small(), path=folder)


def test_unknown_layout_is_refused(data: dict[str, np.ndarray], tmp_path: Path) -> None:
    folder = _student(data, tmp_path / "ck")
    spec = json.loads((folder / "policy.json").read_text())
    for bad in ("observation+oracle", ["observation"], None):
        spec["inputs"] = bad
        (folder / "policy.json").write_text(json.dumps(spec))
        with pytest.raises(ConfigError, match="inputs"):
            load_policy(folder)
        with pytest.raises(ConfigError, match="inputs"):
            PPOAgent(_small(), path=folder)
        with pytest.raises(ConfigError, match=r"--checkpoint.*inputs"):
            policy_from_checkpoint(str(folder))  # when the flag is read, before any run


def test_shipped_general_checkpoint_layout_is_its_own() -> None:
    spec = json.loads(GENERAL_CHECKPOINT.read_text())
    agent = DistilledOracle(_small())
    want = spec.get("inputs", "observation")
    assert agent.actor is not None and agent.actor.inputs == want
    assert (agent.kairos_feature is None) == (want == "observation")


# ---------------------------------------------------------------------------------------------- labels, training
def test_hard_label_kairos_only_when_in_the_best_set() -> None:
    best = np.array([[1, 1, 0], [1, 0, 0], [0, 1, 1], [0, 0, 1]], dtype=bool)
    base = {"best": best, "hard": np.array([0, 0, 2, 2]), "kairos": np.array([1, 2, 1, 0], dtype=np.int16)}
    assert D.hard_labels(base, "kairos-if-best").tolist() == [1, 0, 1, 2]
    assert D.hard_labels(base, "oracle").tolist() == [0, 0, 2, 2]
    with pytest.raises(ConfigError, match="kairos"):
        D.hard_labels({k: v for k, v in base.items() if k != "kairos"}, "kairos-if-best")
    with pytest.raises(ConfigError, match="hard_label"):
        D.hard_labels(base, "nope")


def test_hard_label_variant_on_a_collected_instance(data: dict[str, np.ndarray]) -> None:
    h = D.hard_labels(data, "kairos-if-best")
    n = np.arange(len(h))
    in_best = data["best"][n, data["kairos"]]
    assert np.array_equal(h[in_best], data["kairos"][in_best].astype(np.int64))
    assert np.array_equal(h[~in_best], data["hard"][~in_best])
    assert data["best"][n, h].all()  # still a best action on every row


def test_student_inputs_append_the_one_hot(data: dict[str, np.ndarray]) -> None:
    x = D.student_inputs(data, "observation+kairos")
    assert x.shape == (len(data["hard"]), 70) and x.dtype == np.float32
    assert np.array_equal(x[:, :57], data["obs"]) and np.array_equal(x[:, 57:].argmax(1), data["kairos"])
    assert (x[:, 57:].sum(1) == 1).all()
    assert D.student_inputs(data, "observation") is data["obs"]


def test_config_keys_and_refusals(tmp_path: Path) -> None:
    cfg = D.DistillConfig.from_mapping({})
    assert (cfg.inputs, cfg.hard_label) == ("observation", "oracle")  # the shipped recipe's behaviour
    root = Path(__file__).resolve().parents[2] / "configs" / "ppo"
    a, b = D.load_config(root / "distill-kairos.yaml"), D.load_config(root / "distill-kairos-label.yaml")
    assert (a.inputs, a.hard_label, b.inputs, b.hard_label) == ("observation+kairos", "oracle", "observation+kairos",
                                                                "kairos-if-best")
    for bad in ({"inputs": "kairos"}, {"inputs": ["observation"]}, {"hard_label": "kairos"}):
        with pytest.raises(ConfigError, match=next(iter(bad))):
            D.DistillConfig.from_mapping(bad)


def test_dataset_kairos_round_trip_and_old_datasets(data: dict[str, np.ndarray], tmp_path: Path) -> None:
    D.save_dataset(tmp_path / "d.npz", data)
    back = D.load_dataset(tmp_path / "d.npz")
    assert np.array_equal(back["kairos"], data["kairos"])
    np.savez(tmp_path / "old.npz", **{k: data[k] for k in D.DATASET_KEYS})  # before the kairos array
    old = D.load_dataset(tmp_path / "old.npz")
    assert "kairos" not in old
    cfg = D.DistillConfig.from_mapping({"families": ["bursty"], "tiers": ["default"], "epochs": 1, "eval_every": 1,
                                        "seeds": [0], "inputs": "observation+kairos"})
    with pytest.raises(ConfigError, match="kairos"):
        D.run(cfg, tmp_path / "run", tmp_path / "old.npz", log=lambda s: None)
    assert not (tmp_path / "run" / "seed0").exists()  # refused before any training
    np.savez(tmp_path / "bad.npz", **{**{k: data[k] for k in D.DATASET_KEYS}, "kairos": data["kairos"] + 13})
    with pytest.raises(ConfigError, match="kairos"):
        D.load_dataset(tmp_path / "bad.npz")


def test_pipeline_with_kairos_inputs_tiny(tmp_path: Path) -> None:
    cfg = D.DistillConfig.from_mapping({"families": ["bursty"], "tiers": ["default"], "instances_per_task": 1,
                                        "max_requests": 60, "dagger_rounds": 1, "dagger_instances_per_task": 1,
                                        "epochs": 2, "eval_every": 1, "seeds": [0], "hidden": [16],
                                        "inputs": "observation+kairos", "hard_label": "kairos-if-best"})
    meta = D.run(cfg, tmp_path, log=lambda s: None)
    assert [r["round"] for r in meta["rounds"]] == [0, 1]  # the DAgger student acted on its own inputs
    actor = load_policy(tmp_path / "seed0")
    assert (actor.inputs, actor.observation_size) == ("observation+kairos", 70)
    spec = json.loads((tmp_path / "seed0" / "policy.json").read_text())
    assert spec["provenance"]["inputs"] == "observation+kairos" and spec["provenance"]["hard_label"] == "kairos-if-best"
    hist = [json.loads(x) for x in (tmp_path / "seed0" / "history.jsonl").read_text().splitlines()]
    assert {"gap_realistic", "worst_realistic", "worst_exact"} <= set(hist[-1])
    assert hist[-1]["worst_realistic"] <= hist[-1]["gap_realistic"]
