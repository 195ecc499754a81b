"""kairos_gym/benchmark/checks/normalised_sizing.py: the factor on n1 and n2 that brings every normalised score's
interval to a target."""

from __future__ import annotations

import importlib
import json

import pytest


def _result() -> dict:
    def task(room, halves, n1=100, n2=10):
        return {"room": {"mean": room}, "n1": n1, "n2": n2,
                "normalized": {"no-deflect": {"half": 9.0}, "oracle": {"half": 0.0},
                               **{p: {"half": h, "mean": 0.5} for p, h in halves.items()}}}

    return {"tasks": {"wide": task(0.05, {"a": 0.2, "b": 0.1}), "narrow": task(0.3, {"a": 0.01}),
                      "flat": {"room": {"mean": 0.0}, "n1": 11, "n2": 11, "normalized": {}}}}


def test_the_factor_is_the_squared_ratio_of_the_widest_interval_to_the_target():
    tool = importlib.import_module("kairos_gym.benchmark.checks.normalised_sizing")
    rows = {r["task"]: r for r in tool.sizing(_result(), 0.05)}
    assert set(rows) == {"wide", "narrow"}  # not normalised: left out; the anchors never count
    w = rows["wide"]
    assert w["widest"] == "a" and w["half"] == 0.2 and w["factor"] == pytest.approx(16.0)
    assert (w["n1_needed"], w["n2_needed"]) == (1600, 160)
    assert rows["narrow"]["factor"] == 1.0 and rows["narrow"]["n2_needed"] == 10


def test_the_command_prints_the_table_and_refuses_bad_input(tmp_path, capsys):
    from kairos_gym.cli.main import main

    p = tmp_path / "op.json"
    p.write_text(json.dumps(_result()))
    assert main(["check", "normalised-sizing", str(p)]) == 0
    out = capsys.readouterr().out
    assert "| wide | 0.050 | 100 | 10 | a ± 0.200 | 16.0 | 1,600 | 160 |" in out
    assert "1 of 2 tasks meet the target as run; the others need 150 more Oracle instances." in out
    p.write_text("[]")
    assert main(["check", "normalised-sizing", str(p)]) == 2
    assert main(["check", "normalised-sizing", str(tmp_path / "absent.json")]) == 2
    assert main(["check", "normalised-sizing", str(p), "--half-width", "0"]) == 2
    err = capsys.readouterr().err
    assert err.count("kairos-gym check normalised-sizing: error:") == 3 and "--half-width" in err
