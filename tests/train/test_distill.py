"""Oracle distillation (kairos_gym.train.distill): action mapping, labels, lockstep twins, loss, pipeline."""

from __future__ import annotations

import json
import math
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from kairos_gym.agents.checkpoint import load_policy
from kairos_gym.agents.oracle import Oracle
from kairos_gym.agents.runner import run_policy
from kairos_gym.train import distill as D
from kairos_gym.train.domain import task_base
from kairos_gym.train.envs import TRAIN_SEED_MIN

from kairos_gym.benchmark.suite import SUITE, on_track
from kairos_gym.cli.main import main
from kairos_gym.env.actions import ActionLayout
from kairos_gym.errors import ConfigError
from kairos_gym.sim.hook import LARGEST_SAFE, Decision

SC = task_base("bursty", "default", "exact", True)  # menu 128..2048, 2 decode nodes, LargestSafe action: 13 actions


def _small(n: int = 80) -> object:
    return SC.with_overrides({"workload": {"num_requests": n}})


def _ctx(prompt: int, can: tuple[bool, ...]) -> SimpleNamespace:
    return SimpleNamespace(request=SimpleNamespace(prompt_tokens=prompt),
                           decode=tuple(SimpleNamespace(can_deflect=c) for c in can))


def test_action_values_spread_candidates_over_the_action_table() -> None:
    lay = ActionLayout(SC)
    assert lay.n == 13 and lay.menu == (128, 256, 512, 1024, 2048)
    # prompt 600: fixed 1024 and 2048 are the same single chunk as the candidate 1024 (the Oracle dedupes them)
    scores = [(Decision.prefill_path(), [(5, 10), (6, 1)]),         # best base: (6, 1)
              (Decision.deflect(0, LARGEST_SAFE), [(7, 0), (7, 3)]),
              (Decision.deflect(0, 128), [(4, 4)]), (Decision.deflect(0, 256), [(5, 5)]),
              (Decision.deflect(0, 512), [(6, 9)]), (Decision.deflect(0, 1024), [(8, 2)])]
    v = D.action_values(lay, _ctx(600, (True, False)), scores)
    assert v.shape == (13, 2)
    assert tuple(v[0]) == (6, 1)
    w = lay.W
    got = {lay.chunk[a]: tuple(v[a]) for a in range(1, 1 + w)}
    assert got == {128: (4, 4), 256: (5, 5), 512: (6, 9), 1024: (8, 2), 2048: (8, 2), LARGEST_SAFE: (7, 3)}
    for a in range(1 + w, 1 + 2 * w):  # node 1 refuses: every deflection there is the prefill path
        assert tuple(v[a]) == (6, 1)
    # a prompt <= the smallest size: every fixed chunk is LargestSafe's single chunk
    v = D.action_values(lay, _ctx(100, (True, True)), [(Decision.prefill_path(), [(1, 1)]),
                                                        (Decision.deflect(0, LARGEST_SAFE), [(2, 2)]),
                                                        (Decision.deflect(1, LARGEST_SAFE), [(3, 3)])])
    assert all(tuple(v[a]) == (2, 2) for a in range(1, 1 + w))
    assert all(tuple(v[a]) == (3, 3) for a in range(1 + w, 1 + 2 * w))
    # one candidate (no search): every action is the prefill path's equal
    assert (D.action_values(lay, _ctx(600, (False, False)), None) == 0).all()


def test_view_labels_best_set_and_hard_action() -> None:
    values = np.array([[5, 0], [7, 1], [7, 1], [7, 0], [2, 2]])
    mask = np.array([1, 1, 1, 1, 0], dtype=bool)
    best, hard, tie = D.view_labels(values, mask, chosen=2)
    assert best.tolist() == [False, True, True, False, False] and hard == 2 and not tie
    best, hard, tie = D.view_labels(values, mask, chosen=0)  # the chosen action is not best in this view
    assert hard == 1
    best, hard, tie = D.view_labels(values, np.array([1, 0, 0, 1, 1], dtype=bool), chosen=1)  # 1 not offered here
    assert best.tolist() == [False, False, False, True, False] and hard == 3 and not tie
    assert D.view_labels(values, np.array([1, 0, 0, 0, 0], dtype=bool), 0) is None  # one action offered
    best, hard, tie = D.view_labels(values, np.array([0, 1, 1, 0, 0], dtype=bool), 1)  # every offered one is best
    assert tie and hard == 1 and best.tolist() == [False, True, True, False, False]


