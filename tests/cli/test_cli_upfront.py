"""Every command checks its flags and output paths before it starts: exit 2, one clear line, nothing run."""

from __future__ import annotations

import json

import kairos_gym.agents.runner as runner
import pytest

import kairos_gym.benchmark.leaderboard as leaderboard_mod
import kairos_gym.benchmark.paper_claims as results_mod
import kairos_gym.evaluation.evaluate as evaluate_mod
import kairos_gym.evaluation.sweep as sweep_mod
import kairos_gym.latency.report as latency_report
import kairos_gym.perf.throughput as bench_mod
from kairos_gym.cli.main import main


@pytest.fixture
def no_work(monkeypatch):
    """Every entry point that does work raises if it is reached: a rejected command must not get there."""
    calls: list[str] = []

    def spy(name):
        def f(*a, **k):
            calls.append(name)
            raise AssertionError(f"{name} ran before the bad flag was reported")
        return f

    for mod, attr in ((evaluate_mod, "evaluate"), (evaluate_mod, "run_one"), (sweep_mod, "sweep"),
                      (results_mod, "build_results"), (leaderboard_mod, "run_suite"),
                      (runner, "simulate"), (bench_mod, "run_bench"), (latency_report, "calibration_report_md"),
                      (latency_report, "latency_table"), (latency_report, "seed_target_checks")):
        monkeypatch.setattr(mod, attr, spy(f"{mod.__name__}.{attr}"))
    return calls


def _paths(tmp_path):
    (tmp_path / "afile").write_text("x")
    (tmp_path / "adir").mkdir()
    return str(tmp_path / "afile"), str(tmp_path / "adir"), str(tmp_path / "afile" / "below.json")


@pytest.mark.parametrize("cmd,flag,kind", [
    ("evaluate", "--json", "dir"), ("evaluate", "--plots", "file"), ("evaluate", "--json", "under-file"),
    ("sweep", "--json", "dir"), ("sweep", "--plots", "file"),
    ("results", "--out", "dir"), ("results", "--json", "under-file"),
    ("leaderboard", "--out", "under-file"), ("leaderboard", "--json", "dir"),
    ("simulate", "--json", "dir"), ("simulate", "--requests-csv", "dir"), ("simulate", "--requests-csv", "under-file"),
    ("latency", "--json", "dir"), ("latency", "--calibration-report", "dir"),
    ("perf", "--json", "under-file"),
    ("demo", "--out", "file"),
])
def test_bad_output_path_exits_2_before_the_run(cmd, flag, kind, tmp_path, capsys, no_work):
    afile, adir, under = _paths(tmp_path)
    path = {"dir": adir, "file": afile, "under-file": under}[kind]
    assert main([cmd, flag, path]) == 2
    out, err = capsys.readouterr()
    assert no_work == [] and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"kairos-gym {cmd}: error: ") and flag in lines[0] and "allowed" in lines[0]


def test_two_outputs_on_one_path(tmp_path, capsys, no_work):
    p = str(tmp_path / "same")
    assert main(["simulate", "--json", p, "--requests-csv", p]) == 2
    assert "--json writes it too" in capsys.readouterr().err and no_work == []


@pytest.mark.parametrize("argv,needle", [
    (["evaluate", "--seeds", "0,0,0"], "listed twice"),
    (["evaluate", "--seeds", "0,3-1"], "is empty"),
    (["evaluate", "--seeds", "0-1000000000000"], "below"),
    (["evaluate", "--seeds", "0-100000000"], "at most 1000"),
    (["evaluate", "--policies", "kairos,kairos"], "each value once"),
    (["evaluate", "--policies", "kairos,,sq"], "no empty element"),
    (["demo", "--seeds", "2-1"], "is empty"),
    (["results", "--seeds", "0,0"], "listed twice"),
    (["sweep", "--chunks", "512.7"], "'512.7' is not"),
    (["sweep", "--sq-thresholds", "1e12"], "--sq-thresholds"),
    (["sweep", "--loads", "0"], "--loads"),
    (["sweep", "--loads", "nan"], "--loads"),
    (["sweep", "--loads", "1e6"], "--loads"),
    (["sweep", "--policies", "nope"], "--policies"),
    (["sweep", "--references", "nope"], "--references"),
    (["sweep", "--seeds", "0,0"], "listed twice"),
    (["perf", "--env-seconds", "inf"], "finite"),
    (["perf", "--env-seconds", "nan"], "finite"),
    (["perf", "--env-seconds", "1e9"], "<= 600"),
    (["perf", "--env-repeats", "1.5"], "--env-repeats"),
    (["perf", "--env-repeats", "1000"], "--env-repeats"),
    (["simulate", "--seed", "-1"], "--seed"),
    (["simulate", "--seed", "4294967296"], "--seed"),
    (["simulate", "--policy", "nope"], "nope"),
    (["latency", "--batches", "100000000"], "--batches"),
    (["latency", "--chunks", "512.5"], "--chunks"),
    (["latency", "--tp", "2.0"], "--tp"),
    (["leaderboard", "--policies", "kairos,nope"], "nope"),
])
def test_bad_values_exit_2_before_the_run(argv, needle, capsys, no_work):
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert no_work == [] and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0] and "allowed" in lines[0] and "Traceback" not in err, err


