"""The commands and flags the docs' generated figures run (tools/doc_figures.py): ``fault-runs``, ``measure
--acceptance --json``, ``pull-compare --json``, ``perf-env --json``, ``perf-components --json``, ``soak --json``.
The figures themselves are checked against the docs by tests/test_doc_figures.py; here, the commands' own parts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kairos_gym.cli.main import main
from kairos_gym.evaluation import fault_runs as fr
from kairos_gym.evaluation import measure


def test_fault_runs_scenarios_set_reentry_only_where_there_are_faults():
    assert fr._scenario("bursty", "prefill") == fr.load_scenario("bursty")
    sc = fr._scenario("bursty-prefill-failure", "prefill")
    assert sc.faults.enabled and sc.faults.reentry == "prefill"
    down = fr._scenario(fr.DECODE_DOWN_NAME, "policy")
    assert down.faults.reentry == "policy"
    assert [(e.kind, e.node, e.at_s) for e in down.faults.events] == [("decode_down", 0, 10.0), ("decode_up", 0, 25.0)]
    assert down.workload == fr.load_scenario("bursty").workload


def test_fault_counters_text_names_the_non_zero_counters_but_reentry_decisions():
    assert fr.counters_text(None) == "-"
    assert fr.counters_text({k: 0 for k in fr.COUNTERS}) == "-"
    c = {k: 0 for k in fr.COUNTERS} | {"requeued": 10, "rerouted": 1200, "reentry_decisions": 10}
    assert fr.counters_text(c) == "10 requeued, 1,200 rerouted"


def test_fault_runs_rows_carry_the_summary_and_counters(monkeypatch: pytest.MonkeyPatch):
    seen = []

    def fake(policy, sc, seed):
        seen.append((policy, sc.name, sc.faults.reentry, seed))
        return {"n_requests": 3000, "n_completed": 3000, "n_rejected": 0, "ttft_p50": 0.5, "ttft_p99": 3.0,
                "slo_attainment": 0.69, **({"faults": {k: 1 for k in fr.COUNTERS}} if sc.faults.enabled else {})}

    monkeypatch.setattr(fr, "run_policy", fake)
    res = fr.fault_runs(seed=7)
    assert [r["scenario"] for r in res["shipped"]] == list(fr.SHIPPED)
    assert res["shipped"][0]["reentry"] is None and res["shipped"][0]["faults"] is None
    assert res["shipped"][1]["reentry"] == "prefill" and res["shipped"][1]["faults"]["requeued"] == 1
    assert len(res["reentry"]) == 2 * len(fr.REENTRY_POLICIES) * len(fr.REENTRY_MODES)
    assert [r["reentry"] for r in res["reentry"][:2]] == ["policy", "prefill"]
    assert {s[3] for s in seen} == {7}
    json.dumps(res)  # plain JSON


def test_fault_runs_cli_refuses_a_bad_seed_before_any_run(capsys: pytest.CaptureFixture[str]):
    assert main(["fault-runs", "--seed", "-1"]) == 2
    assert "--seed" in capsys.readouterr().err


def test_measure_acceptance_writes_its_rows_and_checks_as_json(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    def fake(name, scenario, seed, **kw):
        good = name in ("kairos", "kairos-exact", "oracle")
        return {"ttft_p95": 1.0 if good else 3.0, "tbt_violation_rate": 0.02 if kw.get("chunk") == 2048 else 0.0,
                "slo_attainment": 0.8 if good else 0.3, "deflection_rate": 0.2, "decision_us_p50": 10.0,
                "decision_us_p99": 20.0, "decision_cpu_us_p50": 9.0, "decision_cpu_us_p99": 19.0,
                "n_completed": 10, "n_requests": 10}

    monkeypatch.setattr(measure, "run_policy", fake)
    out = tmp_path / "acc.json"
    assert measure.acceptance(0, json_path=str(out)) == 0
    res = json.loads(out.read_text())
    assert res["seed"] == 0
    assert [r["label"] for r in res["rows"][:4]] == ["bursty: no-deflect", "bursty: kairos", "bursty[:300]: oracle",
                                                     "bursty[:300]: kairos-exact"]
    assert len(res["checks"]) == 12 and all(c["pass"] for c in res["checks"])


def test_pull_compare_table_is_the_markdown_the_docs_show():
    from kairos_gym.benchmark.pull_compare import table

    rows = [{"task": "bursty", "policy": "kairos (exact)", "decision_points": "arrival", "slo_attainment": 0.8153,
             "ci": 0.0931, "n": 10},
            {"task": "bursty", "policy": "kairos-pull (exact)", "decision_points": "arrival+pull",
             "slo_attainment": 0.954, "ci": 0.029, "n": 10, "vs": "kairos (exact)", "diff": 0.1387, "diff_ci": 0.068}]
    assert table(rows).splitlines()[2:] == [
        "| bursty | kairos (exact) | arrival | 0.815 ± 0.093 |  |",
        "| bursty | kairos-pull (exact) | arrival+pull | 0.954 ± 0.029 | +0.139 ± 0.068 (vs kairos (exact)) |"]


def test_perf_env_writes_its_results_as_json(tmp_path: Path):
    out = tmp_path / "env.json"
    assert main(["perf-env", "--env", "kairos_gym/KairosSmall-v0", "--decisions", "50", "--json", str(out)]) == 0
    res = json.loads(out.read_text())
    assert len(res) == 1 and res[0]["env_id"] == "kairos_gym/KairosSmall-v0"


def test_perf_components_writes_its_rates_as_json(tmp_path: Path):
    out = tmp_path / "c.json"
    assert main(["perf-components", "--ops", "1000", "--repeats", "1", "--json", str(out)]) == 0
    res = json.loads(out.read_text())
    assert res["ops"] == 1000 and res["heap"] == 64
    for part in ("link", "events"):
        assert {"ops", "python", "calls", "replay"} <= set(res[part]) and res[part]["replay"] > 0


def test_soak_writes_its_checkpoints_as_json(tmp_path: Path):
    sc = tmp_path / "short-soak.yaml"
    sc.write_text("name: short-soak\noverload: {timeout_s: 5.0}\nmetrics: {mode: streaming, window: 1024}\n"
                  "workload:\n  arrival: {kind: gamma, rate: 22.0, cv: 3.0}\n  duration_s: 30\n")
    out = tmp_path / "soak.json"
    assert main(["soak", "--scenario", str(sc), "--checkpoints", "10s,20s", "--json", str(out)]) == 0
    res = json.loads(out.read_text())
    assert res["scenario"] == "short-soak" and res["seed"] == 0 and res["conserved"]
    assert [c["sim_time_s"] for c in res["checkpoints"]] == [10.0, 20.0]
    assert all(c["arrived"] >= c["completed"] for c in res["checkpoints"])


def test_demo_refuses_a_bad_json_path_before_any_run(tmp_path: Path):
    assert main(["demo", "--out", str(tmp_path / "demo"), "--json", "/proc/demo.json"]) == 2
    assert not (tmp_path / "demo").exists()