def test_collect_instance_labels_the_oracle_run_on_both_views() -> None:
    sc = _small(80)
    data = D.collect_instance(sc, 10_001, task=3)
    oracle_slo = run_policy(Oracle(sc), sc, 10_001)["slo_attainment"]
    assert float(data["summary_slo"]) == oracle_slo  # the Oracle's own decisions were applied
    n = len(data["hard"])
    assert n > 0 and set(data["view"].tolist()) == {0, 1} and (data["task"] == 3).all()
    assert data["obs"].shape == (n, 57) and data["mask"].shape == data["best"].shape == (n, 13)
    assert not (data["best"] & ~data["mask"]).any()  # best actions are offered ones
    assert data["best"][np.arange(n), data["hard"]].all()  # the hard action is a best one
    assert (data["mask"].sum(1) > 1).all()  # no row with a single offered action
    assert np.array_equal(data["tie"], data["best"].sum(1) == data["mask"].sum(1))
    assert data["tie"].any() and not data["tie"].all()
    ex, re = data["view"] == 0, data["view"] == 1
    # the realistic view is the stale, noisy one: its observations are not the exact ones
    assert not np.array_equal(data["obs"][ex][: min(ex.sum(), re.sum())], data["obs"][re][: min(ex.sum(), re.sum())])


def test_collect_instance_with_a_student_behaviour_stays_in_lockstep(tmp_path: Path) -> None:
    sc = _small(60)
    data = D.collect_instance(sc, 10_002)
    cfg = D.DistillConfig.from_mapping({"families": ["bursty"], "tiers": ["default"], "epochs": 2, "eval_every": 2})
    student = D.train_student(data, cfg, 0).actor
    again = D.collect_instance(sc, 10_002, student=student)
    # the student's run: its SLO attainment is what the student gets on the realistic track
    from kairos_gym.train.domain import run_actor

    case = SimpleNamespace(scenario=lambda: on_track(sc, "realistic"), instance=SimpleNamespace(seed=10_002))
    assert float(again["summary_slo"]) == run_actor(student, case)["slo_attainment"]


def test_collect_instance_refusals() -> None:
    with pytest.raises(ConfigError, match=r"information\.track"):
        D.collect_instance(on_track(_small(), "realistic"), 10_000)
    data = D.collect_instance(_small(30), 10_000)
    cfg = D.DistillConfig.from_mapping({"families": ["bursty"], "hidden": [8], "epochs": 1, "eval_every": 1})
    small = D.train_student({**data, "obs": data["obs"][:, :50]}, cfg, 0).actor
    with pytest.raises(ConfigError, match="student"):
        D.collect_instance(_small(30), 10_000, student=small)


def test_label_jobs_are_train_side_only() -> None:
    cfg = D.DistillConfig.from_mapping({})
    tasks = {(t.family, t.tier): t for t in SUITE}
    jobs = D.label_jobs(cfg, 20, np.random.default_rng(5))
    assert len(jobs) == 20 * len(cfg.families) * len(cfg.tiers)
    for j in jobs:
        task = tasks[(j.family, j.tier)]
        assert cfg.load[0] <= j.load <= cfg.load[1]
        assert j.instance not in task.test and j.instance != task.train[-1]
        if task.windows:
            assert j.instance.window_s in [i.window_s for i in task.train[:-1]]
        else:
            assert j.instance.seed >= TRAIN_SEED_MIN
    sc = D.LabelJob("kv-pressure", "default", 1.0, jobs[0].instance, 123).scenario()
    assert sc.workload.num_requests == 123 and sc.deflection.largest_safe_action


def test_collect_on_a_process_pool_gives_the_serial_labels() -> None:
    """The label instances on two worker processes (``kairos-gym distill --workers 2``): the serial arrays."""
    from kairos_gym.evaluation.backends import ProcessBackend

    cfg = D.DistillConfig.from_mapping({"families": ["bursty", "kv-pressure"], "tiers": ["default"],
                                        "max_requests": 40})
    jobs = D.label_jobs(cfg, 1, np.random.default_rng(3))
    serial = D.collect(jobs)
    with ProcessBackend(2, 0) as pool:
        pooled = D.collect(jobs, backend=pool)
    assert serial.keys() == pooled.keys() and len(serial["hard"]) > 20
    for k in serial:
        assert serial[k].dtype == pooled[k].dtype and np.array_equal(serial[k], pooled[k]), k


def test_set_loss_values() -> None:
    import torch

    lg = torch.zeros(2, 3)
    mask = torch.tensor([[True, True, True], [True, True, False]])
    best = torch.tensor([[True, True, False], [True, True, False]])
    hard = torch.tensor([0, 1])
    assert float(D.set_loss(lg, mask, best, hard, 0.0)) == pytest.approx((math.log(3) - math.log(2)) / 2)
    assert float(D.set_loss(lg, mask, best, hard, 1.0)) == pytest.approx(
        (math.log(3) - math.log(2) + math.log(3) + math.log(2)) / 2)
    w = torch.tensor([2.0, 0.0])
    assert float(D.set_loss(lg, mask, best, hard, 0.0, w)) == pytest.approx(math.log(3) - math.log(2))


