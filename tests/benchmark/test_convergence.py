"""The instance-length study (kairos_gym/benchmark/convergence.py, ``kairos-gym convergence``): Kendall's tau-b, the
instances it builds, the cells and rows it reports, and its flags."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from kairos_gym.benchmark import convergence as cv
from kairos_gym.errors import ConfigError
from kairos_gym.evaluation.backends import SerialBackend


def test_tau_b_same_reversed_and_constant() -> None:
    assert cv.kendall_tau_b([1, 2, 3, 4], [10, 20, 30, 40]) == 1.0
    assert cv.kendall_tau_b([1, 2, 3, 4], [4, 3, 2, 1]) == -1.0
    assert math.isnan(cv.kendall_tau_b([1, 1, 1], [1, 2, 3]))
    with pytest.raises(ValueError):
        cv.kendall_tau_b([1, 2], [1])


def test_tau_b_with_ties_by_hand() -> None:
    # x = 1, 2, 2, 3; y = 1, 3, 2, 2: pairs (0,1) c, (0,2) c, (0,3) c, (1,2) tie in x, (1,3) d, (2,3) tie in y
    # tau_b = (3 - 1) / sqrt((3 + 1 + 1) * (3 + 1 + 1)) = 0.4
    assert cv.kendall_tau_b([1, 2, 2, 3], [1, 3, 2, 2]) == pytest.approx(0.4, abs=1e-15)


def test_instances_have_burn_in_plus_scored_requests() -> None:
    sc = cv.instance_scenario("bursty", 300, 700)
    assert sc.workload.num_requests == 1000
    assert sc.slo.burn_in_requests == 300
    assert sc.name == "bursty"
    assert "long-tail" not in cv.families() and "azure-code" not in cv.families()
    assert "bursty" in cv.families()
    with pytest.raises(ConfigError, match="families"):
        cv.instance_scenario("azure-code", 0, 100)


def test_the_study_cells_and_rows() -> None:
    cells = cv.study(["bursty"], [0, 40], [60, 120], [2000, 2001], SerialBackend(), policies=("no-deflect", "kairos"))
    assert [(c.burn_in, c.scored) for c in cells] == [(0, 60), (0, 120), (40, 60), (40, 120)]
    assert all(len(v) == 2 for c in cells for v in c.scores.values())
    rows = cv.summary_rows(cells)
    ref = [r for r in rows if r["reference"]]
    assert len(ref) == 1 and (ref[0]["burn_in"], ref[0]["scored"]) == (40, 120)
    assert ref[0]["max_shift"] == 0.0 and ref[0]["tau_b"] in (1.0, None)
    for r in rows:
        assert r["order"] == sorted(r["means"], key=lambda p: -r["means"][p])
    table = cv.markdown(rows, 2)
    assert table.count("\n| bursty |") == 4


def test_the_warm_instance_scores_only_the_requests_after_the_burn_in() -> None:
    from kairos_gym.evaluation.evaluate import run_one

    s, _ = run_one(cv.instance_scenario("bursty", 50, 80), "kairos", 2000)
    assert (s["n_requests"], s["n_scored"], s["burn_in_requests"]) == (130, 80, 50)


@pytest.mark.parametrize(("flag", "value"), [("--families", "azure-code"), ("--seeds", "1"), ("--lengths", "0"),
                                             ("--burn-in", "5,5"), ("--seeds", "101")])
def test_bad_flags_are_refused_before_any_run(flag: str, value: str) -> None:
    r = subprocess.run([sys.executable, "-m", "kairos_gym.cli", "convergence", flag, value], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 2
    assert flag in r.stderr and r.stdout == ""


def test_the_command_prints_the_table_and_writes_json(tmp_path: Path) -> None:
    out = tmp_path / "c.json"
    r = subprocess.run([sys.executable, "-m", "kairos_gym.cli", "convergence", "--families", "bursty", "--burn-in",
                        "0,30", "--lengths", "40", "--seeds", "2", "--json", str(out)], capture_output=True, text=True,
                       timeout=300, check=True)
    assert "| bursty | 30 | 40 * |" in r.stdout
    res = json.loads(out.read_text())
    assert res["seeds"] == [2000, 2001] and len(res["cells"]) == 2 and len(res["rows"]) == 2
