"""Suite v2's headroom against the Oracle (kairos_gym/benchmark/headroom_v2.py, ``kairos-gym headroom``): the
certified bound, the measured Oracle runs and their check against the board, the report, bad input."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
from kairos_gym.agents import run_policy

from kairos_gym.benchmark import headroom_v2 as hr
from kairos_gym.benchmark import oracle_cache
from kairos_gym.benchmark.suite import on_track
from kairos_gym.benchmark.suites import suite_named
from kairos_gym.cli.main import main

ENTRIES = ("no-deflect", "kairos", "always-deflect-ls", "sq-ls", "sl-ls")


def _board(scores: dict[str, dict[str, list[float]]], n: int, track: str = "exact") -> dict:
    return {"suite": "v2", "track": track, "commit": "c0ffee",
            "tasks": [{"task": t, "n_test": n} for t in next(iter(scores.values()))], "scores": scores}


def test_the_bound_is_the_best_base_per_instance_minus_the_best_entry() -> None:
    scores = {"no-deflect": {"bursty": [0.5, 0.9, 0.5, 0.9]}, "kairos": {"bursty": [0.9, 0.5, 0.9, 0.5]},
              "slo-guard": {"bursty": [0.8, 0.8, 0.8, 0.8]}}
    b = hr.certified_bound(_board(scores, 4), "bursty", ["no-deflect", "kairos-exact", ["sq-ls", {"x": 1}]])
    assert b["best"] == "slo-guard" and b["bases"] == ["no-deflect", "kairos"]  # a base with parameters is no entry
    assert b["bound"]["mean"] == pytest.approx(10.0) and b["bound"]["low"] == pytest.approx(10.0)
    assert hr.certified_bound(_board(scores, 4), "bursty", ["sq-ls"])["bound"] is None


def test_the_verdict_needs_an_interval_above_zero() -> None:
    clear = {"mean": 1.0, "low": 0.2, "high": 1.8}
    unclear = {"mean": 1.0, "low": -0.2, "high": 2.2}
    assert hr.verdict({"bound": clear, "measured": {"mean": 0.0, "half": None}}) == "headroom"
    assert hr.verdict({"bound": unclear, "measured": {"mean": 1.0, "half": 0.5}}) == "headroom"
    assert hr.verdict({"bound": unclear, "measured": {"mean": 1.0, "half": 1.5}}) == "none found"
    assert hr.verdict({"bound": None, "measured": {"mean": 3.0, "half": None}}) == "none found"


def _tiny_task():
    """Suite v2's bursty task cut to 2 test instances of 40 warm-up + 60 scored requests."""
    t = next(t for t in suite_named("v2") if t.name == "bursty")
    over = {**t.overrides, "workload": {**t.overrides.get("workload", {}), "num_requests": 100},
            "slo": {**t.overrides.get("slo", {}), "burn_in_requests": 40}}
    return dataclasses.replace(t, test=t.test[:2], overrides=over)


def _tiny_board(monkeypatch) -> tuple[dict, dict]:
    """The tiny task as suite v2's only task, and a board of the Oracle's base entries run on it."""
    task = _tiny_task()
    monkeypatch.setattr(hr, "_task_map", lambda: {"bursty": task})
    base = on_track(task.base(), "exact")
    scores = {e: {"bursty": [run_policy(e, i.scenario(base), i.seed)["slo_attainment"] for i in task.test]}
              for e in ENTRIES}
    return hr.check_board(_board(scores, 2), "b.json"), scores


def test_the_oracle_is_measured_cached_and_checked_against_the_board(monkeypatch, tmp_path: Path) -> None:
    board, scores = _tiny_board(monkeypatch)
    cache = tmp_path / "cache.json"
    logs: list[str] = []
    res = hr.run_headroom(board, 2, cache=cache, log=logs.append)
    row = res["tasks"]["bursty"]
    oracle = np.asarray(row["oracle"])
    for e in ENTRIES:  # the improvement property the bound rests on
        assert np.all(oracle >= np.asarray(scores[e]["bursty"]))
    best = np.asarray(scores[row["best"]]["bursty"])
    assert row["measured"]["mean"] == pytest.approx(100 * float(np.mean(oracle - best)))
    assert row["bound"]["mean"] >= 0  # the best entry is a base here
    assert len(oracle_cache.load(cache)) == 2 and "2 to run" in logs[0]
    again = hr.run_headroom(board, 2, cache=cache, log=logs.append)
    assert "0 to run" in logs[-1] and again["tasks"]["bursty"]["oracle"] == row["oracle"]
    text = hr.render(again)
    assert "| bursty |" in text and "Headroom shown on" in text
    # a board whose base scores beat the Oracle does not describe the same runs: refused
    bad = json.loads(json.dumps(board))
    bad["scores"]["no-deflect"]["bursty"] = [1.5, 1.5]
    with pytest.raises(ValueError, match="above the Oracle"):
        hr.run_headroom(bad, 2, cache=cache, log=logs.append)


def _write(tmp_path: Path, board: dict) -> str:
    p = tmp_path / "board.json"
    p.write_text(json.dumps(board), encoding="utf-8")
    return str(p)


@pytest.mark.parametrize("change, args, field", [
    ({"track": "realistic"}, [], "exact track"),
    ({"suite": "v1"}, [], "--board"),
    ({}, ["--instances", "-1"], "--instances"),
    ({}, ["--instances", "31"], "--instances"),
    ({}, ["--tasks", "nope"], "--tasks"),
])
def test_bad_input_is_refused_before_any_oracle_run(tmp_path: Path, capsys, change: dict, args: list[str],
                                                    field: str) -> None:
    real = json.loads((Path(__file__).resolve().parents[2] / "results" / "leaderboard-v2-exact.json").read_text())
    path = _write(tmp_path, {**real, **change})
    cache = tmp_path / "cache.json"
    assert main(["headroom", "--board", path, "--cache", str(cache), "--out", str(tmp_path / "h.md"), *args]) == 2
    assert field in capsys.readouterr().err
    assert not cache.exists()


def test_zero_instances_gives_the_bound_alone_with_no_oracle_run(tmp_path: Path) -> None:
    real = json.loads((Path(__file__).resolve().parents[2] / "results" / "leaderboard-v2-exact.json").read_text())
    cache = tmp_path / "cache.json"
    res = hr.run_headroom(hr.check_board(real, "b"), 0, ["kv-pressure", "arxiv-summ"], cache=cache, log=lambda s: None)
    kv, ax = res["tasks"]["kv-pressure"], res["tasks"]["arxiv-summ"]
    assert kv["k"] == 0 and kv["oracle"] == [] and kv["bound"]["low"] > 0 and hr.verdict(kv) == "headroom"
    assert hr.verdict(ax) == "none found"
    assert "| kv-pressure |" in hr.render(res) and "| 0 | n/a | n/a | n/a |" in hr.render(res)
    assert oracle_cache.load(cache) == {}


def test_cached_only_uses_the_cached_prefix_and_runs_nothing(monkeypatch, tmp_path: Path) -> None:
    board, _ = _tiny_board(monkeypatch)
    cache = tmp_path / "cache.json"
    hr.run_headroom(board, 1, cache=cache, log=lambda s: None)  # instance 0 only
    logs: list[str] = []
    res = hr.run_headroom(board, 2, cache=cache, log=logs.append, cached_only=True)
    assert res["tasks"]["bursty"]["k"] == 1 and "0 to run" in logs[0]
    assert len(oracle_cache.load(cache)) == 1
