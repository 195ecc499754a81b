"""Learning curves across seeds (train/curves.py, ``kairos-gym curves``): the aggregate is the IQM / mean of the
(run, case) gaps to the reference, steps every run has, clear refusals."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kairos_gym.train.curves import curves, render

from kairos_gym.cli.main import main
from kairos_gym.errors import ConfigError

CASES = ("a@exact", "a@realistic", "b@exact", "b@realistic")


def _run(folder: Path, steps: dict[int, dict[str, float]], ref: dict[str, float] | None = None) -> Path:
    folder.mkdir(parents=True)
    ref = ref or dict.fromkeys(CASES, 0.5)
    lines = [json.dumps({"timesteps": t, "cases": {c: {"slo_attainment": v} for c, v in scores.items()},
                         "reference": {"kairos": {"cases": ref}}}) for t, scores in steps.items()]
    (folder / "eval_history.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


def test_the_curve_is_the_gap_to_the_reference_in_points_over_runs_and_cases(tmp_path: Path) -> None:
    a = _run(tmp_path / "s0", {100: dict.fromkeys(CASES, 0.6), 200: dict.fromkeys(CASES, 0.7)})
    b = _run(tmp_path / "s1", {100: dict.fromkeys(CASES, 0.4), 200: dict.fromkeys(CASES, 0.5),
                               300: dict.fromkeys(CASES, 0.9)})
    res = curves([a, b])
    assert [r["timesteps"] for r in res["rows"]] == [100, 200]  # only the steps every run has
    first = res["rows"][0]
    assert first["mean"]["point"] == pytest.approx(0.0) and first["iqm"]["point"] == pytest.approx(0.0)
    assert first["per_run"] == {str(a): pytest.approx(10.0), str(b): pytest.approx(-10.0)}
    assert first["mean"]["low"] < 0 < first["mean"]["high"]  # the runs disagree: the interval spans them
    second = res["rows"][1]
    assert second["mean"]["point"] == pytest.approx(10.0)
    assert res["reference"] == "kairos"
    assert "| 200 | +10.0 [" in render(res)


def test_the_iqm_trims_an_outlying_case(tmp_path: Path) -> None:
    runs = []
    for s in range(4):
        scores = dict.fromkeys(CASES, 0.55)
        scores["b@realistic"] = 0.0  # one case far below
        runs.append(_run(tmp_path / f"s{s}", {100: scores}))
    row = curves(runs)["rows"][0]
    assert row["iqm"]["point"] == pytest.approx(5.0) and row["mean"]["point"] < 0


def test_runs_of_another_recipe_or_without_validations_are_refused(tmp_path: Path) -> None:
    a = _run(tmp_path / "a", {100: dict.fromkeys(CASES, 0.6)})
    other = _run(tmp_path / "o", {100: {"z@exact": 0.6}}, ref={"z@exact": 0.5})
    with pytest.raises(ConfigError, match="one recipe"):
        curves([a, other])
    with pytest.raises(ConfigError, match=r"eval_history\.jsonl"):
        curves([a, tmp_path / "nowhere"])
    with pytest.raises(ConfigError, match="distinct"):
        curves([a, a])
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "eval_history.jsonl").write_text('{"timesteps": 1}\n')
    with pytest.raises(ConfigError, match="domain run"):
        curves([bad])


def test_the_command_writes_the_table_the_json_and_the_plot(tmp_path: Path, capsys) -> None:
    pytest.importorskip("matplotlib")
    a = _run(tmp_path / "s0", {100: dict.fromkeys(CASES, 0.6)})
    b = _run(tmp_path / "s1", {100: dict.fromkeys(CASES, 0.4)})
    out, js, png = tmp_path / "c.md", tmp_path / "c.json", tmp_path / "c.png"
    assert main(["curves", str(a), str(b), "--out", str(out), "--json", str(js), "--plot", str(png)]) == 0
    assert out.read_text() == capsys.readouterr().out
    assert json.loads(js.read_text())["rows"][0]["timesteps"] == 100 and png.stat().st_size > 1000
    assert main(["curves", str(tmp_path / "nowhere")]) == 2
    assert "eval_history.jsonl" in capsys.readouterr().err
