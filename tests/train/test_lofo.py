"""Leave one family out (train/lofo.py, ``kairos-gym lofo``): the runs' configs, the statistics, the report, and a
tiny study end to end."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
from kairos_gym.train import lofo
from kairos_gym.train.config import load_config

from kairos_gym.benchmark.trained_on import declared
from kairos_gym.cli.main import main
from kairos_gym.errors import ConfigError

ROOT = Path(__file__).resolve().parents[2]
V2_SEEN = ROOT / "configs" / "ppo" / "v2-seen.yaml"
FAMS = ("bursty", "regime-shift", "decode-bound", "kv-pressure")


@pytest.fixture(scope="module")
def cfg():
    return load_config(V2_SEEN)


def test_the_recipes_families_are_its_declared_ones(cfg) -> None:
    assert lofo.recipe_families(cfg) == FAMS
    assert lofo.parse_held_out(cfg, None) == FAMS
    assert lofo.parse_held_out(cfg, "kv-pressure,bursty") == ("bursty", "kv-pressure")  # recipe order


@pytest.mark.parametrize("value, allowed", [("fault-shift", "families of the recipe"),
                                            ("servegen-sharegpt", "families of the recipe"),
                                            ("bursty,bursty", "each family once")])
def test_a_held_out_family_outside_the_recipe_is_refused(cfg, value: str, allowed: str) -> None:
    with pytest.raises(ConfigError, match=allowed):
        lofo.parse_held_out(cfg, value)


def test_only_a_suite_v2_domain_recipe_is_taken(cfg) -> None:
    with pytest.raises(ConfigError, match="env id"):
        lofo.recipe_families(load_config(ROOT / "configs" / "ppo" / "kairos-v0-fast.yaml"))
    v1 = dataclasses.replace(cfg, env_kwargs={**cfg.env_kwargs, "suite": "v1"})
    with pytest.raises(ConfigError, match=r"env_kwargs\.suite"):
        lofo.recipe_families(v1)
    one = dataclasses.replace(cfg, env_kwargs={**cfg.env_kwargs, "families": ["bursty"]})
    with pytest.raises(ConfigError, match="at least two families"):
        lofo.recipe_families(one)


def test_a_run_leaves_its_family_out_of_training_validation_and_its_card(cfg, tmp_path: Path) -> None:
    from kairos_gym.train.domain import spec_from_kwargs, validation_cases

    run = lofo.run_config(cfg, "decode-bound", seed=3, timesteps=4096)
    assert run.seed == 3 and run.n_timesteps == 4096
    assert run.env_kwargs["families"] == ["bursty", "regime-shift", "kv-pressure"]
    assert {c.family for c in validation_cases(spec_from_kwargs(run.env_kwargs))} == {"bursty", "regime-shift",
                                                                                     "kv-pressure"}
    import yaml

    (tmp_path / "config.yaml").write_text(yaml.safe_dump(run.to_yaml_dict(), sort_keys=False), encoding="utf-8")
    fams, how = declared(tmp_path)
    assert fams == ("bursty", "regime-shift", "kv-pressure") and how.startswith("RL: maskable_ppo")
    assert lofo.run_config(cfg, None, 0, None).env_kwargs["families"] == list(FAMS)
    assert lofo.run_config(cfg, None, 0, None).n_timesteps == cfg.n_timesteps


def test_the_plan_trains_every_family_then_one_run_per_held_out_family(cfg, tmp_path: Path) -> None:
    runs = lofo.plan(cfg, tmp_path, ("bursty", "kv-pressure"), [0, 2])
    assert [r.label for r in runs] == ["all/seed0", "without-bursty/seed0", "without-kv-pressure/seed0",
                                       "all/seed2", "without-bursty/seed2", "without-kv-pressure/seed2"]
    assert runs[1].folder == tmp_path / "seed0" / "without-bursty" and runs[1].export == runs[1].folder / "export"
    for seeds in ([], [1, 1], list(range(lofo.MAX_SEEDS + 1))):
        with pytest.raises(ConfigError, match="--seeds"):
            lofo.plan(cfg, tmp_path, ("bursty",), seeds)


def _scores(w: float, a: float, k: float, n: int = 6) -> dict[str, list[float]]:
    return {"kairos": [k] * n, "without-bursty/seed0": [w] * n, "all/seed0": [a] * n,
            "without-bursty/seed1": [w + 0.02] * n, "all/seed1": [a - 0.02] * n}


def test_the_summary_is_paired_differences_in_points_seed_means_per_instance() -> None:
    summ = lofo.summarise({"exact": {"bursty": _scores(0.50, 0.60, 0.55)}}, [0, 1])["exact"]
    row = summ["families"]["bursty"]
    assert row["without"] == pytest.approx(51.0) and row["all"] == pytest.approx(59.0)
    assert row["kairos"] == pytest.approx(55.0) and row["n"] == 6
    assert row["per_seed"]["0"] == {"without": pytest.approx(50.0), "all": pytest.approx(60.0)}
    for key, want in (("without_vs_all", -8.0), ("without_vs_kairos", -4.0), ("all_vs_kairos", 4.0)):
        d = row[key]
        assert d["mean"] == pytest.approx(want) and d["low"] == pytest.approx(want) and d["high"] == pytest.approx(want)
        assert summ["pooled"][key]["mean"] == pytest.approx(want)


def test_the_interval_widens_with_the_instances_spread_and_covers_the_mean() -> None:
    rng = np.random.default_rng(0)
    base = rng.uniform(0.4, 0.9, size=30)
    sc = {"kairos": list(base), "all/seed0": list(base + 0.05), "without-bursty/seed0": list(base + rng.normal(0, .05,
                                                                                                              30))}
    d = lofo.summarise({"exact": {"bursty": sc}}, [0])["exact"]["families"]["bursty"]["without_vs_all"]
    assert d["low"] < d["mean"] < d["high"] and d["high"] - d["low"] > 1.0


def _study(tmp_path: Path) -> dict:
    scores = {"exact": {"bursty": _scores(0.5, 0.6, 0.55)}}
    return {"study": "leave-one-family-out", "suite": "v2", "command": "kairos-gym lofo --config X", "commit": "abc",
            "config": "X", "families": list(FAMS), "held_out": ["bursty"], "seeds": [0, 1], "timesteps": 1000,
            "runs": [{"label": "all/seed0", "families": list(FAMS), "reused": False, "train_seconds": 10.0}],
            "scores": scores, "summary": lofo.summarise(scores, [0, 1]), "elapsed_s": 12.0}


def test_the_report_renders_from_the_saved_study(tmp_path: Path, capsys) -> None:
    path = tmp_path / "study.json"
    path.write_text(json.dumps(_study(tmp_path)), encoding="utf-8")
    out = tmp_path / "r.md"
    assert main(["lofo", "--config", str(V2_SEEN), "--from-json", str(path), "--out", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    assert text == lofo.render(_study(tmp_path))
    assert "| bursty | 6 | 51.0 | 59.0 | 55.0 | -8.0 [-8.0, -8.0] | -4.0 [-4.0, -4.0] | +4.0 [+4.0, +4.0] |" in text
    assert "s0: 50.0 / 60.0; s1: 52.0 / 58.0" in text


@pytest.mark.parametrize("body, field", [({"study": "something else"}, "--from-json"),
                                         ({"study": "leave-one-family-out"}, "missing")])
def test_a_file_that_is_not_a_study_is_refused(tmp_path: Path, capsys, body: dict, field: str) -> None:
    path = tmp_path / "s.json"
    path.write_text(json.dumps(body), encoding="utf-8")
    assert main(["lofo", "--config", str(V2_SEEN), "--from-json", str(path), "--out", str(tmp_path / "r.md")]) == 2
    err = capsys.readouterr().err
    assert "--from-json" in err and field in err


@pytest.mark.parametrize("args, field", [(["--hold-out", "nope"], "--hold-out"), (["--seeds", "1,1"], "--seeds"),
                                         (["--timesteps", "0"], "--timesteps"), (["--tracks", "exact,x"], "--tracks"),
                                         (["--config", str(ROOT / "configs" / "ppo" / "kairos-v0-fast.yaml")],
                                          "env id")])
def test_bad_flags_are_refused_before_any_training(tmp_path: Path, capsys, args: list[str], field: str) -> None:
    base = ["lofo", "--config", str(V2_SEEN), "--runs", str(tmp_path / "runs"), "--out", str(tmp_path / "r.md")]
    assert main(base + args) == 2
    assert field in capsys.readouterr().err
    assert not (tmp_path / "runs").exists()


def test_a_tiny_study_end_to_end_and_a_rerun_reuses_its_runs(cfg, tmp_path: Path) -> None:
    """One training rollout per run (8,192 decisions); the held-out family's task cut to 2 test instances of 150 +
    150 requests. The without-F agent's card declares the families it trained on; a second call trains nothing."""
    task = lofo.seen_tasks()["regime-shift"]
    small = dataclasses.replace(task, test=task.test[:2], overrides={
        **task.overrides, "workload": {**task.overrides.get("workload", {}), "num_requests": 300},
        "slo": {**task.overrides.get("slo", {}), "burn_in_requests": 150}})
    tiny = dataclasses.replace(cfg, eval=dataclasses.replace(cfg.eval, freq=0))
    logs: list[str] = []
    res = lofo.run_lofo(tiny, tmp_path, ("regime-shift",), [0], timesteps=8192, tracks=("exact",),
                        log=logs.append, tasks={"regime-shift": small})
    assert set(res["scores"]["exact"]["regime-shift"]) == {"kairos", "all/seed0", "without-regime-shift/seed0"}
    assert all(len(v) == 2 and all(0 <= x <= 1 for x in v) for v in res["scores"]["exact"]["regime-shift"].values())
    assert [r["reused"] for r in res["runs"]] == [False, False]
    fams, _ = declared(tmp_path / "seed0" / "without-regime-shift" / "export")
    assert fams == ("bursty", "decode-bound", "kv-pressure")
    again = lofo.run_lofo(tiny, tmp_path, ("regime-shift",), [0], timesteps=8192, tracks=("exact",),
                          log=logs.append, tasks={"regime-shift": small})
    assert [r["reused"] for r in again["runs"]] == [True, True]
    assert again["scores"] == res["scores"]
    assert "| regime-shift | 2 |" in lofo.render(again)


def test_the_committed_study_is_what_its_json_renders() -> None:
    from kairos_gym.json_file import read_json_file

    res = lofo.check_study(read_json_file("t", "f", ROOT / "results" / "lofo-v2.json", lofo.MAX_JSON_BYTES, "study"),
                           "results/lofo-v2.json")
    assert (ROOT / "results" / "lofo-v2.md").read_text(encoding="utf-8") == lofo.render(res)
    assert res["held_out"] == list(FAMS) and res["families"] == list(FAMS)
