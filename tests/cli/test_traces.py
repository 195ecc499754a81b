"""`kairos-gym traces`: the statistics of the packaged traces and rate profile, of trace files, of scenarios'
workloads (kairos_gym/workload/trace_stats.py)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from kairos_gym.cli.main import main
from kairos_gym.workload import load_trace
from kairos_gym.workload.trace_stats import percentile, profile_stats, workload_stats
from kairos_gym.workload.traces import HEADER
from kairos_gym.workload.workload import Workload


def _json(capsys, argv: list[str]) -> dict:
    assert main([*argv, "--json", "-"]) == 0
    return json.loads(capsys.readouterr().out)


def test_packaged_traces_give_the_readme_statistics(capsys):
    res = _json(capsys, ["traces"])
    rows = {r["name"]: r for r in res["traces"]}
    assert list(rows) == ["azure2023_code", "azure2023_conv", "mooncake_fast25_conversation",
                          "mooncake_fast25_synthetic", "sharegpt8k_lengths_only", "arxiv_summarization_lengths_only"]
    code = rows["azure2023_code"]  # kairos_gym/data/traces/README.md
    assert code["requests"] == 8819 and round(code["rate"], 3) == 2.566 and round(code["iat_cv"], 2) == 13.15
    assert (code["empty_minutes"], code["minutes"]) == (12, 58)
    assert (code["prompt_p50"], code["prompt_p99"], code["prompt_max"]) == (1469, pytest.approx(7436, abs=0.5), 7437)
    assert code["prompt_tokens_per_s"] == pytest.approx(code["prompt_mean"] * code["rate"])
    lengths_only = rows["sharegpt8k_lengths_only"]
    assert lengths_only["requests"] == 30731
    assert lengths_only["rate"] is None and lengths_only["span_s"] is None and lengths_only["iat_cv"] is None
    m_large = res["profiles"]["servegen_rate_profiles"][0]
    assert m_large["model"] == "m-large" and m_large["windows"] == 2016 and m_large["days"] == 14
    assert round(m_large["peak_over_mean"], 2) == 2.98 and m_large["day1"]["windows"] == 144
    assert round(m_large["day1"]["peak_over_mean"], 2) == 2.09 and round(m_large["day1"]["min_over_mean"], 2) == 0.54


def test_the_statistics_agree_with_the_workload_summary():
    wl = load_trace("azure2023_conv")
    s, mine = wl.summary(), workload_stats(wl)
    assert mine["requests"] == s["n"] and mine["span_s"] == s["span_s"] and mine["rate"] == s["rate"]
    assert mine["iat_cv"] == pytest.approx(s["iat_cv"], rel=1e-12)
    for side in ("prompt", "output"):
        for k in ("mean", "p50", "p99"):
            assert mine[f"{side}_{k}"] == pytest.approx(s[f"{side}_{k}"], rel=1e-12), (side, k)


def test_percentile_is_numpy_linear_interpolation():
    rng = np.random.default_rng(0)
    for n in (1, 2, 7, 100):
        x = np.sort(rng.integers(1, 10_000, n))
        for q in (0, 10, 50, 95, 99, 100):
            assert percentile(x, q) == pytest.approx(float(np.percentile(x, q)), rel=1e-12), (n, q)
    assert np.isnan(percentile(np.array([]), 50))


def test_a_trace_file_by_path_and_the_table(tmp_path: Path, capsys):
    f = tmp_path / "mine.csv"
    f.write_text(f"{HEADER}\n0,10,2\n30,20,4\n130,30,6\n")
    res = _json(capsys, ["traces", str(f)])
    (row,) = res["traces"]
    assert row["name"] == str(f) and row["requests"] == 3 and row["rate"] == pytest.approx(2 / 130)
    assert (row["empty_minutes"], row["minutes"]) == (1, 3)  # minutes 0 and 2 hold arrivals
    assert "profiles" not in res
    assert main(["traces", str(f)]) == 0
    out = capsys.readouterr().out
    assert "mine.csv" in out and max(len(line) for line in out.splitlines()) <= 120


def test_scenarios_give_the_workload_the_simulator_draws(capsys):
    res = _json(capsys, ["traces", "--scenarios", "small,azure-code", "--seed", "3"])
    assert res["seed"] == 3
    small, code = res["scenarios"]
    assert (small["name"], small["requests"]) == ("small", 200)
    assert code["requests"] == 8819 and code["iat_cv"] == pytest.approx(13.15, abs=0.005)  # rate_scale keeps the CV


def test_every_table_fits_120_columns(capsys):
    assert main(["traces"]) == 0
    out = capsys.readouterr().out
    assert "azure2023_code" in out and "m-large" in out and "left out" not in out
    assert max(len(line) for line in out.splitlines()) <= 120


@pytest.mark.parametrize("argv, message", [
    (["traces", "--seed", "-1"], "--seed"),
    (["traces", "--scenarios", "small,small"], "each value once"),
    (["traces", "azure2023_code", "--scenarios", "small"], "not both"),
    (["traces", "no_such_trace"], "no_such_trace"),
    (["traces", "--scenarios", "no-such-scenario"], "no-such-scenario"),
])
def test_bad_input_is_one_error_line(argv, message, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_a_profile_without_a_full_day_has_no_first_day(tmp_path: Path):
    f = tmp_path / "p.csv"
    f.write_text("model,window_start_s,total_rate\na,0,1\na,600,3\nb,0,2\nb,3600,0\n")
    a, b = profile_stats(str(f))
    assert (a["model"], a["windows"], a["day1"]) == ("a", 2, None)
    assert a["peak_over_mean"] == 1.5 and a["max_over_min"] == 3.0
    assert b["max_over_min"] is None and b["min_over_mean"] == 0.0


def test_one_request_has_no_rate():
    s = workload_stats(Workload(np.array([1.0]), np.array([5]), np.array([1]), "one"))
    assert s["requests"] == 1 and s["rate"] is None and s["prompt_p99"] == 5.0 and s["prompt_tokens_per_s"] is None
