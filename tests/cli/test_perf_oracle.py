"""``kairos-gym perf-oracle`` (kairos_gym/perf/oracle_speed.py): the measurements compare runs that must be the
same, the growth exponent is a least-squares slope, and bad flags stop the command before any run."""

from __future__ import annotations

import json

import pytest

import kairos_gym.benchmark.oracle_cost as cost
import kairos_gym.perf.oracle_speed as speed
from kairos_gym.benchmark.suite import select_tasks
from kairos_gym.cli.main import main
from kairos_gym.errors import ConfigError


def test_growth_exponent_is_the_log_log_slope() -> None:
    assert speed.growth_exponent([100, 200, 400], [3.0, 12.0, 48.0]) == pytest.approx(2.0)
    assert speed.growth_exponent([1, 10], [5.0, 50.0]) == pytest.approx(1.0)
    for ns, cs in (([100], [1.0]), ([100, 100], [1.0, 2.0]), ([0, 10], [1.0, 2.0]), ([1, 2], [1.0])):
        with pytest.raises(ValueError):
            speed.growth_exponent(ns, cs)


def test_measure_runs_both_searches_on_each_thread_count_with_one_result() -> None:
    rows = speed.measure("bursty", 60, 1, [1, 2])
    assert [(r["search"], r["threads"]) for r in rows] == [("exhaustive", 1), ("exhaustive", 2), ("bounded", 1),
                                                         ("bounded", 2)]
    assert len({r["slo_attainment"] for r in rows}) == 1
    ex, bd = rows[0], rows[2]
    assert ex["pruned"] == ex["reused"] == 0 and bd["rollout_decisions"] <= ex["rollout_decisions"]
    assert bd["cost_ratio"] == ex["rollout_decisions"] / bd["rollout_decisions"]
    assert ex["stopped_share"] == 0.0 and 0.0 <= bd["stopped_share"] <= 1.0
    (late,) = speed.measure("bursty", 90, 2, [1], ("bounded",))  # stopped rollouts that ran a while
    assert late["pruned"] > 0 and 0.2 < late["stopped_share"] < 0.5


def test_measure_runs_the_reference_search_too() -> None:
    rows = speed.measure("bursty", 40, 1, [1], ("reference", "bounded"))
    assert [r["search"] for r in rows] == ["reference", "bounded"]
    assert rows[0]["slo_attainment"] == rows[1]["slo_attainment"] and rows[0]["pruned"] == 0


def test_suite_growth_and_empty_measurements(tmp_path, capsys) -> None:
    tasks = select_tasks("decode-bound/relaxed")
    res = cost.measure_suite(1, [*tasks])
    (row,) = res["tasks"]
    assert row["task"] == "decode-bound/relaxed" and row["instances"] == 1 and row["requests"] == 500
    assert row["bounded_rollout_decisions"] < row["exhaustive_rollout_decisions"]  # all ties: stopped at once
    assert res["total"]["cost_ratio"] == row["cost_ratio"] and "reference_wall_ratio" not in row
    with pytest.raises(ValueError, match="searches"):
        cost.measure_suite(1, [*tasks], searches=("reference", "bounded"))
    with pytest.raises(ConfigError, match="3000 requests"):  # bursty's workload holds 3,000
        speed.measure_growth("bursty", [30, 4000], 0)
    g = speed.measure_growth("bursty", [30, 60], 0)
    assert [r["requests"] for r in g["rows"]] == [30, 60] and g["exponent_rollout_decisions"] > 0
    (e,) = cost.empty_arrivals(tasks=select_tasks("long-tail"))[:1]
    assert e["task"] == "long-tail/strict" and 0 < e["empty"] < e["arrivals"]
    out = tmp_path / "g.json"
    assert main(["perf-oracle", "--scenario", "bursty", "--growth", "30,40", "--json", str(out)]) == 0
    assert [r["requests"] for r in json.loads(out.read_text())["rows"]] == [30, 40]
    assert "growth exponent" in capsys.readouterr().out


@pytest.mark.parametrize("flags", [["--plot", "x.png"], ["--suite", "--growth", "10,20"], ["--suite", "--empty"],
                                   ["--search", "fast"], ["--search", "bounded,bounded"], ["--threads", "1,1"],
                                   ["--suite", "--search", "reference,bounded"],
                                   ["--instances", "0"], ["--growth", "0,10"], ["--requests", "0"]])
def test_bad_flags_stop_before_any_run(flags, monkeypatch, capsys) -> None:
    def boom(*a, **k):
        raise AssertionError("ran")

    for mod, name in ((speed, "measure"), (speed, "measure_growth"), (cost, "measure_suite"),
                      (cost, "empty_arrivals")):
        monkeypatch.setattr(mod, name, boom)
    assert main(["perf-oracle", *flags]) == 2
    assert "perf-oracle" in capsys.readouterr().err