@pytest.mark.parametrize("argv,needle", [
    (["--chunks", "300"], "chunk size from the scenario menu"),
    (["--loads", "", "--references", "ppo", "--sq-thresholds", "", "--sl-thresholds", "1e10"], "--sl-thresholds"),
])
def test_sweep_checks_every_setting_before_the_first_run(argv, needle, monkeypatch, capsys):
    monkeypatch.setattr(evaluate_mod, "run_one", lambda *a, **k: pytest.fail("a run started"))
    assert main(["sweep", *argv]) == 2
    err = capsys.readouterr().err
    assert needle in err and len(err.strip().splitlines()) == 1


def test_env_bench_bounds():
    from kairos_gym.errors import ConfigError
    from kairos_gym.perf.env_throughput import bench_env, run_decisions

    for kw in ({"seconds": float("inf")}, {"seconds": float("nan")}, {"seconds": 1e9}, {"repeats": 10**6}):
        with pytest.raises(ConfigError):
            bench_env("kairos_gym/KairosSmall-v0", **kw)
    with pytest.raises(ConfigError, match="decisions"):
        run_decisions("kairos_gym/KairosSmall-v0", decisions=10**12)


def test_run_bench_checks_before_timing(monkeypatch):
    from kairos_gym.errors import ConfigError

    monkeypatch.setattr(bench_mod, "bench_simulator", lambda *a, **k: pytest.fail("timing started"))
    for kw in ({"env_seconds": float("inf")}, {"env_seconds": 0.0}, {"env_repeats": 0}, {"env_repeats": 2.0}):
        with pytest.raises(ConfigError):
            bench_mod.run_bench(**kw)


def test_measure_and_compare_check_up_front(tmp_path, capsys, monkeypatch):
    from kairos_gym.evaluation import compare, measure

    monkeypatch.setattr(measure, "run_policy", lambda *a, **k: pytest.fail("a run started"))
    monkeypatch.setattr(compare, "compare", lambda *a, **k: pytest.fail("a run started"))
    assert main(["measure", "--json", str(tmp_path)]) == 2
    assert main(["measure", "--seed", "1.5"]) == 2
    assert main(["measure", "--policies", "sq", "--requests", "1e9"]) == 2
    assert main(["measure", "--policies", "sq,nope"]) == 2
    assert main(["compare", "--seeds", "0,0"]) == 2
    assert main(["compare", "--markdown", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 6 and err.count("error:") == 6
    for needle in ("--json", "--seed", "--requests", "'nope'", "listed twice", "--markdown"):
        assert needle in err


def test_json_to_stdout_is_clean(tmp_path, capsys):
    scenario = tmp_path / "tiny.yaml"
    scenario.write_text(json.dumps({"name": "tiny", "workload": {
        "arrival": {"kind": "gamma", "rate": 22, "cv": 3}, "num_requests": 60,
        "lengths": {"kind": "lognormal", "prompt_median": 1500, "prompt_sigma": 0.8, "prompt_max": 8000,
                    "output_median": 30, "output_sigma": 0.5, "output_max": 100}}}))
    assert main(["evaluate", "--scenario", str(scenario), "--policies", "no-deflect,sq", "--seeds", "0,1",
                 "--json", "-"]) == 0
    out, err = capsys.readouterr()
    runs = json.loads(out)["runs"]  # nothing but the JSON on stdout (no table, no progress bar)
    assert [r["policy"] for r in runs] == ["no-deflect", "no-deflect", "sq", "sq"] and err == ""