def test_config_refusals(tmp_path: Path) -> None:
    for bad in ({"nope": 1}, {"hidden": []}, {"hidden": [0]}, {"seeds": [1, 1]}, {"families": ["steady"]},
                {"epochs": 0}, {"activation": "Foo"}, {"learning_rate": float("nan")}, {"max_requests": 10**9},
                {"instances_per_task": True}):
        with pytest.raises(ConfigError):
            D.DistillConfig.from_mapping(bad)
    p = tmp_path / "c.yaml"
    p.write_text("distill:\n  epochs: 010\n", encoding="utf-8")  # YAML 1.1 octal: refused by the reader
    with pytest.raises(ConfigError):
        D.load_config(p)
    p.write_text("other: {}\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="distill"):
        D.load_config(p)
    assert main(["distill", "--config", str(p), "--out", str(tmp_path / "o")]) == 2


def test_dataset_round_trip_and_refusals(tmp_path: Path) -> None:
    data = D.collect_instance(_small(30), 10_003)
    D.save_dataset(tmp_path / "d.npz", data)
    back = D.load_dataset(tmp_path / "d.npz")
    assert all(np.array_equal(back[k], data[k]) for k in D.DATASET_KEYS)
    np.savez(tmp_path / "bad.npz", obs=data["obs"])
    with pytest.raises(ConfigError):
        D.load_dataset(tmp_path / "bad.npz")
    np.savez(tmp_path / "pickled.npz", **{**{k: data[k] for k in D.DATASET_KEYS},
                                          "hard": np.array([object()] * len(data["hard"]), dtype=object)})
    with pytest.raises((ConfigError, ValueError)):  # an object array needs pickle: never loaded
        D.load_dataset(tmp_path / "pickled.npz")


def test_pipeline_end_to_end_tiny(tmp_path: Path) -> None:
    cfg = D.DistillConfig.from_mapping({"families": ["bursty"], "tiers": ["default"], "instances_per_task": 1,
                                        "max_requests": 60, "dagger_rounds": 1, "dagger_instances_per_task": 1,
                                        "epochs": 2, "eval_every": 1, "seeds": [0], "hidden": [16, 16]})
    meta = D.run(cfg, tmp_path, log=lambda s: None)
    assert [r["round"] for r in meta["rounds"]] == [0, 1] and all(r["samples"] > 0 for r in meta["rounds"])
    data = D.load_dataset(tmp_path / "data.npz")
    assert len(data["hard"]) == sum(r["samples"] for r in meta["rounds"])
    actor = load_policy(tmp_path / "seed0")
    assert actor.observation_size == 57 and actor.action_count == 13 and actor.hidden_sizes == [16, 16]
    hist = [json.loads(x) for x in (tmp_path / "seed0" / "history.jsonl").read_text().splitlines()]
    assert len(hist) == 2 and {"gap_realistic", "win_realistic", "gap_exact"} <= set(hist[-1])
    # the normalised score on the held-out cases (0 = no-deflect, 1 = kairos-exact) is logged per track
    assert {"norm_mean_exact", "norm_iqm_realistic"} <= set(hist[-1])
    assert json.loads((tmp_path / "meta.json").read_text())["seeds"]["0"]["best_epoch"] in (1, 2)
    # the checkpoint runs through the ppo policy on a suite task that does not enable the LargestSafe action
    from kairos_gym.agents.ppo import PPOAgent

    base = on_track(SUITE[0].base(), "realistic").with_overrides({"workload": {"num_requests": 40}})
    out = run_policy(PPOAgent(base, path=tmp_path / "seed0"), base, 0)
    assert 0.0 <= out["slo_attainment"] <= 1.0


def test_validation_normalised_score_uses_the_anchors() -> None:
    cases = [SimpleNamespace(label="a@exact", track="exact"), SimpleNamespace(label="b@exact", track="exact"),
             SimpleNamespace(label="c@realistic", track="realistic")]
    slo = {"a@exact": 0.8, "b@exact": 0.5, "c@realistic": 0.9}
    kairos = {"a@exact": 0.7, "b@exact": 0.6, "c@realistic": 0.9}
    anchors = {"a@exact": (0.6, 1.0), "b@exact": (0.5, 0.505), "c@realistic": (0.4, 0.9)}  # b: no room (< 0.01)
    orig = D.run_student
    D.run_student = lambda actor, c: {"slo_attainment": slo[c.label]}  # type: ignore[assignment]
    try:
        out = D.validate_actor(None, cases, kairos, anchors)
        plain = D.validate_actor(None, cases, kairos)
    finally:
        D.run_student = orig  # type: ignore[assignment]
    assert out["norm_mean_exact"] == pytest.approx(0.5) and out["norm_iqm_exact"] == pytest.approx(0.5)  # a only
    assert out["norm_mean_realistic"] == pytest.approx(1.0)
    assert out["gap_exact"] == pytest.approx(0.0) and out["select"] == out["gap_realistic"] == pytest.approx(0.0)
    assert not any(k.startswith("norm_") for k in plain) and {k: out[k] for k in plain} == plain
