"""Evaluation harness: seeds parsing, load scaling, sweep verdicts, Pareto front, reports, CLI errors."""

from __future__ import annotations

import json
import math

import pytest

from kairos_gym.cli.main import main
from kairos_gym.errors import ConfigError
from kairos_gym.evaluation.evaluate import evaluate, format_table, mean_ci, parse_seeds
from kairos_gym.evaluation.sweep import classify, pareto_front, scale_load
from kairos_gym.scenario import load_scenario
from tests.fixtures import TINY_BENCH


def test_parse_seeds():
    assert parse_seeds("0-4") == [0, 1, 2, 3, 4]
    assert parse_seeds("0,3,7") == [0, 3, 7]
    for bad in ("", "a-b", "-3"):
        with pytest.raises(ConfigError, match="--seeds"):
            parse_seeds(bad)


def test_mean_ci_is_a_student_t_interval():
    # one seed: no interval (not "± 0"); three seeds: t_{0.975,2} = 4.3027 (a z interval would use 1.96)
    m1, h1 = mean_ci([1.0])
    assert m1 == 1.0 and math.isnan(h1)
    m, h = mean_ci([1.0, 2.0, 3.0])
    assert m == 2.0 and h == pytest.approx(4.302652729749464 * 1.0 / math.sqrt(3), rel=1e-9)
    assert all(math.isnan(x) for x in mean_ci([None, float("nan")]))


def test_scale_load_synthetic_and_trace():
    b = scale_load(load_scenario("bursty"), 2.0)
    assert b.workload.arrival.rate == 2 * load_scenario("bursty").workload.arrival.rate
    t = scale_load(load_scenario("azure-code"), 0.5)
    assert t.workload.arrival.rate_scale == 3.0
    m = scale_load(load_scenario("regime-shift"), 1.5)  # both states' rates, the sojourns unchanged
    assert (m.workload.arrival.rate_on, m.workload.arrival.rate_off, m.workload.arrival.mean_on_s) == (45.0, 12.0, 20.0)
    p = scale_load(load_scenario("servegen-day"), 0.5)  # a rate profile: its mean rate
    assert p.workload.arrival.rate == 12.0 and p.workload.arrival.num_windows == 144
    with pytest.raises(ConfigError, match="--loads"):
        scale_load(load_scenario("bursty"), 0.0)


def test_classify_and_pareto():
    rows = [{"policy": "kairos", "ttft_p95": 3.0, "tbt_violation_rate": 0.0},
            {"policy": "sq", "ttft_p95": 5.0, "tbt_violation_rate": 0.0},
            {"policy": "sl", "ttft_p95": 2.0, "tbt_violation_rate": 0.05}]
    classify(rows)
    assert rows[1]["verdict"] == "under-deflects" and rows[2]["verdict"] == "over-deflects"
    assert pareto_front([(0.0, 3.0), (0.0, 5.0), (0.05, 2.0), (0.06, 4.0)]) == [0, 2]


def test_evaluate_same_workloads_and_table():
    res = evaluate(TINY_BENCH, ["no-deflect", "kairos"], [0, 1])
    runs = res["runs"]
    assert len(runs) == 4 and {r["policy"] for r in runs} == {"no-deflect", "kairos"}
    # same seeds => same workload for both policies
    assert [r["n_requests"] for r in runs[:2]] == [r["n_requests"] for r in runs[2:]]
    k = [r for r in runs if r["policy"] == "kairos"]
    assert all(r["decision_us_p50"] is not None and r["decision_us_p50"] > 0 for r in k)
    assert "kairos" in format_table(res)
    with pytest.raises(ConfigError, match="policies"):
        evaluate(TINY_BENCH, ["nope"], [0])


def test_evaluate_writes_plots(tmp_path):
    res = evaluate(TINY_BENCH, ["no-deflect", "always-deflect"], [0], tmp_path)
    assert len(res["plots"]) == 4
    for p in res["plots"]:
        assert (tmp_path / p.split("/")[-1]).stat().st_size > 1000


def test_cli_simulate_json(tmp_path, capsys):
    path = tmp_path / "s.yaml"
    path.write_text(json.dumps(TINY_BENCH))
    out = tmp_path / "o.json"
    csv = tmp_path / "r.csv"
    assert main(["simulate", "--scenario", str(path), "--policy", "kairos", "--json", str(out),
                 "--requests-csv", str(csv)]) == 0
    s = json.loads(out.read_text())
    assert s["policy"] == "kairos" and s["n_completed"] == 120
    assert len(csv.read_text().splitlines()) == 121


@pytest.mark.parametrize("argv,needle", [
    (["simulate", "--policy", "nope"], "nope"),
    (["simulate", "--scenario", "missing-scenario"], "missing-scenario"),
    (["evaluate", "--seeds", "x"], "--seeds"),
    (["sweep", "--loads", "a"], "--loads"),
    (["latency", "--model", "gpt-9"], "gpt-9"),
    (["perf", "--env-repeats", "0"], "--env-repeats"),
    (["perf", "--env-seconds", "-1"], "--env-seconds"),
])
def test_cli_bad_input_one_clear_error(argv, needle, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert needle in err and "allowed" in err and "Traceback" not in err
