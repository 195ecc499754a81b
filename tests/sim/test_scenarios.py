"""Shipped scenarios: they load, and bursty reproduces the real cluster's utilization asymmetry."""

from __future__ import annotations

import pytest

from kairos_gym.errors import ConfigError
from kairos_gym.scenario import ScenarioConfig, load_scenario, scenario_names
from kairos_gym.sim import Simulator
from tests.sim.conftest import NoDeflect

SHIPPED = ["azure-code", "azure-conv", "bursty", "decode-heavy", "mooncake", "small", "steady"]


def test_all_scenarios_shipped_and_valid():
    assert set(SHIPPED) <= set(scenario_names())
    for name in SHIPPED:
        sc = load_scenario(name)
        assert sc.name == name
        assert ScenarioConfig.from_dict(sc.to_dict()) == sc


@pytest.mark.parametrize("seed", [0, 1, 2, 3, 4])
def test_bursty_no_deflect_utilization_asymmetry(seed):
    s = Simulator("bursty", seed=seed).run(NoDeflect())
    assert 0.75 <= s["prefill_utilization"] <= 0.84, s["prefill_utilization"]
    assert 0.07 <= s["decode_utilization"] <= 0.27, s["decode_utilization"]


def test_mooncake_rejects_overlong_requests_explicitly():
    sc = load_scenario("mooncake").with_overrides({"workload": {"max_requests": 300}})
    sim = Simulator(sc, seed=0)
    s = sim.run(NoDeflect())
    assert s["n_completed"] + s["n_rejected"] == 300


def test_load_by_path(tmp_path):
    p = tmp_path / "x.yaml"
    p.write_text("name: x\nslo: {ttft_s: 2.0}\n")
    assert load_scenario(str(p)).slo.ttft_s == 2.0


@pytest.mark.parametrize(
    "doc,field",
    [
        ({"clusterr": {}}, "clusterr"),
        ({"cluster": {"prefill_nodes": 0}}, "prefill_nodes"),
        ({"cluster": {"model": "gpt-9"}}, "model"),
        ({"cluster": {"tp": 3}}, "tp"),
        ({"cluster": {"calibration": {"bogus": 1}}}, "bogus"),
        ({"slo": {"ttft_s": float("nan")}}, "ttft_s"),
        ({"slo": {"tbt_s": -1}}, "tbt_s"),
        ({"deflection": {"chunk_menu": [100, 200]}}, "chunk_menu"),
        ({"transfer": {"bandwidth_bytes_per_s": 0}}, "bandwidth_bytes_per_s"),
        ({"workload": {"arrival": {"kind": "poisson", "rate": "fast"}}}, "rate"),
    ],
)
def test_bad_scenario_input_names_field(doc, field):
    with pytest.raises(ConfigError) as e:
        sc = ScenarioConfig.from_dict(doc)
        Simulator(sc)
    assert field in str(e.value) and "allowed" in str(e.value)


def test_unknown_scenario_name_lists_choices():
    with pytest.raises(ConfigError, match="bursty"):
        load_scenario("no-such-scenario")


def test_missing_yaml_file():
    with pytest.raises(ConfigError, match=r"missing\.yaml"):
        load_scenario("configs/scenarios/missing.yaml")


def test_bad_yaml_syntax(tmp_path):
    p = tmp_path / "bad.yaml"
    p.write_text("cluster: [unclosed\n")
    with pytest.raises(ConfigError, match=r"bad\.yaml"):
        load_scenario(str(p))


def test_prompt_longer_than_context_in_trace_is_an_error(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text("arrival_time_s,prompt_tokens,output_tokens\n0.0,100,10\n0.5,200000,10\n1.0,300,5\n")
    sc = {"name": "t", "workload": {"arrival": {"kind": "trace", "path": str(p)}}}
    with pytest.raises(ConfigError) as e:
        Simulator(sc, seed=0)
    assert "t.csv" in str(e.value) and "request 1" in str(e.value) and "200010" in str(e.value)


def test_prompt_longer_than_context_rejected_when_configured(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text("arrival_time_s,prompt_tokens,output_tokens\n0.0,100,10\n0.5,200000,10\n1.0,300,5\n")
    sc = {"name": "t", "cluster": {"overlong": "reject"}, "workload": {"arrival": {"kind": "trace", "path": str(p)}}}
    s = Simulator(sc, seed=0).run(NoDeflect())
    assert s["n_requests"] == 3 and s["n_rejected"] == 1 and s["n_completed"] == 2


def test_overrides_merge_sections_and_replace_on_new_kind():
    b = load_scenario("bursty")
    same = b.with_overrides({"workload": {"arrival": {"rate": 5.0}}, "slo": {"tbt_s": 0.05}})
    assert same.workload.arrival.rate == 5.0 and same.workload.arrival.cv == b.workload.arrival.cv
    assert same.slo.tbt_s == 0.05 and same.slo.ttft_s == b.slo.ttft_s
    new = b.with_overrides({"workload": {"arrival": {"kind": "poisson", "rate": 3.0}}})
    assert new.workload.arrival.kind == "poisson" and new.workload.arrival.rate == 3.0


def test_run_progress_called_once_per_decision():
    calls = []
    sim = Simulator("small", seed=0)
    sim.run(NoDeflect(), progress=lambda: calls.append(1))
    assert len(calls) == sim.n_decisions == sim.n - sim.n_rejected
