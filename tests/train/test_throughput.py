"""kairos-gym perf-train (train/throughput.py): runs at smoke size and reports both recipes (no timing asserted)."""

from __future__ import annotations

import json

import pytest

from kairos_gym.cli.main import main

pytest.importorskip("sb3_contrib")


def test_perf_train_reports_the_domain_and_the_single_scenario_recipe(capsys):
    """One rollout per recipe (--timesteps 1 rounds up to 32 envs x 128 steps), JSON on stdout: a row each, the
    domain one on the native domain vector env, ratios to the single-scenario recipe."""
    assert main(["perf-train", "--timesteps", "1", "--repeats", "1", "--json", "-"]) == 0
    res = json.loads(capsys.readouterr().out)
    rows = {r["recipe"]: r for r in res["rows"]}
    assert list(rows) == ["domain", "domain-v2", "single"]
    for name in ("domain", "domain-v2"):
        assert rows[name]["env_id"] == "kairos_train/KairosGeneral-v0" and rows[name]["vec_backend"] == "native"
    assert rows["domain"]["config"] == "general-fast.yaml" and rows["single"]["config"] == "kairos-v0-fast.yaml"
    assert rows["domain-v2"]["config"] == "v2-seen.yaml" and rows["domain-v2"]["steps"] == 32 * 256
    for r in rows.values():
        assert r["steps"] in (32 * 128, 32 * 256) and r["steps_per_s"] > 0 and r["steps_per_cpu_s"] > 0
        assert len(r["steps_per_s_runs"]) == 1
    assert rows["single"]["ratio"] == 1.0 and rows["domain"]["ratio"] > 0


@pytest.mark.parametrize("argv", [["--timesteps", "0"], ["--repeats", "21"], ["--seed", "-1"], ["--timesteps", "x"]])
def test_perf_train_refuses_bad_flags_before_any_timing(argv, capsys):
    assert main(["perf-train", *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("kairos-gym perf-train: error:"), err


def test_bench_train_refuses_bad_arguments():
    from kairos_gym.train.throughput import bench_train

    from kairos_gym.errors import ConfigError

    for kw in ({"timesteps": 0}, {"repeats": True}, {"recipes": (("x", "no-such.yaml"),)}, {"recipes": ()},
               {"recipes": (("a", "smoke.yaml"), ("a", "smoke.yaml"))}):
        with pytest.raises(ConfigError):
            bench_train(**kw)
